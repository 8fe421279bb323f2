"""argmax, argmin, and max.dim/min.dim (their values and indices), with the reduces the
tensor level has:

    m   = max(x)                                 ten.reduce max over the axis
    idx = min(x == m or isnan(x) ? i : EXTENT)   ten.map with a ten.iota i, ten.reduce min

so the index is the FIRST position of the maximum, as torch's, and NaN is the maximum
(the max reduce propagates it, and the first NaN is the position found). With dim=None
argmax/argmin look at the flattened input: i is the row-major position, built from one
iota per axis. Indices are int64. Booleans are compared as i32 zeros and ones, unsigned
integers as i64.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, i1, i32, i64
from xdsl.ir import SSAValue

from deplodock.dialects.tensor import IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    count,
    element_of,
    is_float,
    normalize_dims,
    shape_of,
)
from deplodock.passes.torch.decompositions.reduction import (
    keepdim,
    reducible,
    signless,
    to_bool,
)


def arg_extreme(
    emit: Emitter, x: SSAValue, dims: Sequence[int], kind: str
) -> tuple[SSAValue, SSAValue]:
    """The max (`kind` "max") or min of `x` over `dims` and the first row-major position
    (over the `dims` axes only) where it is, both with `dims` dropped."""
    shape = shape_of(x)
    if count(shape, dims) == 0:
        raise Unsupported(f"arg{kind} over an empty axis (torch refuses it)")
    x = signless(emit, emit.convert(x, i32) if element_of(x) == i1 else x)
    m = emit.reduce(kind, x, dims, name=kind)
    iotas = [emit.add(IotaOp(d, TensorType(i64, shape)), f"i{d}") for d in dims]
    strides = [count(shape, [e for e in dims if e > d]) for d in dims]
    extent = count(shape, dims)

    def position(b: Body, v: SSAValue, mv: SSAValue, *ivs: SSAValue) -> SSAValue:
        if is_float(v.type):
            hit = b.emit(arith.CmpfOp(v, mv, "oeq"))
            nan = b.emit(arith.CmpfOp(v, v, "uno"))
            hit = b.emit(arith.OrIOp(hit, nan))
        else:
            hit = b.emit(arith.CmpiOp(v, mv, "eq"))
        index = None
        for iv, stride in zip(ivs, strides, strict=True):
            term = iv if stride == 1 else b.binary("mul", iv, b.const(stride, i64))
            index = term if index is None else b.binary("add", index, term)
        return b.emit(arith.SelectOp(hit, index, b.const(extent, i64)))

    m_b = emit.expand(m, shape, dims)
    hits = emit.map([x, m_b, *iotas], i64, position, name="hits")
    return m, emit.reduce("min", hits, dims, name="index")


class ArgMinMax(Decomposition):
    targets = ("argmax.default", "argmin.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        dim = op.arg("dim")
        x, dims = reducible(emit, x, normalize_dims(dim, len(shape_of(x))))
        _, index = arg_extreme(emit, x, dims, op.overload[3:6])
        return keepdim(emit, op, index, dims)


class MaxMinDim(Decomposition):
    targets = ("max.dim", "min.dim")

    def decompose(self, op: AtenOp, emit: Emitter) -> tuple[SSAValue, SSAValue]:
        x = emit.tensor("self")
        element = emit.element
        x, dims = reducible(emit, x, normalize_dims(int(op.arg("dim")), len(shape_of(x))))
        values, index = arg_extreme(emit, x, dims, op.overload[:3])
        values = to_bool(emit, values) if element == i1 else emit.convert(values, element)
        return keepdim(emit, op, values, dims), keepdim(emit, op, index, dims, 1)
