"""``double-buffer``: keep two copies of each slab a K loop refills, chunk ``k`` in ``k % 2``.

A matmul's K chunk slab (``stage-inputs``) is refilled every iteration of the K-outer
loop; with one copy the refill must wait until every thread has finished reading the last
chunk, and the block idles while the copy is in flight. With two, the copy of chunk
``k + 1`` can go to the other copy while chunk ``k`` is read (``pipeline-k-outer`` does
that; ``async-copy`` lets the copy run in the background)::

    %x_smem = tile.stage %x_b[..] box [128, 8] transpose pad 4 : .. -> memref<8x132xf32>
    %x_smem = tile.stage %x_b[..] box [128, 8] transpose pad 4 buffers 2 : .. -> ..

The tile level's meaning is unchanged: a stage is the slab at this iteration's origin.
The decision is ``buffers_for``: a stage at the top of a loop of at least two iterations,
while the kernel's slabs, doubled, fit ``max_bytes`` (``max_bytes=0`` turns it off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.passes import ModulePass

from deplodock.dialects import loop, tile
from deplodock.passes.tile.analysis import refilled_stages
from deplodock.target import DEFAULT_ARCH, Target, pass_target, target_for

DEFAULT_MAX_BYTES = 96 * 1024  # two blocks of the largest tiles still share an SM


def buffers_for(
    kernel: tile.KernelOp,
    for_op: loop.ForOp,
    max_bytes: int,
    always: bool = False,
    target: Target | None = None,
) -> int:
    """Cost function: 2 when the loop's slabs, doubled, fit ``max_bytes`` (and the
    target's shared memory a block), else 1.

    A second copy lets the copy of chunk ``k + 1`` overlap chunk ``k``'s compute
    (``pipeline-k-outer``): by ``cp.async`` for slabs in the source's order, by register
    prefetch for transposed ones. Measured on the H200: with register prefetch, generated
    kernels gained 4-20% (session 4: ``x @ w.T`` at 4096 3310 -> 3192 us, TinyLlama
    q_proj at S=512 166 -> 136 us); double-buffered *without* it, or with 4-byte
    cp.async, they lost (session 3: square 4096 3031 -> 3413 and 3947 us). A loop whose
    slabs are stored both ways (``torch.matmul``'s ``x[m, k] @ w[k, n]``: x transposed, w
    in the source's order) lost with register prefetch for both (session 4: square 4096
    3030 -> 4058 us) but gains with cp.async for ``w`` beside it (session 6: 3034 ->
    2969 us, K chunk 16), which ``async-copy`` gives it on sm_80 and later: on a target
    without cp.async (sm_75) both would be register prefetch, so such a loop stays single.
    ``always``: double them anyway, and even a loop of one chunk (tests)."""
    target = target or target_for()
    if not always and for_op.extent < 2:
        return 1
    stages = [s for s in for_op.body.block.ops if isinstance(s, tile.StageOp)]
    if not always and not target.cp_async and {s.is_transposed for s in stages} == {True, False}:
        return 1
    max_bytes = min(max_bytes, target.shared_bytes)
    total = sum(s.size_bytes() for s in kernel.walk() if isinstance(s, tile.StageOp))
    extra = sum(s.size_bytes() for s in for_op.body.block.ops if isinstance(s, tile.StageOp))
    return 2 if total + extra <= max_bytes else 1


@dataclass(frozen=True)
class DoubleBuffer(ModulePass):
    """Two copies of every slab a loop refills (see ``buffers_for``)."""

    name = "double-buffer"

    max_bytes: int = DEFAULT_MAX_BYTES
    """Shared memory the kernel's slabs may take once doubled."""

    always: bool = False
    """Double every refilled slab that fits, even in a loop of one chunk (tests)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``): its shared memory, whether it has cp.async."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for for_op, stages in refilled_stages(kernel):
                if any(s.buffer_count > 1 for s in stages):
                    continue  # decided before: idempotent
                if buffers_for(kernel, for_op, self.max_bytes, self.always, target) == 2:
                    for stage in stages:
                        stage.buffers = IntAttr(2)
