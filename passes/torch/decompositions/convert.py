"""to.dtype / to.device / to.other / _to_copy / type_as / convert_element_type /
lift_fresh_copy / detach_: a copy, possibly into another element type.

Tensors have value semantics here, so a copy is the value itself, and a dtype change is
one `ten.map` of a cast. The target type is the result's, which torch.export recorded
(`type_as` and `to.other` name it through another tensor); devices, layouts and memory
formats mean nothing at this level. (`lift_fresh_copy` then `detach_` is how a
`torch.tensor(2.0)` constant reaches the graph.) A conversion to bool is a truth test (x != 0,
`compare.truthy`), not a truncation.
"""

from __future__ import annotations

from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Decomposition, Emitter, element_of
from deplodock.passes.torch.decompositions.compare import truthy


def to_element(emit: Emitter, x: SSAValue, element: object) -> SSAValue:
    """`x` with elements of type `element` (itself when they already are)."""
    if element == i1 and element_of(x) != i1:
        return emit.map([x], i1, truthy)
    return emit.convert(x, element)  # type: ignore[arg-type]


class Convert(Decomposition):
    targets = (
        "to.dtype",
        "to.dtype_layout",
        "to.device",
        "to.other",
        "_to_copy.default",
        "type_as.default",
        "prims.convert_element_type.default",
        "lift_fresh_copy.default",
        "detach_.default",
    )

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return to_element(emit, op.operands[0], emit.element)
