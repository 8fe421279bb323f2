"""sum, amax, amin, max and min over some axes (or all): one `ten.reduce`.

`ten.reduce` drops the reduced axes; `keepdim=True` puts them back as size-1 axes with
an index_map. Sums of 16-bit floats accumulate in f32 and are rounded once at the end,
as torch does. `reduce_like_torch` is shared with mean.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    accumulator_type,
    count,
    normalize_dims,
    shape_of,
)

_KINDS = {
    "sum.dim_IntList": "add", "sum.default": "add",
    "amax.default": "max", "max.default": "max",
    "amin.default": "min", "min.default": "min",
}
_WORDS = {"add": "sum", "max": "max", "min": "min"}


def reduce_like_torch(op: AtenOp, emit: Emitter, kind: str, mean: bool = False) -> SSAValue:
    """`op`'s `self` reduced over its `dim` (all axes when None or []), divided by the
    element count when `mean`, in the result's dtype, honouring `keepdim`."""
    x = emit.tensor("self")
    shape, element = shape_of(x), emit.element
    dims = normalize_dims(op.arg("dim"), len(shape))
    if not dims:  # a 0-d tensor: nothing to combine
        return emit.convert(x, element)
    acc = accumulator_type(element) if kind in ("add", "mul") else element
    reduced = emit.reduce(kind, emit.convert(x, acc), dims, name=_WORDS[kind])
    if mean:
        n = count(shape, dims)
        reduced = emit.map(
            [reduced], element, lambda b, s: b.binary("div", s, b.const(n, acc)), name="mean"
        )
    reduced = emit.convert(reduced, element)
    if op.arg("keepdim", False):
        reduced.name_hint = f"{emit.name}_r"  # r: the reduced shape, before keepdim
        reduced = emit.expand(reduced, emit.shape, dims)
    return reduced


class Reduction(Decomposition):
    targets = tuple(_KINDS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return reduce_like_torch(op, emit, _KINDS[op.overload])
