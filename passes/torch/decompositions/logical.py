"""logical_and/or/xor/not and bitwise_and/or/xor/not (with their `&`, `|`, `^` spellings):
one `ten.map` of `arith.andi` / `ori` / `xori`.

The logical forms look at truth values (`x != 0`, see `compare.truthy`) and yield i1;
the bitwise forms work on the bits of the result's integer type (for booleans, i1, the
two agree). `not` is an xor with all ones: `true` for i1, -1 for wider integers.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.ir import Operation, SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter, Unsupported
from deplodock.passes.torch.decompositions.compare import truthy

_OPS: dict[str, type[Operation]] = {"and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp}
_BINARY = {
    **{f"logical_{k}.default": ("logical", k) for k in _OPS},
    **{f"bitwise_{k}.{form}": ("bitwise", k) for k in _OPS for form in ("Tensor", "Scalar")},
    **{f"__{k}__.{form}": ("bitwise", k) for k in _OPS for form in ("Tensor", "Scalar")},
}
_UNARY = {"logical_not.default": "logical", "bitwise_not.default": "bitwise"}


def _all_ones(b: Body, x: SSAValue) -> SSAValue:
    return b.const(1 if x.type == i1 else -1, x.type)


class Logical(Decomposition):
    targets = (*_BINARY, *_UNARY)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        element = emit.element
        flavour = _UNARY.get(op.overload) or _BINARY[op.overload][0]
        if flavour == "bitwise" and not isinstance(element, IntegerType):
            raise Unsupported(f"bitwise op on {element} values")
        operand_type = i1 if flavour == "logical" else element

        def load(b: Body, v: SSAValue | int | float) -> SSAValue:
            if not isinstance(v, SSAValue):
                v = b.const(v, operand_type)
            return truthy(b, v) if flavour == "logical" else b.cast(v, operand_type)

        if op.overload in _UNARY:

            def negate(b: Body, v: SSAValue) -> SSAValue:
                x = load(b, v)
                return b.emit(arith.XOrIOp(x, _all_ones(b, x)))

            return emit.map([emit.tensor("self")], element, negate)
        kind = _BINARY[op.overload][1]
        lhs, rhs = emit.tensor_or_scalar("self"), emit.tensor_or_scalar("other")
        tensors = [v for v in (lhs, rhs) if isinstance(v, SSAValue)]

        def body(b: Body, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            x, y = (load(b, next(scalars) if isinstance(v, SSAValue) else v) for v in (lhs, rhs))
            return b.emit(_OPS[kind](x, y))

        return emit.map(tensors, element, body, shape=emit.shape)
