"""pow: tensor ** number (`pow.Tensor_Scalar`), tensor ** tensor (`pow.Tensor_Tensor`),
number ** tensor (`pow.Scalar`); one `ten.map`, base and exponent cast to the result type.

Floats: exponents with an exact cheaper form use it (x**2 is x*x, x**0.5 is sqrt,
x**-0.5 is rsqrt, x**-2 is 1/(x*x)), as torch's kernels do; any other is math.powf.

Integers (an integer result: both operands integers) are torch's `powi`: square and
multiply over the exponent's bits, wrapping as the integer type does; a negative exponent
gives 0, except for the bases 1 (1) and -1 (±1 by the exponent's parity). A number
exponent unrolls only its own bits; a tensor exponent all the bits of its type (31 steps
for int32, 63 for int64).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, SSAValue

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

_SPECIAL = {
    1: lambda b, x: x,
    2: lambda b, x: b.binary("mul", x, x),
    3: lambda b, x: b.binary("mul", b.binary("mul", x, x), x),
    0.5: lambda b, x: b.unary(math.SqrtOp, x),
    -0.5: lambda b, x: b.unary(math.RsqrtOp, x),
    -1: lambda b, x: b.binary("div", b.const(1, x.type), x),
    -2: lambda b, x: b.binary("div", b.const(1, x.type), b.binary("mul", x, x)),
}

# overload -> schema names of (base, exponent)
_ARGS = {
    "pow.Tensor_Scalar": ("self", "exponent"),
    "pow.Tensor_Tensor": ("self", "exponent"),
    "pow.Scalar": ("self", "exponent"),
}


def _select(b: Body, cond: SSAValue, yes: SSAValue, no: SSAValue) -> SSAValue:
    return b.emit(arith.SelectOp(cond, yes, no))


def int_pow_constant(b: Body, x: SSAValue, exponent: int) -> SSAValue:
    """x ** exponent for a non-negative Python int, by squaring (wrapping)."""
    result = None
    while exponent:
        if exponent & 1:
            result = x if result is None else b.binary("mul", result, x)
        exponent >>= 1
        if exponent:
            x = b.binary("mul", x, x)
    return b.const(1, x.type) if result is None else result


def int_pow(b: Body, x: SSAValue, e: SSAValue) -> SSAValue:
    """torch's powi(x, e) for two integers of one type."""
    type_ = x.type
    one, zero = b.const(1, type_), b.const(0, type_)
    result, base, bits = one, x, e
    for step in range(type_.width.data - 1):  # every bit but the sign bit
        odd = compare(b, "ne", b.emit(arith.AndIOp(bits, one)), zero)
        result = _select(b, odd, b.binary("mul", result, base), result)
        if step < type_.width.data - 2:
            base = b.binary("mul", base, base)
            bits = b.emit(arith.ShRSIOp(bits, one))
    minus_one = b.const(-1, type_)
    odd_e = compare(b, "ne", b.emit(arith.AndIOp(e, one)), zero)
    negative = _select(b, compare(b, "eq", x, one), one, zero)
    negative = _select(
        b, compare(b, "eq", x, minus_one), _select(b, odd_e, minus_one, one), negative
    )
    return _select(b, compare(b, "lt", e, zero), negative, result)


def _float_pow(b: Body, x: SSAValue, e: SSAValue | Scalar) -> SSAValue:
    if not isinstance(e, SSAValue):
        if e in _SPECIAL:
            return _SPECIAL[e](b, x)
        e = b.const(e, x.type)
    return b.binary("pow", x, e)


class Pow(Decomposition):
    targets = tuple(_ARGS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element: Attribute = emit.element
        base, exponent = (emit.tensor_or_scalar(n) for n in _ARGS[op.overload])
        integer = isinstance(element, IntegerType)
        if integer and element.width.data == 1:
            raise Unsupported("pow of booleans")
        if not (integer or is_float(element)):
            raise Unsupported(f"pow with a {element} result")
        if integer and not isinstance(exponent, SSAValue):
            if not isinstance(exponent, int) or exponent < 0:
                raise Unsupported(f"integer pow with exponent {exponent!r}")
        tensors = [v for v in (base, exponent) if isinstance(v, SSAValue)]

        def body(b: Body, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            x = (
                b.cast(next(scalars), element)
                if isinstance(base, SSAValue)
                else b.const(base, element)
            )
            e = b.cast(next(scalars), element) if isinstance(exponent, SSAValue) else exponent
            if integer:
                if isinstance(e, SSAValue):
                    return int_pow(b, x, e)
                return int_pow_constant(b, x, e)
            return _float_pow(b, x, e)

        return emit.map(tensors, element, body, shape=emit.shape)
