"""``skip-masked-chunks``: a causal block stops its walk at the last chunk it can attend to.

After ``chunk-walk`` an attention walk is a loop over chunks of keys. Under a causal mask
(``key <= query``: SDPA's ``is_causal``, a hand-written ``tril`` mask) every key of a chunk
past the block's last query is masked for every row of the block: its steps are -inf
scores, which weigh nothing once a row has a finite score. This pass bounds the chunk loop
by the block's reach::

    %max, .. = loop.for %k_o = 0 to 8 reduce(online_max, ..) {
      .. tile.strided_for %k_i = %t to 64 step 2 .. {
        %k = affine.apply (%k_o * 64 + %k_i)
        %key = arith.index_cast %k : index to i64
        %live = arith.cmpi sle, %key, %pos : i64          // %pos = index_cast of the query
        %score = arith.select %live, %s, -inf : f32

    %reach = affine.apply ((%a1_b * 128 + 127 + 64) floordiv 64)    // chunks with a live key
    %max, .. = loop.for %k_o = 0 to 8 below %reach reduce(online_max, ..) { .. }

so a causal block of queries walks about half the keys on average and copies only those
chunks. The chunk's other masked steps (the diagonal chunk) stay: the select still masks them.

When it is exact: the score the walk's online group maximises is ``select(key <=
query + c, s, -inf)`` (or ``<``, or the comparison written the other way round), the key
an affine function of the chunk loop and the walk's own loop, the query of the kernel's
axes; and every row's first key is live (``c`` at least 0 for every query), so each row
has a finite score before any chunk it skips: a skipped step ``(-inf, v)`` then merges as
``a * 1 + v * 0``, nothing (values are finite; an infinite value of a masked key would
have made PyTorch's product NaN, and a fused kernel that skips does not see it). Anything
else is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplodock.dialects import loop, tile
from deplodock.dialects.access import LoadBase
from deplodock.dialects.affine_syntax import (
    LinearForm,
    apply_op,
    compare_ranges,
    expr_linear_form,
    linear_form,
    value_ranges,
)
from deplodock.dialects.combine import ONLINE_MAX
from deplodock.passes.tile.analysis import (
    causal_bounds,
    index_form,
    is_chunked,
    scheduled_walk,
    score_conditions,
)

# comparisons that hold between equal values
_REFLEXIVE = {"eq", "sle", "sge", "ule", "uge"}


def _bound(value: SSAValue, coefficient: int, low: bool) -> int | None:
    """The smallest (``low``) or largest value of ``coefficient * value`` over the range
    its binder (a kernel axis) gives it."""
    (bounds,) = value_ranges([value])
    if bounds is None:
        return None
    ends = (coefficient * bounds[0], coefficient * bounds[1])
    return min(ends) if low else max(ends)


def _form_range(form: LinearForm) -> tuple[int, int] | None:
    """Inclusive bounds of a linear form over values their binders bound."""
    low = high = form[1]
    for value, coefficient in form[0].items():
        lo, hi = _bound(value, coefficient, True), _bound(value, coefficient, False)
        if lo is None or hi is None:
            return None
        low, high = low + lo, high + hi
    return low, high


@dataclass(frozen=True)
class _Diagonal:
    """The step of a walk whose key is its row's own position: ``walked`` (the chunk
    loop's and the walk's variables, with their coefficients) equals ``row - offset``."""

    walked: dict[SSAValue, int]
    row: LinearForm
    offset: int

    def form(self, form: LinearForm | None) -> LinearForm | None:
        """``form`` at this step: the walked terms, if all there once, replaced by the row
        (None when it holds them otherwise)."""
        if form is None:
            return None
        terms, constant = form
        present = [v for v in self.walked if v in terms]
        if not present:
            return form
        if len(present) != len(self.walked) or any(terms[v] != c for v, c in self.walked.items()):
            return None
        rest = {v: c for v, c in terms.items() if v not in self.walked}
        for value, coefficient in self.row[0].items():
            rest[value] = rest.get(value, 0) + coefficient
        return {v: c for v, c in rest.items() if c}, constant + self.row[1] - self.offset

    def value(self, value: SSAValue) -> LinearForm | None:
        """An index (or index-cast integer) value's linear form at this step."""
        return self.form(index_form(value))

    def same(self, a: SSAValue, b: SSAValue) -> bool:
        """Whether ``a`` and ``b`` are equal at this step: the same value, equal linear
        forms, or loads of one buffer at equal indices."""
        if a is b:
            return True
        if isinstance(a.owner, LoadBase) and isinstance(b.owner, LoadBase):
            x, y = a.owner, b.owner
            if x.name != y.name or x.buffer is not y.buffer:
                return False
            for e, f in zip(x.map.data.results, y.map.data.results, strict=True):
                ex = self.form(expr_linear_form(e, [linear_form(v) for v in x.indices]))
                ey = self.form(expr_linear_form(f, [linear_form(v) for v in y.indices]))
                if ex is None or ex != ey:
                    return False
            return True
        fa, fb = self.value(a), self.value(b)
        return fa is not None and fa == fb

    def holds(self, flag: SSAValue) -> bool:
        """Whether the comparison ``flag`` is true at this step, for every row."""
        cmpi = flag.owner
        if not isinstance(cmpi, arith.CmpiOp):
            return False
        name = arith.CMPI_COMPARISON_OPERATIONS[cmpi.predicate.value.data]
        if name in _REFLEXIVE and self.same(cmpi.lhs, cmpi.rhs):
            return True
        fa, fb = self.value(cmpi.lhs), self.value(cmpi.rhs)
        if fa is None or fb is None:
            return False
        ra, rb = _form_range(fa), _form_range(fb)
        return ra is not None and rb is not None and compare_ranges(name, ra, rb) is True


def reach(
    kernel: tile.KernelOp, chunks: loop.ForOp, walk: loop.LoopBase, chunk: int
) -> AffineExpr | None:
    """The chunks of ``chunks`` a block of ``kernel`` can attend to, as an expression over
    the kernel's block axes (dims in the order of ``kernel.axes``' block axes), or None
    when the walk's score is not causally masked (see the module docstring)."""
    yielded = walk.body.block.last_op
    if not isinstance(yielded, loop.YieldOp):
        return None
    position = walk.kinds.index(ONLINE_MAX)
    blocks = [a for a, _, b in kernel.axes if b == "block"]
    conditions = score_conditions(yielded.operands[position])
    for flag, key_form, row_form, adjust in causal_bounds(yielded.operands[position]):
        walked = {chunks.induction_var: chunk, walk.induction_var: 1}
        if key_form[0] != walked:
            continue  # the key is not this walk's: k_o * chunk + k_i (+ constant)
        # key <= row + adjust  <=>  k_o * chunk + k_i <= row + adjust - key constant
        constant = row_form[1] + adjust - key_form[1]
        if not any(v in blocks for v in row_form[0]):
            continue  # the same for every block (a short chunk's end): nothing to skip
        others = [f for f in conditions if f is not flag]
        if others and not _diagonal_live(chunks, chunk, walked, key_form, row_form, adjust, others):
            continue  # another condition could mask every key a row keeps
        expr = AffineExpr.constant(0)
        lowest = constant
        for value, coefficient in row_form[0].items():
            low = _bound(value, coefficient, True)
            high = _bound(value, coefficient, False)
            if low is None or high is None:
                break
            lowest += low
            if value in blocks:
                expr = expr + AffineExpr.dimension(blocks.index(value)) * coefficient
            else:
                constant += high  # the block's furthest row: its threads' largest share
        else:
            if lowest < 0 and not others:
                continue  # some row's first key is masked: skipping could change it
            # chunk k_o has a live key iff k_o * chunk <= (block part) + constant
            return (expr + constant + chunk) // chunk
    return None


def _diagonal_live(
    chunks: loop.ForOp,
    chunk: int,
    walked: dict[SSAValue, int],
    key_form: LinearForm,
    row_form: LinearForm,
    adjust: int,
    others: list[SSAValue],
) -> bool:
    """Whether every row's own position is a live key of the walk: a step of it (the
    walked index ``row - key constant`` within the chunks), kept by the causal mask
    (``adjust >= 0``) and by each of the ``others`` (Hugging Face's ``cumsum[key] ==
    cumsum[query]`` is true there, a ragged end's ``key < 100`` for every row below 100)."""
    rows = _form_range(row_form)
    if adjust < 0 or rows is None:
        return False
    first, last = rows[0] - key_form[1], rows[1] - key_form[1]
    if first < 0 or last >= chunks.upper.data * chunk:  # type: ignore[attr-defined]
        return False
    diagonal = _Diagonal(walked, row_form, key_form[1])
    return all(diagonal.holds(f) for f in others)


class BoundCausalWalks(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        if scheduled_walk(op):
            return  # tile-walk bounds its own chunks
        for chunks in [o for o in op.body.block.ops if isinstance(o, loop.ForOp)]:
            if chunks.limit is not None or not chunks.is_reduce or not is_chunked(chunks):
                continue
            walk = next(iter(chunks.body.block.ops))
            assert isinstance(walk, loop.LoopBase)
            if ONLINE_MAX not in walk.kinds or walk.limit is not None:
                continue
            index = next(iter(walk.body.block.ops), None)
            chunk = _chunk_of(index, chunks, walk)
            if chunk is None:
                continue
            expr = reach(op, chunks, walk, chunk)
            if expr is None:
                continue
            blocks = [a for a, _, b in op.axes if b == "block"]
            limit = apply_op(expr, blocks, "reach")
            rewriter.insert(limit, InsertPoint.before(chunks))
            chunks.operands = [limit.result]


def _chunk_of(index, chunks: loop.ForOp, walk: loop.LoopBase) -> int | None:
    """The chunk length of a chunked walk: its first op is ``chunk-walk``'s
    ``k_o * chunk + k_i``."""
    if not isinstance(index, affine.ApplyOp):
        return None
    form = linear_form(index.result)
    if form is None or form[1] or set(form[0]) != {chunks.induction_var, walk.induction_var}:
        return None
    if form[0][walk.induction_var] != 1:
        return None
    return form[0][chunks.induction_var]


@dataclass(frozen=True)
class SkipMaskedChunks(ModulePass):
    """Bound causal walks by the chunks their block can attend to (see the module)."""

    name = "skip-masked-chunks"

    skip: bool = True
    """False walks every chunk (to measure what skipping saves)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.skip:
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier([BoundCausalWalks()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
