"""digamma (and polygamma of order 0, which is digamma): one `ten.map` of PyTorch's own
algorithm (`calc_digamma`, from Cephes), unrolled into selects.

CUDA has no digamma; the body is built from upstream ops only, step for step as torch's
CPU kernel computes it in the input's float type:

- x == ±0 gives ∓inf; a negative integer (and -inf) NaN;
- x < 0 reflects: digamma(x) = digamma(1 - x) - pi / tan(pi * r), r the fractional part
  of x. torch takes the tangent in double; here it is taken of r - round(r), in
  [-1/2, 1/2], where pi * r keeps its relative precision in float32 too (tan(pi * r)
  near r = -1 would lose it);
- below 10 the recurrence digamma(x) = digamma(x + 1) - 1/x: at most 10 steps for
  x > 0, unrolled, each a select that stops once x >= 10;
- from 10 up the asymptotic series log(x) - 1/(2x) - sum B_2k / (2k x^2k) (dropped from
  1e17, where it is below an ulp); exactly 10 takes digamma(10) instead.

16-bit floats are computed in f32 and rounded once, as torch does.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    is_float,
)
from deplodock.passes.torch.decompositions.compare import compare

PSI_10 = 2.25175258906672110764  # digamma(10)
_ASYMPTOTIC = (  # Cephes' A[]: the series in 1/x^2, highest power first
    8.33333333333333333333e-2,
    -2.10927960927960927961e-2,
    7.57575757575757575758e-3,
    -4.16666666666666666667e-3,
    3.96825396825396825397e-3,
    -8.33333333333333333333e-3,
    8.33333333333333333333e-2,
)


def _select(b: Body, cond: SSAValue, yes: SSAValue, no: SSAValue) -> SSAValue:
    return b.emit(arith.SelectOp(cond, yes, no))


def digamma(b: Body, x: SSAValue) -> SSAValue:
    t = x.type
    zero, one, ten = b.const(0.0, t), b.const(1.0, t), b.const(10.0, t)
    negative = compare(b, "lt", x, zero)
    whole = b.unary(math.TruncOp, x)
    r = b.binary("sub", x, whole)  # the fractional part, exact
    r = b.binary("sub", r, b.unary(math.RoundEvenOp, r))  # in [-1/2, 1/2]
    pi = b.const(pymath.pi, t)
    reflection = b.binary("div", pi, b.unary(math.TanOp, b.binary("mul", pi, r)))
    y = _select(b, negative, b.binary("sub", one, x), x)
    result = zero
    for _ in range(10):
        below = compare(b, "lt", y, ten)
        result = _select(b, below, b.binary("sub", result, b.binary("div", one, y)), result)
        y = _select(b, below, b.binary("add", y, one), y)
    z = b.binary("div", one, b.binary("mul", y, y))
    poly = b.const(_ASYMPTOTIC[0], t)
    for c in _ASYMPTOTIC[1:]:
        poly = b.binary("add", b.binary("mul", poly, z), b.const(c, t))
    series = _select(b, compare(b, "lt", y, b.const(1e17, t)), b.binary("mul", z, poly), zero)
    value = b.binary("add", result, b.unary(math.LogOp, y))
    value = b.binary("sub", value, b.binary("div", b.const(0.5, t), y))
    value = b.binary("sub", value, series)
    value = _select(b, compare(b, "eq", y, ten), b.binary("add", result, b.const(PSI_10, t)), value)
    value = _select(b, negative, b.binary("sub", value, reflection), value)
    pole = b.emit(arith.AndIOp(negative, compare(b, "eq", x, whole)))
    value = _select(b, pole, b.const(float("nan"), t), value)
    at_zero = b.emit(math.CopySignOp(b.const(float("inf"), t), b.emit(arith.NegfOp(x))))
    return _select(b, compare(b, "eq", x, zero), at_zero, value)


class Digamma(Decomposition):
    targets = ("digamma.default", "polygamma.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if not is_float(element):
            raise Unsupported(f"digamma with a {element} result")
        if op.overload == "polygamma.default" and op.arg("n") != 0:
            raise Unsupported(
                f"polygamma of order {op.arg('n')!r} (only order 0, digamma, is compiled: "
                "higher orders need the Hurwitz zeta function)"
            )
        compute = accumulator_type(element)
        return emit.map([emit.tensor("self")], element, lambda b, x: digamma(b, b.cast(x, compute)))
