"""The tensor level (dialect ``ten``): every torch op becomes map, reduce or index_map.

Three op kinds keep the surface that later passes must understand small:

* ``ten.map``: elementwise; operands share the result's shape, the body is a region of
  upstream ``arith``/``math`` ops over one scalar per operand, ended by ``ten.yield``.
* ``ten.reduce``: combine (add/mul/max/min) over some axes, which are dropped.
* ``ten.index_map``: an affine view ``result[i] = source[f(i)]`` (broadcast, transpose,
  reshape, slice), with ``f`` an upstream affine map from result to source indices.

plus ``ten.constant`` for literal tensors, ``ten.iota`` for positions as data,
``ten.gather`` for the one access no affine map can say: an index read from data
(embedding lookups, ``x[idx]``), and ``ten.softmax_sum``, a softmax summed against values
over its own axis (attention), which the ``softmax-sum`` pass makes from the other ops so
that its lowering walks each row once and never stores the weights. The dialect is named
``ten`` because upstream already
has a ``tensor`` dialect. Broadcasting is always explicit (an index_map), so a map
never has to guess how its operands line up.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.affine_syntax import expr_range
from deplodock.dialects.combine import PLAIN_KINDS
from deplodock.dialects.scope import check_block


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    type_ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a ``ten.map`` body: the scalar value of the result element."""

    name = "ten.yield"
    value = operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(MapOp), Pure()))
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


@irdl_op_definition
class MapOp(IRDLOperation):
    """``%r = ten.map(%a, %b) : tensor<..>, tensor<..> -> tensor<..> { ^bb0(%x: f32, ..): .. }``"""

    name = "ten.map"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure(), SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, inputs: Sequence[SSAValue], result_type: TensorType, body: Region):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    def verify_(self) -> None:
        check_block(self.body.block)
        shape = _shape(self.result)
        for i, operand in enumerate(self.inputs):
            if _shape(operand) != shape:
                raise VerifyException(
                    f"ten.map: operand {i} has shape {_shape(operand)} but the result has "
                    f"{shape}; broadcast it with ten.index_map first"
                )
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"ten.map: body takes {len(block.args)} scalars for {len(self.inputs)} operands"
            )
        for i, (arg, operand) in enumerate(zip(block.args, self.inputs, strict=True)):
            if arg.type != _element(operand.type):
                raise VerifyException(
                    f"ten.map: body argument {i} is {arg.type}, operand element type is "
                    f"{_element(operand.type)}"
                )
        last = block.last_op
        if isinstance(last, YieldOp) and last.value.type != _element(self.result.type):
            raise VerifyException(
                f"ten.map: body yields {last.value.type}, result element type is "
                f"{_element(self.result.type)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_ssa_value)
        printer.print_string(") :")
        if self.inputs:
            printer.print_string(" ")
            printer.print_list((v.type for v in self.inputs), printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> MapOp:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        types: list[Attribute] = []
        if operands:
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        inputs = parser.resolve_operands(operands, types, parser.pos)
        op = cls(inputs, result_type, region)  # type: ignore[arg-type]
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


def _element(type_: Attribute) -> Attribute:
    assert isinstance(type_, TensorType)
    return type_.element_type


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """``%r = ten.reduce add %x dims [2] : tensor<1x32x2048xf32> -> tensor<1x32xf32>``"""

    name = "ten.reduce"
    kind = prop_def(StringAttr)
    dims = prop_def(DenseArrayBase)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, kind: str, input: SSAValue, dims: Sequence[int]):
        shape = _shape(input)
        kept = [s for i, s in enumerate(shape) if i not in dims]
        super().__init__(
            operands=[input],
            result_types=[TensorType(_element(input.type), kept)],
            properties={
                "kind": StringAttr(kind),
                "dims": DenseArrayBase.from_list(i64, sorted(dims)),
            },
        )

    @property
    def reduced_dims(self) -> tuple[int, ...]:
        return tuple(self.dims.get_values())

    def verify_(self) -> None:
        if self.kind.data not in PLAIN_KINDS:
            raise VerifyException(
                f"ten.reduce: unknown kind '{self.kind.data}' (known: {', '.join(PLAIN_KINDS)})"
            )
        shape = _shape(self.input)
        dims = self.reduced_dims
        if not dims or list(dims) != sorted(set(dims)) or dims[0] < 0 or dims[-1] >= len(shape):
            raise VerifyException(
                f"ten.reduce: dims {list(dims)} must be sorted, unique axes of a rank-"
                f"{len(shape)} operand"
            )
        expected = tuple(s for i, s in enumerate(shape) if i not in dims)
        if _shape(self.result) != expected:
            raise VerifyException(
                f"ten.reduce: reducing dims {list(dims)} of {shape} gives {expected}, "
                f"not {_shape(self.result)}"
            )
        if _element(self.result.type) != _element(self.input.type):
            raise VerifyException("ten.reduce: result element type differs from the operand's")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_ssa_value(self.input)
        printer.print_string(f" dims [{', '.join(map(str, self.reduced_dims))}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        kind = parser.parse_identifier()
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("dims")
        dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        input_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        (input,) = parser.resolve_operands([operand], [input_type], parser.pos)
        op = cls.create(
            operands=[input],
            result_types=[result_type],
            properties={
                "kind": StringAttr(kind),
                "dims": DenseArrayBase.from_list(i64, dims),
            },
            attributes=attrs,
        )
        return op


@irdl_op_definition
class SoftmaxSumOp(IRDLOperation):
    """``%o = ten.softmax_sum %s, %v dim 3 : tensor<2x5x7xf32>, tensor<2x5x7x16xf32> ->
    tensor<2x5x16xf32>``: the sum over axis ``dim`` of ``softmax(s)`` along that axis
    times ``v``, column by column: ``o[k.., c] = sum_r exp(s[k.., r] - m) / l * v[k.., r, c]``
    with ``m`` and ``l`` the max and exp-sum of ``s[k.., :]``.

    ``v`` has one axis more than ``s``, its last (the value columns ``c``); its first axes
    line up with ``s``'s. The softmax weights do not depend on ``c``, which is the point:
    attention's ``softmax(q k^T) v`` written so that the weights of a row are computed
    once for all its columns, in one pass with a running max (the online group of
    ``dialects/combine.py``), and never stored (the ``softmax-sum`` pass makes it from a
    softmax followed by a product summed over the same axis)."""

    name = "ten.softmax_sum"
    dim = prop_def(IntegerAttr)
    safe = opt_prop_def(UnitAttr)
    """A row whose scores are all -inf gives 0 (PyTorch's ``_safe_softmax`` under an
    explicit mask), where the plain formula gives the mean of its values."""
    scores = operand_def(TensorType)
    values = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, scores: SSAValue, values: SSAValue, dim: int, safe: bool = False):
        shape = _shape(values)
        kept = [s for i, s in enumerate(shape) if i != dim]
        properties: dict[str, Attribute] = {"dim": IntegerAttr(dim, i64)}
        if safe:
            properties["safe"] = UnitAttr()
        super().__init__(
            operands=[scores, values],
            result_types=[TensorType(_element(values.type), kept)],
            properties=properties,
        )

    @property
    def reduced_dim(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        scores, values = _shape(self.scores), _shape(self.values)
        dim = self.reduced_dim
        if len(values) != len(scores) + 1 or values[:-1] != scores:
            raise VerifyException(
                f"ten.softmax_sum: values {values} must be the scores' shape {scores} "
                "plus a last axis of value columns"
            )
        if not 0 <= dim < len(scores):
            raise VerifyException(
                f"ten.softmax_sum: dim {dim} is not an axis of the rank-{len(scores)} scores"
            )
        expected = tuple(s for i, s in enumerate(values) if i != dim)
        if _shape(self.result) != expected:
            raise VerifyException(
                f"ten.softmax_sum: reducing dim {dim} of {values} gives {expected}, "
                f"not {_shape(self.result)}"
            )
        element = _element(self.result.type)
        if not isinstance(element, AnyFloat) or {
            _element(self.scores.type),
            _element(self.values.type),
        } != {element}:
            raise VerifyException(
                "ten.softmax_sum: scores, values and result are floats of one type"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.scores)
        printer.print_string(", ")
        printer.print_ssa_value(self.values)
        printer.print_string(f" dim {self.reduced_dim}")
        if self.safe is not None:
            printer.print_string(" safe")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.scores.type)
        printer.print_string(", ")
        printer.print_attribute(self.values.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SoftmaxSumOp:
        scores = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        values = parser.parse_unresolved_operand()
        parser.parse_keyword("dim")
        dim = parser.parse_integer()
        properties: dict[str, Attribute] = {"dim": IntegerAttr(dim, i64)}
        if parser.parse_optional_keyword("safe") is not None:
            properties["safe"] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        scores_type = parser.parse_type()
        parser.parse_punctuation(",")
        values_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = parser.resolve_operands([scores, values], [scores_type, values_type], parser.pos)
        return cls.create(
            operands=operands,
            result_types=[result_type],
            properties=properties,
            attributes=attrs,
        )


@irdl_op_definition
class IndexMapOp(IRDLOperation):
    """``%r = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<2048xf32> -> tensor<1x32x2048xf32>``

    ``result[i0, .., in] = source[map(i0, .., in)]``: one op for broadcast, transpose,
    reshape (floordiv/mod), slice and strided views.
    """

    name = "ten.index_map"
    map = prop_def(AffineMapAttr)
    source = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, source: SSAValue, map: AffineMap, result_type: TensorType):
        super().__init__(
            operands=[source], result_types=[result_type], properties={"map": AffineMapAttr(map)}
        )

    def verify_(self) -> None:
        map = self.map.data
        out_shape = _shape(self.result)
        src_shape = _shape(self.source)
        if map.num_dims != len(out_shape) or map.num_symbols != 0:
            raise VerifyException(
                f"ten.index_map: map {map} must take one dim per result axis ({len(out_shape)})"
            )
        if len(map.results) != len(src_shape):
            raise VerifyException(
                f"ten.index_map: map {map} must give one index per source axis ({len(src_shape)})"
            )
        if _element(self.result.type) != _element(self.source.type):
            raise VerifyException("ten.index_map: a view cannot change the element type")
        ranges = [(0, n - 1) for n in out_shape]
        if any(n == 0 for n in out_shape):
            return
        for axis, (expr, size) in enumerate(zip(map.results, src_shape, strict=True)):
            bounds = expr_range(expr, ranges)
            if bounds is not None and (bounds[0] < 0 or bounds[1] >= size):
                raise VerifyException(
                    f"ten.index_map: source index {axis} ({expr}) ranges over "
                    f"[{bounds[0]}, {bounds[1]}], outside the source extent {size}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        printer.print_string(" " + str(self.map.data))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IndexMapOp:
        operand = parser.parse_unresolved_operand()
        map = parser.parse_affine_map()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        (source,) = parser.resolve_operands([operand], [source_type], parser.pos)
        op = cls(source, map, result_type)  # type: ignore[arg-type]
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """``%c = ten.constant dense<1.0> : tensor<4xf32>``: a literal tensor."""

    name = "ten.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("ten.constant expects a dense<...> : tensor<...> literal")
        op = cls(value)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException("ten.constant: result type differs from the literal's type")


@irdl_op_definition
class IotaOp(IRDLOperation):
    """``%i = ten.iota dim 1 : tensor<8x8xi64>``: each element is its index along ``dim``.

    Positions as data: causal masks compare two iotas, ``arange`` is one, and a concat is
    a select on one. It costs no memory: fusion turns it into the loop's index.
    """

    name = "ten.iota"
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, dim: int, result_type: TensorType):
        super().__init__(result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        shape = _shape(self.result)
        if not 0 <= self.axis < len(shape):
            raise VerifyException(
                f"ten.iota: dim {self.axis} is not an axis of a rank-{len(shape)} result"
            )
        if not isinstance(_element(self.result.type), IntegerType | IndexType):
            raise VerifyException("ten.iota: the result holds integers")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dim {self.axis}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("dim")
        dim = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, TensorType):
            parser.raise_error("ten.iota produces a tensor")
        op = cls(dim, type_)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class GatherOp(IRDLOperation):
    """``%e = ten.gather %w[%ids] axis 0 : tensor<9x4xf32>, tensor<1x8xi64> -> tensor<1x8x4xf32>``

    ``result[p.., i.., q..] = table[p.., ids[i..], q..]`` with ``p`` the ``axis`` leading
    axes of ``table`` and ``q`` its trailing ones: ``numpy.take(table, ids, axis)``. An
    embedding is a gather on axis 0; ``x[idx]`` with several index tensors is one on a
    linearised axis. It is the only data-dependent index of the dialect, so it is an op of
    its own rather than an index_map: after lifting it is a load whose index is a loaded
    value, which fusion moves like any other load. An index outside ``[0, extent)`` has no
    meaning (the interpreters refuse it; the GPU would read out of bounds), so producers
    wrap negative indices first where PyTorch allows them.
    """

    name = "ten.gather"
    axis = prop_def(IntegerAttr)
    table = operand_def(TensorType)
    ids = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, table: SSAValue, ids: SSAValue, axis: int):
        shape = _shape(table)
        out = (*shape[:axis], *_shape(ids), *shape[axis + 1 :])
        super().__init__(
            operands=[table, ids],
            result_types=[TensorType(_element(table.type), out)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def gather_axis(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        table, ids, axis = _shape(self.table), _shape(self.ids), self.gather_axis
        if not 0 <= axis < len(table):
            raise VerifyException(
                f"ten.gather: axis {axis} is not an axis of a rank-{len(table)} table"
            )
        if not isinstance(_element(self.ids.type), IntegerType | IndexType):
            raise VerifyException(
                f"ten.gather: indices must hold integers, got {_element(self.ids.type)}"
            )
        expected = (*table[:axis], *ids, *table[axis + 1 :])
        if _shape(self.result) != expected:
            raise VerifyException(
                f"ten.gather: gathering {ids} indices on axis {axis} of {table} gives "
                f"{expected}, not {_shape(self.result)}"
            )
        if _element(self.result.type) != _element(self.table.type):
            raise VerifyException("ten.gather: result element type differs from the table's")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.table)
        printer.print_string("[")
        printer.print_ssa_value(self.ids)
        printer.print_string(f"] axis {self.gather_axis}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.table.type)
        printer.print_string(", ")
        printer.print_attribute(self.ids.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> GatherOp:
        table = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        ids = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_keyword("axis")
        axis = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        table_type = parser.parse_type()
        parser.parse_punctuation(",")
        ids_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        operands = parser.resolve_operands([table, ids], [table_type, ids_type], parser.pos)
        op = cls.create(
            operands=operands,
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
            attributes=attrs,
        )
        return op


Ten = Dialect(
    "ten",
    [MapOp, YieldOp, ReduceOp, SoftmaxSumOp, IndexMapOp, ConstantOp, IotaOp, GatherOp],
)
