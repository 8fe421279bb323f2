"""``materialize``'s slabs: the cooperative fill of a ``tile.stage``, and the rotation of
a K loop whose slabs are double-buffered (``buffers 2``) and, when ``fill-k-loop``
marked it ``pipeline``, filled one chunk ahead.

A fill is a loop over the slab's elements in the source's order, thread ``t`` taking
flat elements ``t, t + T, ..`` (consecutive threads, consecutive global addresses:
coalesced; four at a time where the source keeps 16-byte alignment), each element loaded
and stored to its place in the shared array (transposed, padded, in the chunk's buffer),
or copied there by ``kernel.cp_async``.

A double-buffered loop (one shared array ``[2, ..]`` per slab, chunk ``k`` in ``k % 2``)::

    sync:       for k: fill chunk k -> buffer k % 2; barrier; compute from buffer k % 2
    prefetch:   fill chunk 0 -> buffer 0; barrier
                for k: load chunk k + 1 into registers    // in flight during the compute
                       compute from buffer k % 2
                       store the registers -> buffer (k + 1) % 2; barrier
    async:      fill chunk 0 -> buffer 0 (cp.async); commit
                for k: if k + 1 < n: fill chunk k + 1 -> buffer (k + 1) % 2 (cp.async)
                       commit; wait 1; barrier; compute from buffer k % 2; barrier
    async3:     fill chunk 0 -> buffer 0; commit; fill chunk 1 -> buffer 1; commit (cp.async)
                for k: wait 1; barrier                    // chunk k is in, k - 1 is read
                       if k + 2 < n: fill chunk k + 2 -> buffer (k + 2) % 3 (cp.async)
                       commit; compute from buffer k % 3
    mixed:      fill chunk 0 -> buffer 0 (cp.async slabs: cp.async; commit; others: loads)
                for k: wait 0; barrier                    // chunk k is in, k - 1 is read
                       if k + 1 < n: fill chunk k + 1 -> buffer (k + 1) % 2 (cp.async)
                       commit; load the others' chunk k + 1 into registers
                       compute from buffer k % 2
                       store the registers -> buffer (k + 1) % 2

The three-buffer rotation (``buffers 3``) keeps two chunks in flight and needs one
barrier an iteration: the copy of chunk ``k + 2`` goes to the buffer chunk ``k - 1`` was
read from, after the barrier every thread passes once done with it. A transposed slab
copied 4 bytes at a time has consecutive threads on consecutive elements (a warp's
copies are whole 32-byte sectors of the source; ``fill_loop``).

The mixed rotation is for a loop whose slabs are copied both ways (``torch.matmul``'s
``x[m, k] @ w[k, n]``: ``w``'s slab in the source's order by cp.async, ``x``'s transposed
one by register prefetch) and needs one barrier an iteration: the copies and stores of
chunk ``k + 1`` go to the buffer chunk ``k - 1`` was read from, after the barrier every
thread passes once done with it; the wait and the barrier at the top make chunk ``k``
whole before anyone reads it. Measured on the H200 (session 6, square 4096): 2969 us
against 3034 us single-buffered (cuBLAS 2686; a hand-written kernel of the same
schedule, first, 2908 against 3020).

A loop whose slabs are all ``tma`` (``fill-k-loop{tma=true}``) is rotated by ``tma_fills.lower_tma``
(one thread copies each chunk's boxes, completing on an mbarrier per buffer, every thread
waits for its chunk's phase); ``double_buffers`` allocates the arrays for both.

Synchronously one barrier an iteration suffices: the fill of chunk ``k`` writes the
buffer chunk ``k - 2`` was read from, and chunk ``k - 1``'s barrier lies between. So in
the prefetch rotation (register prefetch): the stores of chunk ``k + 1`` go to the buffer
chunk ``k - 1`` was read from, behind the previous iteration's barrier; the loads are
issued before the compute and used after it, so their latency hides behind it (measured on
the H200, session 4: TinyLlama q_proj's partial sums at S=512 152 -> 129 us, square 4096
3310 -> 3192 us, hand-edited generated kernels). The
pipeline's trailing barrier keeps the copy of chunk ``k + 2`` (issued next iteration into
the buffer being read) behind every thread's reads of chunk ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.access import contiguous_lanes, vector_access
from deplodock.dialects.affine_syntax import apply_op

FILL_VECTOR = 4  # elements a thread copies at once: one 16-byte access

HELD_FILL_ELEMENTS = 32
"""The most elements of one slab a thread holds in registers in a synchronous fill
(``holds_fill``), when asked (``materialize{held_fill_elements=32}``)."""

DEFAULT_HELD_FILL_ELEMENTS = 0
"""``materialize``'s default: off (every fill the strided loop) until measured on a GPU
(session 33 had no device time; ``docs/bench/h200-2026-12-06-s33/copyrate.py``)."""


def holds_fill(stage: tile.StageOp, threads: int, most: int = HELD_FILL_ELEMENTS) -> bool:
    """Cost function: fill a synchronous slab through registers (``prefetch_loops``' load
    half, then its store half) when a thread copies between 2 and ``most``
    (``HELD_FILL_ELEMENTS``) elements of it. The strided fill loop stores each element
    before the next loads (a trip count that depends on the thread: the compiler unrolls
    it a few deep at most), so few loads are in flight: a kernel of small blocks, each
    filling its slabs once (``torch.bmm`` of 8192 products 32 x 33 @ 33 x 31), waits on
    them."""
    total = math.prod(stage.box_shape)
    return 2 * threads <= total <= most * threads


def slab_indices(shape: Sequence[int], flat: AffineExpr) -> list[AffineExpr]:
    """Row-major indices of flat element ``flat`` of an array of ``shape``."""
    out: list[AffineExpr] = []
    stride = math.prod(shape)
    for i, extent in enumerate(shape):
        stride //= extent
        expr = flat if stride == 1 else flat // stride
        out.append(expr if i == 0 else expr % extent)
    return out


def _fill_maps(
    stage: tile.StageOp, flat: SSAValue, origin_operands: Sequence[SSAValue], buffer
) -> tuple[AffineMap, AffineMap, list[SSAValue]]:
    """(source map, target map, operands) of flat slab element ``flat``: where it is read
    from at the origin over ``origin_operands``, and where it is stored in the shared array
    (in buffer ``buffer`` when double-buffered)."""
    shape = stage.box_shape
    origin = stage.map.data
    dims = origin.num_dims
    inner = slab_indices(shape, AffineExpr.dimension(dims))
    lead = len(origin.results) - len(shape)
    source_index = [
        *origin.results[:lead],
        *(o + i for o, i in zip(origin.results[lead:], inner, strict=True)),
    ]
    source_map = AffineMap(dims + 1, 0, tuple(source_index))
    target = stage.stored_index(inner)
    operands = [*origin_operands, flat]
    if buffer is not None:
        target = [AffineExpr.dimension(dims + 1), *target]
        operands.append(buffer)
    return source_map, AffineMap(len(operands), 0, tuple(target)), operands


def fill_loop(
    stage: tile.StageOp,
    shared: SSAValue,
    origin_operands: Sequence[SSAValue],
    buffer: SSAValue | None,
    tid: SSAValue,
    threads: int,
    copy_async: bool,
) -> kernel.ForOp:
    """The loop copying ``stage``'s slab at the origin over ``origin_operands`` into
    ``shared`` (into its buffer ``buffer`` when double-buffered)."""
    name = stage.result.name_hint or "slab"
    fill = kernel.ForOp(tid, math.prod(stage.box_shape), threads)
    fill.induction_var.name_hint = f"{name}_flat"
    source_map, target_map, operands = _fill_maps(
        stage, fill.induction_var, origin_operands, buffer
    )
    source_operands = operands[: source_map.num_dims]
    guarded = stage.is_guarded
    if copy_async:
        copy = kernel.CpAsyncOp(stage.source, source_map, shared, target_map, operands, guarded)
        fill.body.block.add_op(copy)
        wide: tuple = (copy,)
    else:
        load = kernel.LoadOp(stage.source, source_map, source_operands, guarded)
        load.result.name_hint = f"{name}_v"
        store = kernel.StoreOp(load.result, shared, target_map, operands)
        fill.body.block.add_ops([load, store])
        # A transposed slab's stores go to four rows, one element each.
        wide = (load,) if stage.is_transposed or buffer is not None else (load, store)
    if copy_async:  # four consecutive flat elements: one 16-byte copy, both sides aligned
        source = [*origin_operands, fill.induction_var]
        vectorizable = contiguous_lanes(
            stage.source.type,
            source_map,
            source,
            fill,
            FILL_VECTOR,  # type: ignore[arg-type]
            guarded,
        ) and contiguous_lanes(shared.type, target_map, operands, fill, FILL_VECTOR, guarded)  # type: ignore[arg-type]
        # (else 4-byte copies, consecutive threads on consecutive elements: coalesced)
    else:
        vectorizable = all(vector_access(access, fill, FILL_VECTOR) for access in wide)
    if fill.upper.data % FILL_VECTOR == 0 and vectorizable:
        fill.vector = IntAttr(FILL_VECTOR)
    return fill


def prefetch_loops(
    stage: tile.StageOp,
    shared: SSAValue,
    origin_operands: Sequence[SSAValue],
    buffer: SSAValue | None,
    tid: SSAValue,
    threads: int,
) -> tuple[kernel.LocalOp, list[Operation], list[Operation]]:
    """``fill_loop`` cut in two (around the compute, or to issue every load before the
    first store: ``holds_fill``; ``buffer`` None for a slab of one copy): the load half
    keeps a thread's elements of the slab in a local array of its own, the store half puts
    them from there into the shared array. Each half is one loop per pass ``j`` of the
    threads over the slab (a thread's ``j``-th vector of ``V`` elements,
    ``V * (t + j * T) + v``, in slots ``j * V + v``), so every slot index is a constant and
    the array lives in registers.
    Returns (the local array, the load half, the store half)."""
    name = stage.result.name_hint or "slab"
    total = math.prod(stage.box_shape)
    vector = FILL_VECTOR if total % FILL_VECTOR == 0 else 1
    trips = -(-total // (vector * threads))
    element = stage.result.type.element_type  # type: ignore[attr-defined]
    local = kernel.LocalOp(f"{name}_regs", MemRefType(element, [trips * vector]))
    local.result.name_hint = f"{name}_regs"
    d0 = AffineExpr.dimension(0)

    def pass_loop(begin: SSAValue, suffix: str) -> kernel.ForOp:
        fill = kernel.ForOp(begin, total, threads * trips)  # one iteration (or none)
        fill.induction_var.name_hint = f"{name}_flat{suffix}"
        if vector > 1:
            fill.vector = IntAttr(vector)
        return fill

    loads: list[Operation] = []
    stores: list[Operation] = []
    for j in range(trips):
        slot = AffineMap(1, 0, (d0 % vector + j * vector,))
        begin = tid
        if j:
            start = apply_op(d0 + j * threads, [tid], f"{name}_pass{j}")
            loads.append(start)
            begin = start.result
        load_loop = pass_loop(begin, "")
        flat = load_loop.induction_var
        source_map, _, operands = _fill_maps(stage, flat, origin_operands, buffer)
        load = kernel.LoadOp(
            stage.source, source_map, operands[: source_map.num_dims], stage.is_guarded
        )
        load.result.name_hint = f"{name}_v"
        load_loop.body.block.add_ops(
            [load, kernel.StoreOp(load.result, local.result, slot, [flat])]
        )
        store_loop = pass_loop(begin, "_st")
        flat = store_loop.induction_var
        _, target_map, operands = _fill_maps(stage, flat, origin_operands, buffer)
        held = kernel.LoadOp(local.result, slot, [flat])
        held.result.name_hint = f"{name}_r"
        store_loop.body.block.add_ops(
            [held, kernel.StoreOp(held.result, shared, target_map, operands)]
        )
        loads.append(load_loop)
        stores.append(store_loop)
    return local, loads, stores


def branched_loads(loads: list[Operation], more: SSAValue) -> list[Operation]:
    """Each load loop of a register prefetch's load half under its own ``scf.if %more``
    (the loop's iteration has a next chunk), the index math between them as it was. The
    branches are what the hardware needs least and ptxas most: it schedules within a
    basic block, and with a branch before each the loads stay at the top of the chunk
    (SASS of TinyLlama's gate, session 38: unbranched, ptxas issues them ~760 of ~1155
    instructions in; one branch around all of them moves them to the chunk's end). In the
    last iteration no load runs and the store half stores the registers of the chunk
    before into the buffer no one reads any more."""
    out: list[Operation] = []
    for op in loads:
        if isinstance(op, kernel.ForOp):
            then = Block()
            then.add_ops([op, scf.YieldOp()])
            op = scf.IfOp(more, [], Region(then))
        out.append(op)
    return out


def index_constant(value: int, hint: str | None = None) -> arith.ConstantOp:
    """``arith.constant value : index`` named ``hint``."""
    op = arith.ConstantOp(IntegerAttr(value, IndexType()))
    op.result.name_hint = hint
    return op


def next_chunk_guard(
    iv: SSAValue, chunks: int, limit: SSAValue | None = None, ahead: int = 1, buffers: int = 2
) -> tuple[list[Operation], SSAValue, SSAValue, SSAValue]:
    """The ops computing, in iteration ``iv`` of a loop over ``chunks`` chunks, the chunk
    ``ahead`` of it as ``(iv + ahead) % chunks`` (the same value where the guard holds, and
    provably a chunk index everywhere), its buffer ``(iv + ahead) % buffers`` and the guard
    ``iv + ahead < chunks`` (and ``< limit``, the loop's ``below`` limit, when it has one:
    no copy of a chunk the loop will not reach). Returns (the ops, that chunk, its buffer,
    guard)."""
    d0 = AffineExpr.dimension(0)
    following = apply_op(d0 + ahead, [iv], "following")
    next_chunk = apply_op((d0 + ahead) % chunks, [iv], f"{iv.name_hint or 'k'}_next")
    next_buffer = apply_op((d0 + ahead) % buffers, [iv], "buf_next")
    bound = index_constant(chunks, f"c{chunks}")
    more = arith.CmpiOp(following.result, bound.result, "ult")
    more.result.name_hint = "more"
    ops: list[Operation] = [following, next_chunk, next_buffer, bound, more]
    if limit is not None:
        reached = arith.CmpiOp(following.result, limit, "ult")
        both = arith.AndIOp(more.result, reached.result)
        both.result.name_hint = "more"
        ops += [reached, both]
        more = both
    return ops, next_chunk.result, next_buffer.result, more.result


def double_buffers(
    for_op: loop.ForOp,
    stages: list[tile.StageOp],
    rewriter: PatternRewriter,
    align: int | None = None,
    count: int = 2,
) -> tuple[Operation, list[SSAValue]]:
    """Allocate a shared array of ``count`` buffers per slab before the loop (aligned to
    ``align`` when given) and make the loads it served read buffer ``k % count``. Returns
    the op computing ``k % count`` (first in the body) and the arrays."""
    iv = for_op.induction_var
    d0 = AffineExpr.dimension(0)
    body = for_op.body.block
    current = apply_op(d0 % count, [iv], "buf")
    rewriter.insert(current, InsertPoint.at_start(body))
    shared_arrays = []
    for stage in stages:
        name = stage.result.name_hint or "slab"
        stored = stage.result.type
        assert isinstance(stored, MemRefType)
        doubled = MemRefType(stored.element_type, [count, *stored.get_shape()])
        shared = kernel.SharedOp(name, doubled, align)
        shared.result.name_hint = name
        rewriter.insert(shared, InsertPoint.before(for_op))
        shared_arrays.append(shared.result)
        for use in list(stage.result.uses):
            load = use.operation
            assert isinstance(load, loop.LoadOp), load
            old = load.map.data
            shifted = [AffineExpr.dimension(i + 1) for i in range(old.num_dims)]
            results = (d0, *(r.replace_dims_and_symbols(shifted, []) for r in old.results))
            new = loop.LoadOp(
                shared.result,
                AffineMap(old.num_dims + 1, 0, results),
                [current.result, *load.indices],
            )
            new.result.name_hint = load.result.name_hint
            rewriter.replace(load, new)
    return current, shared_arrays


def lower_buffered(
    for_op: loop.ForOp,
    stages: list[tile.StageOp],
    tid: SSAValue,
    threads: int,
    mode: str,
    rewriter: PatternRewriter,
    branched: bool = False,
) -> None:
    """Rotate a K loop with double-buffered slabs (see the module docstring): ``mode`` is
    ``"sync"``, ``"prefetch"``, ``"async"``, ``"async3"`` (three buffers) or ``"mixed"``
    (a loop of ``tma`` slabs is ``tma_fills.lower_tma``'s). ``branched``: a ``"prefetch"``
    loop loads the next chunk only where there is one, each load loop under its own
    ``scf.if`` (``branched_loads``)."""
    if any(stage.swizzle_bytes for stage in stages):
        raise DiagnosticException(
            "materialize: a swizzled slab is filled by TMA only, in a pipelined loop of tma "
            "slabs (run fill-k-loop{tma=true}; a thread's fill cannot swizzle)"
        )
    iv = for_op.induction_var
    chunks = for_op.extent
    d0 = AffineExpr.dimension(0)
    body = for_op.body.block
    count = stages[0].buffer_count  # 3 for "async3", else 2
    current, shared_arrays = double_buffers(for_op, stages, rewriter, count=count)

    def fills(
        chunk: SSAValue, buffer: SSAValue, copy_async: bool, which: str = "all"
    ) -> list[Operation]:
        """Fill loops of chunk ``chunk`` into ``buffer``: of ``which`` slabs ("all",
        "async": those marked for cp.async, "loaded": the others)."""
        ops = []
        for stage, shared in zip(stages, shared_arrays, strict=True):
            if which != "all" and stage.is_async != (which == "async"):
                continue
            operands = [chunk if v is iv else v for v in stage.indices]
            ops.append(fill_loop(stage, shared, operands, buffer, tid, threads, copy_async))
        return ops

    def prefetch(next_chunk: SSAValue, next_buffer: SSAValue, prologue: list[Operation]):
        """The load and store halves (``prefetch_loops``) of the slabs not copied by
        cp.async, their register arrays put at the start of ``prologue``."""
        loads, stores = [], []
        for stage, shared in zip(stages, shared_arrays, strict=True):
            if stage.is_async:
                continue
            operands = [next_chunk if v is iv else v for v in stage.indices]
            local, load_half, store_half = prefetch_loops(
                stage, shared, operands, next_buffer, tid, threads
            )
            prologue.insert(0, local)
            loads.extend(load_half)
            stores.extend(store_half)
        return loads, stores

    if mode == "sync":
        rewriter.insert(
            [*fills(iv, current.result, False), kernel.BarrierOp()], InsertPoint.after(current)
        )
    elif mode == "prefetch":
        zero = index_constant(0, "c0")
        prologue = [zero, *fills(zero.result, zero.result, False), kernel.BarrierOp()]
        if branched:  # loads only where there is a next chunk (``branched_loads``)
            index_ops, next_chunk, next_buffer, more = next_chunk_guard(iv, chunks, for_op.limit)
        else:
            # The next chunk (chunk 0 again in the last iteration: loaded, stored to the
            # buffer no one reads any more, never used; cheaper than a guard around both
            # halves).
            chunk = apply_op((d0 + 1) % chunks, [iv], f"{iv.name_hint or 'k'}_next")
            buffer = apply_op((d0 + 1) % 2, [iv], "buf_next")
            index_ops, next_chunk, next_buffer, more = (
                [chunk, buffer],
                chunk.result,
                buffer.result,
                None,
            )
        loads, stores = prefetch(next_chunk, next_buffer, prologue)
        if more is not None:
            loads = branched_loads(loads, more)
        rewriter.insert(prologue, InsertPoint.before(for_op))
        rewriter.insert([*index_ops, *loads], InsertPoint.after(current))
        rewriter.insert([*stores, kernel.BarrierOp()], InsertPoint.before(body.last_op))
    elif mode == "mixed":
        zero = index_constant(0, "c0")
        prologue = [
            zero,
            *fills(zero.result, zero.result, True, "async"),
            kernel.CpAsyncCommitOp(),
            *fills(zero.result, zero.result, False, "loaded"),
        ]
        guard, next_chunk, next_buffer, more = next_chunk_guard(iv, chunks, for_op.limit)
        loads, stores = prefetch(next_chunk, next_buffer, prologue)
        rewriter.insert(prologue, InsertPoint.before(for_op))
        then = Block()
        then.add_ops([*fills(next_chunk, next_buffer, True, "async"), scf.YieldOp()])
        steady = [
            *guard,
            kernel.CpAsyncWaitOp(0),
            kernel.BarrierOp(),
            scf.IfOp(more, [], Region(then)),
            kernel.CpAsyncCommitOp(),
            *loads,
        ]
        rewriter.insert(steady, InsertPoint.after(current))
        rewriter.insert(stores, InsertPoint.before(body.last_op))
    elif mode == "async3":
        zero, one = index_constant(0, "c0"), index_constant(1, "c1")
        second = fills(one.result, one.result, True) if chunks >= 2 else []  # (else: empty)
        prologue = [
            zero,
            one,
            *fills(zero.result, zero.result, True),
            kernel.CpAsyncCommitOp(),
            *second,
            kernel.CpAsyncCommitOp(),
        ]
        rewriter.insert(prologue, InsertPoint.before(for_op))
        guard, next_chunk, next_buffer, more = next_chunk_guard(iv, chunks, for_op.limit, 2, 3)
        then = Block()
        then.add_ops([*fills(next_chunk, next_buffer, True), scf.YieldOp()])
        steady = [
            kernel.CpAsyncWaitOp(1),
            kernel.BarrierOp(),
            *guard,
            scf.IfOp(more, [], Region(then)),
            kernel.CpAsyncCommitOp(),
        ]
        rewriter.insert(steady, InsertPoint.after(current))
    else:
        zero = index_constant(0, "c0")
        prologue = [zero, *fills(zero.result, zero.result, True), kernel.CpAsyncCommitOp()]
        rewriter.insert(prologue, InsertPoint.before(for_op))
        guard, next_chunk, next_buffer, more = next_chunk_guard(iv, chunks, for_op.limit)
        then = Block()
        then.add_ops([*fills(next_chunk, next_buffer, True), scf.YieldOp()])
        steady = [
            *guard,
            scf.IfOp(more, [], Region(then)),
            kernel.CpAsyncCommitOp(),
            kernel.CpAsyncWaitOp(1),
            kernel.BarrierOp(),
        ]
        rewriter.insert(steady, InsertPoint.after(current))
        terminator = body.last_op
        rewriter.insert(kernel.BarrierOp(), InsertPoint.before(terminator))
    for stage in stages:
        rewriter.erase(stage)
