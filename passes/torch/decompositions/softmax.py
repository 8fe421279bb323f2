"""softmax along one axis, in the numerically stable form PyTorch uses:

    m = max(x)          ten.reduce max
    e = exp(x - m)      ten.map (m put back next to x by an index_map)
    s = sum(e)          ten.reduce add
    y = e / s           ten.map

16-bit inputs are computed in f32 and rounded once at the end; `dtype` (softmax.int)
and `half_to_float` (_softmax) only change the result's element type, which torch.export
already recorded.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    shape_of,
)


class Softmax(Decomposition):
    targets = ("softmax.int", "_softmax.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        if not shape:
            raise Unsupported("softmax of a 0-d tensor")
        dims = [op.arg("dim") % len(shape)]
        acc = accumulator_type(emit.element)

        m = emit.expand(emit.reduce("max", x, dims, name="max"), shape, dims)
        e = emit.map(
            [x, m],
            acc,
            lambda b, v, mv: b.unary(math.ExpOp, b.binary("sub", b.cast(v, acc), b.cast(mv, acc))),
            name="exp",
        )
        s = emit.expand(emit.reduce("add", e, dims, name="sum"), shape, dims)
        return emit.map([e, s], emit.element, lambda b, ev, sv: b.binary("div", ev, sv))
