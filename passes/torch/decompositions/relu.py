"""relu: `max(x, 0)` in one `ten.map` (arith.maximumf propagates NaN, as torch.relu does)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Decomposition, Emitter


class Relu(Decomposition):
    targets = ("relu.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return emit.map(
            [emit.tensor("self")], emit.element, lambda b, x: b.binary("max", x, b.const(0, x.type))
        )
