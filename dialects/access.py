"""Pieces shared by the loop, tile and kernel levels: buffer loads/stores, loop bodies and
kernel signatures.

Each level names its own ops (``loop.load``, ``kernel.load``) so a listing says which level
it is, but the syntax and the invariants are written once here:

* ``%v = loop.load %x[0, %a0, %a1 * 2] : memref<1x32x2048xf32>``: the index list is an
  affine map over the SSA index operands (see ``affine_syntax``); the verifier proves
  indices in bounds whenever the ranges of the operands are known.
* ``loop.load %x[%m, %k] guarded : ..`` / ``loop.store %v, %y[%m, %n] guarded : ..``: an
  edge tile's access (``passes/tile/edge_tiles.py``): an index outside the buffer loads 0 and stores
  nothing, so a block tile need not divide the problem. The verifier then allows indices
  beyond the extents; the emitter tests the dimensions that may leave them.
* ``ins(%xb = %x : tensor<..>) outs(%ob : tensor<..>)``: a kernel's tensor operands and
  results, each bound to a buffer (memref of the same shape) inside the body.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.irdl import (
    IRDLOperation,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.affine_syntax import (
    check_in_bounds,
    dims_leaving,
    index_map_for,
    parse_indices,
    print_indices,
    row_major_offset,
)


def element_bytes(element_type: Attribute) -> int:
    """Bytes one element of ``element_type`` takes (at least 1; 32-bit where the type
    names no width)."""
    width = getattr(element_type, "bitwidth", None)
    width = width or getattr(getattr(element_type, "width", None), "data", 32)
    return max(1, int(width) // 8)


def memref_bytes(type_: MemRefType) -> int:
    """Size of a memref, in bytes."""
    return math.prod(type_.get_shape()) * element_bytes(type_.element_type)


class _Guarded:
    """``guarded`` on a load or store (see the module docstring)."""

    @property
    def is_guarded(self) -> bool:
        return self.guarded is not None  # type: ignore[attr-defined]

    def guarded_dims(self) -> list[int]:
        """The dimensions a guarded access tests (those whose index may leave the buffer;
        none when unguarded)."""
        if not self.is_guarded:
            return []
        shape = self.buffer.type.get_shape()  # type: ignore[attr-defined]
        return dims_leaving(self.map.data, self.indices, shape)  # type: ignore[attr-defined]


class LoadBase(_Guarded, IRDLOperation):
    """``%v = <level>.load %buf[indices] : memref<...>``"""

    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    guarded = opt_prop_def(UnitAttr)  # an index outside the buffer loads 0
    result = result_def()

    def __init__(
        self,
        buffer: SSAValue,
        map: AffineMap,
        indices: Sequence[SSAValue],
        guarded: bool = False,
    ):
        map, operands = index_map_for(map, indices)
        assert isinstance(buffer.type, MemRefType)
        super().__init__(
            operands=[buffer, operands],
            result_types=[buffer.type.element_type],
            properties=_access_properties(map, guarded),
        )

    def verify_(self) -> None:
        assert isinstance(self.buffer.type, MemRefType)
        if self.result.type != self.buffer.type.element_type:
            raise VerifyException(f"{self.name}: result type differs from the buffer's elements")
        _verify_access(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.buffer)
        print_indices(printer, self.map.data, self.indices)
        if self.is_guarded:
            printer.print_string(" guarded")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser):
        buffer = parser.parse_unresolved_operand()
        map, index_operands = parse_indices(parser)
        guarded = parser.parse_optional_keyword("guarded") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        buffer_type = parser.parse_type()
        if not isinstance(buffer_type, MemRefType):
            parser.raise_error(f"{cls.name} expects a memref type")
        (buf,) = parser.resolve_operands([buffer], [buffer_type], parser.pos)
        indices = _resolve_indices(parser, index_operands)
        op = cls.create(
            operands=[buf, *indices],
            result_types=[buffer_type.element_type],
            properties=_access_properties(map, guarded),
            attributes=attrs,
        )
        return op


class StoreBase(_Guarded, IRDLOperation):
    """``<level>.store %v, %buf[indices] : memref<...>``"""

    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    guarded = opt_prop_def(UnitAttr)  # an index outside the buffer stores nothing

    def __init__(
        self,
        value: SSAValue,
        buffer: SSAValue,
        map: AffineMap,
        indices: Sequence[SSAValue],
        guarded: bool = False,
    ):
        map, operands = index_map_for(map, indices)
        super().__init__(
            operands=[value, buffer, operands], properties=_access_properties(map, guarded)
        )

    def verify_(self) -> None:
        assert isinstance(self.buffer.type, MemRefType)
        if self.value.type != self.buffer.type.element_type:
            raise VerifyException(
                f"{self.name}: stores {self.value.type} into a buffer of "
                f"{self.buffer.type.element_type}"
            )
        _verify_access(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        printer.print_ssa_value(self.buffer)
        print_indices(printer, self.map.data, self.indices)
        if self.is_guarded:
            printer.print_string(" guarded")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser):
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buffer = parser.parse_unresolved_operand()
        map, index_operands = parse_indices(parser)
        guarded = parser.parse_optional_keyword("guarded") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        buffer_type = parser.parse_type()
        if not isinstance(buffer_type, MemRefType):
            parser.raise_error(f"{cls.name} expects a memref type")
        val, buf = parser.resolve_operands(
            [value, buffer], [buffer_type.element_type, buffer_type], parser.pos
        )
        indices = _resolve_indices(parser, index_operands)
        return cls.create(
            operands=[val, buf, *indices],
            properties=_access_properties(map, guarded),
            attributes=attrs,
        )


def _access_properties(map: AffineMap, guarded: bool) -> dict[str, Attribute]:
    properties: dict[str, Attribute] = {"map": AffineMapAttr(map)}
    if guarded:
        properties["guarded"] = UnitAttr()
    return properties


def _verify_access(op: LoadBase | StoreBase) -> None:
    """Indices in bounds where their ranges are known; a guarded access's may leave the
    buffer (it loads 0 there, or stores nothing), but not its rank."""
    shape = op.buffer.type.get_shape()  # type: ignore[attr-defined]
    check_in_bounds(op.name, op.map.data, op.indices, shape, upper=not op.is_guarded)


def _resolve_indices(parser: Parser, operands: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    return [parser.resolve_operand(o, IndexType()) for o in operands]


# --- kernel signatures -------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def buffer_type(tensor: Attribute) -> MemRefType:
    """The buffer that holds a tensor of this type inside a kernel body (kept per type:
    building a MemRefType verifies it, which was a fifth of lifting a whole model)."""
    assert isinstance(tensor, TensorType)
    return MemRefType(tensor.element_type, tensor.get_shape())


def kernel_block(operand_types: Sequence[Attribute], result_types: Sequence[Attribute]) -> Block:
    """An entry block with one buffer argument per kernel operand, then per result."""
    return Block(arg_types=[buffer_type(t) for t in (*operand_types, *result_types)])


def print_kernel_name(printer: Printer, op: IRDLOperation) -> None:
    """`` @name``"""
    name = op.properties["sym_name"]
    assert isinstance(name, StringAttr)
    printer.print_string(" ")
    printer.print_attribute(SymbolRefAttr(name))


def print_signature(printer: Printer, op: IRDLOperation, body: Region, first_arg: int = 0) -> None:
    """`` ins(%xb = %x : tensor<..>, ..) outs(%ob : tensor<..>, ..)``"""
    args = body.block.args[first_arg:]
    ins, outs = args[: len(op.operands)], args[len(op.operands) :]

    def print_in(pair: tuple[SSAValue, SSAValue]) -> None:
        printer.print_ssa_value(pair[0])
        printer.print_string(" = ")
        printer.print_ssa_value(pair[1])
        printer.print_string(" : ")
        printer.print_attribute(pair[1].type)

    def print_out(pair: tuple[SSAValue, SSAValue]) -> None:
        printer.print_ssa_value(pair[0])
        printer.print_string(" : ")
        printer.print_attribute(pair[1].type)

    printer.print_string(" ins(")
    printer.print_list(zip(ins, op.operands, strict=True), print_in)
    printer.print_string(") outs(")
    printer.print_list(zip(outs, op.results, strict=True), print_out)
    printer.print_string(")")


def parse_signature(
    parser: Parser,
) -> tuple[list[SSAValue], list[Parser.Argument], list[Attribute]]:
    """Parse what ``print_signature`` prints.

    Returns the operands, the buffer arguments (ins then outs) and the result types.
    """
    parser.parse_keyword("ins")

    def parse_in():
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return arg, operand, parser.parse_type()

    ins = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_in)
    parser.parse_keyword("outs")

    def parse_out():
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation(":")
        return arg, parser.parse_type()

    outs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_out)
    operands = parser.resolve_operands([o for _, o, _ in ins], [t for *_, t in ins], parser.pos)
    args = [a.resolve(buffer_type(t)) for a, _, t in ins] + [
        a.resolve(buffer_type(t)) for a, t in outs
    ]
    return operands, args, [t for _, t in outs]


def verify_signature(op: IRDLOperation, body: Region, first_arg: int = 0) -> None:
    """Each operand and result has a buffer argument of the same shape and element type."""
    args = body.block.args[first_arg:]
    values = [*op.operands, *op.results]
    if len(args) != len(values):
        raise VerifyException(
            f"{op.name}: body has {len(args)} buffer arguments for "
            f"{len(op.operands)} operands and {len(op.results)} results"
        )
    for i, (arg, value) in enumerate(zip(args, values, strict=True)):
        if arg.type != buffer_type(value.type):
            raise VerifyException(
                f"{op.name}: buffer argument {i} is {arg.type}, expected "
                f"{buffer_type(value.type)} for {value.type}"
            )


def kernel_name(op: IRDLOperation) -> str:
    name = op.properties["sym_name"]
    assert isinstance(name, StringAttr)
    return name.data


def _defined_inside(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    return op is not None and loop.is_ancestor(op)


def _constant_index(value: SSAValue) -> int | None:
    attr = getattr(value.owner, "value", None)
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
        return attr.value.data
    return None


# How an index expression varies over the V lanes ``%i = V*c + v`` of a vector loop:
_CONTIGUOUS = "contiguous"  # e(V*c + v) = e(V*c) + v, with e(V*c) a multiple of V
_ALIGNED = "aligned"  # the same for all lanes, and a multiple of V
_UNIFORM = "uniform"  # the same for all lanes


def _lanes(expr: AffineExpr, kinds: list[str | None], width: int) -> str | None:
    """The class of ``expr`` (None: none of the above), given its dims' classes."""
    if isinstance(expr, AffineConstantExpr):
        return _ALIGNED if expr.value % width == 0 else _UNIFORM
    if isinstance(expr, AffineDimExpr):
        return kinds[expr.position]
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs, rhs = _lanes(expr.lhs, kinds, width), _lanes(expr.rhs, kinds, width)
    if lhs is None or rhs is None:
        return None
    kind = expr.kind
    if kind == AffineBinaryOpKind.Add:
        if _CONTIGUOUS in (lhs, rhs):
            return _CONTIGUOUS if {lhs, rhs} == {_CONTIGUOUS, _ALIGNED} else None
        return _ALIGNED if lhs == rhs == _ALIGNED else _UNIFORM
    constant = expr.rhs.value if isinstance(expr.rhs, AffineConstantExpr) else None
    if kind == AffineBinaryOpKind.Mul:
        if isinstance(expr.lhs, AffineConstantExpr):
            lhs, constant = rhs, expr.lhs.value
        if constant is None:
            return None
        if lhs == _CONTIGUOUS:
            return _CONTIGUOUS if constant == 1 else None
        return _ALIGNED if lhs == _ALIGNED or constant % width == 0 else _UNIFORM
    if constant is None or constant <= 0:
        return None
    divides = constant % width == 0
    if kind == AffineBinaryOpKind.Mod:
        if lhs == _CONTIGUOUS:  # an aligned group never straddles a multiple of the modulus
            return _CONTIGUOUS if divides else None
        return _ALIGNED if lhs == _ALIGNED and divides else _UNIFORM
    if kind == AffineBinaryOpKind.FloorDiv:
        return _UNIFORM if lhs != _CONTIGUOUS or divides else None
    return _UNIFORM if lhs != _CONTIGUOUS else None  # ceildiv: a group may straddle


def _value_lanes(value: SSAValue, iv: SSAValue, loop: Operation, width: int) -> str | None:
    """The ``_lanes`` class of an index value: the induction variable, a constant, a value
    from outside the loop, or an ``affine.apply`` inside it over such values."""
    known = _constant_index(value)
    if value is iv:
        return _CONTIGUOUS
    if known is not None:
        return _ALIGNED if known % width == 0 else _UNIFORM
    if not _defined_inside(value, loop):
        return _UNIFORM
    owner = value.owner
    if getattr(owner, "name", None) == "affine.apply":
        operands = [_value_lanes(v, iv, loop, width) for v in owner.operands]  # type: ignore[union-attr]
        return _lanes(owner.map.data.results[0], operands, width)  # type: ignore[union-attr]
    return None


def vector_access(access: LoadBase | StoreBase, loop: Operation, width: int) -> bool:
    """Whether ``access``, in ``loop`` run with ``vector width`` (its induction variable
    ``%i = width*c + v``, v = 0..width-1), touches ``width`` consecutive elements starting at
    a multiple of ``width``: one aligned ``width``-wide access instead of ``width`` scalar ones.

    It does when its row-major offset is *contiguous* over the lanes (``_lanes``): ``%i``
    plus terms that are the same for every lane and multiples of ``width``, where ``mod``
    and ``floordiv`` by multiples of ``width`` keep an aligned group together (RoPE's
    ``(%i + 32) mod 64``). An ``affine.apply`` inside the loop is classed through its
    expression; other indices defined inside the loop are not known to be uniform. The
    buffer itself must start 16-byte aligned; the runtime checks every pointer it passes.
    A guarded access also needs rows of a multiple of ``width`` elements, so that the
    lanes are all inside the buffer or all outside it (the emitter tests lane 0).
    """
    buffer = access.buffer.type
    assert isinstance(buffer, MemRefType)
    guarded = getattr(access, "is_guarded", False)
    return contiguous_lanes(buffer, access.map.data, access.indices, loop, width, guarded)


def contiguous_lanes(
    buffer: MemRefType,
    map: AffineMap,
    indices: Sequence[SSAValue],
    loop: Operation,
    width: int,
    guarded: bool = False,
) -> bool:
    """``vector_access`` for any access of ``buffer`` at ``map`` over ``indices`` (one side
    of a ``kernel.cp_async``, say; ``guarded``: a guarded one's)."""
    shape = buffer.get_shape()
    if guarded and shape and shape[-1] % width:
        return False
    iv = loop.regions[0].block.args[0]
    kinds = [_value_lanes(value, iv, loop, width) for value in indices]
    offset = row_major_offset(map, buffer.get_shape())
    return _lanes(offset, kinds, width) == _CONTIGUOUS
