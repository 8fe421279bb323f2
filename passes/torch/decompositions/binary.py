"""add, sub, mul, div, maximum, minimum, pow (tensor ** tensor) and their scalar forms.

One `ten.map`: tensor operands are broadcast to the result's shape (numpy rules) by
index_maps, a Python number is a constant in the body, both are cast to the result's
element type (torch.export already did the type promotion). `alpha` scales `other` as
torch does; `rsub(self, other)` is `other - alpha * self`.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter

_KINDS = {
    "add.Tensor": "add", "add.Scalar": "add",
    "sub.Tensor": "sub", "sub.Scalar": "sub",
    "rsub.Tensor": "sub", "rsub.Scalar": "sub",
    "mul.Tensor": "mul", "mul.Scalar": "mul",
    "div.Tensor": "div", "div.Scalar": "div",
    "maximum.default": "max", "minimum.default": "min",
    "pow.Tensor_Tensor": "pow",
}


class ElementwiseBinary(Decomposition):
    targets = tuple(_KINDS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        kind = _KINDS[op.overload]
        lhs, rhs = emit.tensor_or_scalar("self"), emit.tensor_or_scalar("other")
        if op.overload.startswith("rsub"):
            lhs, rhs = rhs, lhs
        alpha = op.arg("alpha", 1)
        element = emit.element
        tensors = [v for v in (lhs, rhs) if isinstance(v, SSAValue)]

        def body(b: Body, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            x, y = (
                b.cast(next(scalars), element) if isinstance(v, SSAValue) else b.const(v, element)
                for v in (lhs, rhs)
            )
            if alpha != 1:
                y = b.binary("mul", y, b.const(alpha, element))
            return b.binary(kind, x, y)

        return emit.map(tensors, element, body, shape=emit.shape)
