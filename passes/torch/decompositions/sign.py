"""sign, signbit, isnan, isinf: one `ten.map` each, from comparisons (sgn, isfinite,
isposinf and isneginf reach the torch dialect decomposed into these).

- sign is `(x > 0) - (x < 0)` in the result type, as torch's CPU kernel computes it:
  sign(NaN) and sign(-0.0) are +0.0; on booleans it is the value itself;
- signbit reads the sign bit (`arith.bitcast` to the same-width integer, then `< 0`), so
  it is true for -0.0 and for a NaN with its sign bit set, as torch.signbit is; an
  integer's sign bit is `x < 0`;
- isnan is `x != x` (`arith.cmpf uno`), isinf `|x| == inf`; an integer is neither.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, f32, i1
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    element_of,
    is_float,
)
from deplodock.passes.torch.decompositions.compare import compare


def sign(b: Body, x: SSAValue) -> SSAValue:
    if x.type == i1:
        return x
    one, zero = b.const(1, x.type), b.const(0, x.type)
    above = b.emit(arith.SelectOp(compare(b, "gt", x, zero), one, zero))
    below = b.emit(arith.SelectOp(compare(b, "lt", x, zero), one, zero))
    return b.binary("sub", above, below)


def signbit(b: Body, x: SSAValue) -> SSAValue:
    if x.type == i1:
        return b.const(False, i1)
    if is_float(x.type):
        if x.type.bitwidth < 32:  # f16/bf16: widened first (the sign, NaN's too, survives)
            x = b.cast(x, f32)
        x = b.emit(arith.BitcastOp(x, IntegerType(x.type.bitwidth)))
    return compare(b, "lt", x, b.const(0, x.type))


def isnan(b: Body, x: SSAValue) -> SSAValue:
    if not is_float(x.type):
        return b.const(False, i1)
    return b.emit(arith.CmpfOp(x, x, "uno"))


def isinf(b: Body, x: SSAValue) -> SSAValue:
    if not is_float(x.type):
        return b.const(False, i1)
    magnitude = b.unary(math.AbsFOp, x)
    return b.emit(arith.CmpfOp(magnitude, b.const(float("inf"), x.type), "oeq"))


_BODIES = {
    "sign.default": sign,
    "signbit.default": signbit,
    "isnan.default": isnan,
    "isinf.default": isinf,
}


class Sign(Decomposition):
    targets = tuple(_BODIES)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        element = emit.element
        if op.overload == "sign.default" and element != element_of(x):
            raise Unsupported(f"sign of {element_of(x)} values giving {element}")
        fn = _BODIES[op.overload]
        return emit.map([x], element, lambda b, v: fn(b, v))
