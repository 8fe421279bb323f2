"""linalg_vector_norm (torch.norm, linalg.norm and F.normalize of vectors reach it):
one `ten.reduce` of what each element contributes, and a map on the reduced tensor.

    ord 2      sqrt(sum(|x|^2))          (x*x: the square of |x| without the abs)
    ord 1      sum(|x|)
    ord inf    max(|x|)                  ord -inf: min(|x|)
    ord 0      sum(x != 0)               how many elements are not zero
    ord p      sum(|x|^p)^(1/p)          math.powf on both sides

`dtype=` converts the input first (torch computes the norm in that type); 16-bit floats
are computed in f32 and rounded once. A NaN anywhere gives NaN (max/min propagate it).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.ir import Attribute, SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    is_float,
    normalize_dims,
    shape_of,
)
from deplodock.passes.torch.decompositions.reduction import keepdim, reducible


def _term(b: Body, v: SSAValue, ord: float, acc: Attribute) -> SSAValue:
    """What one element adds to the reduction of the `ord` norm."""
    v = b.cast(v, acc)
    if ord == 0:
        nonzero = b.emit(arith.CmpfOp(v, b.const(0.0, acc), "une"))
        return b.emit(arith.SelectOp(nonzero, b.const(1.0, acc), b.const(0.0, acc)))
    if ord == 2:
        return b.binary("mul", v, v)
    magnitude = b.unary(math.AbsFOp, v)
    if ord in (1, pymath.inf, -pymath.inf):
        return magnitude
    return b.binary("pow", magnitude, b.const(ord, acc))


def _finish(b: Body, s: SSAValue, ord: float, acc: Attribute) -> SSAValue:
    """The norm from the reduced value."""
    if ord in (0, 1, pymath.inf, -pymath.inf):
        return s
    if ord == 2:
        return b.unary(math.SqrtOp, s)
    return b.binary("pow", s, b.const(1.0 / ord, acc))


class VectorNorm(Decomposition):
    targets = ("linalg_vector_norm.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, element = emit.tensor("self"), emit.element
        if not is_float(element):
            raise Unsupported(f"the norm of {element} values")
        ord = op.arg("ord", 2)
        if not isinstance(ord, int | float) or isinstance(ord, bool):
            raise Unsupported(f"ord {ord!r} is not a number")
        ord = float(ord)
        x, dims = reducible(emit, x, normalize_dims(op.arg("dim"), len(shape_of(x))))
        acc = accumulator_type(element)
        terms = emit.map([x], acc, lambda b, v: _term(b, v, ord, acc), name="terms")
        kind = {pymath.inf: "max", -pymath.inf: "min"}.get(ord, "add")
        reduced = emit.reduce(kind, terms, dims, name="reduced")
        norm = emit.map([reduced], element, lambda b, s: _finish(b, s, ord, acc))
        return keepdim(emit, op, norm, dims)
