"""linear (x @ weight.T + bias): a matmul whose weight is read transposed, plus a bias map.

    x_b  = index_map x       (.., K)  -> (.., K, N)
    w_b  = index_map weight  (N, K)   -> (.., K, N)     the transpose is in the map
    prod = ten.map mulf(x_b, w_b)
    acc  = ten.reduce add prod over K                    -> (.., N)
    out  = ten.map addf(acc, bias_b)                     only with a bias

the product-space layout of matmul.py, so later passes see one multiply-reduce (a
matmul) whether the graph wrote linear or matmul; the bias is an epilogue map after the
reduce, which fusion folds into the matmul's store. 16-bit inputs accumulate in f32.
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    shape_of,
)


class Linear(Decomposition):
    targets = ("linear.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, w, bias = emit.tensor("input"), emit.tensor("weight"), op.tensor_arg("bias")
        sx, sw = shape_of(x), shape_of(w)
        if len(sw) != 2 or not sx or sx[-1] != sw[1]:
            raise Unsupported(f"linear of {list(sx)} with a {list(sw)} weight")
        (n, k), lead = sw, sx[:-1]
        space, r = (*lead, k, n), len(sx) - 1
        dims = [AffineExpr.dimension(i) for i in range(r + 2)]
        x_b = emit.index_map(x, AffineMap(r + 2, 0, (*dims[:r], dims[r])), space)
        w_b = emit.index_map(w, AffineMap(r + 2, 0, (dims[r + 1], dims[r])), space)
        acc_t = accumulator_type(emit.element)
        prod = emit.map(
            [x_b, w_b],
            acc_t,
            lambda b, a, c: b.binary("mul", b.cast(a, acc_t), b.cast(c, acc_t)),
            name="prod",
        )
        acc = emit.reduce("add", prod, [r], name="acc")
        if bias is None:
            return emit.convert(acc, emit.element)
        return emit.map(
            [acc, bias],
            emit.element,
            lambda b, a, c: b.binary("add", a, b.cast(c, acc_t)),
            shape=emit.shape,
        )
