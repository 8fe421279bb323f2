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
- location (MLIR debug info, printed only on demand: `deplo-opt --print-debuginfo`): the
  module the call ran in and its source line, `loc("layer.self_attn.q_proj"("transformers/
  models/llama/modeling_llama.py":244:0))`; just the file:line:col outside any module.

Provenance. Every op lowered from a torch op remembers it through its location, so the
printed tensor and loop levels stay as they are and `--print-debuginfo` shows it:

    loc("linear_1"(callsite("aten.linear.default" at "layer.self_attn.k_proj"("…":245:0))))

a `NameLoc` naming the torch op (its result's name in the printed torch level), around a
call site: the ATen overload called at the op's own location. An op that computes parts
of several torch ops (a folded view of a view, a consumer of a no-op `to`) has a
`fused[...]` location of one such entry per op, in program order. `Origin` is one entry
as Python data; `origins(loc)` reads them back and `merge_locations` builds fused ones.
decompose stamps them, lift-to-loop turns them into each kernel's `covers` list.

The dialect does not import PyTorch: `deplo-opt` can read and write it without torch.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    CallSiteLoc,
    FileLineColLoc,
    FloatAttr,
    FunctionType,
    FusedLoc,
    IntAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    NameLoc,
    NoneAttr,
    NoneType,
    StringAttr,
    TensorType,
    UnknownLoc,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, SSAValue
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

__all__ = [
    "AtenOp",
    "Origin",
    "Torch",
    "attr_to_python",
    "merge_locations",
    "origins",
    "printed_names",
    "site_location",
    "stamp_origins",
]

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


# ----------------------------------------------------------------- provenance


def site_location(scope: str, file: str, line: int) -> LocationAttr:
    """Where a torch op ran: `"scope"("file":line:0)`, the file:line alone at the root
    module, the scope alone without a file, unknown without either."""
    site: LocationAttr = (
        FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(0)) if file else UnknownLoc()
    )
    if scope:
        return NameLoc(StringAttr(scope), site if file else NoneAttr())  # type: ignore[arg-type]
    return site


def _site(loc: Attribute) -> tuple[str, str, int]:
    """(scope, file, line) of a `site_location`."""
    scope = ""
    if isinstance(loc, NameLoc):
        scope, loc = loc.desc.data, loc.location
    if isinstance(loc, FileLineColLoc):
        return scope, loc.filename.data, loc.line.data
    return scope, "", 0


_SOURCE_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::|$)")


@dataclass(frozen=True)
class Origin:
    """One torch op that a lowered op computes (a part of)."""

    name: str
    """The op's (first) result name in the printed torch level: `linear_1`."""
    target: str
    """The qualified overload: `aten.linear.default`."""
    scope: str = ""
    """The module it ran in, `layer.self_attn.k_proj`; empty at the root or when unknown."""
    file: str = ""
    line: int = 0

    @staticmethod
    def of(op: AtenOp, name: str) -> Origin:
        """The origin of `op`, named `name`: module and line from its location, else the
        file and line of its `source`."""
        scope, file, line = _site(op.location)
        if not file and op.source_location:
            m = _SOURCE_LINE.match(op.source_location)
            if m:
                file, line = m["file"], int(m["line"])
        overload = op.overload
        target = overload if overload.count(".") >= 2 else f"aten.{overload}"
        return Origin(name, target, scope, file, line)

    @property
    def op(self) -> str:
        """The ATen function without namespace and overload: `linear`, `mul`."""
        parts = self.target.split(".")
        return parts[1] if len(parts) >= 3 else parts[0]

    @property
    def where(self) -> str:
        """`modeling_llama.py:245` (the file's last component), or ''."""
        if not self.file:
            return ""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"

    def location(self) -> LocationAttr:
        """`"name"(callsite("target" at site))` (made once per origin: building and
        verifying the attributes was a third of decomposing a whole model)."""
        return _origin_location(self)


@functools.lru_cache(maxsize=65536)
def _origin_location(origin: Origin) -> LocationAttr:
    callee = NameLoc(StringAttr(origin.target), NoneAttr())  # type: ignore[arg-type]
    site = site_location(origin.scope, origin.file, origin.line)
    return NameLoc(StringAttr(origin.name), CallSiteLoc(callee, site))


def origins(loc: Attribute) -> list[Origin]:
    """The torch ops a location names, in order (none for any other location)."""
    if isinstance(loc, FusedLoc):
        found: list[Origin] = []
        for inner in loc.locations.data:  # type: ignore[attr-defined]
            found.extend(origins(inner))
        return found
    if (
        isinstance(loc, NameLoc)
        and isinstance(loc.location, CallSiteLoc)
        and isinstance(loc.location.callee, NameLoc)
    ):
        scope, file, line = _site(loc.location.caller)
        return [Origin(loc.desc.data, loc.location.callee.desc.data, scope, file, line)]
    return []


def merge_locations(*locs: Attribute) -> LocationAttr:
    """One location naming every torch op of `locs`, each once, in order (unknown for
    none, the op's own location for one, `fused[...]` for more)."""
    merged: dict[str, Origin] = {}
    for loc in locs:
        for origin in origins(loc):
            merged.setdefault(origin.name, origin)
    if not merged:
        return UnknownLoc()
    if len(merged) == 1:
        return next(iter(merged.values())).location()
    # a tuple, as ArrayAttr keeps it: a list would leave the location unhashable
    return FusedLoc(tuple(o.location() for o in merged.values()), NoneAttr())


def printed_names(blocks: Iterable[Block]) -> dict[SSAValue, str]:
    """The SSA names the xDSL printer gives the values of `blocks` (their arguments, then
    each op's results, nested ones included), as it prints one function.

    Mirrors `Printer.print_ssa_value`: a name hint, suffixed `_1`, `_2`, … on reuse, in
    print order; values without a hint are numbered (`PrintedNames`).
    """
    values: list[SSAValue] = []
    for block in blocks:
        values.extend(block.args)
        for op in block.walk():
            values.extend(op.results)
    namer = PrintedNames()
    return {v: namer.name(v.name_hint) for v in values}


class PrintedNames:
    """The printer's naming, one value at a time in print order: ``name(hint)`` is the
    name the next value with that hint gets. ``printed_names`` names IR with it; a stack
    whose copies are not made yet (``deplodock.restack``) names them from their hints."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}
        self.numbered = 0

    def name(self, hint: str | None) -> str:
        if not hint:
            self.numbered += 1
            return str(self.numbered - 1)
        k = self.used.get(hint, 0)
        self.used[hint] = k + 1
        return hint + (f"_{k}" if k else "")


def stamp_origins(root: Operation) -> None:
    """Give each torch.aten op under `root` its provenance location (see the module
    docstring), named as the printer names its first result. Ops that already carry one
    keep it."""
    blocks = {op.parent_block(): None for op in root.walk() if isinstance(op, AtenOp)}
    for block in blocks:
        assert block is not None
        region = block.parent
        names = printed_names(region.blocks if region is not None else [block])
        for op in block.ops:
            if isinstance(op, AtenOp) and op.results and not origins(op.location):
                op.location = Origin.of(op, names[op.results[0]]).location()


Torch = Dialect("torch", [AtenOp], [])
