"""``unroll-dots``: the dot products inside an attention walk, unrolled, so the row they
share is loaded once, before the walk.

After ``fuse``, attention (``ten.softmax_sum`` with the scores fused in) walks the keys
of each query row, and each step computes its score as a short reduce loop::

    %max, %sum, %acc.. = loop.for %j = 0 to S reduce(online_max, online_sum, ..) {
      %qk = loop.for %e = 0 to 64 reduce(add) -> f32 {
        %q = loop.load %q_b[%h, %i, %e] : ..          // the same 64 values every key
        %k = loop.load %k_b[%h, %j, %e] : ..
        ..
      }
      ..
    }

The query row does not depend on the key, but it is indexed by ``%e``, so it is loaded
again at every step (64 loads a key from L1 at best, 32 rows apart in a warp). Unrolled,
each ``%q`` load has indices from outside the walk and moves before it (``hoisting``):
the row is loaded once and kept in registers, and each step only reads the key's row.
The products are added in ``chains`` independent partial sums (``DOT_CHAINS``: a
single chain of dependent adds is the walk's critical path), added pairwise at the end;
``chains=1`` keeps the loop's order (``0 + p0 + p1 + ..``), bit for bit, and so does a
dot product whose step computes its operands (``_plain``).

When: the inner loop is a single-result ``add`` reduce directly in the body of a walk of
an online group (``fuse.weighs_scores``), at most ``max_extent`` steps, with no loop
inside it, and some load in it does not depend on the walk's variable (else unrolling
saves nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from deplodock.dialects.combine import ONLINE_SUM, identity_attr
from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, YieldOp
from deplodock.passes.loop.fuse import hoist_invariants, weighs_scores
from deplodock.passes.tile.analysis import depends_on
from deplodock.passes.tile.schedule.reduce import walk_column_lanes

MAX_UNROLLED_DOT = 128
"""Dot products this long or shorter are unrolled: a head dim of 128 is 128 registers of
the query row, with the walk's accumulators (64 value columns a walk) within 255. A walk
whose rows ``split-walk-columns`` will deal out to lanes (``walk_column_lanes``) keeps a
lane's share of the query row, so its dot products are unrolled up to this many times
its lanes (a head dim of 1024 over 32 lanes: 32 a lane)."""


DOT_CHAINS = 4
"""Partial sums an unrolled dot product is added in: one chain of 64 dependent adds is
64 adds' latency a key (about 256 cycles on the H200), four chains a quarter of it. The
sum is then another order of the same terms (as cuBLAS's is), not the loop's bits."""


def unrollable(inner: ForOp, walk: ForOp, max_extent: int = MAX_UNROLLED_DOT) -> bool:
    """Whether ``inner`` is a dot product of ``walk`` worth unrolling (module docstring)."""
    if inner.kinds != ["add"] or inner.parent_op() is not walk:
        return False
    if inner.extent > max_extent * _lanes(walk, inner.extent):
        return False
    if any(isinstance(o, ForOp) for o in inner.body.block.ops):
        return False
    loads = [o for o in inner.body.block.ops if isinstance(o, LoadOp)]
    memo: dict[SSAValue, bool] = {}
    iv = walk.induction_var
    return any(not any(depends_on(i, iv, memo) for i in x.indices) for x in loads)


def _lanes(walk: ForOp, dims: int) -> int:
    """The lanes ``split-walk-columns`` will deal a row of ``walk`` out to, its query row
    ``dims`` long: ``walk_column_lanes`` of the rows (the free loops around the walk) and
    the value columns (the walk's online sums but the weights')."""
    rows, parent = 1, walk.parent_op()
    while isinstance(parent, ForOp):
        if not parent.kinds:
            rows *= parent.extent
        parent = parent.parent_op()
    columns = max(1, walk.kinds.count(ONLINE_SUM) - 1)
    return walk_column_lanes(rows, dims, columns)


def unroll(inner: ForOp, chains: int = 1) -> None:
    """Replace the reduce loop ``inner`` by its steps, their values added in ``chains``
    partial sums (``add_in_chains``). One chain is the loop's own sum, bit for bit."""
    block = inner.parent_block()
    assert block is not None
    (result,) = inner.results
    zero = arith.ConstantOp(identity_attr("add", result.type))
    block.insert_op_before(zero, inner)
    terms: list[SSAValue] = []
    for step in range(inner.lower.data, inner.upper.data):
        index = arith.ConstantOp(IntegerAttr(step, IndexType()))
        block.insert_op_before(index, inner)
        mapping: dict[SSAValue, SSAValue] = {inner.induction_var: index.result}
        for op in inner.body.block.ops:
            if isinstance(op, YieldOp):
                terms.append(mapping.get(op.operands[0], op.operands[0]))
                continue
            clone = op.clone(mapping)
            if isinstance(clone, LoadOp):
                _fold_index(clone, index.result, step)
            block.insert_op_before(clone, inner)
            for old, new in zip(op.results, clone.results, strict=True):
                mapping[old] = new
        if not index.result.uses:
            block.erase_op(index)  # every use was a load's index, now in its map
    total = add_in_chains(terms, zero.result, chains, lambda op: block.insert_op_before(op, inner))
    total.name_hint = result.name_hint
    result.replace_all_uses_with(total)
    block.erase_op(inner)


def _plain(inner: ForOp) -> bool:
    """Whether a dot product's step is a product of two loads and nothing else. A step
    that computes its operands (RoPE inside the walk: ``q * cos + rotate(q) * sin``)
    keeps one chain: its walk already holds about 250 registers a thread (TinyLlama's
    decoder layer), and three more partial sums spilled it."""
    ops = list(inner.body.block.ops)
    products = [o for o in ops if isinstance(o, arith.MulfOp)]
    return len(products) == 1 and all(isinstance(o, LoadOp | arith.MulfOp | YieldOp) for o in ops)


def add_in_chains(terms: list[SSAValue], zero: SSAValue, chains: int, insert) -> SSAValue:
    """The sum of ``terms``: term ``i`` added to chain ``i % chains`` (each starting at
    ``zero``), the chains then added pairwise, ``((c0 + c1) + (c2 + c3))``; each new add
    goes to ``insert``. (``split-walk-columns`` adds a lane's share of a dot product so.)"""
    totals: list[SSAValue] = [zero] * max(1, min(chains, len(terms)))
    for i, term in enumerate(terms):
        add = arith.AddfOp(totals[i % len(totals)], term)
        insert(add)
        totals[i % len(totals)] = add.result
    while len(totals) > 1:
        pairs = []
        for first, second in zip(totals[::2], totals[1::2], strict=False):
            add = arith.AddfOp(first, second)
            insert(add)
            pairs.append(add.result)
        totals = pairs + (totals[-1:] if len(totals) % 2 else [])
    return totals[0]


def _fold_index(load: LoadOp, value: SSAValue, step: int) -> None:
    """Write ``value`` (the constant ``step``) into ``load``'s map instead of passing it,
    so the listing reads ``%q_b[%a0, 3]``."""
    if not any(v is value for v in load.indices):
        return
    kept = [v for v in load.indices if v is not value]
    dims = []
    for v in load.indices:
        if v is value:
            dims.append(AffineExpr.constant(step))
        else:
            dims.append(AffineExpr.dimension(kept.index(v)))
    old = load.map.data
    load.properties["map"] = AffineMapAttr(
        AffineMap(len(kept), 0, tuple(r.replace_dims_and_symbols(dims, []) for r in old.results))
    )
    load.operands = [load.buffer, *kept]


@dataclass(frozen=True)
class UnrollDots(ModulePass):
    """Unroll the short dot products of attention walks and hoist what they share."""

    name = "unroll-dots"

    max_extent: int = MAX_UNROLLED_DOT
    """Dot products this long or shorter are unrolled (0: none)."""

    chains: int = DOT_CHAINS
    """Independent partial sums a dot product is added in (1: the loop's order, bit for
    bit)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        for kernel in [k for k in op.walk() if isinstance(k, KernelOp)]:
            walks = [w for w in kernel.walk() if isinstance(w, ForOp) and weighs_scores(w)]
            changed = False
            for walk in walks:
                for inner in [o for o in walk.body.block.ops if isinstance(o, ForOp)]:
                    if unrollable(inner, walk, self.max_extent):
                        unroll(inner, self.chains if _plain(inner) else 1)
                        changed = True
            if changed:
                hoist_invariants(kernel, set(kernel.input_buffers))
