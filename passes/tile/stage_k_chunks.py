"""``stage-inputs``, the matmul half: stage each K chunk of a contraction's operands.

After ``chunk-matmul-k`` a tiled matmul's K loop is an outer loop over chunks and an inner
loop over one chunk. The loads of the inner loop that several threads of the block share
(``x[m, k]`` is read by every thread of row ``m``'s tile, ``w[n, k]`` by every thread of
column ``n``'s) are served from a slab the block copies at the top of each outer
iteration::

    %acc = loop.for %k_o = 0 to 256 reduce(add) -> f32 {
      %x_smem = tile.stage %x_b[0, %m_b * 128, %k_o * 8] box [128, 8] transpose
                  : memref<1x512x2048xf32> -> memref<8x128xf32>
      %part = loop.for %k_i = 0 to 8 reduce(add) -> f32 {
        %in = loop.load %x_smem[%k_i, %m_t * 8 + 3] : memref<8x128xf32>   // was %x_b[0, %m_3, %k]
        ...

The slab is found from the loads: every index is a linear combination (``linear_form``)
of block-uniform values (block axes, the outer induction variable), which make the
origin and must be the same in every load of the buffer, and in-block values (thread axes,
the inner induction variable, constants), whose ranges give the box. An index that is not
linear is split term by term (``_mixed_split``): a term of block-uniform values only (a
grouped-query head, ``h floordiv 8``) joins the origin, and ``L floordiv D`` / ``L mod D``
whose in-block part never carries past a multiple of ``D`` (``_aligned_split``: a head read
as columns) splits into an origin and an in-block part. Anything else, or an origin that
differs between loads, leaves the buffer in global memory.

The slab is stored transposed when it has two dimensions, its last one (the contiguous
one in global memory) is walked by the inner loop only and the other by the threads: then
the threads of a warp, which hold different rows of the tile, read consecutive shared
addresses of one K row instead of addresses a whole row apart (bank conflicts), and each
thread's ``TM`` rows are adjacent, so they widen to float4 reads.

An edge tile's loads (``guarded``, ``edge_tiles.py``) make a guarded slab: the box may reach
past the source's end, and its elements there are zeros.

Whether it pays is ``chunk_stage_pays``: some thread axis does not index the buffer (the
slab is shared by the threads along it) and the kernel's slabs fit ``max_bytes``.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import (
    LinearForm,
    expr_linear_form,
    expr_multiple,
    expr_range,
    linear_expr,
    linear_form,
    value_ranges,
)
from deplodock.passes.tile.analysis import is_chunked, scheduled_walk, top_level_reduces


def chunk_stage_pays(
    shared_by_threads: bool, slab_bytes: int, used_bytes: int, max_bytes: int
) -> bool:
    """Stage a chunk when threads of the block share its elements and it fits."""
    return shared_by_threads and used_bytes + slab_bytes <= max_bytes


Origin = LinearForm | AffineExpr
"""A slab dimension's block-uniform origin: a linear form, or an expression over the
uniform values when it is not linear (``%a0 floordiv 8``)."""


def _split(form: LinearForm, uniform: set[SSAValue]) -> tuple[LinearForm, LinearForm]:
    """(block-uniform part, in-block part, with the constant) of a linear index."""
    terms, constant = form
    outer = {v: c for v, c in terms.items() if v in uniform}
    inner = {v: c for v, c in terms.items() if v not in uniform}
    return (outer, 0), (inner, constant)


def _uniform_expr(
    expr: AffineExpr, forms: list[LinearForm | None], uniform_values: list[SSAValue]
) -> AffineExpr | None:
    """``expr`` over ``uniform_values`` when each operand it uses is a linear form of
    them, else None."""
    replacement = []
    for position, form in enumerate(forms):
        if position not in expr.used_dims():
            replacement.append(AffineExpr.constant(0))
        elif form is None or any(v not in uniform_values for v in form[0]):
            return None
        else:
            replacement.append(linear_expr(form, uniform_values))
    return expr.replace_dims_and_symbols(replacement, [])


def _aligned_split(
    expr: AffineExpr,
    forms: list[LinearForm | None],
    uniform: set[SSAValue],
    uniform_values: list[SSAValue],
    local_values: list[SSAValue],
) -> tuple[AffineExpr, LinearForm] | None:
    """``expr`` = ``L floordiv D`` or ``L mod D`` with ``L`` linear, as (block-uniform
    origin, in-block part), or None.

    ``L`` = ``U + I``, ``U`` the block-uniform terms and ``I`` the in-block ones with the
    constant. Every ``U`` is a multiple of ``h = gcd(D, U's coefficients)``, so ``U mod D``
    is at most ``D - h``; when ``0 <= I < h`` the in-block part never carries past a
    multiple of ``D``: ``L floordiv D = U floordiv D`` (uniform: part of the origin) and
    ``L mod D = (U mod D) + I``. Attention's output read by the output projection as
    ``[s, head * d + j]`` is the case: ``k = c * 256 + k_o * 16 + k_i``, ``D = 64``, a chunk
    of 16 lies in one head (``docs/bench/h200-2026-12-04-s19``: the projection read its
    left operand from global memory, once per FMA row, 1.75x slower than q's)."""
    if not (
        isinstance(expr, AffineBinaryOpExpr)
        and expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.Mod)
        and isinstance(expr.rhs, AffineConstantExpr)
        and expr.rhs.value > 0
    ):
        return None
    used = expr.lhs.used_dims()
    if any(forms[i] is None for i in used):
        return None
    dims = [form if form is not None else ({}, 0) for form in forms]
    lhs = expr_linear_form(expr.lhs, dims)
    if lhs is None:
        return None
    outer, inner = _split(lhs, uniform)
    if any(v not in local_values for v in inner[0]):
        return None
    divisor = expr.rhs.value
    base = linear_expr(outer, uniform_values)
    step = math.gcd(divisor, expr_multiple(base))
    bounds = expr_range(linear_expr(inner, local_values), value_ranges(local_values))
    if bounds is None or bounds[0] < 0 or bounds[1] >= step:
        return None
    if expr.kind == AffineBinaryOpKind.FloorDiv:
        return base // divisor, ({}, 0)
    return base % divisor, inner


def _origin_expr(origin: Origin, constant: int, uniform_values: list[SSAValue]) -> AffineExpr:
    """A slab dimension's origin over ``uniform_values``, plus ``constant``."""
    if isinstance(origin, AffineExpr):
        return origin + constant if constant else origin
    return linear_expr((origin[0], origin[1] + constant), uniform_values)


def _terms(expr: AffineExpr) -> list[AffineExpr]:
    """The summands of ``expr`` (split at additions)."""
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        return [*_terms(expr.lhs), *_terms(expr.rhs)]
    return [expr]


def _mixed_split(
    expr: AffineExpr,
    forms: list[LinearForm | None],
    uniform: set[SSAValue],
    uniform_values: list[SSAValue],
    local_values: list[SSAValue],
) -> tuple[AffineExpr, LinearForm] | None:
    """A sum of linear terms, block-uniform non-linear ones and aligned ``floordiv`` /
    ``mod`` terms (``_aligned_split``), as (block-uniform origin, in-block part), or None:
    a value row of a grouped-query head, ``v[k, (h floordiv 8) * 64 + j]``."""
    origin = AffineExpr.constant(0)
    terms: dict[SSAValue, int] = {}
    constant = 0
    for term in _terms(expr):
        used = term.used_dims()
        form = None
        if all(forms[i] is not None for i in used):
            dims = [f if f is not None else ({}, 0) for f in forms]
            form = expr_linear_form(term, dims)
        if form is None:
            uniform_term = _uniform_expr(term, forms, uniform_values)
            if uniform_term is not None:
                origin = origin + uniform_term
                continue
            aligned = _aligned_split(term, forms, uniform, uniform_values, local_values)
            if aligned is None:
                return None
            origin = origin + aligned[0]
            form = aligned[1]
        for value, coefficient in form[0].items():
            terms[value] = terms.get(value, 0) + coefficient
        constant += form[1]
    outer, inner = _split(({v: c for v, c in terms.items() if c}, constant), uniform)
    if any(v not in local_values for v in inner[0]):
        return None
    return origin + linear_expr(outer, uniform_values), inner


class StageKChunks(RewritePattern):
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        if scheduled_walk(op):
            return
        used = sum(s.size_bytes() for s in op.walk() if isinstance(s, tile.StageOp))
        blocks = [a for a, _, b in op.axes if b == "block"]
        threads = [a for a, _, b in op.axes if b == "thread"]
        for outer in top_level_reduces(op):
            if not is_chunked(outer):
                continue
            inner = next(iter(outer.body.block.ops))
            assert isinstance(inner, loop.LoopBase)
            if any(isinstance(o, tile.StageOp) for o in outer.body.block.ops):
                continue  # staged before: idempotent
            uniform = {*blocks, outer.induction_var}
            local_values = [*threads, inner.induction_var]
            for buffer in op.input_buffers:
                used += self._stage(op, outer, inner, buffer, uniform, local_values, used, rewriter)

    def _stage(
        self,
        kernel: tile.KernelOp,
        outer: loop.ForOp,
        inner: loop.LoopBase,
        buffer: SSAValue,
        uniform: set[SSAValue],
        local_values: list[SSAValue],
        used: int,
        rewriter: PatternRewriter,
    ) -> int:
        loads = [o for o in inner.walk() if isinstance(o, loop.LoadOp) and o.buffer is buffer]
        if not loads:
            return 0
        uniform_values = [v for v in [*kernel.body.block.args, outer.induction_var] if v in uniform]
        splits: list[list[tuple[Origin, LinearForm]]] = []
        for load in loads:
            forms = [linear_form(v) for v in load.indices]
            dims = []
            for expr in load.map.data.results:
                form = None if None in forms else expr_linear_form(expr, forms)  # type: ignore[arg-type]
                if form is None:
                    # Not linear (a GQA head, ``%a0 floordiv 8``): staged when only
                    # block-uniform values enter it, as part of the origin.
                    origin = _uniform_expr(expr, forms, uniform_values)
                    if origin is not None:
                        dims.append((origin, ({}, 0)))
                        continue
                    aligned = _mixed_split(expr, forms, uniform, uniform_values, local_values)
                    if aligned is None:
                        return 0
                    dims.append(aligned)
                    continue
                if any(v not in uniform and v not in local_values for v in form[0]):
                    return 0
                dims.append(_split(form, uniform))
            splits.append(dims)
        origins = [d[0] for d in splits[0]]
        if any([d[0] for d in dims] != origins for dims in splits):
            return 0
        ranges = value_ranges(local_values)
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        extents = [1] * len(shape)
        for dims in splits:
            for k, (_, local) in enumerate(dims):
                bounds = expr_range(linear_expr(local, local_values), ranges)
                if bounds is None or bounds[0] < 0:
                    return 0
                extents[k] = max(extents[k], bounds[1] + 1)
        lead = next((k for k, e in enumerate(extents) if e > 1), len(shape) - 1)
        box = extents[lead:]
        # Leading dims hold one element: their in-block part is the same constant in every
        # load, and goes into the origin.
        for dims in splits:
            for k in range(lead):
                if dims[k][1] != splits[0][k][1] or dims[k][1][0]:
                    return 0
        shared_by_threads = any(
            all(v not in d[1][0] for dims in splits for d in dims) for v in local_values[:-1]
        )
        element = buffer.type.element_type  # type: ignore[attr-defined]
        slab_bytes = tile.memref_bytes(MemRefType(element, box))
        if not chunk_stage_pays(shared_by_threads, slab_bytes, used, self.max_bytes):
            return 0
        transpose = self._transposes(splits, lead, inner.induction_var)
        origin = [
            _origin_expr(o, splits[0][k][1][1] if k < lead else 0, uniform_values)
            for k, o in enumerate(origins)
        ]
        stage = tile.StageOp(
            buffer,
            AffineMap(len(uniform_values), 0, tuple(origin)),
            uniform_values,
            box,
            transpose=transpose,
            guarded=any(load.is_guarded for load in loads),
        )
        if stage.is_guarded and not stage.guarded_dims():
            del stage.properties["guarded"]  # the box stays inside: nothing to test
        stage.result.name_hint = f"{(buffer.name_hint or 'in').removesuffix('_b')}_smem"
        rewriter.insert(stage, InsertPoint.at_start(outer.body.block))
        for load, dims in zip(loads, splits, strict=True):
            local = [linear_expr(d[1], local_values) for d in dims[lead:]]
            index = AffineMap(len(local_values), 0, tuple(stage.stored_index(local)))
            new = loop.LoadOp(stage.result, index, local_values)
            new.result.name_hint = load.result.name_hint
            rewriter.replace(load, new)
        return stage.size_bytes()

    @staticmethod
    def _transposes(splits, lead: int, k_inner: SSAValue) -> bool:
        """A rank-2 slab whose last dim only the inner loop walks, its first the threads."""
        if len(splits[0]) - lead != 2:
            return False
        for dims in splits:
            first, last = dims[lead][1][0], dims[lead + 1][1][0]
            if set(last) - {k_inner} or k_inner in first or not first:
                return False
        return True
