"""softmax-sum: a softmax summed against values over its own axis becomes one
``ten.softmax_sum``, so attention's scores are never a tensor.

Scaled dot-product attention, and a hand-written ``softmax(q @ k.T * scale + mask) @ v``,
reach the tensor level as (``passes/torch/decompositions/softmax.py``, ``sdpa.py``)::

    %max   = ten.reduce max %s dims [r]           %max_b = ten.index_map %max  (drops r)
    %exp   = ten.map(%s, %max_b) { exp(a - b) }
    %sum   = ten.reduce add %exp dims [r]         %sum_b = ten.index_map %sum  (drops r)
    %probs = ten.map(%exp, %sum_b) { a / b }      (or the masked-row guard: m = -inf ? 0 : a / b)
    %p_b   = ten.index_map %probs                  (adds a last axis: the value columns)
    %prod  = ten.map(%p_b, %v) { a * b }
    %out   = ten.reduce add %prod dims [r]

which the loop level can only lower as four kernels with the probabilities stored and read
back (S x S floats a head). All of it is ``%out = ten.softmax_sum %s, %v dim r`` (``safe``
for the guarded form), whose lowering walks each row once with a running max and
accumulates the weighted values as it goes (the online group, ``dialects/combine.py``).
The rewrite applies only when every intermediate has no other use (a program that also
returns the probabilities keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod as product

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from deplodock.dialects import tensor as ten
from deplodock.passes.tensor.lift_to_loop import value_columns

MAX_WALKS = 2
"""Fold only when a row's value columns take at most this many walks (``value_columns``):
each walk weighs the row's scores again. H200 (``docs/bench/h200-2026-12-03-s14``):
head dim 128 (2 walks, Qwen2.5-7B S=512) 1098 -> 731 us folded; head dim 1024 (16
walks) 424 -> 3444 us, so it is left as the softmax and the product, unless its rows are
many enough to deal the head dim out to a warp's lanes (``value_columns``' ``rows``: one
walk of 32 lanes, 32 columns a lane)."""


def _only_use(value: SSAValue, user: Operation) -> bool:
    return all(use.operation is user for use in value.uses) and bool(value.uses)


def _owner(value: SSAValue, kind: type[Operation]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def _map_body(op: ten.MapOp) -> list[Operation]:
    return [o for o in op.body.block.ops if not isinstance(o, ten.YieldOp)]


def _yielded(op: ten.MapOp) -> SSAValue:
    last = op.body.block.last_op
    assert isinstance(last, ten.YieldOp)
    return last.value


def _drops(view: ten.IndexMapOp, axis: int) -> bool:
    """``view`` broadcasts its source along ``axis``: result axes other than ``axis``
    index the source's axes in order."""
    rank = len(view.result.type.get_shape())  # type: ignore[union-attr]
    kept = [AffineDimExpr(d) for d in range(rank) if d != axis]
    return list(view.map.data.results) == kept


def _adds_last(view: ten.IndexMapOp) -> bool:
    """``view`` broadcasts its source along a new last axis (identity on the others)."""
    rank = len(view.result.type.get_shape())  # type: ignore[union-attr]
    return list(view.map.data.results) == [AffineDimExpr(d) for d in range(rank - 1)]


def _binary(op: ten.MapOp, kind: type[Operation]) -> bool:
    """The map's body is one ``kind`` op of its two arguments, in order."""
    body = _map_body(op)
    args = list(op.body.block.args)
    return (
        len(body) == 1
        and isinstance(body[0], kind)
        and list(body[0].operands) == args
        and _yielded(op) is body[0].results[0]
    )


def _is_exp_of_difference(op: ten.MapOp) -> bool:
    body = _map_body(op)
    args = list(op.body.block.args)
    return (
        len(body) == 2
        and isinstance(sub := body[0], arith.SubfOp)
        and list(sub.operands) == args
        and isinstance(exp := body[1], math.ExpOp)
        and exp.operand is sub.result
        and _yielded(op) is exp.result
    )


def _is_guarded_division(op: ten.MapOp) -> bool:
    """``select(m == -inf, 0, e / l)`` over arguments ``(e, l, m)``."""
    body = _map_body(op)
    e, total, m = op.body.block.args
    if len(body) != 5:
        return False
    div, inf, compare, zero, select = body
    return (
        isinstance(div, arith.DivfOp)
        and list(div.operands) == [e, total]
        and isinstance(select, arith.SelectOp)
        and _yielded(op) is select.result
        and select.lhs is zero.results[0]
        and select.rhs is div.result
        and isinstance(compare, arith.CmpfOp)
        and select.cond is compare.result
        and compare.lhs is m
        and compare.rhs is inf.results[0]
        and compare.predicate.value.data == 1  # oeq
        and isinstance(inf, arith.ConstantOp)
        and inf.value.value.data == float("-inf")  # type: ignore[union-attr]
        and isinstance(zero, arith.ConstantOp)
        and zero.value.value.data == 0.0  # type: ignore[union-attr]
    )


def _reduction(view: ten.IndexMapOp, kind: str, axis: int, of: SSAValue) -> ten.ReduceOp | None:
    """The ``kind`` reduction over ``axis`` of ``of`` that ``view`` broadcasts back, read
    by the view alone, or None."""
    op = _owner(view.source, ten.ReduceOp)
    if (
        op is None
        or op.kind.data != kind
        or op.reduced_dims != (axis,)
        or op.input is not of
        or not _only_use(op.result, view)
    ):
        return None
    return op


@dataclass(frozen=True)
class _Match:
    scores: SSAValue
    values: SSAValue
    dim: int
    safe: bool
    dead: tuple[Operation, ...]
    """The ops the rewrite leaves unused, users first."""


def match_softmax_sum(out: ten.ReduceOp) -> _Match | None:
    """The softmax-weighted sum that ``out`` ends (module docstring), or None."""
    if out.kind.data != "add" or len(out.reduced_dims) != 1:
        return None
    (r,) = out.reduced_dims
    prod = _owner(out.input, ten.MapOp)
    if prod is None or not _only_use(prod.result, out) or not _binary(prod, arith.MulfOp):
        return None
    for p_index in (0, 1):
        p_b = _owner(prod.inputs[p_index], ten.IndexMapOp)
        values = prod.inputs[1 - p_index]
        if p_b is not None and _adds_last(p_b) and r < len(p_b.source.type.get_shape()):
            break
    else:
        return None
    if not _only_use(p_b.result, prod) or values is p_b.result:
        return None
    probs = _owner(p_b.source, ten.MapOp)
    if probs is None or not _only_use(probs.result, p_b):
        return None
    safe = len(probs.inputs) == 3 and _is_guarded_division(probs)
    if not safe and not (len(probs.inputs) == 2 and _binary(probs, arith.DivfOp)):
        return None
    exp, sum_b = probs.inputs[0], _owner(probs.inputs[1], ten.IndexMapOp)
    exp_op = _owner(exp, ten.MapOp)
    if sum_b is None or exp_op is None or not _drops(sum_b, r) or not _is_exp_of_difference(exp_op):
        return None
    total = _reduction(sum_b, "add", r, exp)
    if total is None or not _only_use(sum_b.result, probs):
        return None
    scores, max_b = exp_op.inputs
    max_view = _owner(max_b, ten.IndexMapOp)
    if max_view is None or not _drops(max_view, r):
        return None
    maximum = _reduction(max_view, "max", r, scores)
    if maximum is None:
        return None
    exp_users = {use.operation for use in exp.uses}
    if exp_users != {probs, total}:
        return None
    max_users = {use.operation for use in max_b.uses}
    if max_users != ({exp_op, probs} if safe else {exp_op}):
        return None
    if safe and probs.inputs[2] is not max_b:
        return None
    if scores.type.get_shape()[r] == 0:  # type: ignore[union-attr]
        return None  # an empty softmax is lowered as the reductions it is (LiftEmpty)
    columns = values.type.get_shape()[-1]  # type: ignore[union-attr]
    shape = scores.type.get_shape()  # type: ignore[union-attr]
    rows = product(shape) // shape[r]  # the walks' rows: the lanes a row may take
    if columns // value_columns(columns, rows=rows) > MAX_WALKS:
        return None
    dead = (prod, p_b, probs, sum_b, total, exp_op, max_view, maximum)
    return _Match(scores, values, r, safe, dead)


@dataclass
class FoldSoftmaxSum(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.ReduceOp, rewriter: PatternRewriter) -> None:
        found = match_softmax_sum(op)
        if found is None:
            return
        new = ten.SoftmaxSumOp(found.scores, found.values, found.dim, found.safe)
        new.result.name_hint = op.result.name_hint
        new.location = op.location
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)
        for dead in found.dead:
            rewriter.erase(dead)


@dataclass(frozen=True)
class SoftmaxSum(ModulePass):
    """Fold each softmax summed against values into ``ten.softmax_sum`` (module docstring)."""

    name = "softmax-sum"

    fold: bool = True
    """False: leave the softmax and the product as they are (four kernels, the
    probabilities stored), to measure against."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        if not self.fold:
            return
        PatternRewriteWalker(FoldSoftmaxSum(), apply_recursively=False).rewrite_module(op)
