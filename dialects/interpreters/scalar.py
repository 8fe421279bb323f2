"""arith and math over numpy values, in the precision of the op's type.

xDSL's own arith/math interpreters compute in Python floats (f64) on scalars. Ours take
numpy scalars *or arrays* (so the loop and tile interpreters can run a whole iteration
space, or every thread of a block, at once) and round each result to the op's type, so
an f32 program is interpreted in f32 as the GPU runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import affine, arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Attribute, Operation

from deplodock.dialects import math_ext


def numpy_dtype(type_: Attribute) -> np.dtype:
    """The numpy dtype that holds values of an MLIR scalar type."""
    if isinstance(type_, Float32Type):
        return np.dtype(np.float32)
    if isinstance(type_, Float64Type):
        return np.dtype(np.float64)
    if isinstance(type_, Float16Type):
        return np.dtype(np.float16)
    if isinstance(type_, BFloat16Type):
        return np.dtype(np.float32)  # numpy has no bfloat16; kept in f32
    if isinstance(type_, IndexType):
        return np.dtype(np.int64)
    if isinstance(type_, IntegerType):
        width = type_.width.data
        return np.dtype(np.bool_) if width == 1 else np.dtype(f"int{max(8, width)}")
    raise NotImplementedError(f"no numpy dtype for {type_}")


def _cast(value: Any, op: Operation) -> Any:
    return np.asarray(value).astype(numpy_dtype(op.results[0].type), copy=False)[()]


def _unary(fn: Callable[[Any], Any]):
    def run(self, interpreter: Interpreter, op: Operation, args: tuple[Any, ...]):
        with np.errstate(all="ignore"):
            return (_cast(fn(args[0]), op),)

    return run


def _binary(fn: Callable[[Any, Any], Any]):
    def run(self, interpreter: Interpreter, op: Operation, args: tuple[Any, ...]):
        with np.errstate(all="ignore"):
            return (_cast(fn(args[0], args[1]), op),)

    return run


def _wrapping(fn, a, b):
    """Integer add/sub as MLIR defines them: modulo 2**width, so on i1 they are xor
    (numpy's bool + is or, which would hide a wrong lowering of torch's bool ops)."""
    if np.asarray(a).dtype == np.bool_:
        return np.logical_xor(a, b)
    return fn(a, b)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _ieee_extremum(fn, a, b):
    """arith.maximumf / minimumf: NaN if either is NaN (np.maximum's rule too) and -0.0
    below +0.0, as MLIR defines them and CUDA's max.NaN / min.NaN compute them (numpy
    returns its second operand for two zeros)."""
    zeros = (a == 0) & (b == 0)
    if not np.any(zeros):
        return fn(a, b)
    negative = np.signbit(a) if fn is np.minimum else ~np.signbit(a)  # a is the answer
    return np.where(zeros, np.where(negative, a, b), fn(a, b))


def _divsi(a, b):
    """Integer division truncated toward zero, exact for every int64 (a float quotient
    would round above 2**53): the floor quotient, one up where it rounded down a
    negative quotient with a remainder."""
    q = np.floor_divide(a, b)
    return q + ((q * b != a) & ((a < 0) != (b < 0)) & (b != 0)).astype(q.dtype)


def _round_half_away(x):
    """C's round: to the nearest integer, halfway cases away from zero (numpy's rint
    rounds them to even). `x - trunc(x)` is exact, so no 0.49999997 + 0.5 rounding up."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(t), x), t)


_CMPF = {
    "oeq": np.equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "one": np.not_equal,
    "ueq": np.equal,
    "ugt": np.greater,
    "uge": np.greater_equal,
    "ult": np.less,
    "ule": np.less_equal,
    "une": np.not_equal,
}
_CMPI = {
    "eq": np.equal,
    "ne": np.not_equal,
    "slt": np.less,
    "sle": np.less_equal,
    "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": np.less,
    "ule": np.less_equal,
    "ugt": np.greater,
    "uge": np.greater_equal,
}


@register_impls
class ScalarFunctions(InterpreterFunctions):
    """arith/math ops on numpy scalars and arrays."""

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: tuple):
        value = op.value
        if isinstance(value, FloatAttr | IntegerAttr):
            return (_cast(value.value.data, op),)
        raise NotImplementedError(f"arith.constant of {value}")

    run_addf = impl(arith.AddfOp)(_binary(np.add))
    run_subf = impl(arith.SubfOp)(_binary(np.subtract))
    run_mulf = impl(arith.MulfOp)(_binary(np.multiply))
    run_divf = impl(arith.DivfOp)(_binary(np.divide))
    run_maximumf = impl(arith.MaximumfOp)(_binary(lambda a, b: _ieee_extremum(np.maximum, a, b)))
    run_minimumf = impl(arith.MinimumfOp)(_binary(lambda a, b: _ieee_extremum(np.minimum, a, b)))
    run_maxnumf = impl(arith.MaxnumfOp)(_binary(np.fmax))
    run_minnumf = impl(arith.MinnumfOp)(_binary(np.fmin))
    run_negf = impl(arith.NegfOp)(_unary(np.negative))
    run_addi = impl(arith.AddiOp)(_binary(lambda a, b: _wrapping(np.add, a, b)))
    run_subi = impl(arith.SubiOp)(_binary(lambda a, b: _wrapping(np.subtract, a, b)))
    run_muli = impl(arith.MuliOp)(_binary(np.multiply))
    run_divsi = impl(arith.DivSIOp)(_binary(_divsi))
    run_floordivsi = impl(arith.FloorDivSIOp)(_binary(np.floor_divide))
    run_ceildivsi = impl(arith.CeilDivSIOp)(_binary(lambda a, b: -np.floor_divide(-a, b)))
    run_remsi = impl(arith.RemSIOp)(_binary(np.fmod))
    run_shli = impl(arith.ShLIOp)(_binary(np.left_shift))
    run_shrsi = impl(arith.ShRSIOp)(_binary(np.right_shift))
    run_maxsi = impl(arith.MaxSIOp)(_binary(np.maximum))
    run_minsi = impl(arith.MinSIOp)(_binary(np.minimum))
    run_andi = impl(arith.AndIOp)(_binary(np.bitwise_and))
    run_ori = impl(arith.OrIOp)(_binary(np.bitwise_or))
    run_xori = impl(arith.XOrIOp)(_binary(np.bitwise_xor))
    run_sitofp = impl(arith.SIToFPOp)(_unary(lambda x: x))
    run_fptosi = impl(arith.FPToSIOp)(_unary(np.trunc))
    run_extf = impl(arith.ExtFOp)(_unary(lambda x: x))
    run_truncf = impl(arith.TruncFOp)(_unary(lambda x: x))
    run_extsi = impl(arith.ExtSIOp)(_unary(lambda x: x))
    run_extui = impl(arith.ExtUIOp)(_unary(lambda x: x))
    run_trunci = impl(arith.TruncIOp)(_unary(lambda x: x))
    run_index_cast = impl(arith.IndexCastOp)(_unary(lambda x: x))

    @impl(arith.BitcastOp)
    def run_bitcast(self, interpreter: Interpreter, op: arith.BitcastOp, args: tuple):
        """The same bits read as the result's type (f32 <-> i32, f64 <-> i64)."""
        value = np.asarray(args[0])
        return (value.view(numpy_dtype(op.results[0].type))[()],)

    run_exp = impl(math.ExpOp)(_unary(np.exp))
    run_exp2 = impl(math.Exp2Op)(_unary(np.exp2))
    run_expm1 = impl(math.ExpM1Op)(_unary(np.expm1))
    run_log = impl(math.LogOp)(_unary(np.log))
    run_log2 = impl(math.Log2Op)(_unary(np.log2))
    run_log10 = impl(math.Log10Op)(_unary(np.log10))
    run_log1p = impl(math.Log1pOp)(_unary(np.log1p))
    run_sqrt = impl(math.SqrtOp)(_unary(np.sqrt))
    run_rsqrt = impl(math.RsqrtOp)(_unary(_rsqrt))
    run_cbrt = impl(math.CbrtOp)(_unary(np.cbrt))
    run_tanh = impl(math.TanhOp)(_unary(np.tanh))
    run_sin = impl(math.SinOp)(_unary(np.sin))
    run_cos = impl(math.CosOp)(_unary(np.cos))
    run_tan = impl(math.TanOp)(_unary(np.tan))
    run_sinh = impl(math.SinhOp)(_unary(np.sinh))
    run_cosh = impl(math.CoshOp)(_unary(np.cosh))
    run_asin = impl(math.AsinOp)(_unary(np.arcsin))
    run_acos = impl(math.AcosOp)(_unary(np.arccos))
    run_atan = impl(math.AtanOp)(_unary(np.arctan))
    run_asinh = impl(math.AsinhOp)(_unary(np.arcsinh))
    run_acosh = impl(math.AcoshOp)(_unary(np.arccosh))
    run_atanh = impl(math.AtanhOp)(_unary(np.arctanh))
    run_atan2 = impl(math.Atan2Op)(_binary(np.arctan2))
    run_absf = impl(math.AbsFOp)(_unary(np.abs))
    run_absi = impl(math.AbsIOp)(_unary(np.abs))  # wraps: abs(INT_MIN) is INT_MIN, as in C
    run_copysign = impl(math.CopySignOp)(_binary(np.copysign))
    run_erf = impl(math.ErfOp)(_unary(lambda x: _erf(x)))
    run_powf = impl(math.PowFOp)(_binary(np.power))
    run_floor = impl(math.FloorOp)(_unary(np.floor))
    run_ceil = impl(math.CeilOp)(_unary(np.ceil))
    run_trunc = impl(math.TruncOp)(_unary(np.trunc))
    run_round = impl(math.RoundOp)(_unary(_round_half_away))
    run_roundeven = impl(math.RoundEvenOp)(_unary(np.rint))

    run_remf = impl(math_ext.RemFOp)(_binary(np.fmod))  # exact, as C's fmod
    run_erfc = impl(math_ext.ErfcOp)(_unary(lambda x: _erfc(x)))
    run_erfinv = impl(math_ext.ErfinvOp)(_unary(lambda x: _erfinv(x)))
    run_lgamma = impl(math_ext.LgammaOp)(_unary(lambda x: _lgamma(x)))
    run_erfcx = impl(math_ext.ErfcxOp)(_unary(lambda x: _erfcx(x)))

    @impl(arith.CmpfOp)
    def run_cmpf(self, interpreter: Interpreter, op: arith.CmpfOp, args: tuple):
        name = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if name in ("false", "true"):
            return (np.full(np.shape(args[0]), name == "true"),)
        if name in ("ord", "uno"):
            ordered = ~(np.isnan(args[0]) | np.isnan(args[1]))
            return (ordered if name == "ord" else ~ordered,)
        result = _CMPF[name](args[0], args[1])
        unordered = np.isnan(args[0]) | np.isnan(args[1])
        result = (result | unordered) if name.startswith("u") else (result & ~unordered)
        return (np.asarray(result)[()],)

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: tuple):
        name = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        return (np.asarray(_CMPI[name](args[0], args[1]))[()],)

    @impl(arith.SelectOp)
    def run_select(self, interpreter: Interpreter, op: arith.SelectOp, args: tuple):
        return (_cast(np.where(args[0], args[1], args[2]), op),)

    @impl(affine.ApplyOp)
    def run_apply(self, interpreter: Interpreter, op: affine.ApplyOp, args: tuple):
        from deplodock.dialects.affine_syntax import eval_map

        return eval_map(op.map.data, args)

    @impl(math.FmaOp)
    def run_fma(self, interpreter: Interpreter, op: math.FmaOp, args: tuple):
        return (_cast(args[0] * args[1] + args[2], op),)


def _erf(x):
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x)


# The special functions numpy lacks, computed in f64 by Python's math module (or from it)
# and rounded to the op's type by `_cast`: correctly rounded f32 results or within an ulp.


def _erfc(x):
    from math import erfc

    return np.vectorize(erfc, otypes=[np.float64])(x)


def _lgamma_scalar(v: float) -> float:
    from math import lgamma

    try:
        return lgamma(v)
    except ValueError:  # a pole: 0, -1, -2, ...
        return float("inf")


def _lgamma(x):
    return np.vectorize(_lgamma_scalar, otypes=[np.float64])(x)


def _erfinv_scalar(y: float) -> float:
    """erfinv by Giles' single-precision approximation ("Approximating the erfinv
    function", 2010), then Newton steps on erf (|y| <= 0.5) or on erfc (the tails, where
    1 - |y| is exact and erf too flat to tell x from its neighbours): to an f64 ulp or two."""
    from math import erf, erfc, exp, log, pi, sqrt

    if not -1.0 <= y <= 1.0:
        return float("nan")
    if abs(y) == 1.0:
        return float("inf") if y > 0 else float("-inf")
    a = abs(y)
    w = -log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        w -= 2.5
        coefficients = (
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        )
    else:
        w = sqrt(w) - 3.0
        coefficients = (
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        )
    p = 0.0
    for c in coefficients:
        p = p * w + c
    x = p * a
    tail = 1.0 - a  # exact for a in [0.5, 1]
    for _ in range(20):  # 2 or 3 steps in f32's range; more past it, where Giles is rough
        slope = 2.0 / sqrt(pi) * exp(-x * x)
        step = (erf(x) - a if a <= 0.5 else tail - erfc(x)) / slope  # erf(x) - a
        x -= step
        if abs(step) <= 1e-17 * x:
            break
    return x if y > 0 else -x


def _erfinv(x):
    return np.vectorize(_erfinv_scalar, otypes=[np.float64])(x)


def _erfcx_scalar(v: float) -> float:
    """exp(v^2) * erfc(v); past v = 25 (where erfc nears the f64 underflow) its
    asymptotic series 1/(v sqrt(pi)) * sum (-1)^k (2k-1)!! / (2 v^2)^k, to 1e-19."""
    from math import erfc, exp, isnan, pi, sqrt

    if isnan(v):
        return v
    if v < 25.0:
        try:
            return exp(v * v) * erfc(v)
        except OverflowError:  # v < -26.6: 2 exp(v^2) is past the f64 range
            return float("inf")
    term, total, u = 1.0, 1.0, 1.0 / (2.0 * v * v)
    for k in range(1, 9):
        term *= -(2 * k - 1) * u
        total += term
    return total / (v * sqrt(pi))


def _erfcx(x):
    return np.vectorize(_erfcx_scalar, otypes=[np.float64])(x)
