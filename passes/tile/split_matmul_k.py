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
           attributes {schedule = #tile.schedule<planned, thread = [4, 4], threads = [8, 16],
                                                 k_chunk = 16, splits = 4>} {
      %acc = loop.for %k_in = 0 to 512 reduce(add) -> f32 { %k = %c * 512 + %k_in  .. }
      loop.store %acc, %p_b[%c, %m, %n] }
    %y = tile.kernel @k_linear axes(%m : 32 = free, %n : 2048 = free) {
      %acc = loop.for %c_part = 0 to 4 reduce(add) -> f32 { loop.load %p_b[%c_part, %m, %n] }
      loop.store %acc, %y_b[0, %m, %n] }

The combine is exact in the sense that matters: the same products, added in ``S`` runs
whose sums are then added in order (deterministic, no atomics). The partials kernel is
the one ``register-tile`` and the later passes schedule as a matmul; it carries the plan
(a ``planned`` ``#tile.schedule``) so they follow the plan that chose the split. The split
itself is ``chunk-reduce``'s (``split``), with the split axis first so the output rows
stay the last two axes.

The decision is ``plan_matmul`` (``passes/tile/schedule/matmul.py``): a kernel straight
from ``tileify`` with one top-level reduce loop that is a contraction whose loads both
output axes share, reading only axes, inputs and constants; ``splits`` overrides the count
(1 turns the pass off).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import tile
from deplodock.passes.tile.analysis import top_level_reduces
from deplodock.passes.tile.chunk_reduce import split
from deplodock.passes.tile.schedule.matmul import pad_to_schedule, plan_matmul
from deplodock.target import DEFAULT_ARCH, pass_target


@dataclass(frozen=True)
class SplitMatmulK(ModulePass):
    """Split the K loop of matmuls with too few tiles across blocks (``plan_matmul``)."""

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
            schedule = plan_matmul(kernel, target, splits=self.splits)
            if schedule is None or schedule.splits.data == 1:
                continue
            pad_to_schedule(kernel, schedule, True, target)  # edge tiles, if it does not divide
            (reduce,) = top_level_reduces(kernel)
            part = split(kernel, reduce, schedule.splits.data, chunk_first=True)
            part.attributes[tile.SCHEDULE] = schedule
