"""flip, roll, repeat: data movement that is a reordering of the source, one index_map each.

- `flip(dims)` reads axis d at `n - 1 - i`;
- `roll(shifts, dims)` reads axis d at `(i + c) mod n` with `c = -shift mod n`, so the
  index never goes negative (the CUDA emitter's `%` truncates); with no dims it rolls the
  flattened tensor: a reshape to one axis, the shift, a reshape back, which fold into one
  map;
- `repeat(repeats)` tiles the source, aligned to the trailing axes: result axis a reads
  its source axis at `i mod n` (new leading axes read nothing).

None of them computes anything, so after fusion each is an index expression in the loads
of whoever reads it.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    Unsupported,
    axis,
    shape_of,
)
from deplodock.passes.torch.decompositions.view import reshape_map


def _identity(rank: int) -> list[AffineExpr]:
    return [AffineExpr.dimension(a) for a in range(rank)]


class Flip(Decomposition):
    targets = ("flip.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        exprs = _identity(len(shape))
        flipped = {axis(int(d), len(shape)) for d in op.arg("dims", [])}
        flipped = {d for d in flipped if shape and shape[d] > 1}
        if not flipped:
            return x  # nothing of extent above 1 flips
        for d in flipped:
            exprs[d] = AffineExpr.constant(shape[d] - 1) - exprs[d]
        return emit.index_map(x, AffineMap(len(shape), 0, tuple(exprs)), shape, emit.name)


class Roll(Decomposition):
    targets = ("roll.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        shifts = [int(s) for s in op.arg("shifts")]
        dims = [axis(int(d), len(shape)) for d in op.arg("dims", []) or []]
        if 0 in shape:
            return x
        if not dims:  # the flattened tensor rolls, then takes its shape back
            if len(shifts) != 1:
                raise Unsupported(f"roll of the flattened tensor by {len(shifts)} shifts")
            n = math.prod(shape)
            flat = emit.index_map(x, reshape_map(shape, (n,)), (n,))
            rolled = self._rolled(emit, flat, [0], shifts)
            return emit.index_map(rolled, reshape_map((n,), shape), shape, emit.name)
        if len(shifts) != len(dims):
            raise Unsupported(f"roll by {len(shifts)} shifts along {len(dims)} dimensions")
        return self._rolled(emit, x, dims, shifts, emit.name)

    @staticmethod
    def _rolled(
        emit: Emitter, x: SSAValue, dims: list[int], shifts: list[int], name: str | None = None
    ) -> SSAValue:
        shape = shape_of(x)
        exprs = _identity(len(shape))
        for d, shift in zip(dims, shifts, strict=True):
            n = shape[d]
            c = (-shift) % n
            if c:  # a later shift of the same axis composes with the earlier one
                exprs[d] = (exprs[d] + c) % n
        if exprs == _identity(len(shape)):
            return x
        return emit.index_map(x, AffineMap(len(shape), 0, tuple(exprs)), shape, name)


class Repeat(Decomposition):
    targets = ("repeat.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        src, dst = shape_of(x), emit.shape
        repeats = [int(r) for r in op.arg("repeats")]
        if len(repeats) < len(src):
            raise Unsupported(f"repeat with {len(repeats)} counts for a rank-{len(src)} tensor")
        lead = len(dst) - len(src)
        exprs = []
        for j, n in enumerate(src):
            axis = AffineExpr.dimension(lead + j)
            if n == 1:
                exprs.append(AffineExpr.constant(0))
            elif repeats[lead + j] == 1 or n == 0:
                exprs.append(axis)
            else:
                exprs.append(axis % n)
        return emit.index_map(x, AffineMap(len(dst), 0, tuple(exprs)), dst, emit.name)
