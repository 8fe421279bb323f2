"""bitwise_left_shift / bitwise_right_shift (`<<`, `>>`; Tensor, Tensor_Scalar and
Scalar_Tensor forms): one `ten.map` of `arith.shli` / `arith.shrsi`.

MLIR (and C) leave a shift by a negative amount or by the type's width or more undefined;
torch defines it: the left shift gives 0 and the arithmetic right shift fills with the
sign bit (`x >> (bits - 1)`). So the amount is first clamped into range (the shift op
never sees an undefined amount) and the left shift's result then replaced by 0 where the
amount was out of range. Integers are signed, as torch's are (uint8 is not compiled).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter, Unsupported
from deplodock.passes.torch.decompositions.compare import compare

_SHIFTS = {
    **{f"bitwise_left_shift.{f}": "left" for f in ("Tensor", "Tensor_Scalar", "Scalar_Tensor")},
    **{f"bitwise_right_shift.{f}": "right" for f in ("Tensor", "Tensor_Scalar", "Scalar_Tensor")},
    "__lshift__.Tensor": "left",
    "__lshift__.Scalar": "left",
    "__rshift__.Tensor": "right",
    "__rshift__.Scalar": "right",
}


def shift(b: Body, direction: str, x: SSAValue, amount: SSAValue) -> SSAValue:
    """torch's `x << amount` or `x >> amount` on two integers of one type."""
    bits = x.type.width.data
    limit = bits if direction == "left" else bits - 1
    negative = compare(b, "lt", amount, b.const(0, x.type))
    too_far = compare(b, "ge", amount, b.const(limit, x.type))
    outside = b.emit(arith.OrIOp(negative, too_far))
    if direction == "right":
        clamped = b.emit(arith.SelectOp(outside, b.const(bits - 1, x.type), amount))
        return b.emit(arith.ShRSIOp(x, clamped))
    clamped = b.emit(arith.SelectOp(outside, b.const(0, x.type), amount))
    shifted = b.emit(arith.ShLIOp(x, clamped))
    return b.emit(arith.SelectOp(outside, b.const(0, x.type), shifted))


class Shift(Decomposition):
    targets = tuple(_SHIFTS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if not isinstance(element, IntegerType) or element.width.data == 1:
            raise Unsupported(f"shift with a {element} result (integers only)")
        direction = _SHIFTS[op.overload]
        lhs, rhs = emit.tensor_or_scalar("self"), emit.tensor_or_scalar("other")
        return emit.map_pair(lhs, rhs, element, element, lambda b, x, y: shift(b, direction, x, y))
