"""Pieces shared by the loop, tile and kernel levels: buffer loads/stores, loop bodies and
kernel signatures.

Each level names its own ops (``loop.load``, ``kernel.load``) so a listing says which level
it is, but the syntax and the invariants are written once here:

* ``%v = loop.load %x[0, %a0, %a1 * 2] : memref<1x32x2048xf32>``: the index list is an
  affine map over the SSA index operands (see ``affine_syntax``); the verifier proves
  indices in bounds whenever the ranges of the operands are known.
* ``ins(%xb = %x : tensor<..>) outs(%ob : tensor<..>)``: a kernel's tensor operands and
  results, each bound to a buffer (memref of the same shape) inside the body.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    operand_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.affine_syntax import (
    check_in_bounds,
    index_map_for,
    parse_indices,
    print_indices,
)


class LoadBase(IRDLOperation):
    """``%v = <level>.load %buf[indices] : memref<...>``"""

    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    result = result_def()

    def __init__(self, buffer: SSAValue, map: AffineMap, indices: Sequence[SSAValue]):
        map, operands = index_map_for(map, indices)
        assert isinstance(buffer.type, MemRefType)
        super().__init__(
            operands=[buffer, operands],
            result_types=[buffer.type.element_type],
            properties={"map": AffineMapAttr(map)},
        )

    def verify_(self) -> None:
        assert isinstance(self.buffer.type, MemRefType)
        if self.result.type != self.buffer.type.element_type:
            raise VerifyException(f"{self.name}: result type differs from the buffer's elements")
        check_in_bounds(self.name, self.map.data, self.indices, self.buffer.type.get_shape())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.buffer)
        print_indices(printer, self.map.data, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser):
        buffer = parser.parse_unresolved_operand()
        map, index_operands = parse_indices(parser)
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
            properties={"map": AffineMapAttr(map)},
            attributes=attrs,
        )
        return op


class StoreBase(IRDLOperation):
    """``<level>.store %v, %buf[indices] : memref<...>``"""

    value = operand_def()
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)

    def __init__(
        self, value: SSAValue, buffer: SSAValue, map: AffineMap, indices: Sequence[SSAValue]
    ):
        map, operands = index_map_for(map, indices)
        super().__init__(
            operands=[value, buffer, operands], properties={"map": AffineMapAttr(map)}
        )

    def verify_(self) -> None:
        assert isinstance(self.buffer.type, MemRefType)
        if self.value.type != self.buffer.type.element_type:
            raise VerifyException(
                f"{self.name}: stores {self.value.type} into a buffer of "
                f"{self.buffer.type.element_type}"
            )
        check_in_bounds(self.name, self.map.data, self.indices, self.buffer.type.get_shape())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        printer.print_ssa_value(self.buffer)
        print_indices(printer, self.map.data, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)

    @classmethod
    def parse(cls, parser: Parser):
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        buffer = parser.parse_unresolved_operand()
        map, index_operands = parse_indices(parser)
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
            properties={"map": AffineMapAttr(map)},
            attributes=attrs,
        )


def _resolve_indices(parser: Parser, operands: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    return [parser.resolve_operand(o, IndexType()) for o in operands]


# --- kernel signatures -------------------------------------------------------------------


def buffer_type(tensor: Attribute) -> MemRefType:
    """The buffer that holds a tensor of this type inside a kernel body."""
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
