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
    run_maximumf = impl(arith.MaximumfOp)(_binary(np.maximum))
    run_minimumf = impl(arith.MinimumfOp)(_binary(np.minimum))
    run_maxnumf = impl(arith.MaxnumfOp)(_binary(np.fmax))
    run_minnumf = impl(arith.MinnumfOp)(_binary(np.fmin))
    run_negf = impl(arith.NegfOp)(_unary(np.negative))
    run_addi = impl(arith.AddiOp)(_binary(lambda a, b: _wrapping(np.add, a, b)))
    run_subi = impl(arith.SubiOp)(_binary(lambda a, b: _wrapping(np.subtract, a, b)))
    run_muli = impl(arith.MuliOp)(_binary(np.multiply))
    run_divsi = impl(arith.DivSIOp)(_binary(lambda a, b: np.trunc(np.divide(a, b))))
    run_floordivsi = impl(arith.FloorDivSIOp)(_binary(np.floor_divide))
    run_remsi = impl(arith.RemSIOp)(_binary(np.fmod))
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

    run_exp = impl(math.ExpOp)(_unary(np.exp))
    run_exp2 = impl(math.Exp2Op)(_unary(np.exp2))
    run_log = impl(math.LogOp)(_unary(np.log))
    run_log2 = impl(math.Log2Op)(_unary(np.log2))
    run_sqrt = impl(math.SqrtOp)(_unary(np.sqrt))
    run_rsqrt = impl(math.RsqrtOp)(_unary(_rsqrt))
    run_tanh = impl(math.TanhOp)(_unary(np.tanh))
    run_sin = impl(math.SinOp)(_unary(np.sin))
    run_cos = impl(math.CosOp)(_unary(np.cos))
    run_absf = impl(math.AbsFOp)(_unary(np.abs))
    run_erf = impl(math.ErfOp)(_unary(lambda x: _erf(x)))
    run_powf = impl(math.PowFOp)(_binary(np.power))
    run_floor = impl(math.FloorOp)(_unary(np.floor))
    run_ceil = impl(math.CeilOp)(_unary(np.ceil))

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
