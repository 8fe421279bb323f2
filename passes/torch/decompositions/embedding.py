"""embedding: a row lookup, `ten.gather` of the weight on axis 0.

`result[i.., j] = weight[indices[i..], j]`. The index is data, which no affine map can
say, hence the dedicated op; after lifting it is a load whose index is a loaded value,
and fusion moves it into the consumers like a plain load. padding_idx,
scale_grad_by_freq and sparse only change the gradient.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.tensor import GatherOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Decomposition, Emitter


class Embedding(Decomposition):
    targets = ("embedding.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return emit.add(GatherOp(emit.tensor("weight"), emit.tensor("indices"), 0))
