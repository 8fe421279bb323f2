"""add, sub, mul, div, maximum, minimum, fmax, fmin, atan2, copysign, hypot, nextafter,
ldexp and their scalar forms.

One `ten.map`: tensor operands are broadcast to the result's shape (numpy rules) by
index_maps, a Python number is a constant in the body, both are cast to the result's
element type (torch.export already did the type promotion). `alpha` scales `other` as
torch does; `rsub(self, other)` is `other - alpha * self`.

NaN: maximum/minimum propagate it (`arith.maximumf`); fmax/fmin return the other operand
(`arith.maxnumf`, C's fmaxf). The rest are built so that their edge cases are torch's:

- hypot is `m * sqrt(1 + (n / m)^2)` with m, n the larger and smaller magnitude, so
  nothing overflows or underflows on the way (hypot(3e30, 4e30) is 5e30); it is +inf
  when either operand is infinite (even against a NaN) and 0 when both are 0, as C's;
- nextafter steps the bits: `arith.bitcast` to the same-width integer, +1 away from zero,
  -1 toward it; from 0 it is the smallest subnormal with y's sign; y when x == y; NaN
  when either is NaN. Exact, as std::nextafter;
- ldexp(x, e) is `x * 2^e` with 2^e a `math.powf`, as torch computes it (not C's ldexp:
  ldexp(1e-30, 120) overflows through 2^120 in f32, in torch too).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType
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

_KINDS = {
    "add.Tensor": "add",
    "add.Scalar": "add",
    "sub.Tensor": "sub",
    "sub.Scalar": "sub",
    "rsub.Tensor": "sub",
    "rsub.Scalar": "sub",
    "mul.Tensor": "mul",
    "mul.Scalar": "mul",
    "div.Tensor": "div",
    "div.Scalar": "div",
    "maximum.default": "max",
    "minimum.default": "min",
}


def _select(b: Body, cond: SSAValue, yes: SSAValue, no: SSAValue) -> SSAValue:
    return b.emit(arith.SelectOp(cond, yes, no))


def _fmax_fmin(kind: str) -> Callable[[Body, SSAValue, SSAValue], SSAValue]:
    def body(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
        if is_float(x.type):
            return b.emit((arith.MaxnumfOp if kind == "max" else arith.MinnumfOp)(x, y))
        return b.binary(kind, x, y)  # integers have no NaN: max/min

    return body


def hypot(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    zero, one = b.const(0.0, x.type), b.const(1.0, x.type)
    inf = b.const(float("inf"), x.type)
    ax, ay = b.unary(math.AbsFOp, x), b.unary(math.AbsFOp, y)
    big, small = b.emit(arith.MaxnumfOp(ax, ay)), b.emit(arith.MinnumfOp(ax, ay))
    ratio = b.binary("div", small, big)
    scaled = b.binary(
        "mul", big, b.unary(math.SqrtOp, b.binary("add", one, b.binary("mul", ratio, ratio)))
    )
    nan = b.emit(arith.CmpfOp(ax, ay, "uno"))
    either_inf = b.emit(arith.OrIOp(compare(b, "eq", ax, inf), compare(b, "eq", ay, inf)))
    result = _select(b, compare(b, "eq", big, zero), zero, scaled)
    result = _select(b, nan, b.binary("add", ax, ay), result)
    return _select(b, either_inf, inf, result)


def nextafter(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
    if x.type.bitwidth not in (32, 64):
        raise Unsupported(f"nextafter of {x.type} values (f32 and f64 only)")
    bits_type = IntegerType(x.type.bitwidth)
    zero = b.const(0.0, x.type)
    bits = b.emit(arith.BitcastOp(x, bits_type))
    # The bits count up away from zero (either sign): toward zero unless x > 0 iff y > x.
    toward = b.emit(arith.XOrIOp(compare(b, "gt", x, zero), compare(b, "gt", y, x)))
    step = _select(b, toward, b.const(-1, bits_type), b.const(1, bits_type))
    stepped = b.emit(arith.BitcastOp(b.emit(arith.AddiOp(bits, step)), x.type))
    tiny = b.emit(arith.BitcastOp(b.const(1, bits_type), x.type))
    from_zero = b.emit(math.CopySignOp(tiny, y))
    result = _select(b, compare(b, "eq", x, zero), from_zero, stepped)
    result = _select(b, compare(b, "eq", x, y), y, result)
    return _select(b, b.emit(arith.CmpfOp(x, y, "uno")), b.binary("add", x, y), result)


def ldexp(b: Body, x: SSAValue, e: SSAValue) -> SSAValue:
    return b.binary("mul", x, b.binary("pow", b.const(2.0, x.type), e))


# overload -> (body on two scalars of the result type, whether it needs a float result)
_FUNCTIONS: dict[str, tuple[Callable[[Body, SSAValue, SSAValue], SSAValue], bool]] = {
    "fmax.default": (_fmax_fmin("max"), False),
    "fmin.default": (_fmax_fmin("min"), False),
    "atan2.default": (lambda b, x, y: b.emit(math.Atan2Op(x, y)), True),
    "copysign.Tensor": (lambda b, x, y: b.emit(math.CopySignOp(x, y)), True),
    "copysign.Scalar": (lambda b, x, y: b.emit(math.CopySignOp(x, y)), True),
    "hypot.default": (hypot, True),
    "nextafter.default": (nextafter, True),
    "ldexp.Tensor": (ldexp, True),
}
_OTHER = {"ldexp.Tensor": "other"}  # the second operand's schema name, "other" elsewhere


class ElementwiseBinary(Decomposition):
    targets = (*_KINDS, *_FUNCTIONS)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        if op.overload in _FUNCTIONS:
            function, float_only = _FUNCTIONS[op.overload]
            if float_only and not is_float(element):
                raise Unsupported(f"{op.overload.split('.')[0]} with a {element} result")
        else:
            kind = _KINDS[op.overload]

            def function(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
                return b.binary(kind, x, y)

        # 16-bit floats: hypot, ldexp and the rest in f32, rounded once, as torch does;
        # nextafter steps the bits of the type itself.
        compute = element if op.overload == "nextafter.default" else accumulator_type(element)
        lhs = emit.tensor_or_scalar("self")
        rhs = emit.tensor_or_scalar(_OTHER.get(op.overload, "other"))
        if op.overload.startswith("rsub"):
            lhs, rhs = rhs, lhs
        alpha = op.arg("alpha", 1)

        def scaled(b: Body, x: SSAValue, y: SSAValue) -> SSAValue:
            if alpha != 1:
                y = b.binary("mul", y, b.const(alpha, compute))
            return function(b, x, y)

        return emit.map_pair(lhs, rhs, compute, element, scaled)
