"""Analyses the tile passes share: what a kernel's loops and loads are (contractions,
reduces reading only inputs, operands stored both ways, refilled slabs) and which
schedule decisions it already carries. Read-only functions of the IR; no pass imports
another pass for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IndexType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.traits import is_side_effect_free

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import (
    LinearForm,
    apply_op,
    expr_linear_form,
    linear_form,
)
from deplodock.dialects.combine import ONLINE_MAX
from deplodock.passes.tile.schedule.reduce import WEIGHED_ACCUMULATORS


def refilled_stages(kernel: tile.KernelOp) -> list[tuple[loop.ForOp, list[tile.StageOp]]]:
    """Each top-level loop of ``kernel`` with the stages at the top of its body."""
    found = []
    for op in kernel.body.block.ops:
        if isinstance(op, loop.ForOp):
            stages = [s for s in op.body.block.ops if isinstance(s, tile.StageOp)]
            if stages:
                found.append((op, stages))
    return found


def top_level_reduces(kernel: tile.KernelOp) -> list[loop.ForOp]:
    return [op for op in kernel.body.block.ops if isinstance(op, loop.ForOp) and op.is_reduce]


def axes_used(value: SSAValue, kernel: tile.KernelOp) -> set[SSAValue]:
    """The kernel axes an index value is computed from."""
    if kernel.axis_of(value) is not None:
        return {value}
    owner = value.owner
    if isinstance(owner, Operation):
        return {a for operand in owner.operands for a in axes_used(operand, kernel)}
    return set()


def is_contraction(kernel: tile.KernelOp, reduces: list[loop.ForOp]) -> bool:
    """Whether a reduce loop loads an element that does not depend on every axis: an
    input shared between outputs, as a matmul's operands are."""
    axes = {arg for arg, _, _ in kernel.axes}
    for reduce in reduces:
        for load in reduce.walk():
            if isinstance(load, loop.LoadOp):
                used = {a for i in load.indices for a in axes_used(i, kernel)}
                if used != axes:
                    return True
    return False


def outside_values(op: Operation) -> list[SSAValue]:
    """Values ``op``'s regions use but do not define."""
    inside = {id(o) for o in op.walk()}
    seen: dict[int, SSAValue] = {}
    for inner in op.walk():
        for value in inner.operands:
            owner = value.owner
            defining = owner.parent_op() if isinstance(owner, Block) else owner
            if defining is None or id(defining) not in inside:
                seen.setdefault(id(value), value)
    return list(seen.values())


def reads_only_inputs(kernel: tile.KernelOp, reduce: loop.ForOp) -> bool:
    """A top-level reduce reading only axes, input buffers and constants."""
    args = set(kernel.body.block.args[: kernel.num_axes + len(kernel.inputs)])
    for value in outside_values(reduce):
        if value in args:
            continue
        if not isinstance(value.owner, arith.ConstantOp):
            return False
    return reduce.lower.data == 0


def prelude(kernel: tile.KernelOp, reduce: loop.ForOp) -> list[Operation] | None:
    """The top-level ops of ``kernel`` that compute what ``reduce`` reads from outside it,
    in block order, when they are all loads of input buffers and side-effect-free ops
    without regions, ending at the axes, inputs and constants (attention's query row,
    hoisted before its walk by ``unroll-dots``); None if anything else is read, or the
    reduce does not start at 0. ``[]`` is ``reads_only_inputs``."""
    block = kernel.body.block
    args = set(block.args[: kernel.num_axes + len(kernel.inputs)])
    found: set[Operation] = set()
    stack = list(outside_values(reduce))
    while stack:
        value = stack.pop()
        owner = value.owner
        if value in args or owner in found:
            continue
        if not isinstance(owner, Operation) or owner.parent_block() is not block:
            return None
        plain = isinstance(owner, loop.LoadOp) or is_side_effect_free(owner)
        if owner.regions or not plain:
            return None
        found.add(owner)
        stack.extend(owner.operands)
    if reduce.lower.data != 0:
        return None
    return [o for o in block.ops if o in found]


def register_tile_of(kernel: tile.KernelOp) -> tuple[int, int] | None:
    """``(TM, TN)`` when ``register-tile`` tiled this kernel, else None."""
    schedule = tile.schedule_of(kernel)
    return schedule.thread_tile if tile.is_register_tiled(kernel) else None  # type: ignore[union-attr]


def depends_on(value: SSAValue, axis: SSAValue, memo: dict[SSAValue, bool]) -> bool:
    """Whether ``value`` is computed from ``axis`` (a loop's results: through its body)."""
    if value is axis:
        return True
    if value in memo:
        return memo[value]
    memo[value] = False
    owner = value.owner
    found = isinstance(owner, Operation) and any(
        depends_on(o, axis, memo) for inner in owner.walk() for o in inner.operands
    )
    memo[value] = found
    return found


def shares_loads_across(reduces: list[loop.ForOp], axis: SSAValue) -> bool:
    """Whether some load of a reduce loop does not depend on ``axis``: copies of the axis
    would share it (``w[k, n]`` across the rows ``m``)."""
    memo: dict[SSAValue, bool] = {}
    for reduce in reduces:
        for load in reduce.walk():
            if isinstance(load, loop.LoadOp) and not any(
                depends_on(i, axis, memo) for i in load.indices
            ):
                return True
    return False


def indexes_linearly(load: loop.LoadOp) -> bool:
    """Whether every index of ``load`` is linear in the values it is computed from
    (``linear_form``): what ``stage_k_chunks`` needs to stage the load's slab."""
    forms = [linear_form(i) for i in load.indices]
    if any(form is None for form in forms):
        return False
    return all(expr_linear_form(e, forms) is not None for e in load.map.data.results)  # type: ignore[arg-type]


def walks_columns(kernel: tile.KernelOp, reduce: loop.ForOp) -> bool:
    """Whether ``reduce`` reads down columns: every load that moves with its iterations
    has its contiguous (last) index on the kernel's innermost axis and off the loop's
    induction variable (``x.sum(1)`` of ``x[b, r, c]``): consecutive outputs read
    consecutive addresses, and each iteration moves a whole row on. Threads then belong
    on the outputs, not on the row (``schedule/reduce.py``). A load that no output axis
    indexes is the same for consecutive outputs (a matrix-vector product's vector,
    ``x[k]`` of ``x @ W``): one broadcast read a warp, whatever its layout."""
    if not kernel.axes:
        return False
    axis = kernel.axes[-1][0]
    iv = reduce.induction_var
    on_iv: dict[SSAValue, bool] = {}
    on_axis: dict[SSAValue, bool] = {}
    moving = False
    for load in reduce.walk():
        if not isinstance(load, loop.LoadOp) or not load.map.data.results:
            continue
        walks = [depends_on(i, iv, on_iv) for i in load.indices]
        if not any(walks):
            continue
        if not any(depends_on(i, axis, on_axis) for i in load.indices):
            continue  # the same element for every output along the axis: a broadcast
        moving = True
        last = load.map.data.results[-1].used_dims()
        if any(walks[d] for d in last):
            return False
        if not any(depends_on(load.indices[d], axis, on_axis) for d in last):
            return False
    return moving


def stored_both_ways(reduces: list[loop.ForOp]) -> bool:
    """Whether the operands of the reduce loops lie both ways in memory: the contiguous
    (last) index of some load walks K (``x[m, k]``: its K chunk slab is stored transposed,
    filled by register prefetch) and of another does not (``w[k, n]``: stored in the
    source's order, filled by cp.async). The cost model has tiles for such products
    (``torch.matmul``'s) of their own (``Candidate.mixed``). Only when every such load
    indexes linearly (``linear_form``), as ``stage-inputs`` needs to stage its slab
    (``stage_k_chunks``): attention's P.V reads
    a shared K/V head as ``v[h floordiv 8, ..]`` (grouped-query), which stays in global
    memory, and its loop is no mixed rotation."""
    along_k: set[bool] = set()
    for reduce in reduces:
        memo: dict[SSAValue, bool] = {}
        iv = reduce.induction_var
        for load in reduce.walk():
            if not isinstance(load, loop.LoadOp) or not load.map.data.results:
                continue
            walks = [depends_on(i, iv, memo) for i in load.indices]
            if any(walks):
                if not indexes_linearly(load):
                    return False
                last = load.map.data.results[-1].used_dims()
                along_k.add(any(walks[d] for d in last))
    return along_k == {True, False}


def is_chunked(reduce: loop.ForOp) -> bool:
    """Whether ``reduce`` is already a K-outer loop: its body is one inner reduce loop (a
    ``loop.for``, or a walk's ``tile.strided_for``: ``chunk-walk``)."""
    ops = list(reduce.body.block.ops)
    return len(ops) == 2 and isinstance(ops[0], loop.LoopBase) and ops[0].is_reduce


def is_pipelined(for_op) -> bool:
    return tile.PIPELINED in for_op.attributes


def weighted_walk(kernel: tile.KernelOp) -> bool:
    """Whether ``kernel``'s top level walks a row with an online group of many values
    (attention's ``ten.softmax_sum``: ``schedule.reduce.WEIGHED_ACCUMULATORS`` or more)."""
    return any(
        isinstance(op, loop.LoopBase)
        and ONLINE_MAX in op.kinds
        and len(op.kinds) >= WEIGHED_ACCUMULATORS
        for op in kernel.body.block.ops
    )


def walk_head(kernel: tile.KernelOp) -> tuple[int, int] | None:
    """``(rows, head dim)`` of ``kernel``'s top-level attention walk when its rows' head
    dim is dealt to lanes (``split-walk-columns``: a ``tile.combine`` across the lanes
    inside the walk; not a walk whose keys are split over threads, combined after it):
    the rows every axis but the lanes', the head dim a thread's value columns (its online
    group's sums but the weights') times the lanes. None otherwise."""
    for op in kernel.body.block.ops:
        if not (isinstance(op, loop.LoopBase) and ONLINE_MAX in op.kinds):
            continue
        lanes = {o.axis for o in op.walk() if isinstance(o, tile.CombineOp)}
        if len(lanes) != 1:
            return None
        (lane,) = lanes
        width = next((e for a, e, _ in kernel.axes if a is lane), None)
        if width is None:
            return None
        rows = math.prod(e for _, e, _ in kernel.axes) // width
        return rows, (len(op.kinds) - 2) * width
    return None


def chunk_loop(reduce: loop.LoopBase, chunk: int, rewriter, make_inner, part: str):
    """Rewrite the reduce loop ``reduce`` (from 0 to ``upper``) into an outer
    ``loop.for %k_o`` over ``ceil(upper / chunk)`` chunks whose body is the inner loop
    ``make_inner(body)`` over one chunk, its iterations ``%k = %k_o * chunk + %k_i``
    (computed first in the body), each accumulator kind kept; the inner results are named
    ``<name><part>``. ``chunk-matmul-k``'s K chunks and ``chunk-walk``'s chunks of keys.
    Returns (the outer loop, the inner loop, ``%k``)."""
    name = reduce.induction_var.name_hint or "k"
    types = [r.type for r in reduce.results]
    inner_body = rewriter.move_region_contents_to_new_regions(reduce.body)
    old_iv = inner_body.block.args[0]
    outer_body = Block(arg_types=[IndexType()])
    outer_iv = outer_body.args[0]
    outer_iv.name_hint = f"{name}_o"
    inner_iv = rewriter.insert_block_argument(inner_body.block, 0, IndexType())
    inner_iv.name_hint = f"{name}_i"
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    index = apply_op(d0 * chunk + d1, [outer_iv, inner_iv], name)
    inner_body.block.insert_op_before(index, inner_body.block.first_op)
    old_iv.replace_all_uses_with(index.result)
    rewriter.erase_block_argument(old_iv)
    inner = make_inner(inner_body)
    inner.unroll = reduce.unroll
    for new, old in zip(inner.results, reduce.results, strict=True):
        new.name_hint = f"{old.name_hint}{part}" if old.name_hint else None
    outer_body.add_ops([inner, loop.YieldOp(*inner.results)])
    extent = reduce.upper.data  # type: ignore[attr-defined]
    outer = loop.ForOp(0, -(-extent // chunk), Region(outer_body), reduce.kinds, types)
    outer.attributes.update(reduce.attributes)
    for new, old in zip(outer.results, reduce.results, strict=True):
        new.name_hint = old.name_hint
    rewriter.replace(reduce, outer)
    return outer, inner, index.result


def minus_infinity(value: SSAValue) -> bool:
    """Whether ``value`` is the constant -inf."""
    owner = value.owner
    return (
        isinstance(owner, arith.ConstantOp)
        and isinstance(owner.value, FloatAttr)
        and owner.value.value.data == -math.inf
    )


def conjuncts(flag: SSAValue) -> list[SSAValue]:
    """The flags whose conjunction ``flag`` is (split at ``arith.andi``)."""
    if isinstance(flag.owner, arith.AndIOp):
        return [*conjuncts(flag.owner.lhs), *conjuncts(flag.owner.rhs)]
    return [flag]


def score_conditions(score: SSAValue) -> list[SSAValue]:
    """The flags that must all hold for ``score`` not to be masked to -inf: the
    conditions of a nest of ``select(cond, s, -inf)``, each split into its conjuncts
    (Hugging Face's mask: ``key <= query and cumsum[key] == cumsum[query]``)."""
    found = []
    while isinstance(score.owner, arith.SelectOp) and minus_infinity(score.owner.rhs):
        found.extend(conjuncts(score.owner.cond))
        score = score.owner.lhs
    return found


def score_masks(score: SSAValue) -> list[arith.CmpiOp]:
    """The comparisons among ``score_conditions(score)``."""
    return [f.owner for f in score_conditions(score) if isinstance(f.owner, arith.CmpiOp)]


def causal_walk(kernel: tile.KernelOp) -> bool:
    """Whether ``kernel``'s top-level attention walk masks its scores by comparing the
    key it walks with an index of the kernel's axes (a causal mask, ``key <= query``; not
    a ragged end's ``key < 100``): its blocks of rows then attend to different numbers of
    keys (``skip-masked-chunks``)."""
    for op in kernel.body.block.ops:
        if not isinstance(op, loop.LoopBase) or ONLINE_MAX not in op.kinds:
            continue
        yielded = op.body.block.last_op
        if not isinstance(yielded, loop.YieldOp):
            continue
        memo: dict[SSAValue, bool] = {}
        for mask in score_masks(yielded.operands[op.kinds.index(ONLINE_MAX)]):
            sides = [depends_on(v, op.induction_var, memo) for v in (mask.lhs, mask.rhs)]
            if sides.count(True) != 1:
                continue
            other = mask.rhs if sides[0] else mask.lhs
            if axes_used(other, kernel):
                return True
    return False


# --- an attention walk's parts (split-walk-columns, skip-masked-chunks, tile-walk) ---

# a causal mask's key <= row + adjust, per comparison: (predicate with the key on the left, adjust)
KEY_LEFT = {"sle": 0, "ule": 0, "slt": -1, "ult": -1}
KEY_RIGHT = {"sge": 0, "uge": 0, "sgt": -1, "ugt": -1}


def batch_weight(score: SSAValue, top: SSAValue, one: SSAValue) -> list[Operation]:
    """The ops weighing a batch's ``score`` against the batch's maximum ``top``:
    ``score == top ? 1 : exp(score - top)`` (a batch of -inf scores weighs each key 1, as
    the online rule's one-key step does); the weight is the last op's result. A batch of
    ``batch-walk-steps`` and a chunk of ``tile-walk`` are partials of the online group."""
    same = arith.CmpfOp(score, top, "oeq")
    diff = arith.SubfOp(score, top)
    exp = mathd.ExpOp(diff.result)
    return [same, diff, exp, arith.SelectOp(same.result, one, exp.result)]


WALK_MARK = "tiled_walk"
"""The attribute ``tile-walk`` leaves on a kernel it scheduled whole: the other walk passes
(and the stages') keep off it."""


def scheduled_walk(kernel: tile.KernelOp) -> bool:
    """Whether ``tile-walk`` scheduled ``kernel`` (``WALK_MARK``)."""
    return WALK_MARK in kernel.attributes


def causal_bounds(score: SSAValue) -> list[tuple[SSAValue, LinearForm, LinearForm, int]]:
    """Each condition of ``score``'s ``select(.., -inf)`` nest that compares two index
    forms as ``key <= row + adjust`` (either way round, strict or not): ``(the condition,
    the key's linear form, the row's, adjust)``, each side through an ``index_cast``."""
    found = []
    for flag in score_conditions(score):
        mask = flag.owner
        if not isinstance(mask, arith.CmpiOp):
            continue
        name = arith.CMPI_COMPARISON_OPERATIONS[mask.predicate.value.data]
        if name in KEY_LEFT:
            key, row, adjust = mask.lhs, mask.rhs, KEY_LEFT[name]
        elif name in KEY_RIGHT:
            key, row, adjust = mask.rhs, mask.lhs, KEY_RIGHT[name]
        else:
            continue
        key_form, row_form = index_form(key), index_form(row)
        if key_form is not None and row_form is not None:
            found.append((flag, key_form, row_form, adjust))
    return found


def index_form(value: SSAValue) -> LinearForm | None:
    """The linear form of an index value, through an ``index_cast`` to an integer."""
    if isinstance(value.owner, arith.IndexCastOp):
        value = value.owner.input
    return linear_form(value)


def split_last(access: Operation) -> tuple[AffineExpr | None, int] | None:
    """A load's or store's last index as (its non-constant part, its constant): ``j``
    is ``(None, j)``, ``%a0 * 64 + j`` (the output's heads side by side) is
    ``(%a0 * 64, j)``; None for anything else."""
    if not isinstance(access, loop.LoadOp | loop.StoreOp):
        return None
    last = access.map.data.results[-1]
    if isinstance(last, AffineConstantExpr):
        return None, last.value
    if isinstance(last, AffineBinaryOpExpr) and last.kind == AffineBinaryOpKind.Add:
        if isinstance(last.rhs, AffineConstantExpr):
            return last.lhs, last.rhs.value
    return last, 0


def last_constant(access: Operation) -> int | None:
    """The column a load or store reads or writes: its last index's constant."""
    split = split_last(access)
    return None if split is None else split[1]


def same_base(accesses: list[Operation]) -> bool:
    """Whether the accesses differ only in their last index's constant (the column)."""
    bases = []
    for access in accesses:
        split = split_last(access)
        if split is None:
            return False
        bases.append((access.buffer, tuple(access.indices), access.map.data.results[:-1], split[0]))  # type: ignore[attr-defined]
    return all(b == bases[0] for b in bases)


@dataclass
class WalkDot:
    """The dot product a walk's score is made of: its root value, its products by
    element, and the adds of its tree."""

    root: SSAValue
    products: dict[int, arith.MulfOp]
    adds: list[arith.AddfOp]


def walk_dot(root: SSAValue, walk: loop.ForOp) -> WalkDot | None:
    """The tree of adds under ``root`` whose leaves are products ``q_i * k_i`` (a load
    from outside the walk, one from inside, both indexed by ``i`` last) and zeros."""
    products: dict[int, arith.MulfOp] = {}
    adds: list[arith.AddfOp] = []
    stack = [root]
    while stack:
        value = stack.pop()
        owner = value.owner
        if value is not root and not isinstance(owner, arith.ConstantOp):
            if len(list(value.uses)) != 1:
                return None  # a partial sum or product used elsewhere: keep the dot whole
        if isinstance(owner, arith.AddfOp) and owner.parent_op() is walk:
            adds.append(owner)
            stack += [owner.lhs, owner.rhs]
        elif isinstance(owner, arith.MulfOp) and owner.parent_op() is walk:
            q, k = owner.lhs.owner, owner.rhs.owner
            if not isinstance(q, loop.LoadOp) or not isinstance(k, loop.LoadOp):
                return None
            if q.parent_op() is walk or k.parent_op() is not walk:
                return None
            i = last_constant(q)
            if i is None or i != last_constant(k) or i in products:
                return None
            products[i] = owner
        elif isinstance(owner, arith.ConstantOp) and owner.value.value.data == 0.0:
            continue
        else:
            return None
    return WalkDot(root, products, adds) if products else None


def score_dot(walk: loop.ForOp) -> WalkDot | None:
    """The dot product under the walk's score (through the ops between, which use it
    once): the first add whose tree is a dot."""
    yielded = walk.body.block.last_op
    assert isinstance(yielded, loop.YieldOp)
    stack = [yielded.operands[walk.kinds.index(ONLINE_MAX)]]
    seen = 0
    while stack and seen < 16:
        value = stack.pop()
        seen += 1
        owner = value.owner
        if isinstance(owner, arith.AddfOp):
            found = walk_dot(value, walk)
            if found is not None:
                return found
        if isinstance(owner, Operation) and owner.parent_op() is walk:
            stack += list(owner.operands)
    return None


def column_stores(walk: loop.ForOp) -> dict[int, list[Operation]] | None:
    """Per value column ``j``: the ops after the walk that make its store (the ops
    that use ``acc_j``, up to the store indexed by ``j`` last), or None when a column's
    value goes anywhere else."""
    block = walk.parent_block()
    assert block is not None
    found: dict[int, list[Operation]] = {}
    for j, result in enumerate(walk.results[2:]):
        chain: list[Operation] = []
        frontier = [result]
        store = None
        while frontier:
            value = frontier.pop()
            for use in value.uses:
                op = use.operation
                if op.parent_block() is not block or op in chain:
                    return None
                if isinstance(op, loop.StoreOp):
                    if store is not None or last_constant(op) != j:
                        return None
                    store = op
                elif len(op.results) == 1:
                    frontier.append(op.results[0])
                else:
                    return None
                chain.append(op)
        if store is None:
            return None
        found[j] = chain
    return found


def reindexed(access: loop.LoadOp | loop.StoreOp, lane: SSAValue, place: tuple[int, int]):
    """``access`` with its last index's constant replaced by ``stride * %u + offset``
    (``place``, ``lane_element``'s)."""
    old = access.map.data
    dims = old.num_dims
    rest, _ = split_last(access)  # type: ignore[misc]
    base, index = place
    column = AffineExpr.dimension(dims) * base + index
    results = (*old.results[:-1], column if rest is None else rest + column)
    new_map = AffineMap(dims + 1, 0, results)
    if isinstance(access, loop.LoadOp):
        new = loop.LoadOp(access.buffer, new_map, [*access.indices, lane])
        new.result.name_hint = access.result.name_hint
    else:
        new = loop.StoreOp(access.value, access.buffer, new_map, [*access.indices, lane])
    if access.is_guarded:
        new.guarded = access.guarded
    return new
