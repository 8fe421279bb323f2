"""var and var_mean (std and std_mean reach here as their square roots, by torch's tables):

    mean = sum(x) / n                        ten.reduce add, ten.map
    m2   = sum((x - mean)^2)                 ten.map (mean put back by an index_map), reduce
    var  = m2 / max(0, n - correction)       ten.map

The two-pass form: the deviations are taken from the mean rather than summing x and x^2,
so a large mean does not cancel the variance away (torch's Welford kernel is exact in
the same sense). Both reduces read x along the same axes, so fusion computes them in one
loop nest. `correction` None means 1 (Bessel's); a divisor of 0 gives inf, or NaN where m2
is 0 too, as in torch (the variance of one element, of an empty axis). 16-bit inputs are
computed in f32 and rounded once.

`moments` is shared with layer_norm, group_norm and batch_norm.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    count,
    is_float,
    normalize_dims,
    shape_of,
)
from deplodock.passes.torch.decompositions.reduction import keepdim, reducible


def moments(
    emit: Emitter, x: SSAValue, dims: Sequence[int], acc: Attribute
) -> tuple[SSAValue, SSAValue]:
    """The mean of `x` over `dims` and the sum of squared deviations from it (m2), both
    in `acc` with `dims` dropped."""
    shape = shape_of(x)
    n = count(shape, dims)
    total = emit.reduce("add", emit.convert(x, acc), dims, name="sum")
    mean = emit.map([total], acc, lambda b, s: b.binary("div", s, b.const(n, acc)), name="mean")
    mean_b = emit.expand(mean, shape, dims)

    def square(b: Body, v: SSAValue, m: SSAValue) -> SSAValue:
        d = b.binary("sub", b.cast(v, acc), m)
        return b.binary("mul", d, d)

    m2 = emit.reduce("add", emit.map([x, mean_b], acc, square, name="dev2"), dims, name="m2")
    return mean, m2


def variance(emit: Emitter, m2: SSAValue, divisor: float, element: Attribute) -> SSAValue:
    """m2 / divisor in `element` (computed in m2's type)."""
    acc = m2.type.element_type
    return emit.map([m2], element, lambda b, s: b.binary("div", s, b.const(divisor, acc)))


class Variance(Decomposition):
    targets = ("var.correction", "var_mean.correction")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue | tuple[SSAValue, SSAValue]:
        x = emit.tensor("self")
        element = emit.element
        if not is_float(element):
            raise Unsupported(f"variance of {element} values")
        correction = op.arg("correction")
        correction = 1 if correction is None else correction
        if not isinstance(correction, int | float):
            raise Unsupported(f"correction {correction!r} is not a number")
        x, dims = reducible(emit, x, normalize_dims(op.arg("dim"), len(shape_of(x))))
        acc = accumulator_type(element)
        mean, m2 = moments(emit, x, dims, acc)
        divisor = max(0.0, count(shape_of(x), dims) - correction)
        var = keepdim(emit, op, variance(emit, m2, divisor, element), dims)
        if op.overload == "var.correction":
            return var
        mean = emit.convert(mean, element)
        return var, keepdim(emit, op, mean, dims, 1)
