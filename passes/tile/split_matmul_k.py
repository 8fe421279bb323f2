"""``split-matmul-k``: split a matmul's K across blocks when its tiles alone are too few.

A projection at a short sequence has few output tiles: TinyLlama's q_proj at S=32 is a
32 x 2048 output, 32 blocks of 32 x 64 for 132 SMs, each running the whole K of 2048.
This pass gives the K loop to ``S`` kernels' worth of blocks: a kernel of partial sums with
a leading axis ``%c`` over the splits, each covering ``K / S`` of the reduction, and the
original kernel, which now adds the ``S`` partials and applies the epilogue (bias,
activation, residual: whatever came after the K loop)::

    %y = tile.kernel @k_linear axes(%m : 32 = free, %n : 2048 = free) {
      %acc = loop.for %k = 0 to 2048 reduce(add) -> f32 { .. }
      loop.store %acc, %y_b[0, %m, %n] }

    %p = tile.kernel @k_linear_chunks axes(%c : 4 = free, %m : 32 = free, %n : 2048 = free)
           attributes {matmul_tile = array<i64: 4, 4, 8, 16, 16>} {
      %acc = loop.for %k_in = 0 to 512 reduce(add) -> f32 { %k = %c * 512 + %k_in  .. }
      loop.store %acc, %p_b[%c, %m, %n] }
    %y = tile.kernel @k_linear axes(%m : 32 = free, %n : 2048 = free) {
      %acc = loop.for %c_part = 0 to 4 reduce(add) -> f32 { loop.load %p_b[%c_part, %m, %n] }
      loop.store %acc, %y_b[0, %m, %n] }

The combine is exact in the sense that matters: the same products, added in ``S`` runs
whose sums are then added in order (deterministic, no atomics). The partials kernel is
the one ``register-tile`` and the later passes schedule as a matmul; it carries the cost
model's tile (``matmul_tile``) so they follow the plan that chose the split. The split
itself is ``chunk-reduce``'s (``split``), with the split axis first so the output rows
stay the last two axes.

The decision is ``matmul_plan`` (``passes/tile/matmul_tile.py``): a kernel straight from
``tileify`` with one top-level reduce loop that is a contraction whose loads both output
axes share, reading only axes, inputs and constants; ``splits`` overrides the count (1
turns the pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import loop, tile
from deplodock.passes.tile.analysis import (
    is_contraction,
    reads_only_inputs,
    shares_loads_across,
    stored_both_ways,
    top_level_reduces,
)
from deplodock.passes.tile.chunk_reduce import split
from deplodock.passes.tile.matmul_tile import (
    PLANNED_TILE,
    MatmulTile,
    matmul_plan,
    planned_tile_attr,
)
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def split_plan(
    kernel: tile.KernelOp, splits: int = 0, target: Target | None = None
) -> tuple[loop.ForOp, MatmulTile, int] | None:
    """Cost function: (the K loop, the tile, the splits) when ``kernel``'s K is worth
    splitting on ``target`` (None: sm_90), else None."""
    axes = kernel.axes
    if len(axes) < 2 or any(b != "free" for _, _, b in axes):
        return None
    if tile.is_register_tiled(kernel) or PLANNED_TILE in kernel.attributes:
        return None
    reduces = top_level_reduces(kernel)
    if len(reduces) != 1 or not is_contraction(kernel, reduces):
        return None
    (reduce,) = reduces
    (m, m_extent, _), (n, n_extent, _) = axes[-2], axes[-1]
    if not (shares_loads_across(reduces, m) and shares_loads_across(reduces, n)):
        return None
    if not reads_only_inputs(kernel, reduce):
        return None
    batch = 1
    for _, extent, _ in axes[:-2]:
        batch *= extent
    mixed = stored_both_ways(reduces)
    plan = matmul_plan(m_extent, n_extent, reduce.extent, batch, mixed, target=target)
    if plan is None:
        return None
    choice, chosen = plan
    if splits:
        if reduce.extent % (splits * choice.bk):
            return None
        chosen = splits
    return (reduce, choice, chosen) if chosen > 1 else None


@dataclass(frozen=True)
class SplitMatmulK(ModulePass):
    """Split the K loop of matmuls with too few tiles across blocks (see ``split_plan``)."""

    name = "split-matmul-k"

    splits: int = 0
    """K splits for every qualifying matmul (0: the cost model's; 1: none)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) the cost model prices the splits on."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.splits < 0:
            raise DiagnosticException(f"split-matmul-k: splits={self.splits} must be >= 0")
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            plan = split_plan(kernel, self.splits, target)
            if plan is None:
                continue
            reduce, choice, splits = plan
            part = split(kernel, reduce, splits, chunk_first=True)
            part.attributes[PLANNED_TILE] = planned_tile_attr(choice)
