"""Rounding and integer-valued division: floor, ceil, trunc, round (to even, and to a
number of decimals), div with rounding_mode "trunc"/"floor" (floor_divide decomposes to
it), fmod (the remainder with the dividend's sign) and remainder (with the divisor's,
Python's `%`).

One `ten.map` each, both operands cast to the result type torch.export computed. The
bodies follow PyTorch's CPU kernels step for step, so the edge cases agree with eager:

- torch.round rounds halfway cases to even (`std::nearbyint`): `math.roundeven`;
  `round(x, decimals=d)` is `roundeven(x * 10^d) / 10^d` (for d < 0,
  `roundeven(x / 10^-d) * 10^-d`), 10^d rounded to the float type first, as torch does;
- a float fmod is exact (`math_ext.remf`, C's fmod); remainder adds the divisor to a
  nonzero fmod whose sign differs from the divisor's;
- float floor division is `div_floor_floating`: `(a - fmod(a, b)) / b`, one less when
  the remainder's sign differs from b's, then floored, and rounded up when floor lost
  more than a half; a zero quotient takes the sign of a / b; division by zero is a / b;
- integer division truncates (`arith.divsi`, C's `/`); floor division subtracts one
  where the signs differ and the remainder is nonzero. Integer division by zero is
  undefined in torch (it raises on CPU); here it gives whatever the target gives.

floor, ceil, trunc and round of an integer tensor are the tensor itself.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, SSAValue

from deplodock.dialects import math_ext
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Scalar,
    Unsupported,
    is_float,
)
from deplodock.passes.torch.decompositions.compare import compare

_ROUNDING = {
    "floor.default": math.FloorOp,
    "ceil.default": math.CeilOp,
    "trunc.default": math.TruncOp,
    "round.default": math.RoundEvenOp,
    "round.decimals": math.RoundEvenOp,
}


def select(b: Body, cond: SSAValue, yes: SSAValue, no: SSAValue) -> SSAValue:
    return b.emit(arith.SelectOp(cond, yes, no))


def is_negative(b: Body, x: SSAValue) -> SSAValue:
    return compare(b, "lt", x, b.const(0, x.type))


def signs_differ(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    """`(x < 0) != (y < 0)`."""
    return b.emit(arith.XOrIOp(is_negative(b, x), is_negative(b, y)))


def fmod(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's fmod (floats) or `%` (integers): the remainder with the sign of `x`."""
    if is_float(x.type):
        return b.emit(math_ext.RemFOp(x, y))
    return b.emit(arith.RemSIOp(x, y))


def remainder(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    """Python's `x % y`: the remainder with the sign of `y` (torch.remainder)."""
    r = fmod(b, x, y)
    nonzero = compare(b, "ne", r, b.const(0, r.type))
    fix = b.emit(arith.AndIOp(nonzero, signs_differ(b, r, y)))
    return select(b, fix, b.binary("add", r, y), r)


def trunc_div(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    if is_float(x.type):
        return b.unary(math.TruncOp, b.binary("div", x, y))
    return b.emit(arith.DivSIOp(x, y))


def floor_div(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    """torch's div_floor_floating / div_floor_integer (ATen's c10/util/generic_math.h)."""
    one = b.const(1, x.type)
    if not is_float(x.type):
        q, r = b.emit(arith.DivSIOp(x, y)), b.emit(arith.RemSIOp(x, y))
        rem = compare(b, "ne", r, b.const(0, x.type))
        fix = b.emit(arith.AndIOp(rem, signs_differ(b, x, y)))
        return select(b, fix, b.binary("sub", q, one), q)
    zero = b.const(0.0, x.type)
    mod = fmod(b, x, y)
    div = b.binary("div", b.binary("sub", x, mod), y)
    fix = b.emit(arith.AndIOp(compare(b, "ne", mod, zero), signs_differ(b, mod, y)))
    div = select(b, fix, b.binary("sub", div, one), div)
    floor = b.unary(math.FloorOp, div)
    up = compare(b, "gt", b.binary("sub", div, floor), b.const(0.5, x.type))
    floor = select(b, up, b.binary("add", floor, one), floor)
    quotient = b.binary("div", x, y)
    signed_zero = b.emit(math.CopySignOp(zero, quotient))
    result = select(b, compare(b, "ne", div, zero), floor, signed_zero)
    return select(b, compare(b, "eq", y, zero), quotient, result)


def _operands(emit: Emitter, names: tuple[str, str]) -> list[SSAValue | Scalar]:
    return [emit.tensor_or_scalar(n) for n in names]


class Rounding(Decomposition):
    targets = tuple(_ROUNDING)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        element = emit.element
        decimals = op.arg("decimals", 0)
        if not isinstance(decimals, int):
            raise Unsupported(f"decimals={decimals!r} is not an integer")
        if not is_float(element):
            if decimals != 0:
                raise Unsupported(f"round to {decimals} decimals of {element} values")
            return emit.convert(x, element)  # an integer is already rounded
        kind = _ROUNDING[op.overload]

        def body(b: Body, v: SSAValue) -> SSAValue:
            v = b.cast(v, element)
            if decimals == 0:
                return b.unary(kind, v)
            scale = b.const(float(10.0 ** abs(decimals)), element)
            if decimals > 0:
                return b.binary("div", b.unary(kind, b.binary("mul", v, scale)), scale)
            return b.binary("mul", b.unary(kind, b.binary("div", v, scale)), scale)

        return emit.map([x], element, body)


# overload -> (schema names of the two operands, the body)
_DIVISIONS = {
    "fmod.Tensor": ("self", "other"),
    "fmod.Scalar": ("self", "other"),
    "remainder.Tensor": ("self", "other"),
    "remainder.Scalar": ("self", "other"),
    "remainder.Scalar_Tensor": ("self", "other"),
    "div.Tensor_mode": ("self", "other"),
    "div.Scalar_mode": ("self", "other"),
}


def _division(op: AtenOp, element: Attribute):
    """The body function of `op` on two scalars of `element`."""
    name = op.overload.split(".")[0]
    if name == "fmod":
        return fmod
    if name == "remainder":
        return remainder
    mode = op.arg("rounding_mode")
    if mode is None:
        if not is_float(element):
            raise Unsupported(f"true division with a {element} result")
        return lambda b, x, y: b.binary("div", x, y)
    if mode == "trunc":
        return trunc_div
    if mode == "floor":
        return floor_div
    raise Unsupported(f"rounding_mode={mode!r} (torch knows None, 'trunc' and 'floor')")


class Division(Decomposition):
    targets = tuple(_DIVISIONS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if not (is_float(element) or isinstance(element, IntegerType)):
            raise Unsupported(f"{op.overload} with a {element} result")
        fn = _division(op, element)
        if not is_float(element) and element.width.data == 1:
            raise Unsupported(f"{op.overload} of booleans")
        lhs, rhs = _operands(emit, _DIVISIONS[op.overload])
        return emit.map_pair(lhs, rhs, element, element, fn)
