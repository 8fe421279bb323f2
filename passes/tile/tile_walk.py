"""``tile-walk``: an attention walk as two register-tiled products per chunk of keys, the
probabilities between them shared through shared memory (flash attention's SIMT form).

Today's walk (``split-walk-columns``, ``chunk-walk``, ``batch-walk-steps``,
``jam-walk-rows``) deals each query row's head dim to lanes, so every score is the lanes'
partial dot products added by shuffles. This pass instead schedules the walk, straight
after ``tileify``, as the hand-written kernel of ``docs/bench/h200-2026-12-07-s38/fa``
(H100, session 39: head dim 64 at S=1000 85 us against the walk's 134, TinyLlama's S=512
71 against 100): a block keeps ``BM`` query rows, ``BM / 4 x L`` threads; per chunk of
``BN`` keys staged in shared memory (the queries staged once)::

    %max, %sum, %acc.. = loop.for %k = 0 to S reduce(online_max, online_sum..) {
      %s = score(q[%row], k[%k]) ..  loop.yield %s, %one, v[%k, 0], .. v[%k, C-1] }

    %qs = tile.stage %q[.., %qb * BM, 0] pad 4 guarded           // the block's rows
    %m_r, %l_r, %a_r.. = loop.for %kc = 0 to S/BN reduce((online_max, online_sum..) x 4) {
      %ks = tile.stage %k[.., %kc * BN, 0] ..  %vs = tile.stage %v[..]
      %x_rc.. = loop.for %d = 0 to D reduce(add x 4 BN/L)         // scores, 4 rows x BN/L keys
                   { %qs[4 %ty + r, %d] * %ks[%tx + L c, %d] }
      %s_rc = score(%x_rc)                      // the walk's own ops: scale, masks
      %mb_r = tile.combine max (max_c %s_rc) across %tx
      %p_rc = %s_rc == %mb_r ? 1 : exp(%s_rc - %mb_r)
      %ps = tile.share %p_rc [%tx + L c, 4 %ty + r] : memref<BNx(BM+4)>
      %b_rj.. = loop.for %j = 0 to BN reduce(add x 4 C/L)        // P V, 4 rows x C/L columns
                   { %ps[%j, 4 %ty + r] * %vs[%j, col(%tx, j')] }
      loop.yield (%mb_r, sum_c %p_rc, %b_r..) for each r }
    %L_r = tile.combine add %l_r across %tx                      // a lane's sum: its keys
    store a_rj / L_r at [row r, col(%tx, j')]                    // rows past S: not stored

Thread ``(%ty, %tx)`` keeps rows ``4 %ty .. 4 %ty + 3`` of its block; for the scores it
takes keys ``%tx, %tx + L, ..`` of the chunk, for P V the head-dim columns
``split_walk_columns.lane_element`` deals it (float4 runs round the lanes). A chunk's
``(%mb_r, sum, b)`` is a partial of the online group (``combine.py``), merged into the
running one by the online rule, so the interpreters, the race checker and the emitter
need nothing new but ``tile.share``. The lanes of a row share its maximum (combined
across ``%tx`` each chunk), so their partial sums add at the end. Only the rounding
differs from the walk's: each dot is summed over the head dim in order, and a chunk's
exponents are ``exp(s - mb) * exp(mb - m)``.

Which walks: a kernel of free axes whose one top-level loop is an online group of
``2 + C`` (``split-walk-columns``' conditions: the score a dot product of a query row
loaded outside the walk and a key row inside it, both indexed by the head-dim constant
last; value ``j`` a load indexed by the key and ``j``; each column stored after the
walk), the query row's second-to-last index one of the kernel's axes, the key's the
walk's variable; a head dim whose register tile fits (``MAX_HELD``: 128 at most), and
rows enough that ``schedule.reduce.tiled_walk_plan`` finds blocks for every SM. Keys past
the end of a chunk that the walk does not divide score -inf; rows past the end are
computed and not stored. A causal walk (``key <= row + delta``) stops at the chunk of
its block's last attended key (``below``, as ``skip-masked-chunks``), its blocks of rows
the longest first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import ONLINE_MAX, ONLINE_SUM, groups
from deplodock.passes.tile.analysis import (
    WALK_MARK,
    batch_weight,
    causal_bounds,
    column_stores,
    reindexed,
    same_base,
    score_dot,
    split_last,
)
from deplodock.passes.tile.schedule.reduce import (
    TILED_WALK_BLOCKS_AN_SM,
    TILED_WALK_CHUNKS,
    TILED_WALK_LANES,
    TILED_WALK_ROWS,
    TILED_WALK_UNROLL,
    tiled_walk_plan,
)
from deplodock.passes.tile.split_walk_columns import lane_element
from deplodock.target import DEFAULT_ARCH, Target, pass_target

ROWS_A_THREAD = 4  # query rows a thread keeps (the register tile's height)
PAD = 4  # elements added to each staged row: float4 rows, a column's elements in other banks
MAX_HELD = 96  # accumulators a thread may keep (scores and outputs): head dim 128 at most


@dataclass
class _Match:
    walk: loop.ForOp
    row: SSAValue  # the kernel axis of the query rows
    q: loop.LoadOp  # a query load (element 0), k: a key load, v: value column 0's load
    k: loop.LoadOp
    v: loop.LoadOp
    dims: int  # head dim of q and k
    columns: int  # value columns
    dot_ops: set[Operation]  # the score's dot: its adds, products and key loads
    root: SSAValue  # the dot product's value
    stores: dict[int, list[Operation]]  # per column, the ops after the walk up to its store


def _axis_dim(access: loop.LoadOp, dim: int) -> SSAValue | None:
    """The value indexing dimension ``dim`` of ``access`` when the index is that value alone."""
    expr = access.map.data.results[dim]
    if not isinstance(expr, AffineDimExpr):
        return None
    return access.indices[expr.position]


def match(kernel: tile.KernelOp) -> _Match | None:
    """The walk of ``kernel`` when the pass takes it (see the module)."""
    if WALK_MARK in kernel.attributes or any(b != "free" for _, _, b in kernel.axes):
        return None
    walks = [o for o in kernel.body.block.ops if isinstance(o, loop.ForOp) and o.kinds]
    if len(walks) != 1 or ONLINE_MAX not in walks[0].kinds:
        return None
    (walk,) = walks
    kinds = walk.kinds
    if walk.lower.data != 0 or walk.limit is not None:
        return None
    if len(groups(kinds)) != 1 or kinds[1:] != [ONLINE_SUM] * (len(kinds) - 1):
        return None
    dot, stores = score_dot(walk), column_stores(walk)
    yielded = walk.body.block.last_op
    assert isinstance(yielded, loop.YieldOp)
    values = [v.owner for v in yielded.operands[2:]]
    if (
        dot is None
        or stores is None
        or not values
        or sorted(dot.products) != list(range(len(dot.products)))
    ):
        return None
    one = yielded.operands[1].owner
    if not isinstance(one, arith.ConstantOp) or one.value.value.data != 1.0:  # type: ignore[attr-defined]
        return None
    if any(
        not isinstance(v, loop.LoadOp)
        or v.parent_op() is not walk
        or split_last(v) != (split_last(values[0])[0], j)  # type: ignore[index]
        for j, v in enumerate(values)
    ) or not same_base(values):
        return None
    qs = [p.lhs.owner for p in dot.products.values()]
    ks = [p.rhs.owner for p in dot.products.values()]
    if not (same_base(qs) and same_base(ks)):
        return None
    q, k, v = dot.products[0].lhs.owner, dot.products[0].rhs.owner, values[0]
    row = _axis_dim(q, -2)
    if row is None or kernel.axis_of(row) is None:
        return None
    if _axis_dim(k, -2) is not walk.induction_var or _axis_dim(v, -2) is not walk.induction_var:
        return None
    # the slabs' origins must be block-uniform: the query rows' other indices the other
    # axes, the keys' and values' the other axes and the walk's variable (in its place)
    others = {a for a, _, _ in kernel.axes if a is not row}
    if not all(i in others or i is row for i in q.indices):
        return None
    if not all(i in others or i is walk.induction_var for a in (k, v) for i in a.indices):
        return None
    stored = [o for chain in stores.values() for o in chain if isinstance(o, loop.StoreOp)]
    if not same_base(stored):
        return None
    dot_ops: set[Operation] = {*dot.adds, *(p for p in dot.products.values()), *ks}
    return _Match(walk, row, q, k, v, len(dot.products), len(values), dot_ops, dot.root, stores)


def _depends(op: Operation, values: set[SSAValue]) -> bool:
    """Whether ``op`` (or an op nested in it) reads one of ``values`` (the caller grows
    the set with each dependent op's results, so dependence follows the block's order)."""
    return any(o in values for inner in op.walk() for o in inner.operands)


def _origin(
    access: loop.LoadOp, swap: dict[SSAValue, tuple[SSAValue, int, int]]
) -> tuple[AffineMap, list[SSAValue]]:
    """The origin of the slab ``access`` reads from: its indices with each value of
    ``swap`` replaced by ``(new value) * factor + offset``, every other by itself, and the
    last index without its constant (the head dim's element; what is left places the
    head: ``%a0 * 64`` in a ``[S, H * D]`` layout)."""
    old = access.map.data
    operands: list[SSAValue] = []
    replacement: list[AffineExpr] = []
    for value in access.indices:
        new, factor, offset = swap.get(value, (value, 1, 0))
        replacement.append(AffineExpr.dimension(len(operands)) * factor + offset)
        operands.append(new)
    rest, _ = split_last(access)  # type: ignore[misc]
    last = (
        AffineExpr.constant(0) if rest is None else rest.replace_dims_and_symbols(replacement, [])
    )
    results = [r.replace_dims_and_symbols(replacement, []) for r in old.results[:-1]]
    return AffineMap(len(operands), 0, (*results, last)), operands


@dataclass(frozen=True)
class _Plan:
    rows: int  # BM: query rows a block keeps
    chunk: int  # BN: keys a chunk
    lanes: int  # L: lanes a row group
    unroll: int = TILED_WALK_UNROLL  # the score and P V loops' #pragma unroll (0: NVCC)
    merge: str = "branch"  # how a chunk merges into the running group (TileWalk.merge)


class TileWalkPattern(RewritePattern):
    def __init__(
        self,
        plan: _Plan | None,
        target: Target,
        unroll: int = TILED_WALK_UNROLL,
        merge: str = "branch",
    ):
        self.plan = plan  # None: tiled_walk_plan decides per kernel
        self.target = target
        self.unroll = unroll
        self.merge = merge

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        found = match(op)
        if found is None:
            return
        plan = decide(op, found, self.plan, self.target, self.unroll, self.merge)
        if isinstance(plan, _Plan):
            rewriter.replace_op(op, _build(op, found, plan, self.target))


def decide(
    kernel: tile.KernelOp,
    found: _Match,
    plan: _Plan | None,
    target: Target,
    unroll: int = TILED_WALK_UNROLL,
    merge: str = "branch",
) -> _Plan | str:
    """The plan for ``kernel``'s walk (``plan``, or ``tiled_walk_plan``'s with ``unroll``
    and ``merge`` when None), or why the walk is left to the lane-split walk passes."""
    rows_total = kernel.axis_of(found.row)[0]  # type: ignore[index]
    beside = math.prod(e for a, e, _ in kernel.axes if a is not found.row)
    if plan is None:
        chosen = tiled_walk_plan(rows_total, beside, found.dims, found.columns, target)
        if chosen is None:
            fewest = min(TILED_WALK_ROWS)
            if beside * -(-rows_total // fewest) < target.sm_count:
                return (
                    f"{beside} x {rows_total} query rows make fewer blocks than the "
                    f"{target.sm_count} SMs at {fewest} rows a block"
                )
            return (
                f"no chunk of {' or '.join(map(str, TILED_WALK_CHUNKS))} keys lets "
                f"{TILED_WALK_BLOCKS_AN_SM} blocks share an SM's {target.shared_bytes} bytes "
                f"of shared memory (head dim {found.dims})"
            )
        plan = _Plan(chosen[0], chosen[1], TILED_WALK_LANES, unroll, merge)
    if plan.rows % ROWS_A_THREAD or plan.chunk % plan.lanes or plan.lanes & (plan.lanes - 1):
        raise DiagnosticException(
            f"tile-walk: rows={plan.rows} must be a multiple of {ROWS_A_THREAD}, chunk="
            f"{plan.chunk} of lanes={plan.lanes}, and lanes a power of two"
        )
    if found.columns % plan.lanes:
        return f"its {found.columns} value columns do not divide among {plan.lanes} lanes"
    held = ROWS_A_THREAD * (found.columns // plan.lanes + plan.chunk // plan.lanes)
    if held > MAX_HELD:
        return (
            f"a thread would keep {held} accumulators (head dim {found.columns}; at most "
            f"{MAX_HELD})"
        )
    return plan


def notes(module: ModuleOp, pass_: TileWalk) -> list[str]:
    """After the pass (``deplodock -v`` prints them as its notes): each walk it scheduled,
    with its plan, and each it recognised and left to the lane-split walk, with why."""
    if pass_.rows == 1:
        return []
    target = pass_target(pass_.name, pass_.arch)
    forced = pass_.forced_plan()
    found_notes = []
    for kernel in [k for k in module.walk() if isinstance(k, tile.KernelOp)]:
        name = f"@{kernel.sym_name.data}"
        plan = kernel.attributes.get(WALK_MARK)
        if isinstance(plan, StringAttr):
            found_notes.append(f"{name}: register-tiled walk, {plan.data}")
            continue
        found = match(kernel)
        if found is not None:
            why = decide(kernel, found, forced, target, pass_.unroll, pass_.merge)
            if isinstance(why, str):
                found_notes.append(f"{name}: left to the lane-split walk: {why}")
    return found_notes


def _build(kernel: tile.KernelOp, m: _Match, plan: _Plan, target: Target) -> tile.KernelOp:
    """The scheduled kernel (see the module docstring); without cp.async (before sm_80)
    each chunk is copied in place, synchronously."""
    old = kernel.body.block
    axes = [(arg, extent) for arg, extent, _ in kernel.axes]
    rows_total = kernel.axis_of(m.row)[0]  # type: ignore[index]
    keys_total = m.walk.upper.data
    bm, bn, lanes = plan.rows, plan.chunk, plan.lanes
    ty_n, per_key, per_col = bm // ROWS_A_THREAD, bn // lanes, m.columns // lanes
    f32 = m.walk.results[0].type
    index = IndexType()

    # axes: (%ty, %tx) threads, then the other axes and the row blocks as block axes
    new_axes = [(ty_n, "thread"), (lanes, "thread")]
    new_axes += [(e, "block") for a, e in axes if a is not m.row]
    row_blocks = math.ceil(rows_total / bm)
    new_axes += [(row_blocks, "block")]
    arg_types = [index] * len(new_axes) + [a.type for a in old.args[len(axes) :]]
    body = Block(arg_types=arg_types)
    ty, tx, *blocks = body.args[: len(new_axes)]
    qb = blocks[-1]
    ty.name_hint, tx.name_hint, qb.name_hint = "ty", "tx", f"{m.row.name_hint or 'row'}_b"
    mapping: dict[SSAValue, SSAValue] = {}
    others = [a for a, _ in axes if a is not m.row]
    for a, new in zip(others, blocks[:-1], strict=True):
        mapping[a] = new
        new.name_hint = a.name_hint
    for a, new in zip(old.args[len(axes) :], body.args[len(new_axes) :], strict=True):
        mapping[a] = new
        new.name_hint = a.name_hint

    def add(op: Operation) -> Operation:
        body.add_op(op)
        return op

    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    # a causal walk's blocks of rows walk different numbers of chunks: the longest first
    delta = _causal_delta(m)
    first_row = (-bm, (row_blocks - 1) * bm) if delta is not None else (bm, 0)
    rows = [
        add(
            apply_op(
                d0 * first_row[0] + first_row[1] + d1 * ROWS_A_THREAD + r,
                [qb, ty],
                m.row.name_hint or "row",
            )
        ).results[0]
        for r in range(ROWS_A_THREAD)
    ]

    # the ops before the walk: once, or once a row where they read the row (the query
    # loads of the dot are not needed: the scores read the staged rows)
    ops = list(old.ops)
    pre, post = ops[: ops.index(m.walk)], ops[ops.index(m.walk) + 1 :]
    q_loads = {
        p
        for p in (o for o in pre if isinstance(o, loop.LoadOp))
        if all(u.operation in m.dot_ops for u in p.result.uses)
    }
    row_maps = [dict(mapping) for _ in range(ROWS_A_THREAD)]
    for r, rm in enumerate(row_maps):
        rm[m.row] = rows[r]
    row_dependent: set[SSAValue] = {m.row}
    # past the last row or key a block's copies of the walk's loads (a mask's) may leave
    # their buffers: guarded, they read 0 there (those keys score -inf, those rows are
    # not stored)
    guarded_keys = keys_total % bn != 0
    ragged = rows_total % bm != 0 or guarded_keys
    for o in pre:
        if o in q_loads:
            continue
        if _depends(o, row_dependent):
            row_dependent.update(o.results)
            for r, rm in enumerate(row_maps):
                new = add(_guard(o.clone(rm), ragged))
                for a, b in zip(o.results, new.results, strict=True):
                    b.name_hint = f"{a.name_hint}_{r}" if a.name_hint else None
                rm.update(zip(o.results, new.results, strict=True))
        else:
            new = add(o.clone(mapping))
            mapping.update(zip(o.results, new.results, strict=True))
            for rm in row_maps:
                rm.update(zip(o.results, new.results, strict=True))

    # the block's query rows, staged once
    q_map, q_operands = _origin(
        m.q, {**{a: (mapping[a], 1, 0) for a in others}, m.row: (qb, *first_row)}
    )
    q_src = mapping[m.q.buffer]
    q_stage = tile.StageOp(
        q_src, q_map, q_operands, [bm, m.dims], pad=PAD, guarded=rows_total % bm != 0
    )
    q_stage.result.name_hint = "q_smem"
    add(q_stage)

    # the chunk loop
    chunks = math.ceil(keys_total / bn)
    kinds = ([ONLINE_MAX, ONLINE_SUM] + [ONLINE_SUM] * per_col) * ROWS_A_THREAD
    cbody = Block(arg_types=[index])
    kc = cbody.args[0]
    kc.name_hint = "kc"
    stages = {}
    for name, access in (("k_smem", m.k), ("v_smem", m.v)):
        smap, soperands = _origin(
            access, {**{a: (mapping[a], 1, 0) for a in others}, m.walk.induction_var: (kc, bn, 0)}
        )
        width = m.dims if access is m.k else m.columns
        stage = tile.StageOp(
            mapping[access.buffer], smap, soperands, [bn, width], pad=PAD, guarded=guarded_keys
        )
        if target.cp_async:  # the next chunk copied while this one is computed
            stage.buffers = IntAttr(2)
            stage.async_ = UnitAttr()
        stage.result.name_hint = name
        cbody.add_op(stage)
        stages[name] = stage.result

    def cadd(op: Operation, block: Block = cbody) -> Operation:
        block.add_op(op)
        return op

    # scores: 4 rows x BN/L keys, the head dim in order
    dbody = Block(arg_types=[index])
    d = dbody.args[0]
    d.name_hint = "d"
    q_vals, k_vals = [], []
    for r in range(ROWS_A_THREAD):
        load = loop.LoadOp(q_stage.result, AffineMap(2, 0, (d0 * ROWS_A_THREAD + r, d1)), [ty, d])
        load.result.name_hint = f"q{r}"
        q_vals.append(cadd(load, dbody).results[0])
    for c in range(per_key):
        load = loop.LoadOp(stages["k_smem"], AffineMap(2, 0, (d0 + lanes * c, d1)), [tx, d])
        load.result.name_hint = f"k{c}"
        k_vals.append(cadd(load, dbody).results[0])
    products = []
    for r in range(ROWS_A_THREAD):
        for c in range(per_key):
            products.append(cadd(arith.MulfOp(q_vals[r], k_vals[c]), dbody).results[0])
    dbody.add_op(loop.YieldOp(*products))
    dloop = loop.ForOp(0, m.dims, Region(dbody), ["add"] * len(products), [f32] * len(products))
    if plan.unroll:
        dloop.unroll = IntAttr(plan.unroll)
    cadd(dloop)
    dots = [[dloop.results[r * per_key + c] for c in range(per_key)] for r in range(ROWS_A_THREAD)]

    # each (row, key): the walk's own score ops on the dot
    wblock = m.walk.body.block
    yielded = wblock.last_op
    assert isinstance(yielded, loop.YieldOp)
    score_ops = _score_slice(yielded.operands[0], wblock, m.dot_ops)
    neg_inf = cadd(arith.ConstantOp(FloatAttr(float("-inf"), f32))).results[0]
    one = cadd(arith.ConstantOp(FloatAttr(1.0, f32))).results[0]
    keys_end = cadd(arith.ConstantOp.from_int_and_width(keys_total, index)).results[0]
    scores: list[list[SSAValue]] = []
    for r in range(ROWS_A_THREAD):
        scores.append([])
        for c in range(per_key):
            key = cadd(
                apply_op(
                    d0 * bn + d1 + lanes * c, [kc, tx], m.walk.induction_var.name_hint or "key"
                )
            ).results[0]
            sm = dict(row_maps[r])
            sm[m.walk.induction_var] = key
            sm[m.root] = dots[r][c]
            for o in score_ops:
                new = cadd(_guard(o.clone(sm), ragged))
                sm.update(zip(o.results, new.results, strict=True))
            s = sm[yielded.operands[0]]
            if guarded_keys:
                inside = cadd(arith.CmpiOp(key, keys_end, "ult")).results[0]
                s = cadd(arith.SelectOp(inside, s, neg_inf)).results[0]
            scores[r].append(s)

    # the chunk's maximum per row (across the lanes), its weights, their sums
    out: list[SSAValue] = []
    weights: list[list[SSAValue]] = []
    for r in range(ROWS_A_THREAD):
        top = scores[r][0]
        for s in scores[r][1:]:
            top = cadd(arith.MaximumfOp(top, s)).results[0]
        combined = cadd(tile.CombineOp("max", top, tx)).results[0]
        combined.name_hint = f"chunk_max_{r}"
        ws = []
        for s in scores[r]:
            weighing = batch_weight(s, combined, one)
            cbody.add_ops(weighing)
            ws.append(weighing[-1].results[0])
        weights.append(ws)
        total = ws[0]
        for w in ws[1:]:
            total = cadd(arith.AddfOp(total, w)).results[0]
        out += [combined, total]

    # every key's weight to every lane of its rows, through shared memory
    share_map = []
    share_values = []
    for r in range(ROWS_A_THREAD):
        for c in range(per_key):
            share_values.append(weights[r][c])
            share_map += [d1 + lanes * c, d0 * ROWS_A_THREAD + r]
    share = tile.ShareOp(
        share_values, AffineMap(2, 0, tuple(share_map)), [ty, tx], MemRefType(f32, [bn, bm + PAD])
    )
    share.result.name_hint = "p_smem"
    cadd(share)

    # P V: 4 rows x C/L columns, the chunk's keys in order
    pbody = Block(arg_types=[index])
    j = pbody.args[0]
    j.name_hint = "j"
    ps = []
    for r in range(ROWS_A_THREAD):
        load = loop.LoadOp(share.result, AffineMap(2, 0, (d0, d1 * ROWS_A_THREAD + r)), [j, ty])
        load.result.name_hint = f"p{r}"
        ps.append(cadd(load, pbody).results[0])
    vs = []
    for jj in range(per_col):
        stride, offset = lane_element(lanes, per_col, jj)
        load = loop.LoadOp(stages["v_smem"], AffineMap(2, 0, (d0, d1 * stride + offset)), [j, tx])
        load.result.name_hint = f"v{jj}"
        vs.append(cadd(load, pbody).results[0])
    pv = [
        cadd(arith.MulfOp(ps[r], vs[jj]), pbody).results[0]
        for r in range(ROWS_A_THREAD)
        for jj in range(per_col)
    ]
    pbody.add_op(loop.YieldOp(*pv))
    ploop = loop.ForOp(0, bn, Region(pbody), ["add"] * len(pv), [f32] * len(pv))
    if plan.unroll:
        ploop.unroll = IntAttr(plan.unroll)
    cadd(ploop)
    yields: list[SSAValue] = []
    for r in range(ROWS_A_THREAD):
        yields += [out[2 * r], out[2 * r + 1], *ploop.results[r * per_col : (r + 1) * per_col]]
    cbody.add_op(loop.YieldOp(*yields))
    reach = None
    if delta is not None:  # the chunks holding a key some row of the block attends to
        last_key = d0 * first_row[0] + first_row[1] + (bm - 1) + delta
        reach = add(apply_op(last_key // bn + 1, [qb], "reach")).results[0]
    chunk_loop = loop.ForOp(0, chunks, Region(cbody), kinds, [f32] * len(kinds), reach)
    if target.cp_async:
        chunk_loop.attributes[tile.PIPELINED] = UnitAttr()
    if plan.merge == "select":
        chunk_loop.attributes[tile.SELECT_MERGE] = UnitAttr()
    add(chunk_loop)

    # after the walk: each row's sum across its lanes, then the lane's columns stored
    rows_end = add(arith.ConstantOp.from_int_and_width(rows_total, index)).results[0]
    width = 2 + per_col
    chained = {o for chain in m.stores.values() for o in chain}
    for r in range(ROWS_A_THREAD):
        group = chunk_loop.results[r * width : (r + 1) * width]
        total = add(tile.CombineOp("add", group[1], tx)).results[0]
        total.name_hint = f"sum_{r}"
        # the row's maximum (every lane's) and sum stand for the walk's; the ops after
        # the walk that no column's store needs alone (a fully masked row's test) once a row
        row_maps[r][m.walk.results[0]] = group[0]
        row_maps[r][m.walk.results[1]] = total
        for o in post:
            if o not in chained:
                new = add(o.clone(row_maps[r]))
                row_maps[r].update(zip(o.results, new.results, strict=True))
        inside = add(arith.CmpiOp(rows[r], rows_end, "ult")).results[0]
        then = Block()
        for jj in range(per_col):
            cm = dict(row_maps[r])
            cm[m.walk.results[2 + jj]] = group[2 + jj]
            chain = m.stores[jj]
            for o in chain:
                if isinstance(o, loop.StoreOp):
                    store = o.clone(cm)
                    moved = reindexed(store, tx, lane_element(lanes, per_col, jj))
                    store.erase()
                    if rows_total % bm:  # the branch keeps rows past the end from storing
                        moved.guarded = UnitAttr()
                    then.add_op(moved)
                else:
                    new = o.clone(cm)
                    then.add_op(new)
                    cm.update(zip(o.results, new.results, strict=True))
        then.add_op(scf.YieldOp())
        add(scf.IfOp(inside, [], Region(then)))

    new = tile.KernelOp(
        kernel.sym_name.data,
        new_axes,
        list(kernel.inputs),
        [r.type for r in kernel.results],
        Region(body),
    )
    new.attributes.update(kernel.attributes)
    causal = f", causal: chunks up to the block's last row + {delta}" if delta is not None else ""
    unrolled = f", inner loops unrolled {plan.unroll}" if plan.unroll else ""
    merged = ", merged without a branch" if plan.merge == "select" else ""
    new.attributes[WALK_MARK] = StringAttr(
        f"{bm} rows a block (4 a thread), chunks of {bn} keys, {lanes} lanes a row"
        f"{unrolled}{merged}{causal}"
    )
    return new


def _causal_delta(m: _Match) -> int | None:
    """``delta`` when the walk's score is masked to keys ``key <= row + delta`` (one of the
    conditions of its ``select(.., -inf)`` nest, the key the walk's variable and the row the
    row axis, each through an ``index_cast``, plus constants) with ``delta >= 0`` (every
    row's first key attends): a block then needs only the chunks up to its last row's
    ``row + delta``. Skipping the others drops no key any row attends to, so only a row
    with no such key at all (whose softmax is undefined: NaN in PyTorch) could differ."""
    yielded = m.walk.body.block.last_op
    assert isinstance(yielded, loop.YieldOp)
    for _, key_form, row_form, adjust in causal_bounds(yielded.operands[0]):
        if key_form[0] != {m.walk.induction_var: 1} or row_form[0] != {m.row: 1}:
            continue
        delta = row_form[1] + adjust - key_form[1]
        if delta >= 0:
            return delta
    return None


def _guard(op: Operation, ragged: bool) -> Operation:
    """``op``, a load guarded where the block's rows or keys are ragged."""
    if ragged and isinstance(op, loop.LoadOp):
        op.guarded = UnitAttr()
    return op


def _score_slice(score: SSAValue, block: Block, dot_ops: set[Operation]) -> list[Operation]:
    """The ops of ``block`` that compute ``score`` from the dot product (the dot's own ops
    left out), in block order."""
    found: set[Operation] = set()
    todo = [score.owner]
    while todo:
        op = todo.pop()
        if (
            not isinstance(op, Operation)
            or op.parent_block() is not block
            or op in found
            or op in dot_ops
        ):
            continue
        found.add(op)
        todo += [o.owner for o in op.operands]
    return [o for o in block.ops if o in found]


@dataclass(frozen=True)
class TileWalk(ModulePass):
    """Schedule attention walks as register-tiled products (see the module docstring)."""

    name = "tile-walk"

    rows: int = 0
    """Query rows a block keeps, a multiple of 4 (0: ``tiled_walk_plan`` decides, with the
    chunk; 1 leaves every walk to the other walk passes)."""
    chunk: int = 64
    """Keys a chunk, a multiple of ``lanes`` (where ``rows`` is given)."""
    lanes: int = TILED_WALK_LANES
    """Lanes a row group: its chunk's keys for the scores, its head dim for P V."""
    unroll: int = TILED_WALK_UNROLL
    """``#pragma unroll`` of the score loop (over the head dim) and the P V loop (over a
    chunk's keys); 0 leaves it to NVCC (``TILED_WALK_UNROLL`` says what was measured)."""
    merge: str = "branch"
    """How a chunk's partial merges into the running group: ``branch`` (the emitter's
    form: one multiply-add a sum where the maximum holds) or ``select`` (no branch, a
    multiply more a sum: ``tile.SELECT_MERGE``). Opt-in: timed within 1% of ``branch``
either way (session 41, an H100, three cases)."""
    arch: str = DEFAULT_ARCH
    """The target whose SMs and shared memory the planner fills."""

    def forced_plan(self) -> _Plan | None:
        """The plan the options force (``rows`` given), or None: the planner decides."""
        if not self.rows:
            return None
        return _Plan(self.rows, self.chunk, self.lanes, self.unroll, self.merge)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.rows < 0 or self.unroll < 0:
            raise DiagnosticException(
                f"tile-walk: rows={self.rows} and unroll={self.unroll} must not be negative"
            )
        if self.merge not in ("branch", "select"):
            raise DiagnosticException(f"tile-walk: merge={self.merge!r}: branch or select")
        if self.rows == 1:
            return
        target = pass_target(self.name, self.arch)
        pattern = TileWalkPattern(self.forced_plan(), target, self.unroll, self.merge)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([pattern], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
