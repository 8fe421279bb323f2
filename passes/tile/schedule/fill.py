"""The fill planner: how a K loop fills the shared-memory slabs it refills each iteration.

A matmul's K chunk slabs (``stage-inputs``) are refilled every iteration of the K-outer
loop. ``plan_fill`` decides, loop by loop, one of ``tile.FILLS``:

* ``sync``: one copy of each slab, filled by ordinary loads and stores, then read; the
  block waits for the copy (a loop of one chunk, or slabs too big to double);
* ``prefetch``: two copies, chunk ``k + 1`` loaded into registers before chunk ``k``'s
  compute and stored to the other copy after it (transposed slabs, whose stores scatter);
* ``async``: two copies filled by ``cp.async`` one chunk ahead (slabs in the source's
  order, 16-byte copies; sm_80 and later);
* ``async3``: three copies filled by ``cp.async`` two chunks ahead, one barrier an
  iteration (``fill-k-loop{buffers=3}``; where ``async`` applies, in a loop of three
  chunks or more without a ``below`` limit; never planned: on TinyLlama's gate at S=512
  the 16 x 8 kernel took 282.7 us with it against 261.9 with the register prefetch,
  4-byte copies of its transposed slabs, session 38 on an H100 host);
* ``mixed``: both in one loop (``torch.matmul``'s ``x[m, k] @ w[k, n]``: cp.async for
  ``w``, register prefetch for ``x``);
* ``tma``: two copies filled by TMA box copies on mbarriers (sm_90; off by default: not
  measured faster than cp.async yet, ``test/gpu/tma_check.py``).

Measured on the H200: with register prefetch, generated kernels gained 4-20% (session 4:
``x @ w.T`` at 4096 3310 -> 3192 us, TinyLlama q_proj at S=512 166 -> 136 us);
double-buffered *without* it, or with 4-byte cp.async (a transposed slab scatters each
16-byte source run over four rows), they lost (session 3: square 4096 3031 -> 3413 and
3947 us). A loop whose slabs are stored both ways lost with register prefetch for both
(session 4: square 4096 3030 -> 4058 us) but gains with cp.async for ``w`` beside it
(session 6: 3034 -> 2969 us, K chunk 16); on a target without cp.async (sm_75) both would
be register prefetch, so such a loop stays single.
"""

from __future__ import annotations

from dataclasses import dataclass

from deplodock.dialects import loop, tile
from deplodock.dialects.tma import TMA_ALIGNMENT, tma_box_rule
from deplodock.target import Target

DEFAULT_MAX_BYTES = 96 * 1024  # two blocks of the largest tiles still share an SM


@dataclass(frozen=True)
class FillOptions:
    """What ``fill-k-loop``'s options override (the defaults are the measured schedule)."""

    max_bytes: int = DEFAULT_MAX_BYTES  # shared memory a kernel's slabs may take doubled
    always: bool = False  # double every slab that fits, even in a loop of one chunk (tests)
    narrow: bool = False  # cp.async for transposed slabs too, 4 bytes a copy (tests)
    tma: bool = False  # TMA where a whole loop's slabs qualify (not yet measured faster)
    buffers: int = 2  # copies of a slab filled by cp.async alone: 3 keeps two chunks in flight


@dataclass(frozen=True)
class Fill:
    """``plan_fill``'s answer for one loop: copies of each slab, how each is filled
    (``"load"``, ``"async"`` or ``"tma"``, in the loop's order of stages), and whether the
    loop rotates (copies chunk ``k + 1`` while computing chunk ``k``)."""

    buffers: int
    copies: tuple[str, ...]
    pipelined: bool

    @property
    def kind(self) -> str:
        """The fill as ``tile.FILLS`` names it."""
        kinds = set(self.copies)
        if not self.pipelined:
            return "sync"
        if "tma" in kinds:
            return "tma"
        if kinds == {"async"}:
            return "async3" if self.buffers == 3 else "async"
        return "mixed" if "async" in kinds else "prefetch"


def _doubles(
    kernel: tile.KernelOp, for_op: loop.ForOp, stages: list[tile.StageOp], options: FillOptions,
    target: Target,
) -> bool:  # fmt: skip
    """Two copies when the kernel's slabs, doubled, fit ``max_bytes`` (and the target's
    shared memory a block), in a loop of two or more chunks; a loop whose slabs are stored
    both ways only with cp.async beside register prefetch (see the module docstring)."""
    if not options.always and for_op.extent < 2:
        return False
    if (
        not options.always
        and not target.cp_async
        and {s.is_transposed for s in stages}
        == {
            True,
            False,
        }
    ):
        return False
    max_bytes = min(options.max_bytes, target.shared_bytes)
    total = sum(s.size_bytes() for s in kernel.walk() if isinstance(s, tile.StageOp))
    extra = sum(s.size_bytes() for s in stages)
    return total + extra <= max_bytes


def _copies_async(stage: tile.StageOp, target: Target, narrow: bool) -> bool:
    """A doubled slab on a target with cp.async, stored in the source's order (16-byte
    copies; ``narrow`` takes a transposed one anyway), of elements of 4 bytes or more
    (``cp.async`` copies 4, 8 or 16 bytes: a half-precision element alone cannot go)."""
    return target.cp_async and stage.element_bytes >= 4 and (narrow or not stage.is_transposed)


def _copies_by_tma(stage: tile.StageOp, target: Target) -> bool:
    """A doubled slab TMA can fill: sm_90+, stored in the source's order without pad (TMA
    writes the box as it lies in global memory), a box within TMA's rules
    (``tma.tma_box_rule``) whose one copy is a multiple of 128 bytes (each buffer starts
    aligned), not guarded (an edge tile's). So ``torch.matmul(a.t(), b)`` qualifies,
    ``x @ w.T`` does not."""
    if not target.tma or stage.is_transposed or stage.padding or stage.is_guarded:
        return False  # (a guarded slab: TMA would zero-fill past the end, not yet tested)
    source = stage.source.type
    if tma_box_rule(stage.box_shape, stage.element_bytes, source.get_shape(), None) is not None:  # type: ignore[attr-defined]
        return False
    return stage.size_bytes() // stage.buffer_count % TMA_ALIGNMENT == 0


def plan_fill(
    kernel: tile.KernelOp,
    for_op: loop.ForOp,
    stages: list[tile.StageOp],
    target: Target,
    options: FillOptions = FillOptions(),
) -> Fill:
    """The planning function of a K loop's fill (see the module docstring): two copies
    when they fit; each copy by cp.async where it goes 16 bytes at a time, else by loads
    into registers; TMA for all of a loop's slabs or none (a chunk completes on one
    barrier), when asked; rotated when the loop has two chunks or more."""
    if not _doubles(kernel, for_op, stages, options, target):
        return Fill(1, ("load",) * len(stages), False)
    copies = tuple("async" if _copies_async(s, target, options.narrow) else "load" for s in stages)
    if options.tma and for_op.extent >= 2 and all(_copies_by_tma(s, target) for s in stages):
        copies = ("tma",) * len(stages)
    if options.buffers == 3 and no_third_copy(kernel, for_op, stages, options, target) is None:
        return Fill(3, copies, True)
    return Fill(2, copies, for_op.extent >= 2)


def no_third_copy(
    kernel: tile.KernelOp, for_op: loop.ForOp, stages: list[tile.StageOp], options: FillOptions,
    target: Target,
) -> str | None:  # fmt: skip
    """Why a loop gets no three copies (``async3``) when asked, or None where it does:
    its slabs must all go by cp.async, the loop have three chunks or more and no
    ``below`` limit (the prologue copies chunks 0 and 1), and its slabs, tripled, fit
    ``max_bytes`` and the target's shared memory beside the kernel's other slabs (as
    they are when asked: after ``fill-k-loop``, the other loops' copies count)."""
    if not all(_copies_async(s, target, options.narrow) for s in stages):
        return (
            "its slabs are not all copied by cp.async (a transposed slab is loaded into "
            "registers unless narrow=true; cp.async needs sm_80)"
        )
    if for_op.extent < 3:
        return f"a loop of {for_op.extent} chunks"
    if for_op.limit is not None:
        return "a loop with a 'below' limit"
    own = [s.size_bytes() // s.buffer_count for s in stages]
    others = sum(s.size_bytes() for s in kernel.walk() if isinstance(s, tile.StageOp))
    others -= sum(s.size_bytes() for s in stages)
    tripled = others + 3 * sum(own)
    most = min(options.max_bytes, target.shared_bytes)
    return None if tripled <= most else f"three copies take {tripled} B, over {most}"
