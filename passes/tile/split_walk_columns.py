"""``split-walk-columns``: the lanes of a query row share its head dim, not its keys.

An attention walk (``ten.softmax_sum`` with the scores fused in, after ``unroll-dots``)
keeps, per query row, the query row (D values), the running max and sum and C value
columns: 2 + D + C registers and more, 220 at D = C = 64 on the H200, so a block of 256
threads is all an SM holds (8 warps: too few to hide the latency of the walk's loads and
exp). This pass deals each row's head dim out to ``U`` consecutive lanes (a new innermost
thread axis ``%u``), four elements at a time round the lanes (``lane_element``: lane ``u``
keeps the query's elements ``4u .. 4u+3``, ``4(u+U) ..`` and the same value columns, so
the lanes' float4 reads of a shared key row fall in different banks); each key's score
is the lanes' partial dot products added across them (``tile.combine add .. across %u``,
shuffles), so every lane has the same score, max and sum, and updates its own columns::

    %m, %s, %a0, .., %a63 = loop.for %k = 0 to S reduce(online_max, online_sum x 65) {
      %p0 = arith.mulf %q0, %k0 ..  %qk = (tree of 64 products)
      ..  loop.yield %score, %one, %v0, .., %v63
    }
    loop.store (%a_j / %s), %o[.., j]        (j = 0 .. 63)

    %m, %s, %a0, .., %a15 = loop.for %k = 0 to S reduce(online_max, online_sum x 17) {
      %part = (tree of the 16 products of elements 4 * %u + 0 .. 3, 4 * %u + 16 .. 19, ..)
      %qk = tile.combine add %part across %u : f32
      ..  loop.yield %score, %one, %v0, .., %v15      (%v_j = V[.., 4 * %u + e(j)])
    }
    loop.store (%a_j / %s), %o[.., 4 * %u + e(j)]   (e(j) = 16 * (j / 4) + j % 4)

The sum of the dot product is the same terms in another order (each lane's chains, then
the butterfly). The row is no longer split over keys (``cooperative-reduce`` leaves a
kernel that has a thread axis), so no combine of the whole group follows the walk.

Which walks: a top-level reduce ``loop.for`` of a kernel with only free axes whose
clause is one online group with C value columns; its score a tree of adds over D products
``q_i * k_i`` (``q_i`` a load outside the walk, ``k_i`` one inside, both indexed by the
constant ``i`` in their last dimension, nothing else using them); value ``j`` a load
indexed by the constant ``j`` last; after the walk, each column used only by ops that end
in one store indexed by ``j`` last. ``U`` is ``walk_column_lanes`` (``schedule.reduce``),
``lanes`` overrides it (1 turns the pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.combine import ONLINE_MAX, ONLINE_SUM, groups
from deplodock.passes.loop.unroll_dots import DOT_CHAINS, add_in_chains
from deplodock.passes.tile.analysis import (
    WalkDot,
    column_stores,
    last_constant,
    reindexed,
    same_base,
    score_dot,
)
from deplodock.passes.tile.cooperative_reduce import parallel_extent
from deplodock.passes.tile.schedule.reduce import walk_column_lanes
from deplodock.target import DEFAULT_ARCH, Target, pass_target

VECTOR = 4  # elements a lane reads together (a float4), its share dealt out in these


def lane_element(lanes: int, share: int, slot: int) -> tuple[int, int]:
    """Where slot ``slot`` of a lane's ``share`` of a row lives: ``(stride, offset)``, the
    element ``stride * %u + offset``. Runs of ``VECTOR`` elements go round the lanes (lane
    u holds elements 4u..4u+3, then 4(u + U)..), so a warp's lanes read adjacent 16-byte
    pieces of a shared key row, no two in one bank; a share that is no multiple of 4
    stays one run (``share * %u + slot``)."""
    if share % VECTOR:
        return share, slot
    return VECTOR, VECTOR * lanes * (slot // VECTOR) + slot % VECTOR


class SplitColumns(RewritePattern):
    def __init__(self, lanes: int, target: Target):
        self.lanes = lanes
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        if any(b != "free" for _, _, b in op.axes):
            return
        walks = [
            o for o in op.body.block.ops if isinstance(o, loop.ForOp) and ONLINE_MAX in o.kinds
        ]
        if len(walks) != 1:
            return
        (walk,) = walks
        kinds = walk.kinds
        if len(groups(kinds)) != 1 or kinds[1:] != [ONLINE_SUM] * (len(kinds) - 1):
            return
        columns = len(kinds) - 2
        dot = score_dot(walk)
        stores = column_stores(walk)
        yielded = walk.body.block.last_op
        assert isinstance(yielded, loop.YieldOp)
        values = [v.owner for v in yielded.operands[2:]]
        if stores is None or columns < 1 or (dot is None and not _merges_partials(walk)):
            return
        if any(
            not isinstance(v, loop.LoadOp) or v.parent_op() is not walk or last_constant(v) != j
            for j, v in enumerate(values)
        ):
            return
        if not same_base(values):
            return
        dims = len(dot.products) if dot else columns  # a merge: no query row, lanes by columns
        if dot is not None and sorted(dot.products) != list(range(dims)):
            return
        for side in ("lhs", "rhs"):
            if dot and not same_base([getattr(p, side).owner for p in dot.products.values()]):
                return
        stored = [o for chain in stores.values() for o in chain if isinstance(o, loop.StoreOp)]
        if not same_base(stored):
            return
        lanes = self.lanes or walk_column_lanes(parallel_extent(op), dims, columns, self.target)
        if lanes <= 1 or dims % lanes or columns % lanes:
            return
        self._split(op, walk, dot, values, stores, lanes, rewriter)

    @staticmethod
    def _split(kernel, walk, dot: WalkDot | None, values, stores, lanes: int, rewriter) -> None:
        old_axes = [(e, b) for _, e, b in kernel.axes]
        body = rewriter.move_region_contents_to_new_regions(kernel.body)
        lane = rewriter.insert_block_argument(body.block, 0, IndexType())
        lane.name_hint = "u"
        if dot is not None:
            SplitColumns._split_dot(dot, lane, lanes, rewriter)
        SplitColumns._split_columns(walk, values, stores, lane, lanes, rewriter)
        # The lane axis is the kernel's first thread axis, so it stays the innermost.
        new_kernel = tile.KernelOp(
            kernel.sym_name.data,
            [(lanes, "thread"), *old_axes],
            list(kernel.inputs),
            [r.type for r in kernel.results],
            body,
        )
        new_kernel.attributes.update(kernel.attributes)
        rewriter.replace_op(kernel, new_kernel)

    @staticmethod
    def _split_dot(dot: WalkDot, lane, lanes: int, rewriter) -> None:
        """The dot product: lane u's products, in chains, then added across the lanes."""
        dims = len(dot.products)
        per_dim = dims // lanes
        kept = [dot.products[i] for i in range(per_dim)]
        for i, product in enumerate(kept):
            for operand in (product.lhs, product.rhs):
                load = operand.owner
                rewriter.replace_op(load, reindexed(load, lane, lane_element(lanes, per_dim, i)))
        partial = _chains(kept, dot.root, rewriter)
        combined = tile.CombineOp("add", partial, lane)
        combined.results[0].name_hint = dot.root.name_hint
        rewriter.insert_op(combined, InsertPoint.after(dot.root.owner))
        dot.root.replace_all_uses_with(combined.results[0])
        # The old tree, the other lanes' products and their loads are dead now.
        for add in dot.adds:
            rewriter.erase_op(add)
        for i in range(per_dim, dims):
            product = dot.products[i]
            loads = [product.lhs.owner, product.rhs.owner]
            rewriter.erase_op(product)
            for load in loads:
                if not load.result.uses:
                    rewriter.erase_op(load)

    @staticmethod
    def _split_columns(walk, values, stores, lane, lanes: int, rewriter) -> None:
        """Lane u keeps its share of the value columns (reindexed loads and stores); the
        walk keeps 2 + C/U accumulators."""
        columns = len(values)
        per_column = columns // lanes
        yielded = walk.body.block.last_op
        keep = 2 + per_column
        rewriter.replace_op(yielded, loop.YieldOp(*yielded.operands[:keep]))
        for j in range(per_column, columns):
            rewriter.erase_op(values[j])
        for j in range(per_column):
            place = lane_element(lanes, per_column, j)
            rewriter.replace_op(values[j], reindexed(values[j], lane, place))
        # The stores of the other lanes' columns go, lane u's are reindexed.
        for j in range(columns - 1, per_column - 1, -1):
            for chained in reversed(stores[j]):
                rewriter.erase_op(chained)
        for j in range(per_column):
            (store,) = [o for o in stores[j] if isinstance(o, loop.StoreOp)]
            rewriter.replace_op(store, reindexed(store, lane, lane_element(lanes, per_column, j)))
        inner = rewriter.move_region_contents_to_new_regions(walk.body)
        types = [r.type for r in walk.results[:keep]]
        new_walk = loop.ForOp(walk.lower.data, walk.upper.data, inner, walk.kinds[:keep], types)
        new_walk.attributes.update(walk.attributes)
        new_walk.unroll = walk.unroll
        rewriter.insert_op(new_walk, InsertPoint.before(walk))
        for new, old in zip(new_walk.results, walk.results[:keep], strict=True):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        rewriter.erase_op(walk)


def _merges_partials(walk: loop.ForOp) -> bool:
    """Whether ``walk`` merges stored online partials (``chunk-reduce``'s combine of a
    split walk): its max and its sum are loads in its body, the same for every lane."""
    yielded = walk.body.block.last_op
    assert isinstance(yielded, loop.YieldOp)
    return all(
        isinstance(v.owner, loop.LoadOp) and v.owner.parent_op() is walk
        for v in yielded.operands[:2]
    )


def _chains(products: list[arith.MulfOp], root: SSAValue, rewriter) -> SSAValue:
    """The products added as ``unroll-dots`` adds a whole dot product
    (``add_in_chains``), before ``root``'s op."""
    before = InsertPoint.before(root.owner)
    zero = arith.ConstantOp(FloatAttr(0.0, root.type))
    rewriter.insert_op(zero, before)
    terms = [p.result for p in products]
    total = add_in_chains(terms, zero.result, DOT_CHAINS, lambda op: rewriter.insert_op(op, before))
    total.name_hint = f"{root.name_hint or 'qk'}_part"
    return total


@dataclass(frozen=True)
class SplitWalkColumns(ModulePass):
    """Deal an attention row's head dim out to lanes (see the module docstring)."""

    name = "split-walk-columns"

    lanes: int = 0
    """Lanes a row (0: ``walk_column_lanes`` decides; 1 leaves every walk as it is)."""

    arch: str = DEFAULT_ARCH
    """The target whose SMs the planner fills."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.lanes < 0:
            raise DiagnosticException(f"split-walk-columns: lanes={self.lanes} must be >= 0")
        target = pass_target(self.name, self.arch)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SplitColumns(self.lanes, target)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
