"""softmax and log_softmax along one axis, in the numerically stable form PyTorch uses:

    m = max(x)          ten.reduce max
    e = exp(x - m)      ten.map (m put back next to x by an index_map)
    s = sum(e)          ten.reduce add
    y = e / s           ten.map          log_softmax: y = x - m - log(s)

16-bit inputs are computed in f32 and rounded once at the end; `dtype` (softmax.int)
and `half_to_float` (_softmax, _log_softmax) only change the result's element type,
which torch.export already recorded (integer and boolean inputs with `dtype=` are
converted to it first). A row holding +inf, or only -inf, is NaN, as in torch
(inf - inf).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import Attribute, SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    accumulator_type,
    element_of,
    is_float,
    shape_of,
)
from deplodock.passes.torch.decompositions.reduction import signless

NEG_INF = float("-inf")


def _is_neg_inf(b: Body, x: SSAValue) -> SSAValue:
    return b.emit(arith.CmpfOp(x, b.const(NEG_INF, x.type), "oeq"))


def stable_softmax(
    emit: Emitter,
    scores: SSAValue,
    axis: int,
    guard_masked_rows: bool,
    compute: Attribute | None = None,
    result: Attribute | None = None,
) -> SSAValue:
    """softmax of `scores` over `axis` in the max-subtracted form; exp and sum are in
    `compute` (default: the scores' type), the result in `result` (default: `compute`).
    With `guard_masked_rows` a row that is all -inf gives 0 (as torch's safe softmax)."""
    shape = shape_of(scores)
    acc = compute or element_of(scores)
    m = emit.expand(emit.reduce("max", scores, [axis], name="max"), shape, [axis])
    e = emit.map(
        [scores, m],
        acc,
        lambda b, s, mv: b.unary(math.ExpOp, b.binary("sub", b.cast(s, acc), b.cast(mv, acc))),
        name="exp",
    )
    total = emit.expand(emit.reduce("add", e, [axis], name="sum"), shape, [axis])
    out = result or acc
    if not guard_masked_rows:
        return emit.map([e, total], out, lambda b, ev, sv: b.binary("div", ev, sv), name="probs")

    def guarded(b: Body, ev: SSAValue, sv: SSAValue, mv: SSAValue) -> SSAValue:
        p = b.binary("div", ev, sv)
        return b.emit(arith.SelectOp(_is_neg_inf(b, mv), b.const(0.0, acc), p))

    return emit.map([e, total, m], out, guarded, name="probs")


def stable_log_softmax(
    emit: Emitter, x: SSAValue, axis: int, compute: Attribute, result: Attribute
) -> SSAValue:
    """log_softmax of `x` over `axis`: x - m - log(sum(exp(x - m))), computed in
    `compute`; `exp(x - m)` is recomputed where it is summed (one kernel, no buffer)."""
    shape = shape_of(x)
    m = emit.expand(emit.reduce("max", x, [axis], name="max"), shape, [axis])

    def shifted(b: Body, v: SSAValue, mv: SSAValue) -> SSAValue:
        return b.binary("sub", b.cast(v, compute), b.cast(mv, compute))

    e = emit.map(
        [x, m], compute, lambda b, v, mv: b.unary(math.ExpOp, shifted(b, v, mv)), name="exp"
    )
    total = emit.expand(emit.reduce("add", e, [axis], name="sum"), shape, [axis])

    def body(b: Body, v: SSAValue, mv: SSAValue, s: SSAValue) -> SSAValue:
        return b.binary("sub", shifted(b, v, mv), b.unary(math.LogOp, s))

    return emit.map([x, m, total], result, body, name="log_probs")


class LogSoftmax(Decomposition):
    targets = ("_log_softmax.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        if not shape:  # one element: x - x, 0 (NaN for inf and NaN, as in torch)
            return emit.map([x], emit.element, lambda b, v: b.binary("sub", v, v))
        compute = accumulator_type(emit.element)
        x = x if is_float(element_of(x)) else emit.convert(signless(emit, x), compute)
        return stable_log_softmax(emit, x, op.arg("dim") % len(shape), compute, emit.element)


class Softmax(Decomposition):
    targets = ("softmax.int", "_softmax.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        shape = shape_of(x)
        if not shape:  # one element: exp(x - x), 1 (NaN for inf and NaN, as in torch)
            compute = accumulator_type(emit.element)

            def one(b: Body, v: SSAValue) -> SSAValue:
                v = b.cast(v, compute)
                return b.unary(math.ExpOp, b.binary("sub", v, v))

            return emit.map([x], emit.element, one)
        if not is_float(element_of(x)):  # softmax(dtype=) of integers or booleans
            x = emit.convert(signless(emit, x), accumulator_type(emit.element))
        return stable_softmax(
            emit,
            x,
            op.arg("dim") % len(shape),
            guard_masked_rows=False,
            compute=accumulator_type(emit.element),
            result=emit.element,
        )
