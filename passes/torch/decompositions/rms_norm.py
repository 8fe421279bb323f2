"""rms_norm over the trailing `normalized_shape` axes:

    ss   = sum(x * x)                  ten.map, ten.reduce add
    rstd = rsqrt(ss / n + eps)         ten.map on the small reduced tensor
    y    = x * rstd * weight           ten.map (rstd and weight broadcast by index_maps)

the order PyTorch's kernel computes in (mean, then eps, then rsqrt; weight last). eps
None means torch.finfo(dtype).eps; 16-bit inputs are computed in f32.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    count,
    element_of,
    machine_eps,
    shape_of,
)


class RmsNorm(Decomposition):
    targets = ("rms_norm.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, weight = emit.tensor("input"), op.tensor_arg("weight")
        shape = shape_of(x)
        normalized = list(op.arg("normalized_shape", []))
        if not normalized or tuple(shape[-len(normalized) :]) != tuple(normalized):
            raise Unsupported(f"normalized_shape {normalized} is not the end of {list(shape)}")
        dims = list(range(len(shape) - len(normalized), len(shape)))
        eps = op.arg("eps")
        eps = machine_eps(element_of(x)) if eps is None else eps
        acc, n = accumulator_type(emit.element), count(shape, dims)

        def square(b: Body, v: SSAValue) -> SSAValue:
            v = b.cast(v, acc)
            return b.binary("mul", v, v)

        sq = emit.map([x], acc, square, name="sq")
        ss = emit.reduce("add", sq, dims, name="sumsq")

        def rstd_body(b: Body, s: SSAValue) -> SSAValue:
            mean = b.binary("div", s, b.const(n, acc))
            return b.unary(math.RsqrtOp, b.binary("add", mean, b.const(eps, acc)))

        rstd = emit.expand(emit.map([ss], acc, rstd_body, name="rstd"), shape, dims)
        inputs = [x, rstd] if weight is None else [x, rstd, weight]

        def body(b: Body, v: SSAValue, r: SSAValue, *w: SSAValue) -> SSAValue:
            y = b.binary("mul", b.cast(v, acc), r)
            return b.binary("mul", y, b.cast(w[0], acc)) if w else y

        return emit.map(inputs, emit.element, body, shape=shape)
