"""mean and nanmean over some axes (or all).

mean is a sum `ten.reduce`, then a `ten.map` dividing by the element count (as torch
computes it, rather than a multiply by 1/n), then keepdim; `dtype=` is the result's type
(the input is converted to it first, as torch does). A mean over an empty axis is 0/0, NaN.

nanmean leaves the NaNs out: the sum of the other elements over how many there are, two
reduces of one input that fusion puts in one loop (torch's own formula, nansum over
`(~isnan(x)).sum()`).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import SSAValue

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
from deplodock.passes.torch.decompositions.reduction import (
    keepdim,
    nan_as_zero,
    reduce_like_torch,
    reducible,
)


class Mean(Decomposition):
    targets = ("mean.dim", "mean.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        return reduce_like_torch(op, emit, "add", mean=True)


class NanMean(Decomposition):
    targets = ("nanmean.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        acc = accumulator_type(emit.element)
        if not is_float(acc):
            raise Unsupported(f"nanmean of {acc} values (torch takes floats only)")
        x, dims = reducible(emit, x, normalize_dims(op.arg("dim"), len(shape_of(x))))
        terms = emit.map([x], acc, lambda b, v: nan_as_zero(b, v, acc), name="terms")
        total = emit.reduce("add", terms, dims, name="sum")

        def present(b: Body, v: SSAValue) -> SSAValue:
            nan = b.emit(arith.CmpfOp(v, v, "uno"))
            return b.emit(arith.SelectOp(nan, b.const(0.0, acc), b.const(1.0, acc)))

        n = emit.reduce("add", emit.map([x], acc, present, name="present"), dims, name="count")
        mean = emit.map([total, n], emit.element, lambda b, s, c: b.binary("div", s, c))
        return keepdim(emit, op, mean, dims)
