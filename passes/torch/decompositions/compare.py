"""eq, ne, lt, le, gt, ge (Tensor and Scalar forms): one `ten.map` yielding i1.

Both sides are cast to the type torch compares in (`compare_type`: float beats int, the
wider wins, a Python float against an int tensor compares in f32), then one `arith.cmpf`
or `arith.cmpi`. Floats use the ordered predicates, as torch does (NaN < x is false),
except `ne`, which is unordered (NaN != x is true). Integers compare signed; booleans
(i1) unsigned, because as a signed i1 `true` is -1 and would sort below `false`.

`truthy` (x != 0 as i1) is shared with logical, where and convert.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, f32, i1, i64
from xdsl.ir import Attribute, SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Scalar,
    Unsupported,
    element_of,
    is_float,
)

# kind -> (float predicate, signed int predicate, unsigned int predicate)
_PREDICATES = {
    "eq": ("oeq", "eq", "eq"),
    "ne": ("une", "ne", "ne"),
    "lt": ("olt", "slt", "ult"),
    "le": ("ole", "sle", "ule"),
    "gt": ("ogt", "sgt", "ugt"),
    "ge": ("oge", "sge", "uge"),
}


def compare_type(*operands: SSAValue | Scalar) -> Attribute:
    """The element type torch computes a comparison (or a where) of `operands` in."""
    types = [element_of(v) for v in operands if isinstance(v, SSAValue)]
    scalars = [v for v in operands if not isinstance(v, SSAValue)]
    floats = [t for t in types if is_float(t)]
    if floats:
        widest = max(floats, key=lambda t: t.bitwidth)
        ties = {t for t in floats if t.bitwidth == widest.bitwidth}
        return widest if len(ties) == 1 else f32  # f16 with bf16: f32, as torch does
    if any(isinstance(s, float) for s in scalars):
        return f32
    ints = [t for t in types if t != i1]
    if ints:
        return max(ints, key=lambda t: t.width.data)
    if any(not isinstance(s, bool) for s in scalars):
        return i64
    return i1


def truthy(b: Body, x: SSAValue) -> SSAValue:
    """`x != 0` as an i1 (itself when it already is one); NaN counts as true, as in torch."""
    if x.type == i1:
        return x
    if is_float(x.type):
        return b.emit(arith.CmpfOp(x, b.const(0.0, x.type), "une"))
    if isinstance(x.type, IntegerType):
        return b.emit(arith.CmpiOp(x, b.const(0, x.type), "ne"))
    raise Unsupported(f"truth value of {x.type}")


def compare(b: Body, kind: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`x <kind> y` for two scalars of one type."""
    ordered, signed, unsigned = _PREDICATES[kind]
    if is_float(x.type):
        return b.emit(arith.CmpfOp(x, y, ordered))
    return b.emit(arith.CmpiOp(x, y, unsigned if x.type == i1 else signed))


class Compare(Decomposition):
    targets = tuple(f"{kind}.{form}" for kind in _PREDICATES for form in ("Tensor", "Scalar"))

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        kind = op.overload.split(".")[0]
        lhs, rhs = emit.tensor_or_scalar("self"), emit.tensor_or_scalar("other")
        type_ = compare_type(lhs, rhs)
        return emit.map_pair(lhs, rhs, type_, emit.element, lambda b, x, y: compare(b, kind, x, y))
