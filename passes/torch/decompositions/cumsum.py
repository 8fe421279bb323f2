"""cumsum, cumprod and logcumsumexp along one axis: a masked reduce over a second copy of
that axis.

    x_b = index_map x                (.., i, ..) -> (.., i, j, ..) reading x at j
    t   = ten.map(x_b, iota i, iota j): j <= i ? x_b : identity (0 for add, 1 for mul)
    out = ten.reduce add (mul) t over j

A scan is no map, reduce or view, and the sizes it meets in these models (the sequence
axis of position ids, while building the attention mask) are small, so the quadratic
form is preferred to a new op: it is one reduce that fusion and the GPU schedules
already handle. Booleans and integers accumulate in the result's type (int64, as torch
promotes; `dtype=` is that type too; uint8 in i64, truncated back), 16-bit floats in f32.

logcumsumexp is the stable log-sum-exp of each prefix, two masked reduces over j:

    m   = max over j <= i of x_j      (an infinite m taken as 0, as torch's logsumexp)
    out = log(sum over j <= i of exp(x_j - m)) + m

cummax and cummin are a masked max (min) over j for the values and, for the indices, a
max over j <= i of `x_j == value_i or isnan(x_j) ? j : -1`: the LAST position of the
running extreme, and of the last NaN once one is seen, as torch's kernel (which takes
`x >= best`) gives.

A tensor with no elements is its own scan (converted to the result's type).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    TensorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.combine import identity_attr
from deplodock.dialects.tensor import ConstantOp, IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    element_of,
    is_float,
    shape_of,
)
from deplodock.passes.torch.decompositions.reduction import compute_type, signless, to_bool

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
        x_b, i, j, _ = _prefixes(emit, signless(emit, x), dim)
        if op.overload == "logcumsumexp.default":
            return self._logcumsumexp(emit, x_b, i, j, dim, accumulator_type(emit.element))
        kind = _KINDS[op.overload]
        acc = compute_type(emit.element, kind)
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


def _identity(b: Body, kind: str, type_: Attribute) -> SSAValue:
    """The value a `kind` reduce starts from (-inf, or the least integer, for max)."""
    return b.emit(arith.ConstantOp(identity_attr(kind, type_)))


class CumExtreme(Decomposition):
    targets = ("cummax.default", "cummin.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> tuple[SSAValue, SSAValue]:
        x = emit.tensor("self")
        shape = shape_of(x)
        values, indices = op.results
        if not shape or 0 in shape:  # one element (its index is 0) or none
            zeros = DenseIntOrFPElementsAttr.from_list(indices.type, [] if shape else [0])
            return emit.convert(x, element_of(values)), emit.add(ConstantOp(zeros))
        kind = op.overload[3:6]
        dim = int(op.arg("dim")) % len(shape)
        x = signless(emit, emit.convert(x, i32) if element_of(x) == i1 else x)
        type_ = element_of(x)
        if not (is_float(type_) or isinstance(type_, IntegerType)):
            raise Unsupported(f"cum{kind} of {type_} values")
        x_b, i, j, space = _prefixes(emit, x, dim)

        def seen_or(b: Body, v: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            return b.emit(arith.SelectOp(_seen(b, iv, jv), v, _identity(b, kind, type_)))

        seen = emit.map([x_b, i, j], type_, seen_or, name="seen")
        best = emit.reduce(kind, seen, [dim + 1], name="best")
        best_b = emit.expand(best, space, [dim + 1])

        def position(b: Body, v: SSAValue, m: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
            if is_float(type_):
                hit = b.emit(arith.CmpfOp(v, m, "oeq"))
                hit = b.emit(arith.OrIOp(hit, b.emit(arith.CmpfOp(v, v, "uno"))))
            else:
                hit = b.emit(arith.CmpiOp(v, m, "eq"))
            hit = b.emit(arith.AndIOp(hit, _seen(b, iv, jv)))
            return b.emit(arith.SelectOp(hit, jv, b.const(-1, i64)))

        hits = emit.map([x_b, best_b, i, j], i64, position, name="hits")
        index = emit.reduce("max", hits, [dim + 1], name="index")
        best = to_bool(emit, best) if element_of(values) == i1 else best
        return emit.convert(best, element_of(values)), index
