"""``tileify``: a ``loop.kernel`` becomes a ``tile.kernel`` whose parallel axes are its
outermost free loops.

The outermost *perfect nest* of free loops (each loop's body is the next loop and
nothing else, apart from loop-invariant scalar ops such as constants) is what a GPU runs
in parallel without any cooperation, so each of its loops becomes an axis of the tile
kernel, bound ``free``: placed later on threads or blocks by ``blockify-launch``. The rest
of the body (reduce loops, scalar math, inner free loops, stores) moves inside unchanged;
the tile level reuses ``loop.for``/``loop.load``/``loop.store``.

An axis always counts from 0, so a loop ``%i = L to U`` with ``L != 0`` becomes an axis of
extent ``U - L`` and ``%i`` is rebuilt as ``affine.apply (%a + L)``.

How many loops of the nest to lift is the cost function ``axes_to_lift``: all of them by
default (every free iteration is independent work); the ``depth`` option caps it, which
keeps the inner loops as per-thread serial loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Operation
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
from xdsl.traits import Pure

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import identity_attr


def _is_scalar(op: Operation, written: set) -> bool:
    """A pure, region-free op, or a load of a buffer the kernel never writes (an
    embedding's token id): it may sit beside a loop of the nest and be hoisted.

    Once the loops above it are axes (block arguments of the kernel) such an op computes
    the same value wherever it sits, so it does not break the nest.
    """
    if isinstance(op, loop.LoadOp):
        return op.buffer not in written
    return not op.regions and op.has_trait(Pure)


def free_loop_nest(kernel: loop.KernelOp) -> list[loop.ForOp]:
    """The outermost perfect nest of free loops, outermost first.

    A level continues the nest when its block holds exactly one ``loop.for``, a free one,
    and otherwise only pure scalar ops and loads of inputs (a gathered row's index: the
    embedding fused into the first o_proj's residual add would otherwise leave its
    2048 x 2048 matmul to 128 threads).
    """
    nest: list[loop.ForOp] = []
    block = kernel.body.block
    written = {op.buffer for op in kernel.walk() if isinstance(op, loop.StoreOp)}
    while True:
        loops = [op for op in block.ops if isinstance(op, loop.ForOp)]
        others = [op for op in block.ops if not isinstance(op, loop.ForOp)]
        if len(loops) != 1 or loops[0].is_reduce or not all(_is_scalar(o, written) for o in others):
            return nest
        nest.append(loops[0])
        block = loops[0].body.block


def axes_to_lift(nest: list[loop.ForOp], depth: int = 0) -> int:
    """Cost function: how many loops of the free nest become kernel axes.

    Every free iteration is independent work for the GPU, so all of them by default;
    ``depth > 0`` caps the count (the rest stay serial loops in each thread).
    """
    return len(nest) if depth <= 0 else min(depth, len(nest))


class TileifyKernel(RewritePattern):
    """``loop.kernel`` → ``tile.kernel`` with the free nest's loops as ``free`` axes."""

    def __init__(self, depth: int = 0):
        self.depth = depth

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.KernelOp, rewriter: PatternRewriter) -> None:
        drop_zero_trip_loops(op, rewriter)
        nest = free_loop_nest(op)
        nest = nest[: axes_to_lift(nest, self.depth)]
        body = rewriter.move_region_contents_to_new_regions(op.body)
        block = body.block
        axes = [rewriter.insert_block_argument(block, i, IndexType()) for i in range(len(nest))]
        for axis, for_op in zip(axes, nest, strict=True):
            axis.name_hint = for_op.induction_var.name_hint
        # Hoist, level by level, everything beside each loop into the kernel's block (the
        # scalar ops keep their order), then the innermost lifted loop's body.
        outer = nest[0] if nest else None
        for axis, for_op in zip(axes, nest, strict=True):
            for sibling in list(for_op.parent_block().ops):  # type: ignore[union-attr]
                if sibling is not for_op and sibling.parent_block() is not block:
                    sibling.detach()
                    rewriter.insert(sibling, InsertPoint.before(outer))  # type: ignore[arg-type]
            self._bind_axis(for_op, axis, rewriter, outer)  # type: ignore[arg-type]
        if nest:
            inner = nest[-1]
            rewriter.inline_block(inner.body.block, InsertPoint.before(outer))  # type: ignore[arg-type]
            rewriter.erase(outer)  # type: ignore[arg-type]
        new = tile.KernelOp(
            op.sym_name.data,
            [(for_op.extent, "free") for for_op in nest],
            list(op.inputs),
            [r.type for r in op.results],
            body,
        )
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)

    @staticmethod
    def _bind_axis(for_op: loop.ForOp, axis, rewriter: PatternRewriter, outer: loop.ForOp) -> None:
        """Replace the loop's induction variable by the axis (shifted when ``L != 0``)."""
        iv = for_op.induction_var
        lower = for_op.lower.data
        if lower == 0:
            rewriter.replace_all_uses_with(iv, axis)
            return
        shift = apply_op(AffineExpr.dimension(0) + lower, [axis], iv.name_hint)
        rewriter.insert(shift, InsertPoint.before(outer))
        rewriter.replace_all_uses_with(iv, shift.result)


def drop_zero_trip_loops(kernel: loop.KernelOp, rewriter: PatternRewriter) -> None:
    """Remove the loops of no iterations (``loop.for %i = 0 to 0``), which the pipeline never
    makes (``LiftEmpty``) but IR written by hand may hold: a loop's body that never runs is
    dropped, a reduce loop's results are its kinds' identities."""
    for for_op in [o for o in kernel.walk() if isinstance(o, loop.ForOp)]:
        if for_op.extent > 0 or for_op.parent is None:
            continue
        for kind, result in zip(for_op.kinds, for_op.results, strict=True):
            constant = arith.ConstantOp(identity_attr(kind, result.type))
            rewriter.insert_op(constant, InsertPoint.before(for_op))
            rewriter.replace_all_uses_with(result, constant.result)
        rewriter.erase_op(for_op)


@dataclass(frozen=True)
class Tileify(ModulePass):
    """Lift each loop kernel's outer free loops to the axes of a tile kernel."""

    name = "tileify"

    depth: int = 0
    """Lift at most this many loops of the free nest (0: all; see ``axes_to_lift``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([TileifyKernel(self.depth)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
