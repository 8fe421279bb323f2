"""where (condition ? self : other) and masked_fill (mask ? value : self): one `ten.map`
ending in `arith.select`.

Every operand may be a tensor (broadcast to the result by index_maps) or a Python number
(a constant in the body, -inf printing as `arith.constant 0xFF800000 : f32`); the two
values are cast to the result's element type, which torch.export already promoted. A
condition that is not i1 counts its truth value (`compare.truthy`).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter, Scalar
from deplodock.passes.torch.decompositions.compare import truthy

# overload -> schema names of (condition, value where true, value where false)
_ARGS = {
    "where.self": ("condition", "self", "other"),
    "where.ScalarSelf": ("condition", "self", "other"),
    "where.ScalarOther": ("condition", "self", "other"),
    "where.Scalar": ("condition", "self", "other"),
    "masked_fill.Scalar": ("mask", "value", "self"),
    "masked_fill.Tensor": ("mask", "value", "self"),
}


class Where(Decomposition):
    targets = tuple(_ARGS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        names = _ARGS[op.overload]
        cond = emit.tensor(names[0])
        values = [emit.tensor_or_scalar(n) for n in names[1:]]
        element = emit.element
        tensors = [cond, *(v for v in values if isinstance(v, SSAValue))]

        def _const(b: Body, v: Scalar) -> SSAValue:
            """A number in the result type as torch converts it: a bool is its truth
            (masked_fill of a bool tensor with 10 fills True), an int truncates."""
            return b.const(bool(v) if element == i1 else v, element)

        def body(b: Body, c: SSAValue, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            yes, no = (
                b.cast(next(scalars), element) if isinstance(v, SSAValue) else _const(b, v)
                for v in values
            )
            return b.emit(arith.SelectOp(truthy(b, c), yes, no))

        return emit.map(tensors, element, body, shape=emit.shape)
