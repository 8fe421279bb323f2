"""copy (`self.copy_(src)` once functionalised): `src` broadcast to self's shape, in self's
element type.

The result is a fresh tensor with nothing of `self` but its shape and dtype, so `self` is
not read: a broadcast view of `src` and, when the dtypes differ, one map of a cast (a
truth test into bool, as `to` does).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Decomposition, Emitter
from deplodock.passes.torch.decompositions.convert import to_element


class Copy(Decomposition):
    targets = ("copy.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        src = emit.broadcast(emit.tensor("src"), emit.shape)
        return to_element(emit, src, emit.element)
