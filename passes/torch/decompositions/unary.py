"""Elementwise math of one tensor: exp, log, sqrt, rsqrt, tanh, abs, cos, sin, neg,
reciprocal, sigmoid, silu. One `ten.map` whose body is the upstream math/arith ops; an integer
input is first cast to the (float) result type, as torch promotes it.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter

_MATH = {
    "exp.default": math.ExpOp,
    "log.default": math.LogOp,
    "sqrt.default": math.SqrtOp,
    "rsqrt.default": math.RsqrtOp,
    "tanh.default": math.TanhOp,
    "abs.default": math.AbsFOp,
    "cos.default": math.CosOp,
    "sin.default": math.SinOp,
}


def _neg(b: Body, x: SSAValue) -> SSAValue:
    return b.binary("sub", b.const(0, x.type), x)


def _sigmoid(b: Body, x: SSAValue) -> SSAValue:
    """1 / (1 + exp(-x))."""
    one = b.const(1.0, x.type)
    exp_neg = b.unary(math.ExpOp, _neg(b, x))
    return b.binary("div", one, b.binary("add", one, exp_neg))


_COMPOSITE = {
    "neg.default": _neg,
    "reciprocal.default": lambda b, x: b.binary("div", b.const(1.0, x.type), x),
    "sigmoid.default": _sigmoid,
    "silu.default": lambda b, x: b.binary("mul", x, _sigmoid(b, x)),
}


class Unary(Decomposition):
    targets = (*_MATH, *_COMPOSITE)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element

        def body(b: Body, x: SSAValue) -> SSAValue:
            x = b.cast(x, element)
            if op.overload in _MATH:
                return b.unary(_MATH[op.overload], x)
            return _COMPOSITE[op.overload](b, x)

        return emit.map([emit.tensor("self")], element, body)
