"""diff (x[i + 1] - x[i] along an axis, n times, after prepend/append): index_maps and maps.

prepend, x and append are concatenated along the axis (`cat.concat`, a select on the
position), then each order is one `ten.map` of two shifted views of the previous one.
Booleans differ by xor (`!=`), as torch.diff does for them; ``n = 0`` is the input itself
(prepend and append ignored, as torch does).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.cat import concat
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    shape_of,
)


def _difference(b: Body, upper: SSAValue, lower: SSAValue) -> SSAValue:
    if upper.type == i1:
        return b.emit(arith.XOrIOp(upper, lower))
    return b.binary("sub", upper, lower)


class Diff(Decomposition):
    targets = ("diff.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        parts = [v for v in (op.tensor_arg("prepend"), x, op.tensor_arg("append")) if v is not None]
        rank, n = len(shape_of(x)), int(op.arg("n", 1))
        if not rank:
            raise Unsupported("diff of a 0-d tensor")
        dim = int(op.arg("dim", -1)) % rank
        if n == 0:  # torch returns the input itself, prepend and append unused
            return x
        shape = list(shape_of(x))
        shape[dim] = sum(shape_of(v)[dim] for v in parts)
        value = concat(emit, parts, dim, shape, emit.element, name="padded")
        dims = [AffineExpr.dimension(a) for a in range(rank)]
        for _ in range(n):
            shape[dim] = max(shape[dim] - 1, 0)
            upper = list(dims)
            upper[dim] = dims[dim] + 1
            hi = emit.index_map(value, AffineMap(rank, 0, tuple(upper)), shape)
            lo = emit.index_map(value, AffineMap(rank, 0, tuple(dims)), shape)
            value = emit.map([hi, lo], emit.element, _difference)
        return value
