"""Elementwise math of one tensor: exp, exp2, expm1, log, log2, log10, log1p, sqrt, rsqrt,
the trigonometric and hyperbolic functions and their inverses, erf, erfc, erfinv,
erfcx, lgamma, abs, neg, reciprocal, sigmoid, silu.

One `ten.map` whose body is the upstream math/arith op (or `math_ext`'s, for the special
functions upstream lacks: erfc, erfinv, lgamma, erfcx); an integer input is first cast to
the (float) result type, as torch promotes it. abs and neg keep integers: `math.absi`
(abs(INT_MIN) wraps to INT_MIN, as in torch) and `0 - x`. A float neg is `arith.negf`,
so neg(0.0) is -0.0 as in torch (`0 - x` would give +0.0 and flip the sign of a later
1/x).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from deplodock.dialects import math_ext
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    is_float,
)

_MATH = {
    "exp.default": math.ExpOp,
    "exp2.default": math.Exp2Op,
    "expm1.default": math.ExpM1Op,
    "log.default": math.LogOp,
    "log2.default": math.Log2Op,
    "log10.default": math.Log10Op,
    "log1p.default": math.Log1pOp,
    "sqrt.default": math.SqrtOp,
    "rsqrt.default": math.RsqrtOp,
    "cos.default": math.CosOp,
    "sin.default": math.SinOp,
    "tan.default": math.TanOp,
    "acos.default": math.AcosOp,
    "asin.default": math.AsinOp,
    "atan.default": math.AtanOp,
    "cosh.default": math.CoshOp,
    "sinh.default": math.SinhOp,
    "tanh.default": math.TanhOp,
    "acosh.default": math.AcoshOp,
    "asinh.default": math.AsinhOp,
    "atanh.default": math.AtanhOp,
    "erf.default": math.ErfOp,
    "erfc.default": math_ext.ErfcOp,
    "erfinv.default": math_ext.ErfinvOp,
    "special_erfcx.default": math_ext.ErfcxOp,
    "lgamma.default": math_ext.LgammaOp,
}


def neg(b: Body, x: SSAValue) -> SSAValue:
    """-x: `arith.negf` on floats (the sign of zero flips), `0 - x` on integers."""
    if is_float(x.type):
        return b.emit(arith.NegfOp(x))
    return b.binary("sub", b.const(0, x.type), x)


def sigmoid(b: Body, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x))."""
    one = b.const(1.0, x.type)
    exp_neg = b.unary(math.ExpOp, neg(b, x))
    return b.binary("div", one, b.binary("add", one, exp_neg))


def _abs(b: Body, x: SSAValue) -> SSAValue:
    if is_float(x.type):
        return b.unary(math.AbsFOp, x)
    return b.emit(math.AbsIOp(x))


_COMPOSITE = {
    "abs.default": _abs,
    "neg.default": neg,
    "reciprocal.default": lambda b, x: b.binary("div", b.const(1.0, x.type), x),
    "sigmoid.default": sigmoid,
    "silu.default": lambda b, x: b.binary("mul", x, sigmoid(b, x)),
}


class Unary(Decomposition):
    targets = (*_MATH, *_COMPOSITE)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if op.overload in _MATH and not is_float(element):
            raise Unsupported(f"{op.overload.split('.')[0]} with a {element} result")

        def body(b: Body, x: SSAValue) -> SSAValue:
            x = b.cast(x, element)
            if op.overload in _MATH:
                return b.unary(_MATH[op.overload], x)
            return _COMPOSITE[op.overload](b, x)

        return emit.map([emit.tensor("self")], element, body)
