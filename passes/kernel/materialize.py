"""``materialize``: a scheduled ``tile.kernel`` becomes a ``kernel.kernel`` of hardware
primitives.

* **Launch shape.** Block axes multiply into a 1-D grid, thread axes into a 1-D block;
  ``kernel.block_id x`` / ``kernel.thread_id x`` are decomposed back into one index per
  axis row-major (the last axis varies fastest, so it is the one consecutive threads walk
  and the one loads coalesce along): ``%a = affine.apply ((%tid floordiv stride) mod e)``.
* **Loops and memory.** ``loop.for %i = L to U`` → ``kernel.for %i = %cL to U step 1``;
  ``tile.strided_for %i = %t to N step S`` → ``kernel.for %i = %t to N step S``; loads,
  stores and yields become the kernel level's, with the same affine indices.
* **``tile.combine``** becomes the classic block reduction:

  1. a butterfly over the warp, ``w = w (op) shfl_xor(w, o)`` for o = 16, 8, 4, 2, 1
     (only the offsets below T when T < 32): every lane ends with its warp's result;
  2. if T > 32: lane 0 of each warp writes it to ``kernel.shared [threads / 32]``, one
     barrier, then every thread reads its group's T / 32 slots and combines them in slot
     order (statically unrolled; broadcast reads), so every thread holds the same bits.
     A tree over the warps would need a barrier per level. A combine inside a loop ends
     with one more barrier so that the next iteration's writes cannot overtake a slow
     thread's read.

  The combined axis must be the block's innermost thread axis (so a group of T threads
  is T consecutive lanes) and T a power of two up to 32 or a multiple of 32 above it;
  anything else is reported rather than miscompiled.

* **``tile.stage``** becomes a ``kernel.shared`` array of the slab's shape, a cooperative
  fill loop in which all threads of the block copy it, thread ``t`` taking flat elements
  ``t, t + T, ..`` (consecutive threads, consecutive addresses: coalesced; four at a time,
  ``vector 4``, where the slab and its origin keep 16-byte alignment), and a
  ``kernel.barrier`` so no thread reads the slab before every element is written. The loads
  it served read the shared array with the same indices. A transposed slab's fill reads
  the source in its order and writes each element to its stored place; a stage inside a
  loop (a matmul's K chunk) is refilled every iteration, after a barrier that lets every
  thread finish reading the previous chunk. Adjacent stages share their barriers.

* **``tile.share``** (values computed in registers that other threads read) becomes a
  ``kernel.shared`` array of its type and, in place, each thread's stores between two
  barriers (the first only inside a loop: the previous iteration's reads finish first).
  Loads of the result read the array.

* **``tile.mma``** becomes ``kernel.mma`` (the same warp-level product; ``dialects/mma.py``).

A K loop whose slabs are double-buffered is rotated by ``stage_fills.lower_buffered``
(synchronously, by register prefetch, by ``cp.async``, by both in one loop, or by TMA:
``tma_fills``).

Shared arrays are allocated at the start of the kernel body (the kernel.shared verifier
wants them at the top level), one per combine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import combine_ops
from deplodock.dialects.tile import WARP
from deplodock.passes.kernel.stage_fills import (
    DEFAULT_HELD_FILL_ELEMENTS,
    fill_loop,
    holds_fill,
    index_constant,
    lower_buffered,
    prefetch_loops,
)
from deplodock.passes.kernel.tma_fills import lower_tma
from deplodock.passes.tile.analysis import is_pipelined

MAX_GRID_X = 2**31 - 1
_D0 = AffineExpr.dimension(0)


@dataclass
class _Axis:
    """One tile axis as the flattened id sees it."""

    arg: SSAValue
    extent: int
    stride: int  # in the flattened thread or block id


def _flatten(axes: list[tuple[SSAValue, int]]) -> list[_Axis]:
    """Row-major strides: the last axis varies fastest."""
    out: list[_Axis] = []
    stride = 1
    for arg, extent in reversed(axes):
        out.append(_Axis(arg, extent, stride))
        stride *= extent
    return out[::-1]


def _decompose(axes: list[_Axis], flat: SSAValue, total: int) -> list[Operation]:
    """The per-axis index ops over ``flat``; replaces each axis's uses."""
    ops: list[Operation] = []
    for axis in axes:
        if axis.extent == 1:
            op: Operation = index_constant(0, axis.arg.name_hint)
        elif len(axes) == 1 or (axis.stride == 1 and axis.extent == total):
            axis.arg.replace_all_uses_with(flat)
            continue
        elif axis.stride * axis.extent == total:  # the outermost: no mod needed
            op = apply_op(_D0 // axis.stride, [flat], axis.arg.name_hint)
        elif axis.stride == 1:
            op = apply_op(_D0 % axis.extent, [flat], axis.arg.name_hint)
        else:
            op = apply_op((_D0 // axis.stride) % axis.extent, [flat], axis.arg.name_hint)
        ops.append(op)
        axis.arg.replace_all_uses_with(op.results[0])
    return ops


def _in_loop(op: Operation, stop: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not stop:
        if isinstance(parent, loop.ForOp | tile.StridedForOp | kernel.ForOp | scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


class _CombineLowering:
    """Expands the ``tile.combine`` ops of one kernel; owns the lane/warp ids it needs."""

    def __init__(self, tid: SSAValue | None, threads: int, axes: list[_Axis]):
        self.tid = tid
        self.threads = threads
        self.strides = {id(a.arg): a for a in axes}
        self.prologue: list[Operation] = []  # lane, warp and the shared arrays
        self._lane: SSAValue | None = None
        self._warp: SSAValue | None = None
        self._names: set[str] = set()

    def lane(self) -> SSAValue:
        if self._lane is None:
            op = apply_op(_D0 % WARP, [self.tid], "lane")  # type: ignore[list-item]
            self.prologue.append(op)
            self._lane = op.result
        return self._lane

    def warp(self) -> SSAValue:
        if self._warp is None:
            op = apply_op(_D0 // WARP, [self.tid], "warp")  # type: ignore[list-item]
            self.prologue.append(op)
            self._warp = op.result
        return self._warp

    def _shared(self, base: str, count: int, element) -> SSAValue:
        name, n = f"{base}_smem", 1
        while name in self._names:
            name, n = f"{base}_smem_{n}", n + 1
        self._names.add(name)
        op = kernel.SharedOp(name, MemRefType(element, [count]))
        op.result.name_hint = name
        self.prologue.append(op)
        return op.result

    def lower(self, op: tile.CombineOp, root: Operation, rewriter: PatternRewriter) -> None:
        axis = self.strides.get(id(op.axis))
        if axis is None:
            raise DiagnosticException(f"tile.combine: {op.axis} is not a thread axis")
        size = axis.extent
        if axis.stride != 1:
            raise DiagnosticException(
                "materialize: tile.combine across a thread axis that is not the innermost "
                "one (its threads are not consecutive lanes)"
            )
        if (size <= WARP and size & (size - 1)) or (size > WARP and size % WARP):
            raise DiagnosticException(
                f"materialize: tile.combine over {size} threads; need a power of two up to "
                f"{WARP} or a multiple of {WARP}"
            )
        kinds = op.kind_names
        bases = [r.name_hint or "acc" for r in op.results]
        ops: list[Operation] = []
        values = list(op.values)
        for offset in (16, 8, 4, 2, 1):
            if offset >= size:
                continue
            shfls = [kernel.ShflXorOp(v, offset) for v in values]
            for shfl, base in zip(shfls, bases, strict=True):
                shfl.result.name_hint = f"{base}_x{offset}"
            merge, values = combine_ops(kinds, values, [s.result for s in shfls])
            for value, base in zip(values, bases, strict=True):
                value.name_hint = f"{base}_w"
            ops += [*shfls, *merge]
        if size > WARP:
            values = self._across_warps(values, size, bases, kinds, ops)
            if _in_loop(op, root):
                ops.append(kernel.BarrierOp())
        rewriter.replace(op, ops, values)

    def _across_warps(
        self,
        values: list[SSAValue],
        size: int,
        bases: list[str],
        kinds: list[str],
        ops: list[Operation],
    ) -> list[SSAValue]:
        per_group = size // WARP
        warps = self.threads // WARP
        smems = [self._shared(b, warps, v.type) for b, v in zip(bases, values, strict=True)]
        lane, warp = self.lane(), self.warp()

        zero = index_constant(0, "c0")
        is_lane0 = arith.CmpiOp(lane, zero.result, "eq")
        is_lane0.result.name_hint = "lane0"
        stores = [
            kernel.StoreOp(v, smem, AffineMap(1, 0, (_D0,)), [warp])
            for v, smem in zip(values, smems, strict=True)
        ]
        ops += [
            zero,
            is_lane0,
            scf.IfOp(is_lane0.result, [], [*stores, scf.YieldOp()]),
            kernel.BarrierOp(),
        ]
        # Every thread reads its group's per-warp partials (broadcast reads: all threads
        # of a warp read the same slot, no bank conflict) and combines them in slot
        # order, so all threads end with the same bits, after one barrier instead of a
        # tree of them.
        first = (_D0 // per_group) * per_group if per_group != warps else None
        read: list[SSAValue] = []
        for slot in range(per_group):
            parts = []
            for smem, base in zip(smems, bases, strict=True):
                if first is None:
                    index = AffineMap(0, 0, (AffineExpr.constant(slot),))
                    part = kernel.LoadOp(smem, index, [])
                else:
                    part = kernel.LoadOp(smem, AffineMap(1, 0, (first + slot,)), [warp])
                part.result.name_hint = f"{base}_p{slot}"
                parts.append(part)
            ops += parts
            if not read:
                read = [p.result for p in parts]
                continue
            merge, read = combine_ops(kinds, read, [p.result for p in parts])
            for value, base in zip(read, bases, strict=True):
                value.name_hint = f"{base}_s{slot}"
            ops += merge
        for value, base in zip(read, bases, strict=True):
            value.name_hint = base
        return read


class MaterializeKernel(RewritePattern):
    """``tile.kernel`` → ``kernel.kernel``: ids, axis indices, combines, shared arrays."""

    def __init__(
        self, held_fill_elements: int = DEFAULT_HELD_FILL_ELEMENTS, branched_loads: bool = False
    ):
        self.held_fill_elements = held_fill_elements
        self.branched_loads = branched_loads

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        free = [str(extent) for _, extent, binding in op.axes if binding == "free"]
        if free:
            raise DiagnosticException(
                f"materialize: @{op.sym_name.data} still has free axes (extents "
                f"{', '.join(free)}); run blockify-launch first"
            )
        threads_axes = _flatten([(a, e) for a, e, b in op.axes if b == "thread"])
        block_axes = _flatten([(a, e) for a, e, b in op.axes if b == "block"])
        threads = math.prod(a.extent for a in threads_axes)
        blocks = math.prod(a.extent for a in block_axes)
        if blocks > MAX_GRID_X:
            raise DiagnosticException(
                f"materialize: @{op.sym_name.data} needs {blocks} blocks, more than the "
                f"{MAX_GRID_X} of a 1-D grid"
            )
        new = kernel.KernelOp(
            op.sym_name.data, [blocks], [threads], list(op.inputs), [r.type for r in op.results]
        )
        new.attributes.update(op.attributes)
        old_block, new_block = op.body.block, new.body.block

        prologue: list[Operation] = []
        tid = bid = None
        if threads_axes:
            tid_op = kernel.ThreadIdOp("x")
            tid_op.result.name_hint = (
                threads_axes[0].arg.name_hint if len(threads_axes) == 1 else "tid"
            )
            tid = tid_op.result
            prologue.append(tid_op)
        if block_axes:
            bid_op = kernel.BlockIdOp("x")
            bid_op.result.name_hint = block_axes[0].arg.name_hint if len(block_axes) == 1 else "bid"
            bid = bid_op.result
            prologue.append(bid_op)

        combines = _CombineLowering(tid, threads, threads_axes)
        for combine in [o for o in old_block.walk() if isinstance(o, tile.CombineOp)]:
            combines.lower(combine, op, rewriter)
        if bid is not None:
            prologue += _decompose(block_axes, bid, blocks)
        if tid is not None:
            prologue += _decompose(threads_axes, tid, threads)
        shared = [o for o in combines.prologue if isinstance(o, kernel.SharedOp)]
        ids = [o for o in combines.prologue if not isinstance(o, kernel.SharedOp)]
        new_block.add_ops([*shared, *prologue, *ids])

        buffers = old_block.args[op.num_axes :]
        for old, arg in zip(buffers, new_block.args, strict=True):
            arg.name_hint = old.name_hint
            old.replace_all_uses_with(arg)
        for child in list(old_block.ops):
            child.detach()
            new_block.add_op(child)
        for for_op in [o for o in new_block.ops if isinstance(o, loop.ForOp)]:
            buffered = [
                s
                for s in for_op.body.block.ops
                if isinstance(s, tile.StageOp) and s.buffer_count >= 2
            ]
            if buffered and tid is not None:
                mode = _rotation(for_op, buffered)
                if mode == "tma":
                    lower_tma(for_op, buffered, tid, rewriter)
                else:
                    lower_buffered(
                        for_op, buffered, tid, threads, mode, rewriter, self.branched_loads
                    )
        stages = [o for o in new_block.walk() if isinstance(o, tile.StageOp)]
        # Adjacent stages share their barriers: one before the first fill, one after the last.
        runs = [
            (not isinstance(s.prev_op, tile.StageOp), not isinstance(s.next_op, tile.StageOp))
            for s in stages
        ]
        for stage, (first, last) in zip(stages, runs, strict=True):
            held = holds_fill(stage, threads, self.held_fill_elements)
            _lower_stage(stage, tid, threads, rewriter, first, last, held)
        for share in [o for o in new_block.walk() if isinstance(o, tile.ShareOp)]:
            _lower_share(share, new, rewriter)
        rewriter.replace(op, new)


def _rotation(for_op: loop.ForOp, buffered: list[tile.StageOp]) -> str:
    """How ``lower_buffered`` rotates a loop of double-buffered slabs."""
    if not is_pipelined(for_op):
        return "sync"
    if all(s.is_tma for s in buffered):
        return "tma"
    if all(s.is_async for s in buffered):
        return "async3" if buffered[0].buffer_count == 3 else "async"
    # Register prefetch for the slabs loaded into registers; "mixed" when others are async.
    return "mixed" if any(s.is_async for s in buffered) else "prefetch"


def _lower_stage(
    stage: tile.StageOp,
    tid: SSAValue | None,
    threads: int,
    rewriter: PatternRewriter,
    first: bool = True,
    last: bool = True,
    held: bool = False,
) -> None:
    """``tile.stage`` → shared array, cooperative strided fill, barrier (in place). An
    ``async`` stage at the top of the kernel is filled by ``cp.async`` (one commit, waited
    for before the barrier), so a thread has all its copies of a long slab in flight.

    A stage inside a loop (a K chunk) is filled on every iteration: its array is allocated
    once at the top of the kernel, and a barrier before the fill keeps it from overwriting
    what a slower thread still reads of the previous chunk."""
    name = stage.result.name_hint or "slab"
    slab = stage.result.type
    assert isinstance(slab, MemRefType)
    shared = kernel.SharedOp(name, slab)
    shared.result.name_hint = name
    ops: list[Operation] = []
    top = stage.parent_op()
    if isinstance(top, kernel.KernelOp):
        ops.append(shared)
    else:
        while not isinstance(top.parent_op(), kernel.KernelOp):
            top = top.parent_op()
        rewriter.insert(shared, InsertPoint.before(top))
        if first:
            ops.append(kernel.BarrierOp())
    if tid is None:
        zero = index_constant(0, "c0")
        ops.append(zero)
        tid = zero.result
    indices = list(stage.indices)
    if held and not stage.is_async:  # every load issued, then stored (``holds_fill``)
        local, loads, stores = prefetch_loops(stage, shared.result, indices, None, tid, threads)
        if isinstance(top, kernel.KernelOp):
            ops.append(local)
        else:  # a thread's array lives at the kernel's top level, as the shared one
            rewriter.insert(local, InsertPoint.before(top))
        ops += [*loads, *stores]
    else:
        ops.append(fill_loop(stage, shared.result, indices, None, tid, threads, stage.is_async))
    if stage.is_async:  # every copy of the fill in flight at once, then waited for
        ops += [kernel.CpAsyncCommitOp(), kernel.CpAsyncWaitOp(0)]
    if last:
        ops.append(kernel.BarrierOp())
    rewriter.replace(stage, ops, [shared.result])


def _lower_share(share: tile.ShareOp, root: Operation, rewriter: PatternRewriter) -> None:
    """``tile.share`` → a ``kernel.shared`` array of its type (at the top of the kernel),
    then in place: a barrier where the share sits in a loop (every thread's reads of the
    previous iteration's values are done before they are overwritten), each thread's
    stores, a barrier (no thread reads before every value is written)."""
    name = share.result.name_hint or "shared"
    shared = kernel.SharedOp(name, share.result.type)
    shared.result.name_hint = name
    top: Operation = share
    while top.parent_op() is not root:
        top = top.parent_op()
    rewriter.insert(shared, InsertPoint.before(top))
    ops: list[Operation] = [kernel.BarrierOp()] if _in_loop(share, root) else []
    for k, value in enumerate(share.values):
        ops.append(kernel.StoreOp(value, shared.result, share.value_map(k), list(share.indices)))
    ops.append(kernel.BarrierOp())
    rewriter.replace(share, ops, [shared.result])


def _inside_kernel(op: Operation) -> bool:
    return kernel.enclosing_kernel(op) is not None


class LowerLoopFor(RewritePattern):
    """``loop.for %i = L to U`` → ``kernel.for %i = %cL to U step 1``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter) -> None:
        if not _inside_kernel(op):
            return
        start = index_constant(op.lower.data, f"c{op.lower.data}")
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = kernel.ForOp(
            start.result, op.upper.data, 1, body, op.kinds, [r.type for r in op.results], op.limit
        )
        new.unroll = op.unroll
        new.attributes.update(op.attributes)
        rewriter.replace(op, [start, new])


class LowerStridedFor(RewritePattern):
    """``tile.strided_for %i = %t to N step S`` → ``kernel.for %i = %t to N step S``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StridedForOp, rewriter: PatternRewriter) -> None:
        if not _inside_kernel(op):
            return
        body = rewriter.move_region_contents_to_new_regions(op.body)
        types = [r.type for r in op.results]
        new = kernel.ForOp(op.start, op.upper.data, op.step.data, body, op.kinds, types, op.limit)
        new.unroll = op.unroll
        new.vector = op.vector
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)


class LowerMma(RewritePattern):
    """``tile.mma`` → ``kernel.mma``: the same warp-level product, same registers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.MmaOp, rewriter: PatternRewriter) -> None:
        if not _inside_kernel(op):
            return
        new = kernel.MmaOp(op.a, op.b, op.c, op.precision.data, op.shape.data)
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)


class LowerAccess(RewritePattern):
    """``loop.load``/``loop.store``/``loop.yield`` → their ``kernel`` twins, same indices."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, loop.LoadOp | loop.StoreOp | loop.YieldOp):
            return
        if not _inside_kernel(op):
            return
        if isinstance(op, loop.LoadOp):
            new: Operation = kernel.LoadOp(op.buffer, op.map.data, list(op.indices), op.is_guarded)
        elif isinstance(op, loop.StoreOp):
            new = kernel.StoreOp(op.value, op.buffer, op.map.data, list(op.indices), op.is_guarded)
        else:
            new = kernel.YieldOp(*op.values)
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)


@dataclass(frozen=True)
class Materialize(ModulePass):
    """Spell each scheduled tile kernel in the kernel dialect's hardware primitives."""

    name = "materialize"

    held_fill_elements: int = DEFAULT_HELD_FILL_ELEMENTS
    """The most elements of a synchronous slab a thread fills through registers
    (``stage_fills.holds_fill``; 0, the default: every fill a strided loop; 32:
    ``stage_fills.HELD_FILL_ELEMENTS``)."""

    branched_loads: bool = False
    """A register-prefetch K loop loads the next chunk only where there is one, each load
    loop under its own branch (``stage_fills.branched_loads``: ptxas then keeps the loads
    at the top of the chunk). Off: slower on the H100 (session 39: TinyLlama's gate-up at
    S=512 290.2 against 274.6 us, its layer at S=512 1230.4 against 1197.2)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [MaterializeKernel(self.held_fill_elements, self.branched_loads)],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [LowerLoopFor(), LowerStridedFor(), LowerMma(), LowerAccess()], dce_enabled=False
            ),
        ).rewrite_module(op)
        # Index math and constants the rewrites left unused (a staged load no longer
        # reads the K index; each lowered loop made its own start constant).
        for kern in [k for k in op.walk() if isinstance(k, kernel.KernelOp)]:
            region_dce(kern.body)
