"""``materialize``'s TMA rotation: a pipelined K loop whose slabs are all ``tma``.

One thread issues each chunk's copies, a box per slab (a box per piece of a ``split``
slab), all completing on one mbarrier per buffer; every thread waits on the buffer's
barrier for the phase of the chunk it is about to read::

    bar = mbarrier[2]; x_smem = shared[2, ..] align 128 (each slab)
    if tid == 0: init bar[0], bar[1] (1 arrival a phase)
                 arrive bar[0] expecting B bytes; copy chunk 0 -> buffer 0 on bar[0]
    barrier                                    // the inits are visible to every thread
    for k in 0..n:
      if k + 1 < n and tid == 0:
        arrive bar[(k+1) % 2] expecting B; copy chunk k+1 -> buffer (k+1) % 2
      wait bar[k % 2], parity (k / 2) mod 2    // chunk k has landed
      compute chunk k from buffer k % 2
      barrier                                  // buffer k % 2 is free for chunk k + 2

Buffer ``b`` holds chunks ``b, b + 2, ..``: chunk ``k`` is the ``k / 2``-th phase of
barrier ``k % 2``, hence the parity. The copy of chunk ``k + 1`` goes to the buffer chunk
``k - 1`` was read from, behind the previous iteration's barrier, and lands while chunk
``k`` is computed. Unlike ``cp.async`` no barrier is needed after the wait: the mbarrier's
phase makes the copy visible to every thread that waited. ``B`` is the bytes of all the
chunk's boxes (``kernel.mbarrier_arrive_expect_tx``): the phase completes when they all
landed. A swizzled slab (``swizzle 128``) is copied with the tensor map's
``SWIZZLE_128B`` into an array aligned to the pattern's 1024 bytes. The kernel
interpreter checks all of it (an early read, a wrong parity, a missing
or wrong expect_tx, a refill before every reader is done).
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.tma import TMA_ALIGNMENT, swizzle_repeat
from deplodock.passes.kernel.stage_fills import double_buffers, index_constant, next_chunk_guard


def box_copies(
    stage: tile.StageOp,
    shared: SSAValue,
    origin_operands: list[SSAValue],
    buffer: SSAValue,
    barrier: SSAValue,
) -> list[kernel.TmaLoadOp]:
    """The copies of ``stage``'s slab at the origin over ``origin_operands`` into buffer
    ``buffer`` of ``shared``, completing on ``barrier[buffer]``: the box, or one box per
    piece of a split slab, each at its own place in the stored array."""
    origin = stage.map.data
    dims = origin.num_dims
    indices = [*origin_operands, buffer]
    at_buffer = AffineExpr.dimension(dims)
    width = stage.split_width
    box = list(stage.box_shape)
    pieces = box[-1] // width if width else 1
    stored_rank = len(stage.written_shape)
    copies = []
    for piece in range(pieces):
        source = list(origin.results)
        target = [at_buffer] + [AffineExpr.constant(0)] * stored_rank
        if width:
            source[-1] = source[-1] + piece * width
            target[1] = AffineExpr.constant(piece)
        copies.append(
            kernel.TmaLoadOp(
                stage.source,
                AffineMap(dims + 1, 0, tuple(source)),
                shared,
                AffineMap(dims + 1, 0, tuple(target)),
                barrier,
                AffineMap(dims + 1, 0, (at_buffer,)),
                indices,
                [*box[:-1], width] if width else box,
                stage.swizzle_bytes or None,
            )
        )
    return copies


def lower_tma(
    for_op: loop.ForOp, stages: list[tile.StageOp], tid: SSAValue, rewriter: PatternRewriter
) -> None:
    """Rotate the K loop ``for_op`` whose slabs ``stages`` are all ``tma`` (see the module
    docstring)."""
    iv = for_op.induction_var
    name = iv.name_hint or "k"
    chunks = for_op.extent
    d0 = AffineExpr.dimension(0)
    body = for_op.body.block
    # 128 bytes for TMA, the swizzle pattern's repeat (1024 bytes) for a swizzled slab.
    align = max(
        [TMA_ALIGNMENT, *(swizzle_repeat(s.swizzle_bytes) for s in stages if s.swizzle_bytes)]
    )
    current, shared_arrays = double_buffers(for_op, stages, rewriter, align)
    bar = kernel.MBarrierOp(f"{name}_bar", MemRefType(i64, [2]))
    bar.result.name_hint = f"{name}_bar"
    chunk_bytes = sum(stage.size_bytes() // 2 for stage in stages)

    def issue(chunk: SSAValue, buffer: SSAValue) -> list[Operation]:
        arrive = kernel.MBarrierArriveExpectTxOp(
            bar.result, AffineMap(1, 0, (d0,)), [buffer], chunk_bytes
        )
        ops: list[Operation] = [arrive]
        for stage, shared in zip(stages, shared_arrays, strict=True):
            operands = [chunk if v is iv else v for v in stage.indices]
            ops.extend(box_copies(stage, shared, operands, buffer, bar.result))
        return ops

    zero = index_constant(0, "c0")
    lead = arith.CmpiOp(tid, zero.result, "eq")
    lead.result.name_hint = "lead"
    inits = [
        kernel.MBarrierInitOp(bar.result, AffineMap(0, 0, (AffineExpr.constant(b),)), [], 1)
        for b in (0, 1)
    ]
    prologue = Block()
    prologue.add_ops([*inits, *issue(zero.result, zero.result), scf.YieldOp()])
    rewriter.insert(
        [bar, zero, lead, scf.IfOp(lead.result, [], Region(prologue)), kernel.BarrierOp()],
        InsertPoint.before(for_op),
    )

    guard, next_chunk, next_buffer, more = next_chunk_guard(iv, chunks, for_op.limit)
    issuer = Block()
    issuer.add_ops([*issue(next_chunk, next_buffer), scf.YieldOp()])
    guarded = Block()
    guarded.add_ops([scf.IfOp(lead.result, [], Region(issuer)), scf.YieldOp()])
    parity = apply_op((d0 // 2) % 2, [iv], "parity")
    wait = kernel.MBarrierWaitOp(
        bar.result, AffineMap(1, 0, (d0,)), [current.results[0]], parity.result
    )
    steady = [
        *guard,
        scf.IfOp(more, [], Region(guarded)),
        parity,
        wait,
    ]
    rewriter.insert(steady, InsertPoint.after(current))
    rewriter.insert(kernel.BarrierOp(), InsertPoint.before(body.last_op))
    for stage in stages:
        rewriter.erase(stage)
