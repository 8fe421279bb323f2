"""gather and index_select: reads at indices held in data, one `ten.gather` each.

`index_select(x, dim, index)` is `numpy.take(x, index, dim)`, which is what `ten.gather`
says. `gather(x, dim, index)` reads `x[.., index[i], ..]` with every other axis at the
result's own position, which `ten.gather` (whose index broadcasts as a block) cannot say
on an axis of its own, so the table is linearised:

    flat = index_map x               one axis (a reshape view)
    lin  = ten.map(index, iota..): index * stride_dim + sum_e pos_e * stride_e     i64
    out  = ten.gather flat[lin] axis 0

(the iotas become loop indices after fusion, so a gathered element is one load at a
computed offset). torch rejects negative or out-of-range indices for both ops, so the
indices are used as they are (`take` of a valid program is always in bounds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineMap

from deplodock.dialects.tensor import GatherOp, IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    axis,
    shape_of,
)
from deplodock.passes.torch.decompositions.creation import splat
from deplodock.passes.torch.decompositions.view import reshape_map


def flatten(emit: Emitter, x: SSAValue) -> SSAValue:
    """`x` as one axis, row-major (itself when it already is one)."""
    shape = shape_of(x)
    n = math.prod(shape)
    if shape == (n,):
        return x
    return emit.index_map(x, reshape_map(shape, (n,)), (n,))


def take(
    emit: Emitter,
    x: SSAValue,
    coords: Sequence[SSAValue | int],
    shape: Sequence[int],
    name: str | None = None,
) -> SSAValue:
    """`x[c_0[i], .., c_r[i]]` for every position i of `shape`, one coordinate per axis of
    x: a tensor of `shape` (integers), or an axis of `shape` whose position it is (an
    iota)."""
    src = shape_of(x)
    strides = [math.prod(src[k + 1 :]) for k in range(len(src))]
    tensors = [
        c if isinstance(c, SSAValue) else emit.add(IotaOp(c, TensorType(i64, shape)), "pos")
        for k, c in enumerate(coords)
        if src[k] != 1  # an extent-1 axis is always read at 0
    ]
    used = [k for k in range(len(src)) if src[k] != 1]

    def linear(b: Body, *ids: SSAValue) -> SSAValue:
        total = None
        for i, k in zip(ids, used, strict=True):
            term = b.cast(i, i64)
            if strides[k] != 1:
                term = b.binary("mul", term, b.const(strides[k], i64))
            total = term if total is None else b.binary("add", total, term)
        return total if total is not None else b.const(0, i64)

    lin = emit.map(tensors, i64, linear, name="lin", shape=shape)
    return emit.add(GatherOp(flatten(emit, x), lin, 0), name)


class Gather(Decomposition):
    targets = ("gather.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, index = emit.tensor("self"), emit.tensor("index")
        src, shape = shape_of(x), emit.shape
        if 0 in shape:  # an empty index reads nothing (its rank need not match then)
            return splat(emit, 0)
        if not src:  # a 0-d table: its one element (the index must be 0)
            return emit.index_map(x, _no_axes(len(shape)), shape)
        dim = axis(int(op.arg("dim")), len(src))
        if len(shape_of(index)) != len(src):
            raise Unsupported(
                f"gather with a rank-{len(shape_of(index))} index of a rank-{len(src)} tensor"
            )
        coords: list[SSAValue | int] = list(range(len(src)))
        coords[dim] = index
        return take(emit, x, coords, shape)


def _no_axes(rank: int) -> AffineMap:
    """The map of a rank-`rank` view of a 0-d tensor."""
    return AffineMap(rank, 0, ())


class IndexSelect(Decomposition):
    targets = ("index_select.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, index = emit.tensor("self"), emit.tensor("index")
        shape = emit.shape
        if not shape_of(x):
            x = emit.index_map(x, _no_axes(1), (1,))
        dim = axis(int(op.arg("dim")), len(shape_of(x)))
        out = emit.add(GatherOp(x, index, dim))
        if shape_of(out) != shape:  # a 0-d index keeps its axis, of extent 1
            out = emit.index_map(out, reshape_map(shape_of(out), shape), shape)
        return out
