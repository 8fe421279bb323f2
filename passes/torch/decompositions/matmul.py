"""matmul, mm, bmm: a broadcast multiply in the product space, then a sum over K.

    a_b  = index_map a      (.., M, K)    -> (.., M, K, N)
    b_b  = index_map b      (.., K, N)    -> (.., M, K, N)
    prod = ten.map mulf(a_b, b_b)
    out  = ten.reduce add prod over K     -> (.., M, N)

torch.matmul's rank rules fall out of the product space: a 1-D operand has no M (or N)
axis, so it is neither added nor removed; batch axes broadcast by numpy's rules. Later
passes recognise this multiply-reduce as a matmul; here it only has to mean one.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    broadcast_shape,
    element_of,
    shape_of,
)


def _operand_map(
    shape: Sequence[int], batch: Sequence[int], matrix_axes: Sequence[int], rank: int
) -> AffineMap:
    """From the product space (of `rank` axes, `batch` first) to an operand of `shape`:
    its leading axes align right with the batch axes (size 1 broadcasts), its last
    len(matrix_axes) axes are those axes of the space."""
    leading = len(shape) - len(matrix_axes)
    exprs = []
    for j, size in enumerate(shape[:leading], start=len(batch) - leading):
        exprs.append(AffineExpr.constant(0) if size != batch[j] else AffineExpr.dimension(j))
    exprs += [AffineExpr.dimension(a) for a in matrix_axes]
    return AffineMap(rank, 0, tuple(exprs))


class MatMul(Decomposition):
    targets = ("matmul.default", "mm.default", "bmm.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        a = emit.tensor("self")
        b = emit.tensor("other" if op.overload == "matmul.default" else "mat2")
        return emit.convert(product(emit, a, b), emit.element)


class AddMatMul(Decomposition):
    """addmm, baddbmm, addmv, addbmm: ``beta * self + alpha * (mat1 @ mat2)``, the
    product's epilogue (addbmm sums its batch of products first; with ``beta = 0``,
    ``self`` is not read: its NaNs do not reach the result, as in torch)."""

    targets = ("addmm.default", "baddbmm.default", "addmv.default", "addbmm.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        names = {"addmv.default": ("mat", "vec"), "addmm.default": ("mat1", "mat2")}
        a, b = (emit.tensor(n) for n in names.get(op.overload, ("batch1", "batch2")))
        prod = product(emit, a, b)
        if op.overload == "addbmm.default":
            prod = emit.reduce("add", prod, [0], name="batch_sum")
        beta, alpha = op.arg("beta", 1), op.arg("alpha", 1)
        acc, element = element_of(prod), emit.element

        def scaled(b: Body, p: SSAValue, *rest: SSAValue) -> SSAValue:
            p = p if alpha == 1 else b.binary("mul", p, b.const(alpha, acc))
            if not rest:
                return p
            s = b.cast(rest[0], acc)
            s = s if beta == 1 else b.binary("mul", s, b.const(beta, acc))
            return b.binary("add", p, s)

        inputs = [prod] if beta == 0 else [prod, emit.broadcast(emit.tensor("self"), emit.shape)]
        return emit.map(inputs, element, scaled, shape=emit.shape)


def product(emit: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """``a @ b`` by torch.matmul's rank rules, in the accumulator type of the result."""
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise Unsupported("matmul of a 0-d tensor")
    k = sa[-1]
    if (sb[-2] if len(sb) >= 2 else sb[0]) != k:
        raise Unsupported(f"matmul of {list(sa)} and {list(sb)}: inner sizes differ")
    batch = broadcast_shape(sa[:-2], sb[:-2])
    m, n = sa[-2:-1], sb[-1:] if len(sb) >= 2 else ()
    space = (*batch, *m, k, *n)
    k_axis = len(batch) + len(m)

    a_axes = [len(batch), k_axis] if m else [k_axis]
    b_axes = [k_axis, k_axis + 1] if n else [k_axis]
    a_b = emit.index_map(a, _operand_map(sa, batch, a_axes, len(space)), space)
    b_b = emit.index_map(b, _operand_map(sb, batch, b_axes, len(space)), space)
    acc = accumulator_type(emit.element)
    prod = emit.map(
        [a_b, b_b],
        acc,
        lambda bd, x, y: bd.binary("mul", bd.cast(x, acc), bd.cast(y, acc)),
        name="prod",
    )
    return emit.reduce("add", prod, [k_axis], name="acc")
