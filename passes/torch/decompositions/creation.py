"""Tensors made from nothing: full, ones, zeros, their new_* and *_like forms,
scalar_tensor, the empty family, and arange.

A filled tensor is a splat `ten.constant` of the result's type (torch.export recorded
shape and dtype): it costs no memory, since lift-to-loop makes it a fill kernel that
fusion folds into its readers as an `arith.constant`. `arange` is positions as data:
a `ten.iota` (itself when start 0, step 1 and int64), else one map computing
`start + step * i` in the result's type (in f64 for a float range with a fractional
start or step, as PyTorch's CPU kernel accumulates in double).

An empty tensor (`empty`, `empty_strided`, `empty_permuted`, `new_empty`...) may hold
any values: it is the zero splat, which costs nothing and reads deterministically. Its
strides or physical layout are a memory-layout request the tensor level has no notion
of (every value is a logical array), so they are ignored.
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64, i1, i64
from xdsl.ir import SSAValue

from deplodock.dialects.tensor import ConstantOp, IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    is_float,
)

# overload -> the schema name of the fill value, or the value itself
# fmt: off
_FILLS: dict[str, str | int] = {
    "full.default": "fill_value", "new_full.default": "fill_value",
    "full_like.default": "fill_value", "scalar_tensor.default": "s",
    "ones.default": 1, "new_ones.default": 1, "ones_like.default": 1,
    "zeros.default": 0, "new_zeros.default": 0, "zeros_like.default": 0,
    # uninitialised: any value is legal, zero is the cheapest to explain
    "empty.memory_format": 0, "empty_permuted.default": 0, "empty_strided.default": 0,
    "new_empty.default": 0, "new_empty_strided.default": 0, "empty_like.default": 0,
}
# fmt: on
_ARANGE = ("arange.default", "arange.start", "arange.start_step")


def splat(emit: Emitter, value: object) -> SSAValue:
    """A constant tensor of the op's result type, every element `value`."""
    element = emit.element
    if not isinstance(value, int | float):
        raise Unsupported(f"fill value {value!r} is not a number")
    if element == i1:
        value = int(bool(value))
    elif is_float(element):
        value = float(value)
    elif isinstance(value, float):
        value = int(value)  # torch truncates a float fill of an integer tensor
    type_ = TensorType(element, emit.shape)
    return emit.add(ConstantOp(DenseIntOrFPElementsAttr.from_list(type_, [value])))


class Fill(Decomposition):
    targets = tuple(_FILLS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        fill = _FILLS[op.overload]
        return splat(emit, op.arg(fill) if isinstance(fill, str) else fill)


class Arange(Decomposition):
    targets = _ARANGE

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        start, step = op.arg("start", 0), op.arg("step", 1)
        if not isinstance(start, int | float) or not isinstance(step, int | float):
            raise Unsupported(f"arange start {start!r} or step {step!r} is not a number")
        (n,), element = emit.shape, emit.element
        pos = emit.add(IotaOp(0, TensorType(i64, (n,))), "pos")
        if (start, step) == (0, 1) and element == i64:
            return pos
        integral = isinstance(start, int) and isinstance(step, int)
        compute = i64 if integral else f64

        def body(b: Body, i: SSAValue) -> SSAValue:
            value = b.cast(i, compute)
            if step != 1:
                value = b.binary("mul", value, b.const(step, compute))
            if start != 0:
                value = b.binary("add", value, b.const(start, compute))
            return b.cast(value, element)

        return emit.map([pos], element, body)
