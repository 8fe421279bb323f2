"""The `torch` dialect: the captured PyTorch program, one op per ATen call.

A graph captured by `torch.export` can hold any of several hundred ATen overloads, so the
dialect has a single op, `torch.aten`, that names its overload instead of one op class per
overload. The op mirrors the FX node 1:1, so nothing is decided here; the decompositions
into the `tensor` dialect give the ops their meaning.

    %rms_norm = torch.aten "rms_norm.default"(input = %x, weight = %p_weight)
        {normalized_shape = [2048], eps = 1.000000e-06, source = "<expression>:1: ..."}
        : (tensor<1x32x2048xf32>, tensor<2048xf32>) -> tensor<1x32x2048xf32>

(printed on one line). The parts:

- `target` (property): the overload without the `aten.` prefix, exactly as the graph has
  it (`add.Tensor`, `_softmax.default`). Overloads from other namespaces keep their
  namespace (`prims.convert_element_type.default`), so a target with two dots or more
  that does not start with `aten.` is never ambiguous with an ATen one.
- operands: the tensor arguments in schema order, each printed with the name of its
  schema argument (`input = %x`). The names are stored in the `tensor_args` property, so
  a consumer finds `weight` even when an optional tensor before it was None (and left
  out). A tensor list (aten.cat's `tensors`) is spread, its name repeated per element;
  a `Tensor?[]` holding Nones (aten.index's `indices`) also gets an attribute of that
  name, `[false, true]`, saying which positions hold the operands.
- attributes: every other argument under its schema name. int → i64, float → f64,
  bool → i1 (`true`), list → array (`[2048]`), dtype → the builtin element type
  (`dtype = bf16`), str → string; None, devices, layouts and memory formats are left out.
  A Python number passed where the schema says Tensor (`x + 1` is `add.Tensor(x, 1)`)
  is an attribute under that name. The default types i64 and f64 are not printed: the
  parser gives unsuffixed literals exactly those types, so the text stays round-trippable.
  Only the arguments the graph passed are present; one left to its schema default is
  absent, so consumers read `op.arg("eps", default)`.
- `source` (optional property, printed last in the attribute dictionary): where the call
  came from, "file.py:LINE: code", for error messages that point at the user's code.
- results: one or more tensors (ops with tuple results, e.g. native_layer_norm, have
  several).

The dialect does not import PyTorch: `deplo-opt` can read and write it without torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

__all__ = ["AtenOp", "Torch", "attr_to_python"]

_SOURCE = "source"
"""The key of the `source` property inside the printed attribute dictionary. No ATen
schema has a non-tensor argument of that name, so it cannot collide with an argument."""


@irdl_op_definition
class AtenOp(IRDLOperation):
    """One call of an ATen overload, as captured by torch.export."""

    name = "torch.aten"

    target = prop_def(StringAttr)
    tensor_args = prop_def(ArrayAttr[StringAttr])
    source = opt_prop_def(StringAttr)

    tensors = var_operand_def()
    outs = var_result_def()

    def __init__(
        self,
        target: str,
        operands: Sequence[SSAValue],
        tensor_args: Sequence[str],
        result_types: Sequence[Attribute],
        attributes: Mapping[str, Attribute] | None = None,
        source: str | None = None,
    ):
        super().__init__(
            operands=[operands],
            result_types=[result_types],
            properties={
                "target": StringAttr(target),
                "tensor_args": ArrayAttr([StringAttr(n) for n in tensor_args]),
                "source": StringAttr(source) if source is not None else None,
            },
            attributes=dict(attributes or {}),
        )

    # ----------------------------------------------------------------- accessors

    @property
    def overload(self) -> str:
        """The ATen overload, e.g. "add.Tensor"."""
        return self.target.data

    @property
    def tensor_arg_names(self) -> tuple[str, ...]:
        """The schema argument name of each operand, in operand order."""
        return tuple(a.data for a in self.tensor_args.data)

    @property
    def source_location(self) -> str | None:
        """Where the call came from ("file.py:12: code"), when known."""
        return self.source.data if self.source is not None else None

    def tensor_arg(self, name: str) -> SSAValue | None:
        """The operand passed for schema argument `name` (its first one for a list)."""
        for arg, value in zip(self.tensor_arg_names, self.operands, strict=False):
            if arg == name:
                return value
        return None

    def tensor_list_arg(self, name: str) -> list[SSAValue]:
        """All operands passed for a tensor-list argument such as aten.cat's `tensors`."""
        return [v for a, v in zip(self.tensor_arg_names, self.operands, strict=False) if a == name]

    def arg(self, name: str, default: object = None) -> object:
        """A non-tensor argument as a Python value (int, float, bool, str, list, or a
        builtin type for a dtype); `default` when it was None or left to its default."""
        attr = self.attributes.get(name)
        return default if attr is None else attr_to_python(attr)

    # ------------------------------------------------------------------ verifier

    def verify_(self) -> None:
        where = f"'torch.aten' \"{self.target.data}\""
        if not self.target.data:
            raise VerifyException("'torch.aten': target must name an ATen overload, got ''")
        names = self.tensor_arg_names
        if len(self.operands) != len(names):
            raise VerifyException(
                f"{where}: operand count ({len(self.operands)}) must equal the number of "
                f"tensor_args ({len(names)}); each operand needs its schema argument name"
            )
        if any(not n for n in names):
            raise VerifyException(f"{where}: tensor_args entries must be non-empty names")
        if not self.results:
            raise VerifyException(f"{where}: must have at least one tensor result")
        for i, (n, v) in enumerate(zip(names, self.operands, strict=True)):
            if not isinstance(v.type, TensorType):
                raise VerifyException(
                    f"{where}: operand #{i} ({n}) must be a builtin tensor, got {v.type}"
                )
        for i, r in enumerate(self.results):
            if not isinstance(r.type, TensorType):
                raise VerifyException(
                    f"{where}: result #{i} must be a builtin tensor, got {r.type}"
                )
        if _SOURCE in self.attributes:
            raise VerifyException(f"{where}: '{_SOURCE}' is a property, not an argument")

    # ------------------------------------------------------------- custom syntax

    @classmethod
    def parse(cls, parser: Parser) -> AtenOp:
        target = parser.parse_str_literal("ATen overload name of torch.aten")
        pos = parser.pos

        def parse_named_operand() -> tuple[str, UnresolvedOperand]:
            arg = parser.parse_identifier("schema argument name")
            parser.parse_punctuation("=")
            return arg, parser.parse_unresolved_operand()

        named = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_named_operand)
        attributes = parser.parse_optional_attr_dict()
        source = attributes.pop(_SOURCE, None)
        if source is not None and not isinstance(source, StringAttr):
            parser.raise_error(f"'torch.aten' {_SOURCE} must be a string")
        parser.parse_punctuation(":")
        fn_type = parser.parse_function_type()
        operands = parser.resolve_operands([u for _, u in named], fn_type.inputs.data, pos)
        return cls(
            target,
            operands,
            [n for n, _ in named],
            fn_type.outputs.data,
            attributes,
            source.data if source is not None else None,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        printer.print_string("(")
        pairs = list(zip(self.tensor_arg_names, self.operands, strict=False))
        for i, (arg, value) in enumerate(pairs):
            if i:
                printer.print_string(", ")
            printer.print_string(f"{arg} = ")
            printer.print_operand(value)
        # A malformed op (built in Python) may have more operands than names; print the
        # rest unnamed so the verifier's message can still show the op.
        for i, value in enumerate(self.operands[len(pairs) :], len(pairs)):
            if i:
                printer.print_string(", ")
            printer.print_operand(value)
        printer.print_string(")")
        entries = list(self.attributes.items())
        if self.source is not None:
            entries.append((_SOURCE, self.source))
        if entries:
            printer.print_string(" {")
            for i, (key, value) in enumerate(entries):
                if i:
                    printer.print_string(", ")
                printer.print_identifier_or_string_literal(key)
                printer.print_string(" = ")
                _print_value(printer, value)
            printer.print_string("}")
        printer.print_string(" : ")
        printer.print_attribute(FunctionType.from_lists(self.operand_types, self.result_types))


# --------------------------------------------------------------------- values


def _float_literal(value: float) -> str:
    """A float literal that the parser reads back to exactly `value` as an f64.

    The six-digit scientific form (what xDSL and MLIR print) when it is exact, else
    Python's shortest round-tripping form, always with a '.' so it lexes as a float."""
    text = f"{value:.6e}"
    if float(text) == value:
        return text
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def _print_value(printer: Printer, attr: Attribute) -> None:
    """Print an argument value, leaving out the types the parser infers (i64, f64)."""
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, FloatAttr) and attr.type == f64 and math.isfinite(attr.value.data):
        printer.print_string(_float_literal(attr.value.data))
    elif isinstance(attr, ArrayAttr):
        printer.print_string("[")
        for i, element in enumerate(attr.data):
            if i:
                printer.print_string(", ")
            _print_value(printer, element)
        printer.print_string("]")
    else:
        printer.print_attribute(attr)


def attr_to_python(attr: Attribute) -> object:
    """The Python value of an argument attribute: int, bool, float, str, list (of the
    same), None for `none`; any other attribute (a dtype's element type) is returned as
    is."""
    if isinstance(attr, IntegerAttr):
        if isinstance(attr.type, IntegerType) and attr.type == i1:
            return bool(attr.value.data)
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [attr_to_python(a) for a in attr.data]
    if isinstance(attr, NoneType):
        return None
    return attr


Torch = Dialect("torch", [AtenOp], [])
