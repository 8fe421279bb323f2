"""The Core ATen activations: elu, gelu (approximate "none" and "tanh"), leaky_relu.

One `ten.map` each, the formula of PyTorch's kernel (selu and celu reach here as elu or
expm1; softplus, mish, hardsigmoid, hardswish, threshold as the elementwise ops torch
decomposes them into; hardtanh is a clamp, in clamp.py):

- elu(x; alpha, scale, input_scale) = x <= 0 ? expm1(x * input_scale) * alpha * scale
  : x * scale (NaN takes the second branch and stays NaN);
- gelu(x) = x / 2 * (1 + erf(x / sqrt 2)); with approximate="tanh",
  x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)));
- leaky_relu(x; slope) = x > 0 ? x : x * slope.

16-bit floats are computed in f32 and rounded once, as torch's kernels do.
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


def _number(op: AtenOp, name: str, default: float) -> float:
    value = op.arg(name, default)
    if not isinstance(value, int | float):
        raise Unsupported(f"{name}={value!r} is not a number")
    return float(value)


class Activation(Decomposition):
    targets = ("elu.default", "gelu.default", "leaky_relu.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if not is_float(element):
            raise Unsupported(f"{op.overload.split('.')[0]} with a {element} result")
        name = op.overload.split(".")[0]
        if name == "elu":
            alpha, scale = _number(op, "alpha", 1.0), _number(op, "scale", 1.0)
            input_scale = _number(op, "input_scale", 1.0)

            def body(b: Body, x: SSAValue) -> SSAValue:
                zero = b.const(0.0, x.type)
                scaled = x if input_scale == 1 else b.binary("mul", x, b.const(input_scale, x.type))
                negative = b.unary(math.ExpM1Op, scaled)
                if alpha * scale != 1:
                    negative = b.binary("mul", negative, b.const(alpha * scale, x.type))
                positive = x if scale == 1 else b.binary("mul", x, b.const(scale, x.type))
                return b.emit(arith.SelectOp(compare(b, "le", x, zero), negative, positive))

        elif name == "gelu":
            approximate = op.arg("approximate", "none")
            if approximate not in ("none", "tanh"):
                raise Unsupported(f"gelu approximate={approximate!r} ('none' or 'tanh')")

            def body(b: Body, x: SSAValue) -> SSAValue:
                half, one = b.const(0.5, x.type), b.const(1.0, x.type)
                if approximate == "none":
                    inner = b.unary(
                        math.ErfOp, b.binary("mul", x, b.const(pymath.sqrt(0.5), x.type))
                    )
                else:
                    cube = b.binary("mul", b.binary("mul", x, x), x)
                    poly = b.binary("add", x, b.binary("mul", cube, b.const(0.044715, x.type)))
                    k = b.const(pymath.sqrt(2.0 / pymath.pi), x.type)
                    inner = b.unary(math.TanhOp, b.binary("mul", k, poly))
                return b.binary("mul", b.binary("mul", x, half), b.binary("add", one, inner))

        else:
            slope = _number(op, "negative_slope", 0.01)

            def body(b: Body, x: SSAValue) -> SSAValue:
                zero = b.const(0.0, x.type)
                negative = b.binary("mul", x, b.const(slope, x.type))
                return b.emit(arith.SelectOp(compare(b, "gt", x, zero), x, negative))

        compute = accumulator_type(element)  # 16-bit floats: in f32, rounded once
        return emit.map([emit.tensor("self")], element, lambda b, x: body(b, b.cast(x, compute)))
