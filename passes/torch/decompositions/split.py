"""split, split_with_sizes, unbind (and their `_copy` and `unsafe_` forms): several results,
each one `ten.index_map` of the source.

A split's pieces are slices along `dim` at running offsets (the last piece of `split` may
be shorter, and a piece may be empty); unbind's are selects at every index of `dim`, the
axis dropped. torch.export recorded each result's shape, so the pieces' extents are read
from the results rather than recomputed from the sizes.
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

_SPLITS = (
    "split.Tensor",
    "split_with_sizes.default",
    "split_copy.Tensor",
    "split_with_sizes_copy.default",
    "unsafe_split.Tensor",
    "unsafe_split_with_sizes.default",
)
_UNBINDS = ("unbind.int", "unbind_copy.int")


class Split(Decomposition):
    targets = _SPLITS + _UNBINDS

    def decompose(self, op: AtenOp, emit: Emitter) -> list[SSAValue]:
        x = emit.tensor("self")
        src = shape_of(x)
        if not src:
            raise Unsupported(f"{op.overload} of a 0-d tensor")
        dim = int(op.arg("dim", 0))
        if not -len(src) <= dim < len(src):
            raise Unsupported(f"dimension {dim} is out of range for rank {len(src)}")
        dim %= len(src)
        pieces = []
        start = 0
        for result in op.results:
            shape = shape_of(result)
            dims = [AffineExpr.dimension(a) for a in range(len(shape))]
            if op.overload in _UNBINDS:
                exprs = [*dims[:dim], AffineExpr.constant(start), *dims[dim:]]
                start += 1
            else:
                exprs = list(dims)
                exprs[dim] = dims[dim] + start
                start += shape[dim]
            pieces.append(emit.index_map(x, AffineMap(len(shape), 0, tuple(exprs)), shape))
        if start != src[dim]:
            raise Unsupported(f"pieces of {start} elements along {dim}, not {src[dim]}")
        return pieces
