"""Affine index expressions written over SSA values, shared by every level's loads and stores.

An access such as ``loop.load %x[0, %a0, %a1 * 2 + 1]`` is stored as an ``AffineMap`` whose
dimensions are the op's index operands in order of first appearance (``d0`` = ``%a0``,
``d1`` = ``%a1``), so the text reads like the listing an engineer would draw while the IR
keeps upstream affine maps (compose, simplify, eval) underneath.

Grammar (MLIR's affine precedence)::

    index  := term (('+' | '-') term)*
    term   := factor (('*' | 'floordiv' | 'ceildiv' | 'mod') factor)*
    factor := integer | '-' factor | '%' ssa-name | '(' index ')'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, IntegerAttr
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

_MUL_KEYWORDS = {
    "floordiv": AffineExpr.__floordiv__,
    "ceildiv": AffineExpr.ceil_div,
    "mod": AffineExpr.__mod__,
}


class _IndexParser:
    """Recursive descent over the parser's tokens, collecting SSA operands as dims."""

    def __init__(self, parser: Parser):
        self.parser = parser
        self.operands: list[UnresolvedOperand] = []
        self._dims: dict[tuple[str, int], int] = {}

    def index(self) -> AffineExpr:
        expr = self.term()
        while True:
            if self.parser.parse_optional_punctuation("+"):
                expr = expr + self.term()
            elif self.parser.parse_optional_punctuation("-"):
                expr = expr - self.term()
            else:
                return expr

    def term(self) -> AffineExpr:
        expr = self.factor()
        while True:
            if self.parser.parse_optional_punctuation("*"):
                expr = expr * self.factor()
            elif (kw := self.parser.parse_optional_keyword_in(_MUL_KEYWORDS)) is not None:
                expr = _MUL_KEYWORDS[kw](expr, self.factor())
            else:
                return expr

    def factor(self) -> AffineExpr:
        p = self.parser
        if p.parse_optional_punctuation("("):
            expr = self.index()
            p.parse_punctuation(")")
            return expr
        if p.parse_optional_punctuation("-"):
            return -self.factor()
        if (value := p.parse_optional_integer(allow_negative=False)) is not None:
            return AffineExpr.constant(value)
        if (operand := p.parse_optional_unresolved_operand()) is not None:
            key = (operand.operand_name, operand.index)
            if key not in self._dims:
                self._dims[key] = len(self.operands)
                self.operands.append(operand)
            return AffineExpr.dimension(self._dims[key])
        p.raise_error("expected an index: an integer, an SSA value or '('")


def parse_indices(parser: Parser) -> tuple[AffineMap, list[UnresolvedOperand]]:
    """Parse ``[e0, e1, ...]`` into a map over the SSA values that appear in it."""
    state = _IndexParser(parser)
    results = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, state.index)
    return AffineMap(len(state.operands), 0, tuple(results)), state.operands


def index_map_for(map: AffineMap, operands: Sequence[SSAValue]) -> tuple[AffineMap, list[SSAValue]]:
    """Renumber dims so they follow first appearance and repeated operands share one dim.

    Passes build maps freely (any dim order, the same value twice); this puts them in the
    canonical form that the printed syntax reads back, so printing round-trips exactly.
    """
    order: list[int] = []
    for result in map.results:
        for expr in result.post_order():
            if isinstance(expr, AffineDimExpr) and expr.position not in order:
                order.append(expr.position)
    new_operands: list[SSAValue] = []
    slot_of_value: dict[SSAValue, int] = {}
    replacement: list[AffineExpr] = [AffineExpr.constant(0)] * map.num_dims
    for position in order:
        value = operands[position]
        if value not in slot_of_value:
            slot_of_value[value] = len(new_operands)
            new_operands.append(value)
        replacement[position] = AffineExpr.dimension(slot_of_value[value])
    results = tuple(r.replace_dims_and_symbols(replacement, []) for r in map.results)
    return AffineMap(len(new_operands), 0, results), new_operands


_PRECEDENCE = {
    AffineBinaryOpKind.Add: 1,
    AffineBinaryOpKind.Mul: 2,
    AffineBinaryOpKind.FloorDiv: 2,
    AffineBinaryOpKind.CeilDiv: 2,
    AffineBinaryOpKind.Mod: 2,
}
_SPELLING = {
    AffineBinaryOpKind.Mul: "*",
    AffineBinaryOpKind.FloorDiv: "floordiv",
    AffineBinaryOpKind.CeilDiv: "ceildiv",
    AffineBinaryOpKind.Mod: "mod",
}


def format_expr(expr: AffineExpr, names: Sequence[str], spelling: dict | None = None) -> str:
    """Render ``expr`` with dim ``i`` spelled ``names[i]``.

    ``spelling`` overrides the operator words (the CUDA emitter passes ``/`` and ``%``);
    subtraction is printed as such rather than as ``+ x * -1``.
    """
    words = {**_SPELLING, **(spelling or {})}

    def render(e: AffineExpr, context: int) -> str:
        """``context``: the precedence a child must exceed to go without parentheses."""
        if isinstance(e, AffineConstantExpr):
            return str(e.value) if e.value >= 0 or context == 0 else f"({e.value})"
        if isinstance(e, AffineDimExpr):
            return names[e.position]
        if isinstance(e, AffineSymExpr):
            raise ValueError("index expressions have no symbols")
        assert isinstance(e, AffineBinaryOpExpr)
        prec = _PRECEDENCE[e.kind]
        if e.kind == AffineBinaryOpKind.Add:
            negated = _negated(e.rhs)
            if negated is not None:
                text = f"{render(e.lhs, prec - 1)} - {render(negated, prec)}"
            else:
                text = f"{render(e.lhs, prec - 1)} + {render(e.rhs, prec)}"
        else:
            text = f"{render(e.lhs, prec - 1)} {words[e.kind]} {render(e.rhs, prec)}"
        return f"({text})" if prec <= context else text

    return render(expr, 0)


def _negated(e: AffineExpr) -> AffineExpr | None:
    """``x`` when ``e`` is ``x * -1`` or ``-c``; lets ``a - b`` print as written."""
    if isinstance(e, AffineConstantExpr) and e.value < 0:
        return AffineExpr.constant(-e.value)
    if (
        isinstance(e, AffineBinaryOpExpr)
        and e.kind == AffineBinaryOpKind.Mul
        and isinstance(e.rhs, AffineConstantExpr)
        and e.rhs.value == -1
    ):
        return e.lhs
    return None


def print_indices(printer: Printer, map: AffineMap, operands: Sequence[SSAValue]) -> None:
    """Print ``[e0, e1, ...]`` with each dim spelled as its SSA operand."""
    names = [_ssa_name(printer, v) for v in operands]
    printer.print_string("[" + ", ".join(format_expr(r, names) for r in map.results) + "]")


def _ssa_name(printer: Printer, value: SSAValue) -> str:
    """The name the printer gives ``value``, assigning one if it has none yet."""
    from io import StringIO

    saved, printer.stream = printer.stream, StringIO()
    try:
        return "%" + printer.print_ssa_value(value)
    finally:
        printer.stream = saved


def value_ranges(operands: Sequence[SSAValue]) -> list[tuple[int, int] | None]:
    """Inclusive ranges of index operands, where the op that binds them knows one.

    Ops that bind index values (loops, tile axes, thread ids) implement
    ``index_range(value) -> (lo, hi) | None``; ``affine.apply`` results are bounded through
    their map. Anything else is unknown (None).
    """
    return [_value_range(v) for v in operands]


def _value_range(value: SSAValue) -> tuple[int, int] | None:
    from xdsl.dialects import affine, arith

    owner = value.owner
    binder = owner.parent_op() if isinstance(owner, Block) else owner
    if isinstance(binder, affine.ApplyOp):
        ranges = value_ranges(binder.mapOperands)
        return expr_range(binder.map.data.results[0], ranges)
    if isinstance(binder, arith.XOrIOp | arith.OrIOp):
        # Bits of non-negative operands (a swizzled index: chunk xor row).
        a, b = value_ranges(binder.operands)
        if a is not None and b is not None and min(a[0], b[0]) >= 0:
            return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
        return None
    query = getattr(binder, "index_range", None)
    return query(value) if query is not None else None


_ALWAYS = {
    "eq": lambda a, b: a[0] == a[1] == b[0] == b[1],
    "ne": lambda a, b: a[1] < b[0] or b[1] < a[0],
    "slt": lambda a, b: a[1] < b[0],
    "sle": lambda a, b: a[1] <= b[0],
    "sgt": lambda a, b: a[0] > b[1],
    "sge": lambda a, b: a[0] >= b[1],
}
_NEGATION = {"eq": "ne", "ne": "eq", "slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt"}
_UNSIGNED = {"ult": "slt", "ule": "sle", "ugt": "sgt", "uge": "sge"}


def compare_ranges(predicate: str, lhs: tuple[int, int], rhs: tuple[int, int]) -> bool | None:
    """The value of ``a <predicate> b`` (an ``arith.cmpi`` predicate's name) for every
    ``a`` in ``lhs`` and ``b`` in ``rhs`` (inclusive ranges), or None when it depends on
    which. Unsigned predicates are decided only on non-negative ranges."""
    if predicate in _UNSIGNED:
        if min(lhs[0], rhs[0]) < 0:
            return None
        predicate = _UNSIGNED[predicate]
    if _ALWAYS[predicate](lhs, rhs):
        return True
    if _ALWAYS[_NEGATION[predicate]](lhs, rhs):
        return False
    return None


def expr_range(
    expr: AffineExpr, ranges: Sequence[tuple[int, int] | None]
) -> tuple[int, int] | None:
    """Interval bounds of ``expr`` given the bounds of its dims (None when unknown)."""
    if isinstance(expr, AffineConstantExpr):
        return (expr.value, expr.value)
    if isinstance(expr, AffineDimExpr):
        return ranges[expr.position]
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs = expr_range(expr.lhs, ranges)
    rhs = expr_range(expr.rhs, ranges)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        return (lhs[0] + rhs[0], lhs[1] + rhs[1])
    if expr.kind == AffineBinaryOpKind.Mul:
        products = [a * b for a in lhs for b in rhs]
        return (min(products), max(products))
    if rhs[0] != rhs[1] or rhs[0] <= 0:
        return None
    c = rhs[0]
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return (lhs[0] // c, lhs[1] // c)
    if expr.kind == AffineBinaryOpKind.CeilDiv:
        return (-(-lhs[0] // c), -(-lhs[1] // c))
    if expr.kind == AffineBinaryOpKind.Mod:
        if lhs[0] >= 0 and lhs[1] < c:
            return lhs
        return (0, c - math.gcd(expr_multiple(expr.lhs), c))
    return None


def expr_multiple(expr: AffineExpr) -> int:
    """A number that divides ``expr`` for every value of its dims (1 when nothing is
    known; 0 for the constant 0, which every number divides): ``(d0 * 256 + d1 * 16)
    mod 64`` is a multiple of 16, so at most 48."""
    if isinstance(expr, AffineConstantExpr):
        return abs(expr.value)
    if not isinstance(expr, AffineBinaryOpExpr):
        return 1
    if expr.kind == AffineBinaryOpKind.Add:
        return math.gcd(expr_multiple(expr.lhs), expr_multiple(expr.rhs))
    if expr.kind == AffineBinaryOpKind.Mul:
        return expr_multiple(expr.lhs) * expr_multiple(expr.rhs)
    if expr.kind == AffineBinaryOpKind.Mod and isinstance(expr.rhs, AffineConstantExpr):
        return math.gcd(expr_multiple(expr.lhs), expr.rhs.value)
    return 1


def check_in_bounds(
    op_name: str,
    map: AffineMap,
    operands: Sequence[SSAValue],
    shape: Sequence[int],
    upper: bool = True,
) -> None:
    """Raise VerifyException when an index can provably leave ``shape`` (``upper=False``:
    only below 0; a guarded access may reach past the end)."""
    from xdsl.utils.exceptions import VerifyException

    if len(map.results) != len(shape):
        raise VerifyException(
            f"{op_name}: {len(map.results)} indices for a buffer of rank {len(shape)}"
        )
    if map.num_dims != len(operands):
        raise VerifyException(
            f"{op_name}: index map has {map.num_dims} dims but {len(operands)} index operands"
        )
    ranges = value_ranges(operands)
    for axis, (expr, size) in enumerate(zip(map.results, shape, strict=True)):
        bounds = expr_range(expr, ranges)
        if bounds is not None and (bounds[0] < 0 or (upper and bounds[1] >= size)):
            raise VerifyException(
                f"{op_name}: index {axis} ranges over [{bounds[0]}, {bounds[1]}], "
                f"outside the buffer's extent {size}"
            )


def dims_leaving(
    map: AffineMap,
    operands: Sequence[SSAValue],
    shape: Sequence[int],
    extents: Sequence[int] | None = None,
) -> list[int]:
    """The dimensions whose index may leave ``[0, shape[d])`` (an unknown range may):
    the ones a guarded access must test. ``extents``: each index starts a run of this
    many elements (a slab's box), which must end inside too."""
    ranges = value_ranges(operands)
    out = []
    for dim, (expr, size) in enumerate(zip(map.results, shape, strict=True)):
        bounds = expr_range(expr, ranges)
        extent = extents[dim] if extents is not None else 1
        if bounds is None or bounds[0] < 0 or bounds[1] + extent > size:
            out.append(dim)
    return out


def eval_expr(expr: AffineExpr, dims: Sequence):
    """Evaluate ``expr`` on ints or numpy arrays (broadcasting), with floor semantics."""
    if isinstance(expr, AffineConstantExpr):
        return expr.value
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs, rhs = eval_expr(expr.lhs, dims), eval_expr(expr.rhs, dims)
    if expr.kind == AffineBinaryOpKind.Add:
        return lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        return lhs * rhs
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return lhs // rhs
    if expr.kind == AffineBinaryOpKind.CeilDiv:
        return -((-lhs) // rhs)
    return lhs % rhs


def eval_map(map: AffineMap, dims: Sequence) -> tuple:
    """Every result of ``map`` on ``dims`` (ints or broadcastable numpy arrays)."""
    return tuple(eval_expr(r, dims) for r in map.results)


def row_major_offset(map: AffineMap, shape: Sequence[int]) -> AffineExpr:
    """The row-major element offset of ``map``'s indices into a buffer of ``shape``."""
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    total: AffineExpr = AffineExpr.constant(0)
    for expr, stride in zip(map.results, strides, strict=True):
        total = total + (expr * stride if stride != 1 else expr)
    return total


def apply_op(expr: AffineExpr, operands: Sequence[SSAValue], hint: str | None) -> affine.ApplyOp:
    """``affine.apply`` of one expression over ``operands`` (dim i = operand i), named."""
    op = affine.ApplyOp(list(operands), AffineMapAttr(AffineMap(len(operands), 0, (expr,))))
    op.result.name_hint = hint
    return op


LinearForm = tuple[dict[SSAValue, int], int]
"""``({value: coefficient}, constant)``: an index as a sum of leaf values times constants."""


def linear_form(value: SSAValue) -> LinearForm | None:
    """``value`` as a linear combination of the values it is computed from through
    ``affine.apply`` and index constants (block arguments, loop induction variables, ...),
    or None when its math is not linear (floordiv, mod, a product of two values)."""
    from xdsl.dialects import arith

    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return {}, owner.value.value.data
    if isinstance(owner, affine.ApplyOp):
        operands = [linear_form(v) for v in owner.mapOperands]
        if any(o is None for o in operands):
            return None
        return expr_linear_form(owner.map.data.results[0], operands)  # type: ignore[arg-type]
    return {value: 1}, 0


def expr_linear_form(expr: AffineExpr, dims: Sequence[LinearForm]) -> LinearForm | None:
    """``expr`` with dim i replaced by the linear form ``dims[i]``, or None if not linear."""
    if isinstance(expr, AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, AffineDimExpr):
        terms, constant = dims[expr.position]
        return dict(terms), constant
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    lhs, rhs = expr_linear_form(expr.lhs, dims), expr_linear_form(expr.rhs, dims)
    if lhs is None or rhs is None:
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        terms = dict(lhs[0])
        for v, c in rhs[0].items():
            terms[v] = terms.get(v, 0) + c
        return {v: c for v, c in terms.items() if c}, lhs[1] + rhs[1]
    if expr.kind == AffineBinaryOpKind.Mul:
        if rhs[0] and lhs[0]:
            return None
        (terms, constant), factor = (lhs, rhs[1]) if not rhs[0] else (rhs, lhs[1])
        return {v: c * factor for v, c in terms.items() if c * factor}, constant * factor
    return None


def linear_expr(form: LinearForm, values: Sequence[SSAValue]) -> AffineExpr:
    """The affine expression of ``form`` over dims ``values`` (dim i = ``values[i]``)."""
    terms, constant = form
    expr: AffineExpr = AffineExpr.constant(constant)
    for value, coefficient in terms.items():
        expr = expr + AffineExpr.dimension(values.index(value)) * coefficient
    return expr
