"""cumsum along one axis: a masked sum over a second copy of that axis.

    x_b = index_map x                (.., i, ..) -> (.., i, j, ..) reading x at j
    t   = ten.map(x_b, iota i, iota j): j <= i ? x_b : 0
    out = ten.reduce add t over j

A scan is no map, reduce or view, and the sizes it meets in these models (the sequence
axis of position ids, while building the attention mask) are small, so the quadratic
form is preferred to a new op: it is one reduce that fusion and the GPU schedules
already handle. Booleans and integers accumulate in the result's type (int64, as torch
promotes), 16-bit floats in f32.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.tensor import IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    shape_of,
)


class Cumsum(Decomposition):
    targets = ("cumsum.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        if not shape:
            return emit.convert(x, emit.element)
        dim = int(op.arg("dim")) % len(shape)
        if shape[dim] == 0:
            raise Unsupported("cumsum along an empty axis")
        space = (*shape[: dim + 1], shape[dim], *shape[dim + 1 :])
        dims = [AffineExpr.dimension(a) for a in range(len(space))]
        x_b = emit.index_map(x, AffineMap(len(space), 0, (*dims[:dim], *dims[dim + 1 :])), space)
        i = emit.add(IotaOp(dim, TensorType(i64, space)), "i")
        j = emit.add(IotaOp(dim + 1, TensorType(i64, space)), "j")
        acc = accumulator_type(emit.element)

        def body(b: Body, v: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            seen = b.emit(arith.CmpiOp(jv, iv, "sle"))
            return b.emit(arith.SelectOp(seen, b.cast(v, acc), b.const(0, acc)))

        terms = emit.map([x_b, i, j], acc, body, name="terms")
        return emit.convert(emit.reduce("add", terms, [dim + 1], name="sum"), emit.element)
