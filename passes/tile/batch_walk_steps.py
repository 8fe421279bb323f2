"""``batch-walk-steps``: an attention walk merges its keys into the running softmax a batch
at a time, one rescale per batch instead of one per key.

After ``chunk-walk`` an attention walk's innermost loop takes one key a step: the step
yields the key's score ``x`` and the values it weighs (1 for the sum, ``V[key, j]`` for
the columns), and the online rule (``combine.py``) merges it into the running maximum
``m`` and sums ``a_j``: an ``exp``, a compare and a branch a key, the sums rescaled
whenever the maximum rises, and each key's update waits for the previous one. This pass
unrolls the loop by ``B`` keys and makes the batch's partial itself, flash-attention's
block of scores in registers::

    %m, %a.. = tile.strided_for %k = %t to 32 step 2 reduce(online_max, online_sum..) {
      %x = score(%k)   %v.. = values(%k)   loop.yield %x, %v.. }

    %m, %a.. = loop.for %c = 0 to 2 reduce(online_max, online_sum..) {
      %k_0 = affine.apply (%c * 16 + %t) .. %k_7 = affine.apply (%c * 16 + %t + 14)
      %x_0 = score(%k_0) .. %x_7 = score(%k_7)              // B independent dot products
      %mb = maximumf(%x_0, .., %x_7)                        // the batch's maximum
      %p_i = %x_i == %mb ? 1 : exp(%x_i - %mb)              // B exps, no dependence chain
      %v_0.. = values(%k_0)   %b_j = %p_0 * %v_0j + ..      // each key's values once read
      loop.yield %mb, %b.. }

A batch's ``(%mb, %b..)`` is a partial of the group, and a partial is a step (``combine.py``:
``exp(m' - M) * a'``), so the loop's clause, every interpreter, the race checker and the
emitter are unchanged: the batch merges into the running group by the same rule, once.
The keys of a batch are the same keys in the same order; only the rounding of the
exponent differs (``exp(x - mb) * exp(mb - m)`` for ``exp(x - m)``), within the walk's
tolerance. The special values come out as the one-key rule gives them: a batch of -inf
scores has ``%mb = -inf`` and weighs each key 1 (the rule's "1 when both are -inf"), a
+inf or NaN score makes the merged sums NaN.

The scores of the batch come first (each copy's ops that the score needs), then each key's
other ops (its value loads) with its contributions, so a batch holds ``B`` scores and one
key's values at a time in registers, not ``B`` keys' values. The batched loop is marked
``unroll 1``: the batch is its unrolling (unrolled again by ``mark-unroll``, TinyLlama's
S=512 attention ran 117 us instead of 100 on the H200).

Which loops: the innermost reduce loop of a walk keeping an online group of many values
(attention's: ``schedule.reduce.WEIGHED_ACCUMULATORS``; softmax's online rows weigh 1 and
would only gain exps), with no ``below`` limit or vector width, whose every thread runs
the same number of steps (a ``loop.for``, or a ``tile.strided_for`` from a thread index
below its step over a multiple of the step). ``walk_batch`` (``schedule.reduce``) picks
``B`` from that count and the sums a thread keeps (a row's lanes' share: a batch's sums
double them); ``batch`` overrides it (1 turns the pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op, value_ranges
from deplodock.dialects.combine import ONLINE_MAX, combine_op, groups
from deplodock.passes.tile.analysis import batch_weight, scheduled_walk
from deplodock.passes.tile.schedule.reduce import WEIGHED_ACCUMULATORS, walk_batch


def _trips(walk: loop.LoopBase) -> int | None:
    """The steps each thread of ``walk`` runs, when every thread runs the same number."""
    if isinstance(walk, loop.ForOp):
        return walk.extent
    start, upper, step = walk.start, walk.upper.data, walk.step.data  # type: ignore[attr-defined]
    (bounds,) = value_ranges([start])
    if bounds is None or bounds[0] < 0 or bounds[1] >= step or upper % step:
        return None
    return upper // step


def batchable(walk: Operation) -> int | None:
    """The steps a thread of ``walk`` runs when the pass may batch it (see the module)."""
    if not isinstance(walk, loop.ForOp | tile.StridedForOp) or not walk.is_reduce:
        return None
    if ONLINE_MAX not in walk.kinds or len(walk.kinds) < WEIGHED_ACCUMULATORS:
        return None
    if walk.limit is not None or getattr(walk, "vector", None) is not None:
        return None
    if any(isinstance(o, loop.LoopBase) for o in walk.body.block.walk() if o is not walk):
        return None
    if isinstance(walk, loop.ForOp) and walk.lower.data != 0:
        return None
    return _trips(walk)


def _slice(values: list[SSAValue], block: Block) -> set[Operation]:
    """The ops of ``block`` that ``values`` are computed from (within the block; an op
    with regions depends on what its nested ops read too)."""
    found: set[Operation] = set()
    todo = [v.owner for v in values if isinstance(v.owner, Operation)]
    while todo:
        op = todo.pop()
        while op is not None and op.parent_block() is not block:
            op = op.parent_op()  # a value of a nested op: its ancestor in the block
        if op is None or op in found:
            continue
        found.add(op)
        reads = [o for inner in op.walk() for o in inner.operands]
        todo += [o.owner for o in reads if isinstance(o.owner, Operation)]
    return found


def _varying(block: Block, iv: SSAValue) -> set[Operation]:
    """The ops of ``block`` whose results change from step to step (depend on ``iv``, or
    read or write memory: a load is per step)."""
    found: set[Operation] = set()
    for op in block.ops:
        inputs = [o.owner for o in op.operands]
        if iv in op.operands or any(i in found for i in inputs) or not _pure(op):
            found.add(op)
    return found


def _pure(op: Operation) -> bool:
    return op.has_trait(Pure) and not op.regions


class BatchWalk(RewritePattern):
    def __init__(self, batch: int):
        self.batch = batch

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        if scheduled_walk(op):
            return
        for walk in [o for o in op.walk() if o is not op]:
            trips = batchable(walk)
            if trips is None:
                continue
            batch = self.batch or walk_batch(trips, len(walk.kinds))
            if batch > 1 and trips % batch == 0:
                rewriter.replace_op(walk, _batched(walk, trips, batch))


def _batched(walk: loop.ForOp | tile.StridedForOp, trips: int, batch: int) -> loop.ForOp:
    """``walk`` as a loop over batches of ``batch`` steps (see the module)."""
    old = walk.body.block
    iv, yielded = walk.induction_var, list(old.last_op.operands)  # type: ignore[union-attr]
    body = Block(arg_types=[IndexType()])
    c = body.args[0]
    name = iv.name_hint or "k"
    c.name_hint = f"{name}_b"
    # The key of copy i of batch c: the original loop's step c * batch + i.
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    if isinstance(walk, loop.ForOp):
        keys = [apply_op(d0 * batch + i, [c], name) for i in range(batch)]
    else:
        step = walk.step.data
        keys = [
            apply_op(d0 * (step * batch) + d1 + step * i, [c, walk.start], name)
            for i in range(batch)
        ]
    body.add_ops(keys)
    maps: list[dict[SSAValue, SSAValue]] = [{iv: k.result} for k in keys]
    varying = _varying(old, iv)
    shared: dict[SSAValue, SSAValue] = {}  # results of ops every step computes alike

    def clone(child: Operation, i: int) -> None:
        mapping = maps[i]
        if child not in varying:
            if child.results and child.results[0] in shared:
                mapping.update({r: shared[r] for r in child.results})
                return
            new = child.clone(mapping)
            body.add_op(new)
            shared.update(zip(child.results, new.results, strict=True))
            mapping.update(zip(child.results, new.results, strict=True))
            return
        new = child.clone(mapping)
        for r_old, r_new in zip(child.results, new.results, strict=True):
            r_new.name_hint = f"{r_old.name_hint}_{i}" if r_old.name_hint else None
        body.add_op(new)
        mapping.update(zip(child.results, new.results, strict=True))

    kinds = walk.kinds
    clause = groups(kinds)
    heads = [g for g in clause if kinds[g[0]] == ONLINE_MAX]
    scores = _slice([yielded[g[0]] for g in heads], old)
    ops = [o for o in old.ops if o is not old.last_op]
    for i in range(batch):  # every key's score first
        for child in ops:
            if child in scores:
                clone(child, i)
    weights: dict[int, list[SSAValue]] = {}  # per group head: each key's weight
    out: list[SSAValue | None] = [None] * len(kinds)
    for group in heads:
        xs = [maps[i].get(yielded[group[0]], yielded[group[0]]) for i in range(batch)]
        top = xs[0]
        for x in xs[1:]:
            m = arith.MaximumfOp(top, x)
            body.add_op(m)
            top = m.result
        top.name_hint = "batch_max"
        one = arith.ConstantOp(FloatAttr(1.0, top.type))
        body.add_op(one)
        weights[group[0]] = []
        for i, x in enumerate(xs):
            weighing = batch_weight(x, top, one.result)
            weighing[-1].results[0].name_hint = f"weight_{i}"
            body.add_ops(weighing)
            weights[group[0]].append(weighing[-1].results[0])
        out[group[0]] = top
    head_of = {k: g[0] for g in heads for k in g[1:]}
    for i in range(batch):  # then each key's values, weighed into the batch's sums
        for child in ops:
            if child not in scores:
                clone(child, i)
        for k, kind in enumerate(kinds):
            if kind == ONLINE_MAX:
                continue
            value = maps[i].get(yielded[k], yielded[k])
            if k in head_of:
                product = arith.MulfOp(weights[head_of[k]][i], value)
                body.add_op(product)
                value = product.result
            if out[k] is None:
                out[k] = value
                continue
            merged = combine_op("add" if k in head_of else kind, out[k], value)  # type: ignore[arg-type]
            body.add_op(merged)
            out[k] = merged.results[0]
    body.add_op(loop.YieldOp(*out))  # type: ignore[arg-type]
    batched = loop.ForOp(0, trips // batch, Region(body), kinds, [r.type for r in walk.results])
    batched.attributes.update(walk.attributes)
    batched.unroll = IntAttr(1)  # the batch is the unrolling: more copies only spill
    return batched


@dataclass(frozen=True)
class BatchWalkSteps(ModulePass):
    """Merge an attention walk's keys a batch at a time (see the module)."""

    name = "batch-walk-steps"

    batch: int = 0
    """Keys a batch (0: ``walk_batch`` decides; 1 leaves every walk one key a step)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.batch < 0:
            raise DiagnosticException(f"batch-walk-steps: batch={self.batch} must not be negative")
        if self.batch == 1:
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier([BatchWalk(self.batch)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
