"""``fold-integers``: the integer arithmetic a fused kernel inherits, folded where its
values are known.

A model's masks and positions reach the loop level as i64 arithmetic on constants and
loop indices. Hugging Face's attention mask, fused into the attention walk, indexes its
positions through ``index`` with Python's wrap of negative indices and a batch offset of
zero::

    %pos = arith.constant 0 : i64
    %5 = arith.cmpi slt, %pos, %pos : i64                 // batch 0 < 0: false
    %8 = arith.muli (select %5, ..), %c128 : i64           // 0
    %in = arith.addi (index_cast %a1), %pos : i64
    %10 = arith.cmpi slt, %in, %pos : i64                  // a1 >= 0: never negative
    %12 = arith.select %10, (%in + 128), %in : i64
    %row = arith.index_cast (addi %8, %12) : i64 to index  // ... = %a1
    %live = arith.andi %true, (cmpi sle, %key, %query)

Folded, the row is ``%a1`` and the mask reads ``cmpi sle, %key, %query``: what
``skip-masked-chunks`` recognises as causal. The rewrites, each exact:

- xDSL's own arith canonicalizations (constants propagated, ``x + 0``, ``x * 1``,
  ``select`` of a constant condition or of equal values);
- a ``cmpi`` whose operands' ranges (``integer_range``: loop bounds through casts,
  sums, products and selects) decide it for every value: its constant;
- ``andi``/``ori`` with a constant flag on either side;
- ``index_cast`` of an ``index_cast`` back to the type it came from (index -> i64 ->
  index), which keeps every value.

What a fold leaves dead is erased as it goes. Anything whose value is not known is left as
it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import BoolAttr, IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import HasCanonicalizationPatternsTrait

from deplodock.dialects.affine_syntax import compare_ranges, value_ranges
from deplodock.dialects.loop import KernelOp

_FOLDED_KINDS = (
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.CmpiOp,
    arith.SelectOp,
)
"""The arith ops whose xDSL canonicalizations this pass applies."""


def _fits(bounds: tuple[int, int]) -> tuple[int, int] | None:
    """``bounds``, or None where a 64-bit integer could have wrapped."""
    return bounds if -(2**63) <= bounds[0] and bounds[1] < 2**63 else None


def integer_range(value: SSAValue) -> tuple[int, int] | None:
    """Inclusive bounds of an index or integer value: constants, and index values bound
    by loops (``value_ranges``) through 64-bit casts, sums, differences, products and
    selects; None when unknown. (Local to this pass: the verifiers' ``value_ranges``
    stays with what a binder declares.)"""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp):
        attr = owner.value
        if not isinstance(attr, IntegerAttr) or value.type == IntegerType(1):
            return None  # a float, or a flag
        return (attr.value.data, attr.value.data)
    if isinstance(owner, arith.IndexCastOp):
        width = 64 if isinstance(value.type, IndexType) else value.type.width.data
        return integer_range(owner.input) if width >= 64 else None
    if isinstance(owner, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        a, b = integer_range(owner.lhs), integer_range(owner.rhs)
        if a is None or b is None:
            return None
        if isinstance(owner, arith.AddiOp):
            return _fits((a[0] + b[0], a[1] + b[1]))
        if isinstance(owner, arith.SubiOp):
            return _fits((a[0] - b[1], a[1] - b[0]))
        products = [x * y for x in a for y in b]
        return _fits((min(products), max(products)))
    if isinstance(owner, arith.SelectOp):
        a, b = integer_range(owner.lhs), integer_range(owner.rhs)
        if a is None or b is None:
            return None
        return (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(value.type, IndexType):
        return value_ranges([value])[0]
    return None


def decided(cmpi: arith.CmpiOp) -> bool | None:
    """The value of ``cmpi`` for every value its operands' ranges allow, or None."""
    lhs, rhs = integer_range(cmpi.lhs), integer_range(cmpi.rhs)
    if lhs is None or rhs is None:
        return None
    return compare_ranges(arith.CMPI_COMPARISON_OPERATIONS[cmpi.predicate.value.data], lhs, rhs)


class FoldDecidedCmpi(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        value = decided(op)
        if value is not None:
            rewriter.replace_op(op, arith.ConstantOp(BoolAttr.from_bool(value)))


def _flag(value: SSAValue) -> bool | None:
    """The constant an i1 value is, or None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and value.type == IntegerType(1):
        return bool(owner.value.value.data)  # type: ignore[attr-defined]
    return None


class FoldConstantFlag(RewritePattern):
    """``andi`` / ``ori`` of i1 flags with a constant on either side."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AndIOp | arith.OrIOp, rewriter: PatternRewriter) -> None:
        if op.result.type != IntegerType(1):
            return
        absorbing = isinstance(op, arith.OrIOp)  # or: true absorbs; and: false absorbs
        for flag, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            known = _flag(flag)
            if known is None:
                continue
            rewriter.replace_op(op, [], [flag if known == absorbing else other])
            return


class FoldCastRoundTrip(RewritePattern):
    """``index_cast(index_cast(x : index -> i64) : i64 -> index)`` is ``x``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, arith.IndexCastOp) or inner.input.type != op.result.type:
            return
        narrow = inner.result.type
        if isinstance(narrow, IntegerType) and narrow.width.data < 64:
            return  # a narrower integer could have wrapped the index
        rewriter.replace_op(op, [], [inner.input])


def _canonicalizations() -> list[RewritePattern]:
    patterns: list[RewritePattern] = []
    for kind in _FOLDED_KINDS:
        trait = kind.get_trait(HasCanonicalizationPatternsTrait)
        if trait is not None:
            patterns.extend(trait.get_canonicalization_patterns())
    return patterns


@dataclass(frozen=True)
class FoldIntegers(ModulePass):
    """Fold the integer arithmetic of each loop kernel where its values are known (see
    the module docstring)."""

    name = "fold-integers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [FoldDecidedCmpi(), FoldConstantFlag(), FoldCastRoundTrip()]
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier([*patterns, *_canonicalizations()], dce_enabled=True)
        )
        for kernel in [k for k in op.walk() if isinstance(k, KernelOp)]:
            if not any(isinstance(o, arith.CmpiOp) for o in kernel.walk()):
                continue  # no integer comparison, no mask or wrap to fold (the patterns
                # cost ~4 ms a kernel; a whole model has hundreds)
            walker.rewrite_region(kernel.body)  # the applier erases what its folds leave dead
