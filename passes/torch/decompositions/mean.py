"""mean over some axes (or all): a sum `ten.reduce`, then a `ten.map` dividing by the
element count (as torch computes it, rather than a multiply by 1/n), then keepdim."""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Decomposition, Emitter
from deplodock.passes.torch.decompositions.reduction import reduce_like_torch


class Mean(Decomposition):
    targets = ("mean.dim", "mean.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return reduce_like_torch(op, emit, "add", mean=True)
