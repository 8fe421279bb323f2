"""``permute-register-tile``: deal a thread's register-tile columns out in float4 strips.

After ``register-tile`` and ``blockify-launch`` thread ``t`` of a block owns the ``TN``
adjacent columns ``t*TN .. t*TN+TN-1`` of the block's ``Tn*TN`` (the column index is
``n = (nb*Tn + t) * TN + j``). Adjacent threads are then ``TN`` columns apart: their
shared-memory reads of a K row of the weight (``w_s[k, n]``, 16 bytes each once
widened) hit the same banks two by two, and their stores of the output leave gaps that a
warp's store cannot coalesce.

This pass renumbers the columns so that a thread owns ``TN / V`` strips of ``V = 4``
adjacent columns, ``Tn * V`` apart, and the threads of a strip are adjacent::

    n_j = nb * (Tn*TN) + (j floordiv V) * (Tn*V) + t * V + (j mod V)

Thread ``t``'s strip ``s`` is the 16 bytes right after thread ``t-1``'s: a warp reads a
K row's columns as one contiguous run (no bank conflict) and stores an output row's as
whole 128-byte lines. It is a permutation of the block's columns (each ``n`` of the block
still belongs to exactly one ``(t, j)``), so every output is still computed once, by the
same additions: the result is the same to the bit.

It applies to kernels ``register-tile`` tiled with ``TN`` a multiple of ``V`` and whose
column axis ``blockify-launch`` split into blocks and threads; the rewrite is of the
column index ops ``%n_j = affine.apply (%g * TN + j)`` that ``register-tile`` made. The
pass is idempotent: a permuted index is no longer of that form.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from deplodock.dialects import tile
from deplodock.dialects.affine_syntax import apply_op
from deplodock.passes.tile.analysis import register_tile_of

STRIP = 4  # columns of a strip: one 16-byte float4


def _column_group(op: tile.KernelOp) -> tuple[SSAValue | None, SSAValue, int, SSAValue] | None:
    """``(nb, nt, Tn, g)``: the column axis's block and thread parts and the column-group
    value ``g = nb * Tn + nt`` the column indices are computed from (``g`` is ``nt`` when
    the axis is threads only)."""
    axes = op.axes
    if not axes or axes[-1][2] != "thread":
        return None
    nt, threads, _ = axes[-1]
    for use in nt.uses:
        apply = use.operation
        if not isinstance(apply, affine.ApplyOp) or len(apply.mapOperands) != 2:
            continue
        nb = apply.mapOperands[0]
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        axis = op.axis_of(nb)
        if (
            apply.mapOperands[1] is nt
            and axis is not None
            and axis[1] == "block"
            and apply.map.data.results[0] == d0 * threads + d1
        ):
            return nb, nt, threads, apply.result
    return None, nt, threads, nt


class PermuteColumns(RewritePattern):
    def __init__(self, strip: int):
        self.strip = strip

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        factors = register_tile_of(op)
        if factors is None or factors[1] % self.strip or factors[1] == self.strip:
            return
        tn = factors[1]
        found = _column_group(op)
        if found is None:
            return
        nb, nt, threads, group = found
        d0 = AffineExpr.dimension(0)
        columns = {d0 * tn + j if j else d0 * tn: j for j in range(tn)}
        for use in list(group.uses):
            apply = use.operation
            if not isinstance(apply, affine.ApplyOp) or len(apply.mapOperands) != 1:
                continue
            j = columns.get(apply.map.data.results[0])
            if j is None:
                continue
            v = self.strip
            offset = (j // v) * threads * v + j % v
            if nb is None:
                expr, operands = d0 * v + offset, [nt]
            else:
                d1 = AffineExpr.dimension(1)
                expr, operands = d0 * (threads * tn) + d1 * v + offset, [nb, nt]
            rewriter.replace(apply, apply_op(expr, operands, apply.result.name_hint))
        if nb is not None and not group.uses:
            rewriter.erase(group.owner)  # the column group: every column now reads nb, nt


@dataclass(frozen=True)
class PermuteRegisterTile(ModulePass):
    """Renumber register-tile columns into strips of ``strip`` (see the docstring)."""

    name = "permute-register-tile"

    strip: int = STRIP
    """Adjacent columns a thread keeps together (4: one float4)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.strip < 1:
            raise DiagnosticException(f"permute-register-tile: strip={self.strip} must be >= 1")
        PatternRewriteWalker(
            GreedyRewritePatternApplier([PermuteColumns(self.strip)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
