"""slice, narrow, select: one `ten.index_map` each, like every other view.

`slice(dim, start, end, step)` reads `start + step * i` on its axis, `narrow` is a slice of
`length`, `select(dim, index)` pins the axis to a constant and drops it. Bounds follow
Python's rules (negative counts from the end; slice bounds clamp to the extent, so the
`end = 2**63 - 1` that `x[..., h:]` exports as is simply the end). The `_copy` forms of
functionalised graphs are the same views.
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    Unsupported,
    shape_of,
)


def _clamp(bound: int, size: int) -> int:
    bound = bound + size if bound < 0 else bound
    return min(max(bound, 0), size)


class Slice(Decomposition):
    # fmt: off
    targets = (
        "slice.Tensor", "narrow.default", "select.int", "slice_copy.Tensor", "narrow_copy.default",
        "select_copy.int",
    )
    # fmt: on

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        src = shape_of(x)
        if not src:
            raise Unsupported("slice of a 0-d tensor")
        dim = int(op.arg("dim", 0))
        if not -len(src) <= dim < len(src):
            raise Unsupported(f"dimension {dim} is out of range for rank {len(src)}")
        dim %= len(src)
        dims = [AffineExpr.dimension(i) for i in range(len(emit.shape))]
        kind = op.overload.split(".")[0].removesuffix("_copy")
        if kind == "select":
            index = int(op.arg("index"))
            if not -src[dim] <= index < src[dim]:
                raise Unsupported(f"index {index} is out of range for extent {src[dim]}")
            exprs = [*dims[:dim], AffineExpr.constant(index % src[dim]), *dims[dim:]]
        else:
            if kind == "narrow":
                start, step = _clamp(int(op.arg("start")), src[dim]), 1
            else:
                start = _clamp(int(op.arg("start", 0) or 0), src[dim])
                step = int(op.arg("step", 1))
            if step < 1:
                raise Unsupported(f"slice step {step} must be positive")
            exprs = list(dims)
            exprs[dim] = dims[dim] * step + start
        return emit.index_map(x, AffineMap(len(dims), 0, tuple(exprs)), emit.shape, emit.name)
