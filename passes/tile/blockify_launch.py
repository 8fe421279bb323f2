"""``blockify-launch``: place every ``free`` axis of a tile kernel on threads or blocks.

* A kernel that already has a thread axis (``cooperative-reduce`` gave its rows a group of
  threads) makes every free axis a ``block`` axis: one block per row, unless a row's group
  is smaller than a block should be; then ``rows_per_block`` rows of the innermost free
  axis share a block, ``%a = %a_b * R + %a_r`` with ``%a_r`` a thread axis placed before
  the cooperative one (which must stay innermost: its threads are consecutive lanes).
  An attention walk's rows (``analysis.weighted_walk``) may leave a ragged last block,
  whose rows past the end wrap around (``_pack_rows``).
* A register-tiled matmul with a block tile (the ``threads`` of its ``#tile.schedule``,
  chosen by ``plan_matmul``) splits its last two axes into ``Tm x Tn`` threads and blocks
  (``matmul_placements``): each block owns a ``BM x BN`` tile of the output.
* Otherwise a block of ``block_threads`` threads is taken from the innermost axes (the
  fastest-varying index of the loads, so a warp reads consecutive elements) and the rest
  become blocks. An axis that does not fit whole is split into a block part and a thread
  part, ``%a = affine.apply (%a_b * T + %a_t)``; if ``T`` does not divide its extent, the
  last block runs past it and the body is guarded by ``scf.if %a_flat < extent``.

How many threads a block gets is the cost function ``block_threads_for``.

The index range check of loads and stores does not see ``scf.if`` guards, so under a guard
the axis is re-derived as ``%a = affine.apply (%a_flat mod extent)``: the same value there,
and provably in bounds. A guard only arises in kernels without cooperative axes, so no
``tile.combine`` (hence no barrier) ever sits under one.

After this pass no axis is ``free`` (the pass is idempotent) and the thread axes multiply
to at most 1024 (the tile.kernel verifier holds that).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.passes.tile.analysis import causal_walk, walk_head, weighted_walk
from deplodock.passes.tile.schedule.launch import (
    DEFAULT_BLOCK_THREADS,
    block_threads_for,
    rows_per_block,
)
from deplodock.passes.tile.schedule.reduce import (
    CAUSAL_WALK_BLOCK_THREADS,
    walk_block_threads,
    walk_rows,
)
from deplodock.target import DEFAULT_ARCH, Target, pass_target


@dataclass(frozen=True)
class Placement:
    """Where one free axis goes: ``block`` extent and ``thread`` extent (1 = absent)."""

    blocks: int
    threads: int

    @property
    def is_split(self) -> bool:
        return self.blocks > 1 and self.threads > 1


def place_axes(extents: list[int], budget: int) -> list[Placement]:
    """Fill a block of ``budget`` threads from the innermost axis outwards.

    An axis that fits in what is left of the budget becomes threads whole; the first one
    that does not is split (the budget's remainder of threads, the rest in blocks); every
    axis above it is blocks.
    """
    placements: list[Placement] = []
    left = budget
    for extent in reversed(extents):
        if left <= 1:
            placements.append(Placement(extent, 1))
        elif extent <= left:
            placements.append(Placement(1, extent))
            left //= extent
        else:
            placements.append(Placement(-(-extent // left), left))
            left = 1
    return placements[::-1]


def matmul_placements(op: tile.KernelOp, free: list[int]) -> list[Placement] | None:
    """A register-tiled matmul's block tile (its schedule's ``threads``, the planner's): the last
    two axes split into ``Tm x Tn`` threads and the rest of each into blocks, the other
    axes blocks. None when the kernel has no block tile or it does not divide the axes."""
    schedule = tile.schedule_of(op)
    decided = schedule.block_threads if schedule is not None else None
    if decided is None or len(free) != op.num_axes or len(free) < 2:
        return None
    threads_m, threads_n = decided
    m, n = free[-2], free[-1]
    if m % threads_m or n % threads_n:
        return None
    return [
        *(Placement(e, 1) for e in free[:-2]),
        Placement(m // threads_m, threads_m),
        Placement(n // threads_n, threads_n),
    ]


class PlaceFreeAxes(RewritePattern):
    """Rebind each free axis as block and/or thread, splitting and guarding as needed."""

    def __init__(
        self, block_threads: int = 0, heavy_first: bool = True, target: Target | None = None
    ):
        self.block_threads = block_threads
        self.heavy_first = heavy_first
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        axes = op.axes
        free = [extent for _, extent, binding in axes if binding == "free"]
        if not free:
            return
        packed = 0  # rows of the innermost free axis sharing a block (cooperative kernels)
        reverse = False  # the packed rows' blocks numbered last row first
        if any(binding == "thread" for _, _, binding in axes):
            placements = [Placement(e, 1) for e in free]
            walk = weighted_walk(op)
            reverse = self.heavy_first and walk and causal_walk(op)
            budget = self.block_threads or DEFAULT_BLOCK_THREADS
            if walk and not self.block_threads:
                lanes = op.threads_per_block()
                threads = lanes * math.prod(free)
                budget = walk_block_threads(
                    causal_walk(op), threads, DEFAULT_BLOCK_THREADS, self.target, lanes=lanes
                )
                # jam-walk-rows will give a thread R rows: R times the rows, 64 threads after
                head = walk_head(op)
                jam = walk_rows(*head, self.target) if head else 1
                budget = max(budget, CAUSAL_WALK_BLOCK_THREADS * jam)
            room = budget // op.threads_per_block()
            packed = rows_per_block(free[-1], room, walk, op.threads_per_block())
            if packed > 1:
                placements[-1] = Placement(-(-free[-1] // packed), packed)
        elif (tiled := matmul_placements(op, free)) is not None:
            placements = tiled
        else:
            total = 1
            for extent in free:
                total *= extent
            budget = self.block_threads or block_threads_for(total)
            placements = place_axes(free, budget)

        body = rewriter.move_region_contents_to_new_regions(op.body)
        block = body.block
        new_axes: list[tuple[int, str]] = []
        guards: list[tuple[SSAValue, int]] = []  # (flat index, extent) per guarded split
        prologue = []  # the index ops computed before any guard
        placement_of = iter(placements)
        position = 0
        for arg, extent, binding in axes:
            if binding != "free":
                new_axes.append((extent, binding))
                position += 1
                continue
            place = next(placement_of)
            if packed > 1 and place.threads == packed:
                position = self._pack_rows(
                    arg, place, extent, position, block, new_axes, rewriter, reverse
                )
                continue
            if not place.is_split:
                new_axes.append((extent, "thread" if place.threads > 1 else "block"))
                position += 1
                continue
            name = arg.name_hint or "a"
            outer = rewriter.insert_block_argument(block, position, IndexType())
            inner = rewriter.insert_block_argument(block, position + 1, IndexType())
            outer.name_hint, inner.name_hint = f"{name}_b", f"{name}_t"
            new_axes += [(place.blocks, "block"), (place.threads, "thread")]
            position += 2
            d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
            flat_expr = d0 * place.threads + d1
            if place.blocks * place.threads == extent:
                index = apply_op(flat_expr, [outer, inner], name)
                prologue.append(index)
                rewriter.replace_all_uses_with(arg, index.result)
            else:
                flat = apply_op(flat_expr, [outer, inner], f"{name}_flat")
                prologue.append(flat)
                guards.append((flat.result, extent))
                index = apply_op(d0 % extent, [flat.result], name)
                rewriter.insert(index, InsertPoint.at_start(block))
                rewriter.replace_all_uses_with(arg, index.result)
            rewriter.erase_block_argument(arg)

        if guards:
            self._guard(block, guards, rewriter)
        if prologue:
            rewriter.insert(prologue, InsertPoint.at_start(block))
        new = tile.KernelOp(
            op.sym_name.data, new_axes, list(op.inputs), [r.type for r in op.results], body
        )
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)

    @staticmethod
    def _pack_rows(
        arg: SSAValue,
        place: Placement,
        extent: int,
        position: int,
        block: Block,
        new_axes: list[tuple[int, str]],
        rewriter: PatternRewriter,
        reverse: bool = False,
    ) -> int:
        """Rows ``%a = %a_b * R + %a_r``: ``%a_r`` becomes the *first* thread axis, so the
        cooperative axis stays the innermost one (consecutive lanes, as combines need).
        When ``R`` does not divide the rows (``rows_per_block``'s ragged packing) the last
        block's rows past the end wrap around, ``%a = (%a_b * R + %a_r) mod extent``:
        they compute rows of the first block again and store the same values there, so no
        guard (and no barrier under one) is needed. ``reverse``: the blocks count down,
        ``%a = (B - 1 - %a_b) * R + %a_r``, so a causal walk's longest rows (the last ones)
        are launched first and the short ones fill the last wave."""
        name = arg.name_hint or "a"
        operands = []
        if place.blocks > 1:
            outer = rewriter.insert_block_argument(block, position, IndexType())
            outer.name_hint = f"{name}_b"
            new_axes.append((place.blocks, "block"))
            position += 1
            operands.append(outer)
        inner = rewriter.insert_block_argument(block, 0, IndexType())
        inner.name_hint = f"{name}_r"
        new_axes.insert(0, (place.threads, "thread"))
        position += 1
        if operands:
            d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
            first = (AffineExpr.constant(place.blocks - 1) - d0) if reverse else d0
            flat = first * place.threads + d1
            if place.blocks * place.threads != extent:
                flat = flat % extent
            index = apply_op(flat, [*operands, inner], name)
            rewriter.insert(index, InsertPoint.at_start(block))
            rewriter.replace_all_uses_with(arg, index.result)
        else:
            rewriter.replace_all_uses_with(arg, inner)
        rewriter.erase_block_argument(arg)
        return position

    @staticmethod
    def _guard(block: Block, guards: list[tuple[SSAValue, int]], rewriter: PatternRewriter) -> None:
        """Wrap the whole body in ``scf.if`` over every split axis's bound."""
        conditions = []
        cond: SSAValue | None = None
        for flat, extent in guards:
            bound = arith.ConstantOp(IntegerAttr(extent, IndexType()))
            bound.result.name_hint = f"c{extent}"
            check = arith.CmpiOp(flat, bound.result, "ult")
            check.result.name_hint = "in_range"
            conditions += [bound, check]
            if cond is None:
                cond = check.result
            else:
                both = arith.AndIOp(cond, check.result)
                conditions.append(both)
                cond = both.result
        assert cond is not None
        inner = Block()
        for child in list(block.ops):
            child.detach()
            inner.add_op(child)
        inner.add_op(scf.YieldOp())
        rewriter.insert([*conditions, scf.IfOp(cond, [], Region(inner))], InsertPoint.at_end(block))


@dataclass(frozen=True)
class BlockifyLaunch(ModulePass):
    """Bind every free axis to blocks or threads: the kernel's launch shape."""

    name = "blockify-launch"

    block_threads: int = 0
    """Threads per block for kernels without a cooperative axis (0: ``block_threads_for``)."""

    heavy_first: bool = True
    """A causal walk's blocks of rows launched longest first (``_pack_rows``' reverse):
    the GPU starts blocks in the order of their numbers, so the short blocks fill the last
    wave instead of a long one running alone at the end. H200 (``docs/bench/h200-2026-12-04-s21``,
    call 4): head dim 1024 S=512 (512 blocks, 1.3 waves) 274 -> 252 us, head dim 64
    S=4096 3535 -> 3467, head dim 128 S=2048 1437 -> 1415; TinyLlama's and Qwen's S=512
    attention, whose blocks all fit at once, 99 / 209 -> 101 / 211 (noise's size)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose SMs a walk's blocks and rows are planned for."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 0 <= self.block_threads <= tile.MAX_THREADS_PER_BLOCK:
            raise DiagnosticException(
                f"blockify-launch: block_threads={self.block_threads} must be between 1 and "
                f"{tile.MAX_THREADS_PER_BLOCK}"
            )
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    PlaceFreeAxes(
                        self.block_threads, self.heavy_first, pass_target(self.name, self.arch)
                    )
                ],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
