"""sum, prod, amax, amin, max, min, nansum, any and all over some axes (or all): one
`ten.reduce`.

`ten.reduce` drops the reduced axes; `keepdim=True` puts them back as size-1 axes with
an index_map. Sums and products of 16-bit floats accumulate in f32 and are rounded once at
the end, as torch does; those of integers and booleans accumulate in the result's type
(int64: torch.export already recorded the promotion), and `dtype=` is that result type
too. A reduction over an empty axis gives the kind's identity (0 for a sum, 1 for a
product), as in torch.

Booleans are reduced as i32 zeros and ones and turned back into booleans after: an i1
`max` would be a signed compare of -1 and 0, and the identities of an i1 reduction are not
booleans. Unsigned integers (uint8) are reduced in i64 (arith takes signless integers)
and truncated back, which wraps a sum as torch's uint8 arithmetic does. `any`/`all` are
a max/min of truth values (`x != 0`, NaN true), in the result's type (bool, or uint8 for
a uint8 input). `nansum` sums with NaNs read as 0.

`reduce_like_torch`, `reducible`, `signless`, `compute_type` and `to_bool` are shared with
mean, var, the norms, the scans and argmax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, Signedness, i1, i32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    accumulator_type,
    count,
    element_of,
    is_float,
    normalize_dims,
    shape_of,
)
from deplodock.passes.torch.decompositions.compare import truthy

# fmt: off
_KINDS = {
    "sum.dim_IntList": "add", "sum.default": "add",
    "prod.default": "mul", "prod.dim_int": "mul",
    "amax.default": "max", "max.default": "max",
    "amin.default": "min", "min.default": "min",
    "nansum.default": "add",
}
_LOGICAL = {
    "any.default": "max", "any.dim": "max", "any.dims": "max",
    "all.default": "min", "all.dim": "min", "all.dims": "min",
}
# fmt: on
_WORDS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}


def signless(emit: Emitter, x: SSAValue) -> SSAValue:
    """`x`, in i64 when its elements are unsigned integers (uint8): arith's integer ops
    and constants take signless types, and i64 holds every uint8 value."""
    type_ = element_of(x)
    if isinstance(type_, IntegerType) and type_.signedness.data == Signedness.UNSIGNED:
        return emit.convert(x, i64)
    return x


def compute_type(element: Attribute, kind: str) -> Attribute:
    """Where a `kind` reduction to `element` is computed: f32 for the sums and products
    of 16-bit floats, i32 zeros and ones for booleans, i64 for unsigned integers."""
    acc = accumulator_type(element) if kind in ("add", "mul") else element
    if acc == i1:
        return i32
    if isinstance(acc, IntegerType) and acc.signedness.data == Signedness.UNSIGNED:
        return i64
    return acc


def reducible(emit: Emitter, x: SSAValue, dims: Sequence[int]) -> tuple[SSAValue, list[int]]:
    """`x` and the axes to reduce, a 0-d `x` seen as one element of a size-1 axis (so a
    reduction of a scalar is a `ten.reduce` too: var, argmax and the norms need one)."""
    if shape_of(x):
        return x, list(dims)
    return emit.index_map(x, AffineMap(1, 0, ()), (1,)), [0]


def to_bool(emit: Emitter, x: SSAValue, name: str | None = None) -> SSAValue:
    """`x != 0` as a tensor of booleans."""
    return emit.map([x], i1, lambda b, v: truthy(b, v), name)


def keepdim(
    emit: Emitter, op: AtenOp, reduced: SSAValue, dims: Sequence[int], result: int = 0
) -> SSAValue:
    """`reduced` with the axes `dims` put back as size 1 when the op says `keepdim`, as
    the op's result number `result`."""
    want = op.results[result]
    if not op.arg("keepdim", False) or shape_of(reduced) == shape_of(want):
        return reduced
    reduced.name_hint = f"{want.name_hint or emit.name}_r"  # r: the shape before keepdim
    return emit.expand(reduced, shape_of(want), dims)


def reduce_like_torch(
    op: AtenOp,
    emit: Emitter,
    kind: str,
    mean: bool = False,
    element_fn: Callable[[Body, SSAValue, Attribute], SSAValue] | None = None,
) -> SSAValue:
    """`op`'s `self` reduced over its `dim` (all axes when None or []), divided by the
    element count when `mean`, in the result's dtype, honouring `keepdim`. `element_fn(b,
    v, acc)`, when given, is what each element contributes (nansum's 0 for NaN)."""
    x = emit.tensor("self")
    shape, element = shape_of(x), emit.element
    dims = normalize_dims(op.arg("dim"), len(shape))
    if not dims and element_fn is None:  # a 0-d tensor: nothing to combine
        return emit.convert(x, element)
    x, dims = reducible(emit, signless(emit, x), dims)
    acc = compute_type(element, kind)
    if element_fn is not None:
        x = emit.map([x], acc, lambda b, v: element_fn(b, v, acc))
    reduced = emit.reduce(kind, emit.convert(x, acc), dims, name=_WORDS[kind])
    if mean:
        n = count(shape_of(x), dims)
        reduced = emit.map(
            [reduced], element, lambda b, s: b.binary("div", s, b.const(n, acc)), name="mean"
        )
    reduced = to_bool(emit, reduced) if element == i1 else emit.convert(reduced, element)
    return keepdim(emit, op, reduced, dims)


def nan_as_zero(b: Body, v: SSAValue, acc: Attribute) -> SSAValue:
    """`v` in `acc`, 0 where it is NaN (nansum's and nanmean's terms)."""
    v = b.cast(v, acc)
    if not is_float(acc):
        return v
    nan = b.emit(arith.CmpfOp(v, v, "uno"))
    return b.emit(arith.SelectOp(nan, b.const(0.0, acc), v))


class Reduction(Decomposition):
    targets = tuple(_KINDS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element_fn = nan_as_zero if op.overload == "nansum.default" else None
        return reduce_like_torch(op, emit, _KINDS[op.overload], element_fn=element_fn)


class LogicalReduction(Decomposition):
    """any: is some element true (a max of 0/1); all: is every element (a min). Over an
    empty axis the identities, INT32_MIN and INT32_MAX, read as False and True."""

    targets = tuple(_LOGICAL)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        dims = normalize_dims(op.arg("dim"), len(shape_of(x)))
        x, dims = reducible(emit, signless(emit, x), dims)

        def truth(b: Body, v: SSAValue) -> SSAValue:
            return b.cast(truthy(b, v), i32)

        truths = emit.map([x], i32, truth, name="truth")
        kind = _LOGICAL[op.overload]
        reduced = emit.reduce(kind, truths, dims, name=kind)

        def result(b: Body, r: SSAValue) -> SSAValue:  # > 0: max's identity is negative
            positive = b.emit(arith.CmpiOp(r, b.const(0, i32), "sgt"))
            return positive if emit.element == i1 else b.cast(b.cast(positive, i32), emit.element)

        return keepdim(emit, op, emit.map([reduced], emit.element, result), dims)
