"""clamp (number or tensor bounds, either one None) and hardtanh: one `ten.map` of
`min(max(x, lo), hi)` (clamp_min, clamp_max, relu6 reach here decomposed into clamp).

The max and min are `arith.maximumf`/`minimumf` on floats, which propagate NaN as torch's
clamp does: a NaN input stays NaN and a NaN bound gives NaN. When lo > hi every element
is hi, as in torch. Integers use the signed `maxsi`/`minsi`; the input and the bounds are
cast to the result type torch.export promoted them to (an int tensor clamped by 0.5 is a
float tensor).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Scalar,
    Unsupported,
)

# overload -> the schema names of the lower and upper bound, and their defaults
_BOUNDS = {
    "clamp.default": ("min", "max", None, None),
    "clamp.Tensor": ("min", "max", None, None),
    "hardtanh.default": ("min_val", "max_val", -1.0, 1.0),
}


class Clamp(Decomposition):
    targets = tuple(_BOUNDS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        element = emit.element
        lo_name, hi_name, lo_default, hi_default = _BOUNDS[op.overload]
        bounds: list[SSAValue | Scalar | None] = []
        for name, default in ((lo_name, lo_default), (hi_name, hi_default)):
            value = op.tensor_arg(name)
            if value is None:
                value = op.arg(name, default)
                if value is not None and not isinstance(value, int | float):
                    raise Unsupported(f"{name}={value!r} is not a number or a tensor")
            bounds.append(value)
        if bounds == [None, None]:
            raise Unsupported("clamp with neither min nor max")
        tensors = [x, *(v for v in bounds if isinstance(v, SSAValue))]

        def body(b: Body, v: SSAValue, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            v = b.cast(v, element)
            for kind, bound in zip(("max", "min"), bounds, strict=True):
                if bound is None:
                    continue
                limit = (
                    b.cast(next(scalars), element)
                    if isinstance(bound, SSAValue)
                    else b.const(bound, element)
                )
                v = b.binary(kind, v, limit)
            return v

        return emit.map(tensors, element, body, shape=emit.shape)
