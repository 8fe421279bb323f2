"""The loop level (dialect ``loop``): one ``loop.kernel`` is one future GPU kernel.

A kernel is a loop nest over buffers, the form in which fusion is decided::

    %y = loop.kernel @k_rms_norm ins(%xb = %x : tensor<1x32x2048xf32>, ..) outs(%yb : ..) {
      loop.for %a0 = 0 to 32 {                                   // free
        %ss = loop.for %a1 = 0 to 2048 reduce(add) -> f32 {       // reduce
          %v = loop.load %xb[0, %a0, %a1] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          loop.yield %sq : f32                    // combined into the accumulator with add
        }
        ...
        loop.store %r, %yb[0, %a0, %a2] : memref<1x32x2048xf32>
      }
    }

A loop's role is explicit: a *free* loop has no results; a *reduce* loop has one result
per ``reduce(kind, ..)`` entry, its body yields one contribution per iteration, and the
accumulator starts at the kind's identity. So the accumulator is a loop-carried value with
no mutable state, and later levels know how partial results combine (cooperatively across
threads, say) without pattern-matching the body.

Kernel operands and results are tensors (value semantics at the graph level, so fusion is
plain SSA substitution); inside, each is a buffer (memref) argument of the body.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IndexType, IntAttr, StringAttr
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.access import (
    LoadBase,
    StoreBase,
    kernel_block,
    parse_signature,
    print_kernel_name,
    print_signature,
    verify_signature,
)
from deplodock.dialects.combine import clause_error
from deplodock.dialects.scope import check_block


class KernelBase(IRDLOperation):
    """What the kernel ops of the three lower levels share (``loop.kernel``,
    ``tile.kernel``, ``kernel.kernel``): a symbol name, tensors in and out, and a body
    isolated from above whose block takes ``leading_args`` index arguments (a tile
    kernel's axes), then a memref per input, then one per output."""

    sym_name = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), RecursiveMemoryEffect())

    @property
    def leading_args(self) -> int:
        return 0

    @property
    def input_buffers(self) -> tuple[SSAValue, ...]:
        first = self.leading_args
        return self.body.block.args[first : first + len(self.inputs)]

    @property
    def output_buffers(self) -> tuple[SSAValue, ...]:
        return self.body.block.args[self.leading_args + len(self.inputs) :]


@irdl_op_definition
class KernelOp(KernelBase):
    """A loop nest that becomes one GPU kernel; tensors in, tensors out."""

    name = "loop.kernel"

    def __init__(
        self,
        name: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region | None = None,
    ):
        if body is None:
            body = Region(kernel_block([v.type for v in inputs], result_types))
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            regions=[body],
            properties={"sym_name": StringAttr(name)},
        )

    def verify_(self) -> None:
        check_block(self.body.block)
        verify_signature(self, self.body)

    def print(self, printer: Printer) -> None:
        print_kernel_name(printer, self)
        print_signature(printer, self, self.body)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name()
        operands, args, result_types = parse_signature(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        op = cls(name.data, operands, result_types, region)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a loop body; a reduce loop yields one contribution per accumulator."""

    name = "loop.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


def print_reduce_clause(printer: Printer, kinds: ArrayAttr, results: Sequence[SSAValue]) -> None:
    """`` reduce(add, max) -> (f32, f32)``, nothing for a free loop."""
    if not kinds.data:
        return
    printer.print_string(" reduce(" + ", ".join(k.data for k in kinds.data) + ") -> ")
    if len(results) == 1:
        printer.print_attribute(results[0].type)
    else:
        printer.print_string("(")
        printer.print_list((r.type for r in results), printer.print_attribute)
        printer.print_string(")")


def parse_reduce_clause(parser: Parser) -> tuple[list[str], list[Attribute]]:
    """Parse what ``print_reduce_clause`` prints: the kinds and the result types."""
    if not parser.parse_optional_keyword("reduce"):
        return [], []
    kinds = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_identifier)
    parser.parse_punctuation("->")
    if parser.parse_optional_punctuation("("):
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
    else:
        types = [parser.parse_type()]
    return kinds, types


def print_unroll(printer: Printer, unroll: IntAttr | None) -> None:
    """`` unroll N`` when a loop asks to be unrolled (N = 0: fully)."""
    if unroll is not None:
        printer.print_string(f" unroll {unroll.data}")


def parse_unroll(parser: Parser) -> IntAttr | None:
    return IntAttr(parser.parse_integer()) if parser.parse_optional_keyword("unroll") else None


VECTOR_WIDTHS = (2, 4)
"""Widths a thread-strided loop may be vectorised by (float2, float4: 8- and 16-byte accesses)."""


def print_vector(printer: Printer, vector: IntAttr | None) -> None:
    """`` vector V``: each iteration covers V consecutive values of the induction variable."""
    if vector is not None:
        printer.print_string(f" vector {vector.data}")


def parse_vector(parser: Parser) -> IntAttr | None:
    return IntAttr(parser.parse_integer()) if parser.parse_optional_keyword("vector") else None


def vector_of(op: IRDLOperation) -> int:
    """The ``vector`` width of a strided loop (``tile.strided_for``, ``kernel.for``); 1 if none."""
    vector = op.properties.get("vector")
    return vector.data if isinstance(vector, IntAttr) else 1


def verify_vector(op: IRDLOperation, vector: IntAttr | None, upper: int) -> None:
    """A vector width is a supported one and divides the loop's upper bound."""
    if vector is None:
        return
    if vector.data not in VECTOR_WIDTHS:
        raise VerifyException(
            f"{op.name}: vector {vector.data} is not a supported width "
            f"({', '.join(map(str, VECTOR_WIDTHS))})"
        )
    if upper % vector.data:
        raise VerifyException(
            f"{op.name}: vector {vector.data} does not divide the upper bound {upper}"
        )


def verify_reduce_clause(op: IRDLOperation, kinds: ArrayAttr, body: Region) -> None:
    """Kinds are known and grouped right (``combine.clause_error``), one per result, and
    the body yields one value of each type."""
    names = [k.data for k in kinds.data]
    error = clause_error(names, [r.type for r in op.results])
    if error is not None:
        raise VerifyException(f"{op.name}: {error}")
    if len(names) != len(op.results):
        raise VerifyException(
            f"{op.name}: {len(names)} reduction kinds for {len(op.results)} results"
        )
    block = body.block
    if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
        raise VerifyException(f"{op.name}: the body takes exactly one index (the induction var)")
    last = block.last_op
    yielded = list(last.operands) if last is not None and last.has_trait(IsTerminator) else []
    if [v.type for v in yielded] != [r.type for r in op.results]:
        role = (
            "a reduce loop must yield one value per accumulator"
            if names
            else ("a free loop yields nothing")
        )
        raise VerifyException(f"{op.name}: {role}")


def verify_limit(op: IRDLOperation) -> None:
    """A ``below`` limit is a tile or kernel level device: the loop level's interpreter
    runs a loop's iterations at once, so its loops count to their bound."""
    if getattr(op, "limit", None) is None:
        return
    if getattr(op, "vector", None) is not None:
        raise VerifyException(f"{op.name}: a 'below' limit and 'vector' do not go together")
    if op.name != "loop.for":
        return
    parent = op.parent_op()
    while parent is not None and parent.name != "tile.kernel":
        parent = parent.parent_op()
    if parent is None:
        raise VerifyException("loop.for: a 'below' limit is only allowed inside a tile.kernel")


def kinds_attr(kinds: Sequence[str]) -> ArrayAttr:
    return ArrayAttr([StringAttr(k) for k in kinds])


class LoopBase(IRDLOperation):
    """What every counted loop of the project has (``loop.for``, ``tile.strided_for``,
    ``kernel.for``): one index induction variable, a single-block body, the reduce
    clause (results, one per combine kind) and ``mark-unroll``'s request. Free loops end
    with no terminator (passes append to them freely); reduce loops end with the
    ``loop.yield`` of their contributions."""

    limit = opt_operand_def(IndexType)  # ``below %n``: the loop also stops at %n
    reduce = prop_def(ArrayAttr)
    unroll = opt_prop_def(IntAttr)  # mark-unroll's request: #pragma unroll N once emitted
    results_ = var_result_def()
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), RecursiveMemoryEffect())

    def __init__(
        self,
        operands: Sequence[SSAValue],
        properties: dict[str, Attribute],
        body: Region | None,
        reduce: Sequence[str],
        result_types: Sequence[Attribute],
        limit: SSAValue | None = None,
    ):
        if body is None:
            body = Region(Block(arg_types=[IndexType()]))
        super().__init__(
            operands=[*operands, [limit] if limit is not None else []],
            result_types=[result_types],
            regions=[body],
            properties={**properties, "reduce": kinds_attr(reduce)},
        )

    def print_tail(self, printer: Printer) -> None:
        """What every loop prints after its bounds: its ``below`` limit, the reduce
        clause, the unroll request, the attributes and the body."""
        if self.limit is not None:
            printer.print_string(" below ")
            printer.print_ssa_value(self.limit)
        print_reduce_clause(printer, self.reduce, self.results)
        print_unroll(printer, self.unroll)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @staticmethod
    def parse_limit(parser: Parser) -> SSAValue | None:
        """The optional ``below %n`` after a loop's bounds."""
        if parser.parse_optional_keyword("below") is None:
            return None
        return parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())

    @staticmethod
    def parse_tail(
        parser: Parser, iv
    ) -> tuple[list[str], list[Attribute], IntAttr | None, dict, Region]:
        """``print_tail``'s inverse after the limit: (kinds, result types, unroll,
        attributes, body)."""
        kinds, types = parse_reduce_clause(parser)
        unroll = parse_unroll(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region([iv.resolve(IndexType())])
        return kinds, types, unroll, attrs.data if attrs is not None else {}, region

    def stop(self) -> int | SSAValue:
        """Where the iterations stop: ``upper``, or the ``below`` limit when it has one
        (the loop runs below the smaller of the two)."""
        return self.limit if self.limit is not None else self.upper.data  # type: ignore[attr-defined]

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def kinds(self) -> list[str]:
        return [k.data for k in self.reduce.data]

    @property
    def is_reduce(self) -> bool:
        return bool(self.reduce.data)


class StridedForBase(LoopBase):
    """A counted loop from an index operand by a constant step: ``tile.strided_for`` (a
    thread's share of a row) and ``kernel.for`` are this loop at their levels. ``%i =
    %start to N step S [vector V] [reduce(..) -> ..] [unroll U]``: iterations ``start,
    start+S, ..`` below N; with ``vector V`` the loop counts ``c`` from start by S below
    N / V and runs its body for ``%i = V*c .. V*c+V-1`` in order. A reduce loop keeps one
    accumulator per kind, starting at the kind's identity.
    """

    start = operand_def(IndexType)
    upper = prop_def(IntAttr)
    step = prop_def(IntAttr)
    vector = opt_prop_def(IntAttr)  # vectorize's width (see the class docstring)

    def __init__(
        self,
        start: SSAValue,
        upper: int,
        step: int,
        body: Region | None = None,
        reduce: Sequence[str] = (),
        result_types: Sequence[Attribute] = (),
        limit: SSAValue | None = None,
    ):
        properties = {"upper": IntAttr(upper), "step": IntAttr(step)}
        super().__init__([start], properties, body, reduce, result_types, limit)

    def index_range(self, value: SSAValue) -> tuple[int, int] | None:
        if value is self.induction_var and self.upper.data > 0:
            return (0, self.upper.data - 1)
        return None

    def verify_(self) -> None:
        check_block(self.body.block)
        verify_limit(self)
        if self.step.data < 1:
            raise VerifyException(f"{self.name}: step {self.step.data} must be positive")
        verify_reduce_clause(self, self.reduce, self.body)
        verify_vector(self, self.vector, self.upper.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(" = ")
        printer.print_ssa_value(self.start)
        printer.print_string(f" to {self.upper.data} step {self.step.data}")
        print_vector(printer, self.vector)
        self.print_tail(printer)

    @classmethod
    def parse(cls, parser: Parser) -> StridedForBase:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        start = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        parser.parse_keyword("to")
        upper = parser.parse_integer()
        parser.parse_keyword("step")
        step = parser.parse_integer()
        vector = parse_vector(parser)
        limit = cls.parse_limit(parser)
        kinds, types, unroll, attrs, region = cls.parse_tail(parser, iv)
        op = cls(start, upper, step, region, kinds, types, limit)
        op.unroll, op.vector = unroll, vector
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ForOp(LoopBase):
    """``loop.for %i = 0 to N`` (free) or ``%s = loop.for .. reduce(add) -> f32`` (reduce).

    ``loop.for %i = 0 to N below %n``, in a tile kernel, also stops at ``%n``: the loop
    runs ``0 .. min(N, %n) - 1`` (``skip-masked-chunks``: the chunks of keys a causal
    block can attend to; %n is block-uniform)."""

    name = "loop.for"
    lower = prop_def(IntAttr)
    upper = prop_def(IntAttr)

    def __init__(
        self,
        lower: int,
        upper: int,
        body: Region | None = None,
        reduce: Sequence[str] = (),
        result_types: Sequence[Attribute] = (),
        limit: SSAValue | None = None,
    ):
        properties = {"lower": IntAttr(lower), "upper": IntAttr(upper)}
        super().__init__([], properties, body, reduce, result_types, limit)

    @property
    def extent(self) -> int:
        return self.upper.data - self.lower.data

    def index_range(self, value: SSAValue) -> tuple[int, int] | None:
        if value is self.induction_var and self.extent > 0:
            return (self.lower.data, self.upper.data - 1)
        return None

    def verify_(self) -> None:
        check_block(self.body.block)
        verify_limit(self)
        if self.upper.data < self.lower.data:
            raise VerifyException(
                f"loop.for: upper bound {self.upper.data} is below lower bound {self.lower.data}"
            )
        verify_reduce_clause(self, self.reduce, self.body)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lower.data} to {self.upper.data}")
        self.print_tail(printer)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        iv = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lower = parser.parse_integer()
        parser.parse_keyword("to")
        upper = parser.parse_integer()
        limit = cls.parse_limit(parser)
        kinds, types, unroll, attrs, region = cls.parse_tail(parser, iv)
        op = cls(lower, upper, region, kinds, types, limit)
        op.unroll = unroll
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class LoadOp(LoadBase):
    """``%v = loop.load %buf[0, %a0, %a1] : memref<..>``"""

    name = "loop.load"
    traits = traits_def(MemoryReadEffect())


@irdl_op_definition
class StoreOp(StoreBase):
    """``loop.store %v, %buf[0, %a0, %a1] : memref<..>``"""

    name = "loop.store"
    traits = traits_def(MemoryWriteEffect())


def enclosing_kernel(op: IRDLOperation) -> IRDLOperation | None:
    """The nearest ancestor that is a kernel of any level (has a ``sym_name``)."""
    parent = op.parent_op()
    while parent is not None and "sym_name" not in parent.properties:
        parent = parent.parent_op()
    return parent


Loop = Dialect("loop", [KernelOp, ForOp, YieldOp, LoadOp, StoreOp])
