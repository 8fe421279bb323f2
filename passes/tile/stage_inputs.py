"""``stage-inputs``: copy an input slab that a block reads more than once into shared memory.

RMSNorm reads its row twice (sum of squares, then normalise), softmax three times (max,
sum, normalise). Without staging, every read after the first goes to global memory again
(L2 at best); staged, the block reads the row from HBM once, cooperatively and coalesced,
and every later read is a shared-memory read::

    %x_smem = tile.stage %x_b[0, %a0, 0] : memref<1x32x2048xf32> -> memref<2048xf32>
    ...
    %in = loop.load %x_smem[%a1] : memref<2048xf32>          // was %x_b[0, %a0, %a1]

The slab is found from the loads themselves: the leading dimensions whose indices are the
same block-uniform expression (constants and block axes) in every load are the origin;
the remaining trailing dimensions are staged whole. A load served by the stage keeps its
trailing indices, now into the slab.

Whether it pays is ``stage_pays``: at least ``min_reads`` load sites of the buffer (one
read gains nothing from a copy, it only adds a barrier), an input of at least
``min_source_bytes`` (25 MB: a smaller one stays in L2 between the reads, and on the
H200 the copy and its barrier then cost more than they save: RMSNorm (1,128,2048) 2.5 us
staged, 2.1 us not; (1,4096,4096) 33.9 us staged, 36.5 us not), a slab the block reads
all of (``block_footprint``: RoPE's blocks of 16 rows of a head must not copy the head's
128) and the kernel's slabs within ``max_bytes`` (48 KB by default: the most a block may
hold in static ``__shared__`` arrays, and a slab larger than that costs occupancy a
memory-bound kernel needs). A kernel's one slab past that budget, a long row, is staged
too when one block of it fits the target's shared memory (``large_slab_budget`` with
``LARGE_BLOCKS_PER_SM``: 223 KB on the H200, on a target with ``cp.async``): the stage
is ``async``, filled by ``cp.async`` with all of a thread's copies in flight (few blocks
an SM cannot keep memory busy with loads that wait for their registers), and the
kernel's shared memory becomes dynamic (``kernel.KernelOp.dynamic_shared_bytes``). A row
longer than that is read from global memory each time (there is no chunked schedule
yet). ``_decide`` takes that decision for one input; ``unstaged`` gives, after the pass,
each input a block re-reads that it left in global memory with the reason, which
``deplodock -v`` prints as the pass's notes (the write-up's RMSNorm, 256 KB: "its 256 KB
stay in L2 between the reads").

A matmul chunked by ``chunk-matmul-k`` gets a slab of each shared operand per K chunk
instead (``StageKChunks`` in ``stage_k_chunks.py``); the two rules never meet, because a
buffer the chunk rule stages is no longer loaded directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import MemRefType, ModuleOp, UnitAttr
from xdsl.ir import BlockArgument, SSAValue
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

from deplodock.dialects import loop, tile
from deplodock.dialects.access import element_bytes
from deplodock.dialects.affine_syntax import expr_range, value_ranges
from deplodock.passes.tile.analysis import scheduled_walk
from deplodock.passes.tile.stage_k_chunks import StageKChunks
from deplodock.target import DEFAULT_ARCH, Target, pass_target

DEFAULT_MAX_BYTES = 48 * 1024
DEFAULT_MIN_READS = 2
DEFAULT_MIN_SOURCE_BYTES = 25 * 1024 * 1024
"""Half the H200's 50 MB of L2: an input smaller than this is re-read from L2, not HBM."""


LARGE_RESERVE_BYTES = 4 * 1024
"""Shared memory a large slab leaves to the kernel's other arrays (a reduction's scratch)."""
LARGE_BLOCKS_PER_SM = 1
"""Blocks of a large slab an SM must hold at once: one, so a row up to the whole of an
SM's shared memory is staged (smaller ones still get two or more blocks an SM by their
size). With one, a block's copy-in, compute and store do not overlap another's: on the
H200 (session 13, ``docs/bench/h200-2026-12-03-s13``) rows of 48-78 KB staged ran
1.03-1.50x re-reading them from HBM, rows of 128 KB 0.93-1.00x and rows of 196 KB
0.97-1.12x, with the online loop; since session 33 every copy of a thread is in flight,
and such a row keeps softmax's two loops over shared memory (``online_softmax.
staged_alone``): on an H100 host (session 36) rows of 196 KB 1026.0 -> 732.7 µs, 128 KB
408.2 -> 366.2 (eager 1025.6 and 659.5)."""


def stage_pays(
    reads: int,
    slab_bytes: int,
    used_bytes: int,
    source_bytes: int,
    max_bytes: int,
    min_reads: int,
    min_source_bytes: int,
) -> bool:
    """Stage when the block re-reads the slab, the re-reads would come from HBM (the input
    is too big to stay in L2) and all slabs stay within the budget."""
    return (
        reads >= min_reads
        and source_bytes >= min_source_bytes
        and used_bytes + slab_bytes <= max_bytes
    )


def large_slab_budget(
    target: Target, element_bytes: int, blocks_per_sm: int = LARGE_BLOCKS_PER_SM
) -> int:
    """The most a slab past ``max_bytes`` may take (0: none): the target's shared memory
    shared by ``blocks_per_sm`` blocks, less ``LARGE_RESERVE_BYTES`` each (110 KB on
    the H200), on a target with ``cp.async`` (the fill has every copy of a thread in
    flight, which a kernel of few blocks an SM needs to keep memory busy) for elements it
    copies (4 bytes or more)."""
    if not target.cp_async or element_bytes < 4:
        return 0
    return target.shared_bytes // blocks_per_sm - LARGE_RESERVE_BYTES


def _uniform_key(expr: AffineExpr, operands, kernel: tile.KernelOp) -> AffineExpr | None:
    """``expr`` over the kernel's block-argument numbers, or None if it is not block-uniform."""
    positions = []
    for value in operands:
        axis = kernel.axis_of(value)
        if axis is None or axis[1] != "block":
            positions.append(None)
        else:
            assert isinstance(value, BlockArgument)
            positions.append(value.index)
    used = {e.position for e in expr.post_order() if hasattr(e, "position")}
    if any(positions[p] is None for p in used):
        return None
    dims = [AffineExpr.dimension(p if p is not None else 0) for p in positions]
    return expr.replace_dims_and_symbols(dims, [])


def _origin_rank(loads: list[loop.LoadOp], kernel: tile.KernelOp) -> int:
    """How many leading dimensions every load indexes with the same block-uniform expr."""
    rank = len(loads[0].map.data.results)
    for dim in range(rank):
        keys = {_uniform_key(ld.map.data.results[dim], ld.indices, kernel) for ld in loads}
        if len(keys) != 1 or None in keys:
            return dim
    return rank


def _range_in_block(value: SSAValue, kernel: tile.KernelOp) -> tuple[int, int] | None:
    """The range of an index value within one block: block axes held at 0."""
    axis = kernel.axis_of(value)
    if axis is not None:
        return (0, 0) if axis[1] == "block" else (0, axis[0] - 1)
    owner = value.owner
    if isinstance(owner, affine.ApplyOp):
        operands = [_range_in_block(v, kernel) for v in owner.mapOperands]
        return expr_range(owner.map.data.results[0], operands)
    return value_ranges([value])[0]


def block_footprint(loads: list[loop.LoadOp], kernel: tile.KernelOp, lead: int) -> int:
    """Elements of the trailing dims (from ``lead``) that one block's loads can reach: the
    bounding box of their indices with the block axes held fixed (thread axes and loops
    still range). A slab larger than this would copy rows other blocks use."""
    shape = loads[0].buffer.type.get_shape()  # type: ignore[attr-defined]
    boxes: list[tuple[int, int]] = [(n, -1) for n in shape[lead:]]
    for load in loads:
        ranges = [_range_in_block(v, kernel) for v in load.indices]
        for k, expr in enumerate(load.map.data.results[lead:]):
            bounds = expr_range(expr, ranges)
            low, high = bounds if bounds is not None else (0, shape[lead + k] - 1)
            boxes[k] = (min(boxes[k][0], low), max(boxes[k][1], high))
    count = 1
    for (low, high), n in zip(boxes, shape[lead:], strict=True):
        count *= min(n, max(0, high - low + 1))
    return count


def _slab_name(buffer: SSAValue) -> str:
    hint = buffer.name_hint or "in"
    return f"{hint.removesuffix('_b')}_smem"


@dataclass(frozen=True)
class _Slab:
    """What staging one input buffer takes: its loads, the leading dimensions that are the
    origin, the slab's type and bytes, and the origin as a map over the first load's
    indices."""

    loads: list[loop.LoadOp]
    lead: int
    type: MemRefType
    size: int
    origin: AffineMap
    large: bool = False  # past max_bytes: filled by cp.async (``large_slab_budget``)


def _decide(
    buffer: SSAValue,
    kernel: tile.KernelOp,
    used: int,
    max_bytes: int,
    min_reads: int,
    min_source_bytes: int,
    large_bytes: int = 0,
) -> _Slab | str | None:
    """The slab to stage ``buffer`` in, or why it is not staged although each block reads
    it more than once (a sentence for ``-v``), or None when it is no candidate (read once,
    already staged, used by something other than loads, the same elements everywhere).

    A slab past ``max_bytes`` that alone fits ``large_bytes`` (``large_slab_budget``) is
    staged too, ``async``: a softmax row of 12289 floats (48 KB) read from HBM once
    instead of twice, at four blocks an SM, ran 1.5x faster on the H200."""
    uses = [u.operation for u in buffer.uses]
    loads = [u for u in uses if isinstance(u, loop.LoadOp)]
    if not loads or len(loads) != len(uses):
        return None  # already staged, or used by something other than loads
    reread = len(loads) >= min_reads
    if any(load.is_guarded for load in loads):
        # an edge tile's loads may leave the rows a whole-row slab holds
        return "an edge tile's loads may leave the rows a slab holds" if reread else None
    lead = _origin_rank(loads, kernel)
    type_ = buffer.type
    assert isinstance(type_, MemRefType)
    shape = type_.get_shape()
    if lead == len(shape):
        return None  # the same elements everywhere: registers, not a slab
    slab = MemRefType(type_.element_type, shape[lead:])
    size = tile.memref_bytes(slab)
    source = tile.memref_bytes(type_)
    large = used == 0 and max_bytes < size <= large_bytes
    budget = large_bytes if large else max_bytes
    if not stage_pays(len(loads), size, used, source, budget, min_reads, min_source_bytes):
        if not reread:
            return None
        if source < min_source_bytes:
            return (
                f"its {_bytes(source)} stay in L2 between the reads (an input under "
                f"{_bytes(min_source_bytes)} is not staged; stage-inputs{{min_source_bytes=0}} "
                "stages any)"
            )
        return (
            f"a slab of what a block may read of it, {_bytes(size)}, would take the "
            f"kernel's slabs past {_bytes(max_bytes)}"
            + (f" (and a slab alone past {_bytes(large_bytes)})" if large_bytes else "")
        )
    if block_footprint(loads, kernel, lead) < slab.element_count():
        # the block reads only part of the slab: copying it all costs more
        return "each block reads only part of the slab"
    first = loads[0]
    origin = [*first.map.data.results[:lead]] + [AffineExpr.constant(0)] * (len(shape) - lead)
    ranges = value_ranges(first.indices)
    bounds = [expr_range(e, ranges) for e in origin[:lead]]
    if any(b is None or b[0] < 0 or b[1] >= n for b, n in zip(bounds, shape, strict=False)):
        # an origin not provably inside the buffer (a guarded overshoot)
        return "the slab's origin is not provably inside the buffer"
    origin_map = AffineMap(first.map.data.num_dims, 0, tuple(origin))
    return _Slab(loads, lead, slab, size, origin_map, large)


def _bytes(n: int) -> str:
    """A size as people write it: 256 KB, 25 MB."""
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


class StageReusedInputs(RewritePattern):
    def __init__(
        self,
        max_bytes: int,
        min_reads: int,
        min_source_bytes: int,
        large_bytes: Callable[[SSAValue], int],
    ):
        self.max_bytes = max_bytes
        self.min_reads = min_reads
        self.min_source_bytes = min_source_bytes
        self.large_bytes = large_bytes

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        if scheduled_walk(op):
            return  # tile-walk staged what its blocks share
        block = op.body.block
        used = sum(s.size_bytes() for s in block.ops if isinstance(s, tile.StageOp))
        for buffer in op.input_buffers:
            plan = _decide(
                buffer,
                op,
                used,
                self.max_bytes,
                self.min_reads,
                self.min_source_bytes,
                self.large_bytes(buffer),
            )
            if not isinstance(plan, _Slab):
                continue
            first = plan.loads[0]
            stage = tile.StageOp(buffer, plan.origin, list(first.indices), plan.type)
            if plan.large:
                stage.async_ = UnitAttr()
            stage.result.name_hint = _slab_name(buffer)
            rewriter.insert(stage, InsertPoint.at_start(block))
            for load in plan.loads:
                map_ = load.map.data
                new = loop.LoadOp(
                    stage.result,
                    AffineMap(map_.num_dims, 0, map_.results[plan.lead :]),
                    list(load.indices),
                )
                new.result.name_hint = load.result.name_hint
                rewriter.replace(load, new)
            used += plan.size


def unstaged(module: ModuleOp, pass_: StageInputs) -> list[str]:
    """After ``pass_`` ran on ``module``: each input a block reads more than once that is
    still read from global memory, with why (``deplodock -v`` prints these as the pass's
    notes, ``-vv`` in its diff), e.g. ``k_rms_norm: x is read at 2 places a block, not
    staged: its 256 KB stay in L2 between the reads (...)``."""
    notes = []
    for op in module.walk():
        if not isinstance(op, tile.KernelOp):
            continue
        used = sum(s.size_bytes() for s in op.body.block.ops if isinstance(s, tile.StageOp))
        for buffer in op.input_buffers:
            why = _decide(
                buffer,
                op,
                used,
                pass_.max_bytes,
                pass_.min_reads,
                pass_.min_source_bytes,
                pass_.large_bytes(buffer),
            )
            if isinstance(why, str):
                reads = sum(1 for _ in buffer.uses)
                name = (buffer.name_hint or "input").removesuffix("_b")
                notes.append(
                    f"{op.sym_name.data}: {name} is read at {reads} places a block, "
                    f"not staged: {why}"
                )
    return notes


@dataclass(frozen=True)
class StageInputs(ModulePass):
    """Hoist input slabs a block reads more than once into shared memory."""

    name = "stage-inputs"

    max_bytes: int = DEFAULT_MAX_BYTES
    """Shared-memory budget for all slabs of a kernel, in bytes."""

    min_reads: int = DEFAULT_MIN_READS
    """Load sites of a buffer needed before a copy pays; 1 stages every input that fits."""

    min_source_bytes: int = DEFAULT_MIN_SOURCE_BYTES
    """Inputs smaller than this are not staged (their re-reads hit L2); 0 stages any size."""

    large: bool = True
    """Stage a kernel's one slab past ``max_bytes`` too, up to ``large_slab_budget``."""

    large_blocks: int = LARGE_BLOCKS_PER_SM
    """Blocks of a large slab an SM must hold at once (``LARGE_BLOCKS_PER_SM``)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose shared memory and copies bound a large slab."""

    def large_bytes(self, buffer: SSAValue) -> int:
        """``large_slab_budget`` for ``buffer``'s elements (0 when ``large`` is off)."""
        if not self.large:
            return 0
        element = buffer.type.element_type  # type: ignore[attr-defined]
        target = pass_target(self.name, self.arch)
        return large_slab_budget(target, element_bytes(element), self.large_blocks)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    StageKChunks(self.max_bytes),
                    StageReusedInputs(
                        self.max_bytes, self.min_reads, self.min_source_bytes, self.large_bytes
                    ),
                ],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
