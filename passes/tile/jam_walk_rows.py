"""``jam-walk-rows``: a thread of an attention walk keeps ``R`` query rows, so each key and
value element it reads from a staged chunk serves ``R`` rows.

After ``batch-walk-steps`` a walk's thread keeps one query row (its lane's share) and, for
every key of a staged chunk, reads the key's and the value's share from shared memory for
that one row: one shared load an FMA. On the H200 that load bounds the walk (Nsight
Compute, ``docs/bench/h200-2026-12-04-s21`` call 6: head dim 128, S=2048, the L1/shared
pipe 93% busy, the FMA pipe 25%). Flash attention's answer is a register tile over the
queries: this pass makes the row axis of the block (``%a1_r``, the rows packed in a
block) ``R`` times shorter and gives each thread rows ``R * %a1_r + rho`` (``rho < R``),
copying everything that depends on the row (the query row's loads, the scores, the
causal mask, the online groups, the stores) once a row, while what does not (the staged
chunks, the keys' and values' loads, the key indices, the chunk loop's ``below`` limit)
is shared::

    %max, %sum, %acc.. = loop.for %k .. reduce(online_max, online_sum..) {
      %s = score(q(%a1), k(%k))   %v.. = v(%k) ..   loop.yield %s, %one, %v.. }

    %max, %sum, %acc.., %max_1, %sum_1, %acc_1.. = loop.for %k ..
        reduce(online_max, online_sum.., online_max, online_sum..) {
      %v.. = v(%k)  %s = score(q(%a1), k(%k))  %s_1 = score(q(%a1 + 1), k(%k)) ..
      loop.yield %s, %one, .., %s_1, %one, .. }

Each row's online group is its own group of the loop's clause (``combine.groups``), so the
interpreters, the race checker and the emitter merge them as before; the block's rows,
and so its staged chunks and its causal ``reach``, are the same rows. ``rows`` is the
number of rows a thread keeps (0: ``schedule.reduce.walk_rows`` decides, 2 for head dims
of 128 and more, whose lanes ``split-walk-columns`` doubled and whose blocks
``blockify-launch`` packed twice the rows for it; 1 leaves every walk as it is). H200
(``docs/bench/h200-2026-12-04-s21``, call 9): Qwen2.5-7B's attention at S=512 211 ->
170 us, head dim 128 S=2048 1424 -> 1066, head dim 1024 251 -> 228.

Which kernels: a weighted walk (``analysis.weighted_walk``) after ``blockify-launch``, its
rows a thread axis (a thread axis no ``tile.combine`` runs across) whose extent ``R``
divides, whose ops depending on the row are plain ops, loads, stores, ``tile.combine``s
and reduce loops (not an ``scf.if``: a guarded launch is left alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.passes.tile.analysis import scheduled_walk, walk_head, weighted_walk
from deplodock.passes.tile.schedule.reduce import walk_rows
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def row_axis(kernel: tile.KernelOp, rows: int) -> SSAValue | None:
    """The thread axis of ``kernel``'s rows: a thread axis no ``tile.combine`` runs across
    (the lanes' is), of an extent ``rows`` divides into more than one thread."""
    lanes = {o.axis for o in kernel.walk() if isinstance(o, tile.CombineOp)}
    found = [
        arg
        for arg, extent, binding in kernel.axes
        if binding == "thread" and arg not in lanes and extent % rows == 0 and extent > rows
    ]
    return found[0] if len(found) == 1 else None


def _dependent(kernel: tile.KernelOp, row: SSAValue) -> set[Operation]:
    """The ops of ``kernel`` computed from ``row``: reading it or a value computed from it,
    or (an op with regions) holding such an op. The axis's own uses count as reading it."""
    values = {row}
    ops: set[Operation] = set()
    changed = True
    while changed:
        changed = False
        for op in kernel.body.walk():
            if op in ops:
                continue
            inner = op.regions and any(o in ops for o in op.walk() if o is not op)
            if inner or any(v in values for v in op.operands):
                ops.add(op)
                values.update(op.results)
                changed = True
    return ops


def _jammable(ops: set[Operation]) -> bool:
    """Every op with regions among ``ops`` is a reduce loop (widened) or a loop without
    results (copied whole)."""
    for op in ops:
        if op.regions and not isinstance(op, loop.ForOp | tile.StridedForOp):
            return False
    return True


def _jam(block: Block, dependent: set[Operation], maps: list[dict[SSAValue, SSAValue]]) -> None:
    """Copy ``block``'s ops that depend on the row once for each further row (``maps[r]``:
    the row ``r + 1``'s value of each original value), in place: the original is row 0's."""
    for op in list(block.ops):
        if op not in dependent:
            continue
        if isinstance(op, loop.YieldOp):
            operands = list(op.operands)
            more = [m.get(v, v) for m in maps for v in operands]
            Rewriter.replace_op(op, loop.YieldOp(*operands, *more))
        elif op.regions and op.results:
            _jam(op.body.block, dependent, maps)
            _widen(op, len(maps) + 1, maps)
        else:
            after = op
            for m in maps:
                copy = op.clone(value_mapper=m)
                Rewriter.insert_op(copy, InsertPoint.after(after))
                after = copy
                for old, new in zip(op.results, copy.results, strict=True):
                    m[old] = new
                    new.name_hint = old.name_hint


def _widen(walk, rows: int, maps: list[dict[SSAValue, SSAValue]]) -> None:
    """``walk`` (a reduce loop whose body now yields every row's values) with its clause
    repeated for each row; its results ``r * n + i`` are row ``r``'s ``i``-th."""
    n = len(walk.results)
    kinds, types = walk.kinds * rows, [r.type for r in walk.results] * rows
    body = Rewriter.move_region_contents_to_new_regions(walk.body)
    if isinstance(walk, tile.StridedForOp):
        new = tile.StridedForOp(
            walk.start, walk.upper.data, walk.step.data, body, kinds, types, walk.limit
        )
    else:
        new = loop.ForOp(walk.lower.data, walk.upper.data, body, kinds, types, walk.limit)
    new.attributes.update(walk.attributes)
    for name in ("unroll", "vector"):
        if name in walk.properties:
            new.properties[name] = walk.properties[name]
    Rewriter.insert_op(new, InsertPoint.before(walk))
    for i, old in enumerate(walk.results):
        new.results[i].name_hint = old.name_hint
        old.replace_all_uses_with(new.results[i])
        for r, m in enumerate(maps, start=1):
            m[new.results[i]] = new.results[r * n + i]
            new.results[r * n + i].name_hint = old.name_hint
    Rewriter.erase_op(walk)


def jam_rows(op: tile.KernelOp, rows: int) -> bool:
    """Give each thread of ``op``'s walk ``rows`` query rows (the module); False where the
    kernel is not one the pass takes."""
    if rows <= 1 or not weighted_walk(op) or scheduled_walk(op):
        return False
    axis = row_axis(op, rows)
    if axis is None:
        return False
    dependent = _dependent(op, axis)
    if not _jammable(dependent):
        return False
    rewriter = Rewriter()
    block = op.body.block
    # Row 0 of a thread is R * %a1_r (the original ops, reading it); the others R * %a1_r + r.
    d0 = AffineExpr.dimension(0)
    first = apply_op(d0 * rows, [axis], axis.name_hint or "a")
    rewriter.insert_op(first, InsertPoint.at_start(block))
    axis.replace_uses_with_if(first.result, lambda use: use.operation is not first)
    maps: list[dict[SSAValue, SSAValue]] = []
    after: Operation = first
    for r in range(1, rows):
        other = apply_op(d0 * rows + r, [axis], axis.name_hint or "a")
        rewriter.insert_op(other, InsertPoint.after(after))
        after = other
        maps.append({first.result: other.result})
    _jam(block, dependent, maps)
    axes = [(e // rows if a is axis else e, b) for a, e, b in op.axes]
    body = rewriter.move_region_contents_to_new_regions(op.body)
    new = tile.KernelOp(op.sym_name.data, axes, list(op.inputs), [r.type for r in op.results], body)
    new.attributes.update(op.attributes)
    rewriter.replace_op(op, new)
    return True


@dataclass(frozen=True)
class JamWalkRows(ModulePass):
    """Give each thread of an attention walk several query rows (see the module)."""

    name = "jam-walk-rows"

    rows: int = 0
    """Query rows a thread keeps (0: ``walk_rows`` decides; 1 leaves every walk as it is)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose SMs ``walk_rows`` keeps busy."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        if self.rows < 0:
            raise DiagnosticException(f"jam-walk-rows: rows={self.rows} must not be negative")
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            jam_rows(kernel, self.rows or planned_rows(kernel, target))


def planned_rows(kernel: tile.KernelOp, target: Target | None = None) -> int:
    """``walk_rows`` for ``kernel``'s walk (``analysis.walk_head``: its rows and head
    dim), 1 for a walk whose head dim is not dealt to lanes."""
    head = walk_head(kernel)
    return walk_rows(*head, target) if head else 1
