"""``materialize``'s slabs: the cooperative fill of a ``tile.stage``, and the rotation of
a K loop whose slabs are double-buffered (``buffers 2``) and, when ``pipeline-k-outer``
marked it, filled by ``cp.async`` one chunk ahead.

A fill is a loop over the slab's elements in the source's order, thread ``t`` taking
flat elements ``t, t + T, ..`` (consecutive threads, consecutive global addresses:
coalesced; four at a time where the source keeps 16-byte alignment), each element loaded
and stored to its place in the shared array (transposed, padded, in the chunk's buffer),
or copied there by ``kernel.cp_async``.

A double-buffered loop (one shared array ``[2, ..]`` per slab, chunk ``k`` in ``k % 2``)::

    sync:       for k: fill chunk k -> buffer k % 2; barrier; compute from buffer k % 2
    pipelined:  fill chunk 0 -> buffer 0 (cp.async); commit
                for k: if k + 1 < n: fill chunk k + 1 -> buffer (k + 1) % 2 (cp.async)
                       commit; wait 1; barrier; compute from buffer k % 2; barrier

Synchronously one barrier an iteration suffices: the fill of chunk ``k`` writes the
buffer chunk ``k - 2`` was read from, and chunk ``k - 1``'s barrier lies between. The
pipeline's trailing barrier keeps the copy of chunk ``k + 2`` (issued next iteration into
the buffer being read) behind every thread's reads of chunk ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.access import vector_access
from deplodock.dialects.affine_syntax import apply_op

FILL_VECTOR = 4  # elements a thread copies at once: one 16-byte access


def _product(values) -> int:
    total = 1
    for v in values:
        total *= v
    return total


def slab_indices(shape: Sequence[int], flat: AffineExpr) -> list[AffineExpr]:
    """Row-major indices of flat element ``flat`` of an array of ``shape``."""
    out: list[AffineExpr] = []
    stride = _product(shape)
    for i, extent in enumerate(shape):
        stride //= extent
        expr = flat if stride == 1 else flat // stride
        out.append(expr if i == 0 else expr % extent)
    return out


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
    shape = stage.box_shape
    fill = kernel.ForOp(tid, _product(shape), threads)
    flat_value = fill.induction_var
    flat_value.name_hint = f"{name}_flat"
    origin = stage.map.data
    dims = origin.num_dims
    flat = AffineExpr.dimension(dims)
    inner = slab_indices(shape, flat)
    lead = len(origin.results) - len(shape)
    source_index = [
        *origin.results[:lead],
        *(o + i for o, i in zip(origin.results[lead:], inner, strict=True)),
    ]
    source_map = AffineMap(dims + 1, 0, tuple(source_index))
    target = stage.stored_index(slab_indices(shape, flat))
    operands = [*origin_operands, flat_value]
    if buffer is not None:
        target = [AffineExpr.dimension(dims + 1), *target]
        operands.append(buffer)
    target_map = AffineMap(len(operands), 0, tuple(target))
    if copy_async:
        copy = kernel.CpAsyncOp(stage.source, source_map, shared, target_map, operands)
        fill.body.block.add_op(copy)
        wide: tuple = (copy,)
    else:
        load = kernel.LoadOp(stage.source, source_map, operands[: dims + 1])
        load.result.name_hint = f"{name}_v"
        store = kernel.StoreOp(load.result, shared, target_map, operands)
        fill.body.block.add_ops([load, store])
        # A transposed slab's stores go to four rows, one element each.
        wide = (load,) if stage.is_transposed or buffer is not None else (load, store)
    if copy_async:
        vectorizable = _source_contiguous(stage, fill, source_map, origin_operands)
    else:
        vectorizable = all(vector_access(access, fill, FILL_VECTOR) for access in wide)
    if fill.upper.data % FILL_VECTOR == 0 and vectorizable:
        fill.vector = IntAttr(FILL_VECTOR)
    return fill


def _source_contiguous(stage, fill, source_map, origin_operands) -> bool:
    """Whether four consecutive flat elements are four consecutive, aligned source
    elements (what a vector loop of ``cp.async`` copies wants, as a load would)."""
    probe = kernel.LoadOp(stage.source, source_map, [*origin_operands, fill.induction_var])
    fill.body.block.add_op(probe)
    try:
        return vector_access(probe, fill, FILL_VECTOR)
    finally:
        probe.detach()
        probe.erase()


def _index(value: int, hint: str) -> arith.ConstantOp:
    op = arith.ConstantOp(IntegerAttr(value, IndexType()))
    op.result.name_hint = hint
    return op


def lower_buffered(
    for_op: loop.ForOp,
    stages: list[tile.StageOp],
    tid: SSAValue,
    threads: int,
    pipelined: bool,
    rewriter: PatternRewriter,
) -> None:
    """Rotate a K loop with double-buffered slabs (see the module docstring)."""
    iv = for_op.induction_var
    chunks = for_op.extent
    d0 = AffineExpr.dimension(0)
    body = for_op.body.block
    current = apply_op(d0 % 2, [iv], "buf")
    rewriter.insert(current, InsertPoint.at_start(body))
    shared_arrays = []
    for stage in stages:
        name = stage.result.name_hint or "slab"
        stored = stage.result.type
        assert isinstance(stored, MemRefType)
        doubled = MemRefType(stored.element_type, [2, *stored.get_shape()])
        shared = kernel.SharedOp(name, doubled)
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

    def fills(chunk: SSAValue, buffer: SSAValue, copy_async: bool) -> list[Operation]:
        ops = []
        for stage, shared in zip(stages, shared_arrays, strict=True):
            operands = [chunk if v is iv else v for v in stage.indices]
            ops.append(fill_loop(stage, shared, operands, buffer, tid, threads, copy_async))
        return ops

    if not pipelined:
        rewriter.insert(
            [*fills(iv, current.result, False), kernel.BarrierOp()], InsertPoint.after(current)
        )
    else:
        zero = _index(0, "c0")
        prologue = [zero, *fills(zero.result, zero.result, True), kernel.CpAsyncCommitOp()]
        rewriter.insert(prologue, InsertPoint.before(for_op))
        following = apply_op(d0 + 1, [iv], "following")
        # The same value where the guard holds, and provably a chunk index everywhere.
        next_chunk = apply_op((d0 + 1) % chunks, [iv], f"{iv.name_hint or 'k'}_next")
        next_buffer = apply_op((d0 + 1) % 2, [iv], "buf_next")
        bound = _index(chunks, f"c{chunks}")
        more = arith.CmpiOp(following.result, bound.result, "ult")
        more.result.name_hint = "more"
        then = Block()
        then.add_ops([*fills(next_chunk.result, next_buffer.result, True), scf.YieldOp()])
        steady = [
            following,
            next_chunk,
            next_buffer,
            bound,
            more,
            scf.IfOp(more.result, [], Region(then)),
            kernel.CpAsyncCommitOp(),
            kernel.CpAsyncWaitOp(1),
            kernel.BarrierOp(),
        ]
        rewriter.insert(steady, InsertPoint.after(current))
        terminator = body.last_op
        rewriter.insert(kernel.BarrierOp(), InsertPoint.before(terminator))
    for stage in stages:
        rewriter.erase(stage)
