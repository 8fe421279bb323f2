"""cumsum, cumprod and logcumsumexp along one axis: a masked reduce over a second copy of
that axis.

    x_b = index_map x                (.., i, ..) -> (.., i, j, ..) reading x at j
    t   = ten.map(x_b, iota i, iota j): j <= i ? x_b : identity (0 for add, 1 for mul)
    out = ten.reduce add (mul) t over j

A scan is no map, reduce or view, and the sizes it meets in these models (the sequence
axis of position ids, while building the attention mask) are small, so the quadratic
form is preferred to a new op: it is one reduce that fusion and the GPU schedules
already handle. Booleans and integers accumulate in the result's type (int64, as torch
promotes; `dtype=` is that type too), 16-bit floats in f32.

logcumsumexp is the stable log-sum-exp of each prefix, two masked reduces over j:

    m   = max over j <= i of x_j      (an infinite m taken as 0, as torch's logsumexp)
    out = log(sum over j <= i of exp(x_j - m)) + m

A tensor with no elements is its own scan (converted to the result's type).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
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
    is_float,
    shape_of,
)

_KINDS = {"cumsum.default": "add", "cumprod.default": "mul"}


def _prefixes(
    emit: Emitter, x: SSAValue, dim: int
) -> tuple[SSAValue, SSAValue, SSAValue, tuple[int, ...]]:
    """x read at j in the space (.., i, j, ..), the iotas i and j, and that space."""
    shape = shape_of(x)
    space = (*shape[: dim + 1], shape[dim], *shape[dim + 1 :])
    dims = [AffineExpr.dimension(a) for a in range(len(space))]
    x_b = emit.index_map(x, AffineMap(len(space), 0, (*dims[:dim], *dims[dim + 1 :])), space)
    i = emit.add(IotaOp(dim, TensorType(i64, space)), "i")
    j = emit.add(IotaOp(dim + 1, TensorType(i64, space)), "j")
    return x_b, i, j, space


def _seen(b: Body, iv: SSAValue, jv: SSAValue) -> SSAValue:
    return b.emit(arith.CmpiOp(jv, iv, "sle"))


class Cumsum(Decomposition):
    targets = (*_KINDS, "logcumsumexp.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        if not shape or 0 in shape:
            return emit.convert(x, emit.element)
        dim = int(op.arg("dim")) % len(shape)
        x_b, i, j, _ = _prefixes(emit, x, dim)
        acc = accumulator_type(emit.element)
        if op.overload == "logcumsumexp.default":
            return self._logcumsumexp(emit, x_b, i, j, dim, acc)
        kind = _KINDS[op.overload]
        identity = 0 if kind == "add" else 1

        def body(b: Body, v: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            return b.emit(arith.SelectOp(_seen(b, iv, jv), b.cast(v, acc), b.const(identity, acc)))

        terms = emit.map([x_b, i, j], acc, body, name="terms")
        name = "sum" if kind == "add" else "prod"
        return emit.convert(emit.reduce(kind, terms, [dim + 1], name=name), emit.element)

    @staticmethod
    def _logcumsumexp(
        emit: Emitter, x_b: SSAValue, i: SSAValue, j: SSAValue, dim: int, acc
    ) -> SSAValue:
        if not is_float(acc):
            raise Unsupported(f"logcumsumexp of {acc} values")
        space = shape_of(x_b)
        neg_inf = float("-inf")

        def seen_or(b: Body, v: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            return b.emit(arith.SelectOp(_seen(b, iv, jv), b.cast(v, acc), b.const(neg_inf, acc)))

        seen = emit.map([x_b, i, j], acc, seen_or, name="seen")
        m = emit.reduce("max", seen, [dim + 1], name="prefix_max")

        def finite(b: Body, mv: SSAValue) -> SSAValue:
            magnitude = b.unary(math.AbsFOp, mv)
            infinite = b.emit(arith.CmpfOp(magnitude, b.const(float("inf"), acc), "oeq"))
            return b.emit(arith.SelectOp(infinite, b.const(0.0, acc), mv))

        m = emit.map([m], acc, finite, name="max")
        m_b = emit.expand(m, space, [dim + 1])

        def term(b: Body, v: SSAValue, mv: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            e = b.unary(math.ExpOp, b.binary("sub", b.cast(v, acc), mv))
            return b.emit(arith.SelectOp(_seen(b, iv, jv), e, b.const(0.0, acc)))

        exp = emit.map([x_b, m_b, i, j], acc, term, name="exp")
        total = emit.reduce("add", exp, [dim + 1], name="sum")

        def body(b: Body, s: SSAValue, mv: SSAValue) -> SSAValue:
            return b.binary("add", b.unary(math.LogOp, s), mv)

        return emit.map([total, m], emit.element, body)
