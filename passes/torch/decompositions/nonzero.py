"""nonzero_static: the positions of the first `size` nonzero elements, `fill_value` after.

`nonzero` has a data-dependent shape; its static form does not: row k of the (size, rank)
result holds the coordinates of the element whose selection rank (the count of nonzero
elements before it in row-major order, `scatter.selection_rank`) is k. Over (size, N),
N the element count, exactly one element hits each row below the nonzero count, so each
coordinate is a masked sum:

    hit    = ten.map(nz_v, rank_v, iota k): nz && rank == k                  (size, N)
    col_d  = ten.reduce add (hit ? coordinate d of j : 0) over N             (size,)
    out    = cat of ten.map(col_d, iota k): k < count ? col_d : fill_value  (size, rank)

with `count` the sum of the nonzero flags. Quadratic in N, as masked_scatter is.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, Signedness, i1, i64
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.cat import concat
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    element_of,
    shape_of,
)
from deplodock.passes.torch.decompositions.compare import truthy
from deplodock.passes.torch.decompositions.creation import splat
from deplodock.passes.torch.decompositions.scatter import positions, selection_rank
from deplodock.passes.torch.decompositions.view import reshape_map


class NonzeroStatic(Decomposition):
    targets = ("nonzero_static.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        size, rank = emit.shape
        fill = int(op.arg("fill_value", -1))
        n = math.prod(shape)
        if size == 0 or rank == 0:
            return splat(emit, fill)  # no elements
        if n == 0:
            return splat(emit, fill)  # nothing is nonzero
        element = element_of(x)
        if isinstance(element, IntegerType) and element.signedness.data == Signedness.UNSIGNED:
            x = emit.convert(x, i64)  # arith compares signless integers; zero stays zero
        nonzero = emit.map([x], i1, lambda b, v: truthy(b, v), name="nz")
        flat = (n,)
        nz = emit.index_map(nonzero, reshape_map(shape, flat), flat)
        order = emit.index_map(selection_rank(emit, nonzero), reshape_map(shape, flat), flat)
        space = (size, n)
        to_j = AffineMap(2, 0, (AffineExpr.dimension(1),))
        nz_t, order_t = emit.index_map(nz, to_j, space), emit.index_map(order, to_j, space)
        k, j = positions(emit, space, [0, 1])

        def hit(b: Body, m: SSAValue, r: SSAValue, kv: SSAValue) -> SSAValue:
            return b.emit(arith.AndIOp(m, b.emit(arith.CmpiOp(r, kv, "eq"))))

        hits = emit.map([nz_t, order_t, k], i1, hit, name="hits")
        ones = emit.map([nz], i64, lambda b, m: b.cast(m, i64), name="ones")
        count = emit.reduce("add", ones, [0], name="count")
        count_k = emit.index_map(count, AffineMap(1, 0, ()), (size,))
        (row,) = positions(emit, (size,), [0])
        columns = []
        for d in range(rank):
            stride = math.prod(shape[d + 1 :])

            def coordinate(b: Body, h: SSAValue, jv: SSAValue, d=d, stride=stride) -> SSAValue:
                c = jv if stride == 1 else b.emit(arith.DivSIOp(jv, b.const(stride, i64)))
                if d > 0:
                    c = b.emit(arith.RemSIOp(c, b.const(shape[d], i64)))
                return b.emit(arith.SelectOp(h, c, b.const(0, i64)))

            terms = emit.map([hits, j], i64, coordinate, name="terms")
            column = emit.reduce("add", terms, [1], name="column")

            def filled(b: Body, c: SSAValue, kv: SSAValue, total: SSAValue) -> SSAValue:
                found = b.emit(arith.CmpiOp(kv, total, "slt"))
                return b.emit(arith.SelectOp(found, c, b.const(fill, i64)))

            column = emit.map([column, row, count_k], i64, filled, name="column")
            columns.append(
                emit.index_map(column, AffineMap(2, 0, (AffineExpr.dimension(0),)), (size, 1))
            )
        return concat(emit, columns, 1, (size, rank), i64, name=emit.name)
