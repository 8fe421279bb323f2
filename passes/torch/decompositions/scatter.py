"""Writes into a copy of a tensor: the scatter family, index_put, put, index_reduce,
masked_scatter, and the affine ones (slice_scatter, diagonal_scatter, as_strided_scatter).

The tensor level has no store: every value is a function of its position. An affine
write is still one: `slice_scatter` puts `src` where the position is on the slice, so

    out = ten.map(src_v, self, pos): pos on the slice ? src_v : self

with `src_v` a view of `src` read in bounds everywhere (the `cat` trick: an element read
off the slice is computed and selected away); `diagonal_scatter` is the same on the
diagonal `pos_dim2 - pos_dim1 == offset`.

A write at positions held in data (`x.scatter_(dim, index, src)`, `x[idx] = v`) is turned
around: each output position asks every contribution whether it lands there. Over the
space T = (*self.shape, *K), K the contributions' free axes (for scatter the index's
extent along `dim`, the other axes being the output position's own; for index_put the
broadcast index shape),

    hit   = ten.map(index_v, pos..): index == pos_dim (every indexed axis)       i1 on T
    terms = ten.map(hit, src_v): hit ? src_v : identity
    red   = ten.reduce kind terms over K                                          on self
    out   = ten.map(self, red[, count]): combine as the op says

`include_self=False` and `mean` also count the hits (one more reduce). A plain write
(`scatter`, index_put without accumulate) lets the last contribution win, as PyTorch's
CPU kernels do for duplicate indices: the largest hitting position along K is a max
reduce, and a second reduce picks its value. That is |self| x |K| work where a GPU
scatter would do |K|, which is fine at the sizes where these ops appear in inference
programs (a KV-cache update writes a few positions of the cache); a dense space over
2**31 elements is refused. Booleans are combined as 0/1 integers (`or` for add and max,
`and` for mul and min). Indices that torch would wrap (index_put's, put's) are wrapped;
scatter rejects negative ones, so its are used as they are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, Signedness, TensorType, i1, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.combine import identity_attr
from deplodock.dialects.tensor import GatherOp, IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Scalar,
    Unsupported,
    accumulator_type,
    axis,
    broadcast_shape,
    element_of,
    is_float,
    shape_of,
)
from deplodock.passes.torch.decompositions.compare import truthy
from deplodock.passes.torch.decompositions.gather import flatten, take
from deplodock.passes.torch.decompositions.index import wrap
from deplodock.passes.torch.decompositions.view import reshape_map

_DENSE_LIMIT = 2**31
"""The most (output position, contribution) pairs a data-dependent write may compare."""

# scatter_reduce's and index_reduce's names -> the combine kind (mean: a sum, then divided)
_REDUCES = {
    "sum": "add",
    "add": "add",
    "prod": "mul",
    "multiply": "mul",
    "mean": "mean",
    "amax": "max",
    "amin": "min",
}


def _dims(rank: int) -> list[AffineExpr]:
    return [AffineExpr.dimension(a) for a in range(rank)]


def _compute_type(element: Attribute) -> Attribute:
    """Where contributions combine: f32 for 16-bit floats, i64 for booleans and unsigned
    integers (arith's integer constants and max/min are signless, i64 holds every uint8)."""
    if element == i1 or (
        isinstance(element, IntegerType) and element.signedness.data == Signedness.UNSIGNED
    ):
        return i64
    return accumulator_type(element)


def _to(b: Body, x: SSAValue, element: Attribute) -> SSAValue:
    """`x` cast to `element`, a truth test into bool."""
    return truthy(b, x) if element == i1 and x.type != i1 else b.cast(x, element)


def positions(emit: Emitter, space: Sequence[int], axes: Sequence[int]) -> list[SSAValue]:
    """One i64 iota on `space` per axis of `axes`: the positions along them."""
    return [emit.add(IotaOp(a, TensorType(i64, space)), "pos") for a in axes]


def dense_write(
    emit: Emitter,
    base: SSAValue,
    space: Sequence[int],
    hits: SSAValue,
    values: SSAValue | Scalar,
    kind: str,
    include_self: bool = True,
    order: Sequence[int] | None = None,
) -> SSAValue:
    """`base` (of shape S) with the contributions `values` (a tensor on `space` =
    (*S, *K), or one number) combined in where `hits` (i1 on `space`) says, by `kind`:
    set (the last hit along K wins), add, mul, max, min or mean. `order` lists the K
    axes (axes of `space`) from the slowest to the fastest moving for "last" (default:
    row-major)."""
    shape, element = shape_of(base), element_of(base)
    if math.prod(space) > _DENSE_LIMIT:
        raise Unsupported(
            f"a write at data-dependent positions compares {math.prod(shape)} positions with "
            f"{math.prod(space[len(shape) :])} contributions, over the {_DENSE_LIMIT} the "
            "dense form allows"
        )
    if len(space) == len(shape):  # one contribution per position: a K axis of extent 1
        space = (*space, 1)
        drop = AffineMap(len(space), 0, tuple(_dims(len(shape))))
        hits = emit.index_map(hits, drop, space)
        if isinstance(values, SSAValue):
            values = emit.index_map(values, drop, space)
    k_axes = list(range(len(shape), len(space)))
    acc = _compute_type(element)
    tensors = [hits] + ([values] if isinstance(values, SSAValue) else [])

    def value(b: Body, args: Sequence[SSAValue]) -> SSAValue:
        return b.cast(args[0], acc) if isinstance(values, SSAValue) else b.const(values, acc)

    def count() -> SSAValue:
        ones = emit.map(
            [hits],
            i64,
            lambda b, h: b.emit(arith.SelectOp(h, b.const(1, i64), b.const(0, i64))),
            name="hit",
        )
        return emit.reduce("add", ones, k_axes, name="count")

    if kind == "set":
        lin = _linear_position(emit, space, list(order) if order else k_axes)
        last = _last_hit(emit, hits, lin, k_axes)
        last_t = emit.expand(last, space, k_axes)

        def pick(b: Body, h: SSAValue, p: SSAValue, w: SSAValue, *v: SSAValue) -> SSAValue:
            chosen = b.emit(arith.AndIOp(h, b.emit(arith.CmpiOp(p, w, "eq"))))
            return b.emit(arith.SelectOp(chosen, value(b, v), b.const(0, acc)))

        terms = emit.map([hits, lin, last_t, *tensors[1:]], acc, pick, name="terms")
        picked = emit.reduce("add", terms, k_axes, name="picked")

        def merge(b: Body, old: SSAValue, w: SSAValue, new: SSAValue) -> SSAValue:
            written = b.emit(arith.CmpiOp(w, b.const(0, i64), "sge"))
            return b.emit(arith.SelectOp(written, _to(b, new, element), old))

        return emit.map([base, last, picked], element, merge, name=emit.name)
    combine = "add" if kind == "mean" else kind
    identity = identity_attr(combine, acc)

    def term(b: Body, h: SSAValue, *v: SSAValue) -> SSAValue:
        return b.emit(arith.SelectOp(h, value(b, v), b.emit(arith.ConstantOp(identity))))

    red = emit.reduce(combine, emit.map(tensors, acc, term, name="terms"), k_axes, name="red")
    needs_count = kind == "mean" or not include_self
    hit_count = count() if needs_count else None

    def merge_reduced(b: Body, old: SSAValue, r: SSAValue, *c: SSAValue) -> SSAValue:
        x = b.cast(old, acc)
        if include_self:
            result = b.binary(combine, x, r)
        else:
            touched = b.emit(arith.CmpiOp(c[0], b.const(0, i64), "sgt"))
            result = b.emit(arith.SelectOp(touched, r, x))
        if kind == "mean":  # over the hits and self; an untouched position keeps self
            if include_self:
                n = b.binary("add", c[0], b.const(1, i64))
            else:
                n = b.emit(arith.SelectOp(touched, c[0], b.const(1, i64)))
            n = b.cast(n, acc)
            if is_float(acc):
                result = b.emit(arith.DivfOp(result, n))
            else:  # floor division, as torch divides integer means (n > 0)
                quotient = b.emit(arith.DivSIOp(result, n))
                rem = b.emit(arith.RemSIOp(result, n))
                below = b.emit(arith.CmpiOp(rem, b.const(0, acc), "slt"))
                step = b.emit(arith.SelectOp(below, b.const(1, acc), b.const(0, acc)))
                result = b.binary("sub", quotient, step)
        return _to(b, result, element)

    inputs = [base, red] + ([hit_count] if hit_count is not None else [])
    return emit.map(inputs, element, merge_reduced, name=emit.name)


def _linear_position(emit: Emitter, space: Sequence[int], axes: Sequence[int]) -> SSAValue:
    """The row-major position along `axes` of `space`, as an i64 tensor on `space`."""
    strides = [math.prod(space[a] for a in axes[k + 1 :]) for k in range(len(axes))]
    along = positions(emit, space, axes)
    if len(along) == 1:
        return along[0]

    def linear(b: Body, *pos: SSAValue) -> SSAValue:
        total = None
        for p, stride in zip(pos, strides, strict=True):
            term = p if stride == 1 else b.binary("mul", p, b.const(stride, i64))
            total = term if total is None else b.binary("add", total, term)
        return total if total is not None else b.const(0, i64)

    return emit.map(along, i64, linear, name="k", shape=space)


def _last_hit(emit: Emitter, hits: SSAValue, lin: SSAValue, axes: Sequence[int]) -> SSAValue:
    """Per output position, the largest K position `lin` that hits it, -1 for none."""

    def last(b: Body, h: SSAValue, p: SSAValue) -> SSAValue:
        return b.emit(arith.SelectOp(h, p, b.const(-1, i64)))

    at = emit.map([hits, lin], i64, last, name="at")
    return emit.reduce("max", at, list(axes), "last")


def _hit_map(
    emit: Emitter,
    space: Sequence[int],
    tests: Sequence[tuple[SSAValue, int, int | None]],
    inside: Sequence[tuple[int, int]] = (),
) -> SSAValue:
    """i1 on `space`: every (index tensor on `space`, output axis, wrap extent or None)
    reads that axis's position, and every (axis, extent) of `inside` is below extent."""
    indexed = [t for t, _, _ in tests]
    tested = positions(emit, space, [a for _, a, _ in tests])
    bounded = positions(emit, space, [a for a, _ in inside])

    def body(b: Body, *args: SSAValue) -> SSAValue:
        ids, pos, bound = (
            args[: len(tests)],
            args[len(tests) : 2 * len(tests)],
            args[2 * len(tests) :],
        )
        result = None
        for i, p, (_, _, extent) in zip(ids, pos, tests, strict=True):
            i = wrap(b, i, extent) if extent is not None else b.cast(i, i64)
            same = b.emit(arith.CmpiOp(i, p, "eq"))
            result = same if result is None else b.emit(arith.AndIOp(result, same))
        for p, (_, extent) in zip(bound, inside, strict=True):
            below = b.emit(arith.CmpiOp(p, b.const(extent, i64), "slt"))
            result = below if result is None else b.emit(arith.AndIOp(result, below))
        assert result is not None
        return result

    return emit.map([*indexed, *tested, *bounded], i1, body, name="hits", shape=space)


# ------------------------------------------------------------------- scatter along dim


class Scatter(Decomposition):
    """scatter (src or value, plain or with reduce=add/multiply), scatter_add and
    scatter_reduce: `self[.., index[i], ..] op= src[i]` along `dim`."""

    targets = (
        "scatter.src",
        "scatter.value",
        "scatter.reduce",
        "scatter.value_reduce",
        "scatter_add.default",
        "scatter_reduce.two",
    )

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, index = emit.tensor("self"), emit.tensor("index")
        src: SSAValue | Scalar = (
            op.tensor_arg("src") if op.tensor_arg("src") is not None else op.arg("value")
        )
        if not isinstance(src, SSAValue | int | float):
            raise Unsupported(f"scatter value {src!r} is not a tensor or number")
        kind, include_self = "set", True
        if op.overload == "scatter_add.default":
            kind = "add"
        elif op.arg("reduce") is not None:
            reduce = str(op.arg("reduce"))
            if reduce not in _REDUCES:
                raise Unsupported(f"scatter reduce '{reduce}'")
            kind, include_self = _REDUCES[reduce], bool(op.arg("include_self", True))
        shape = shape_of(x)
        if not shape:  # a 0-d tensor: scatter into its one element as a 1-element axis
            one = (1,)
            x = emit.index_map(x, AffineMap(1, 0, ()), one)
            index = emit.index_map(index, AffineMap(1, 0, ()), one)
            if isinstance(src, SSAValue) and not shape_of(src):
                src = emit.index_map(src, AffineMap(1, 0, ()), one)
            out = self._scatter(emit, x, 0, index, src, kind, include_self)
            return emit.index_map(out, AffineMap(0, 0, (AffineExpr.constant(0),)), ())
        dim = axis(int(op.arg("dim")), len(shape))
        return self._scatter(emit, x, dim, index, src, kind, include_self)

    @staticmethod
    def _scatter(
        emit: Emitter,
        x: SSAValue,
        dim: int,
        index: SSAValue,
        src: SSAValue | Scalar,
        kind: str,
        include_self: bool,
    ) -> SSAValue:
        shape, ishape = shape_of(x), shape_of(index)
        if len(ishape) != len(shape):
            raise Unsupported(f"scatter with a rank-{len(ishape)} index into rank {len(shape)}")
        if 0 in ishape:  # nothing is written
            return emit.convert(x, emit.element)
        space = (*shape, ishape[dim])
        dims = _dims(len(space))
        exprs: list[AffineExpr] = []
        inside: list[tuple[int, int]] = []
        for e, (n, m) in enumerate(zip(shape, ishape, strict=True)):
            if e == dim:
                exprs.append(dims[-1])
            elif m == 1:
                exprs.append(AffineExpr.constant(0))
                if n > 1:
                    inside.append((e, 1))
            elif m >= n:
                exprs.append(dims[e])
            else:  # the index covers part of the axis: read in bounds, test the position
                exprs.append(dims[e] % m)
                inside.append((e, m))
        read = AffineMap(len(space), 0, tuple(exprs))
        index_t = emit.index_map(index, read, space)
        hits = _hit_map(emit, space, [(index_t, dim, None)], inside)
        values: SSAValue | Scalar = src
        if isinstance(src, SSAValue):
            if len(shape_of(src)) != len(shape):
                raise Unsupported(f"scatter of a rank-{len(shape_of(src))} source")
            values = emit.index_map(src, read, space)
        return dense_write(emit, x, space, hits, values, kind, include_self)


# ----------------------------------------------------------------------- index_put, put


class IndexPut(Decomposition):
    """`self[indices] = values` (index_put, accumulate adds), each index wrapped."""

    targets = ("index_put.default", "index_put_.default", "_unsafe_index_put.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, values = emit.tensor("self"), emit.tensor("values")
        indices = op.tensor_list_arg("indices")
        present = op.arg("indices") or [True] * len(indices)
        axes = [a for a, p in enumerate(present) if p]
        shape = shape_of(x)
        accumulate = bool(op.arg("accumulate", False))
        if not indices:
            raise Unsupported("index_put without an index tensor")
        if any(element_of(t) == i1 for t in indices):
            return self._masked(emit, x, indices, axes, values, accumulate)
        b_shape = broadcast_shape(*(shape_of(t) for t in indices))
        adjacent = axes == list(range(axes[0], axes[-1] + 1))
        rest = [e for e in range(len(shape)) if e not in axes]
        if adjacent:
            r_shape = (*shape[: axes[0]], *b_shape, *shape[axes[-1] + 1 :])
        else:
            r_shape = (*b_shape, *(shape[e] for e in rest))
        values = emit.broadcast(values, r_shape)
        space = (*shape, *b_shape)
        dims = _dims(len(space))
        k_dims = dims[len(shape) :]
        to_k = AffineMap(len(space), 0, tuple(k_dims))
        tests = []
        for t, a in zip(indices, axes, strict=True):
            t_k = emit.index_map(emit.broadcast(t, b_shape), to_k, space)
            tests.append((t_k, a, shape[a]))
        hits = _hit_map(emit, space, tests)
        if adjacent:
            r_exprs = [*dims[: axes[0]], *k_dims, *dims[axes[-1] + 1 : len(shape)]]
        else:
            r_exprs = [*k_dims, *(dims[e] for e in rest)]
        values_t = emit.index_map(values, AffineMap(len(space), 0, tuple(r_exprs)), space)
        return dense_write(emit, x, space, hits, values_t, "add" if accumulate else "set")

    @staticmethod
    def _masked(
        emit: Emitter,
        x: SSAValue,
        indices: list[SSAValue],
        axes: list[int],
        values: SSAValue,
        accumulate: bool,
    ) -> SSAValue:
        """`x[mask] = v`: the k-th selected position (row-major) takes the k-th value
        along the selection's axis of `v`, or the one value when `v` broadcasts there."""
        shape, element = shape_of(x), emit.element
        if len(indices) != 1:
            raise Unsupported("index_put with a boolean mask and other index tensors")
        (mask,), a = indices, axes[0]
        m = len(shape_of(mask))
        rest = len(shape) - a - m
        r_rank = a + 1 + rest  # values broadcast to (*x[:a], selected, *x[a + m:])
        v_shape = shape_of(values)
        if len(v_shape) > r_rank:
            raise Unsupported(f"index_put of rank-{len(v_shape)} values through a mask")
        lead = r_rank - len(v_shape)
        dims = _dims(len(shape))
        # Each values axis: the x axis it follows, or the selection's (None).
        follows = [e if e < a else (None if e == a else e + m - 1) for e in range(r_rank)]
        mask_v = emit.index_map(mask, AffineMap(len(shape), 0, tuple(dims[a : a + m])), shape)
        selected = len(v_shape) > a - lead >= 0 and v_shape[a - lead] > 1
        if not selected:  # one value for every selected position: a view of values
            exprs = []
            for j, n in enumerate(v_shape):
                axis = follows[lead + j]
                exprs.append(AffineExpr.constant(0) if n == 1 or axis is None else dims[axis])
            new = emit.index_map(values, AffineMap(len(shape), 0, tuple(exprs)), shape)
        else:
            rank = selection_rank(emit, mask)
            rank_v = emit.index_map(rank, AffineMap(len(shape), 0, tuple(dims[a : a + m])), shape)
            coords: list[SSAValue | int] = []
            for j, _ in enumerate(v_shape):
                axis = follows[lead + j]
                coords.append(rank_v if axis is None else axis)
            new = take(emit, values, coords, shape, name="taken")

        def body(b: Body, c: SSAValue, v: SSAValue, old: SSAValue) -> SSAValue:
            value = _to(b, v, element)
            if accumulate:
                acc = _compute_type(element)
                value = _to(b, b.binary("add", b.cast(old, acc), b.cast(v, acc)), element)
            return b.emit(arith.SelectOp(truthy(b, c), value, old))

        return emit.map([mask_v, new, x], element, body, name=emit.name)


def selection_rank(emit: Emitter, mask: SSAValue) -> SSAValue:
    """Per position of `mask`, how many true elements precede it in row-major order (0
    where it is false): a masked count over a second copy of the flattened mask, as
    cumsum counts."""
    shape = shape_of(mask)
    n = math.prod(shape)
    if n * n > _DENSE_LIMIT:
        raise Unsupported(f"a boolean mask of {n} elements: over the dense form's limit")
    flat = emit.index_map(mask, reshape_map(shape, (n,)), (n,))
    before = emit.index_map(flat, AffineMap(2, 0, (AffineExpr.dimension(1),)), (n, n))
    i, j = positions(emit, (n, n), [0, 1])

    def earlier(b: Body, mv: SSAValue, iv: SSAValue, jv: SSAValue) -> SSAValue:
        counted = b.emit(arith.AndIOp(truthy(b, mv), b.emit(arith.CmpiOp(jv, iv, "slt"))))
        return b.emit(arith.SelectOp(counted, b.const(1, i64), b.const(0, i64)))

    ranks = emit.reduce("add", emit.map([before, i, j], i64, earlier, name="earlier"), [1])

    def clamp(b: Body, mv: SSAValue, r: SSAValue) -> SSAValue:
        return b.emit(arith.SelectOp(truthy(b, mv), r, b.const(0, i64)))

    rank = emit.map([flat, ranks], i64, clamp, name="rank")
    return emit.index_map(rank, reshape_map((n,), shape), shape)


class Put(Decomposition):
    """`put`: index_put on the flattened tensor."""

    targets = ("put.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, index, source = emit.tensor("self"), emit.tensor("index"), emit.tensor("source")
        shape = shape_of(x)
        n, k = math.prod(shape), math.prod(shape_of(index))
        if math.prod(shape_of(source)) != k:
            raise Unsupported("put with a source of another element count than the index")
        if k == 0 or n == 0:
            return emit.convert(x, emit.element)
        flat = flatten(emit, _as_1d(emit, x))
        space = (n, k)
        to_k = AffineMap(2, 0, (AffineExpr.dimension(1),))
        index_t = emit.index_map(flatten(emit, _as_1d(emit, index)), to_k, space)
        values_t = emit.index_map(flatten(emit, _as_1d(emit, source)), to_k, space)
        hits = _hit_map(emit, space, [(index_t, 0, n)])
        kind = "add" if op.arg("accumulate", False) else "set"
        out = dense_write(emit, flat, space, hits, values_t, kind)
        return emit.index_map(out, reshape_map((n,), shape), shape)


def _as_1d(emit: Emitter, x: SSAValue) -> SSAValue:
    """A 0-d tensor as one axis of extent 1 (others as they are)."""
    return x if shape_of(x) else emit.index_map(x, AffineMap(1, 0, ()), (1,))


# ------------------------------------------------------------------------ index_reduce


class IndexReduce(Decomposition):
    """index_reduce: `self[.., index[t], ..] = reduce(.., source[.., t, ..])` along dim."""

    targets = ("index_reduce.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, index, source = emit.tensor("self"), emit.tensor("index"), emit.tensor("source")
        shape = shape_of(x)
        reduce = str(op.arg("reduce"))
        if reduce not in _REDUCES:
            raise Unsupported(f"index_reduce '{reduce}'")
        if not shape:  # a 0-d tensor reduces into its one element as a 1-element axis
            x, source, shape = _as_1d(emit, x), _as_1d(emit, source), (1,)
        dim = axis(int(op.arg("dim")), len(shape))
        index = _as_1d(emit, index)
        (k,) = shape_of(index)
        if k == 0:
            return emit.convert(x, emit.element)
        space = (*shape, k)
        dims = _dims(len(space))
        index_t = emit.index_map(index, AffineMap(len(space), 0, (dims[-1],)), space)
        exprs = list(dims[: len(shape)])
        exprs[dim] = dims[-1]
        source_t = emit.index_map(source, AffineMap(len(space), 0, tuple(exprs)), space)
        hits = _hit_map(emit, space, [(index_t, dim, shape[dim])])
        include_self = bool(op.arg("include_self", True))
        out = dense_write(emit, x, space, hits, source_t, _REDUCES[reduce], include_self)
        return (
            out
            if shape_of(out) == emit.shape
            else emit.index_map(out, reshape_map(shape, emit.shape), emit.shape)
        )


# ---------------------------------------------------------------------- masked_scatter


class MaskedScatter(Decomposition):
    """masked_scatter: the k-th selected position takes the k-th source element, k the
    selection rank (`selection_rank`), read by a gather of the flattened source."""

    targets = ("masked_scatter.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, mask, source = emit.tensor("self"), emit.tensor("mask"), emit.tensor("source")
        shape = emit.shape
        if 0 in shape or math.prod(shape_of(source)) == 0:
            return emit.convert(emit.broadcast(x, shape), emit.element)
        mask_b = emit.broadcast(mask, shape)
        rank = selection_rank(emit, mask_b)
        taken = emit.add(GatherOp(flatten(emit, _as_1d(emit, source)), rank, 0))
        element = emit.element

        def body(b: Body, m: SSAValue, new: SSAValue, old: SSAValue) -> SSAValue:
            return b.emit(arith.SelectOp(truthy(b, m), _to(b, new, element), _to(b, old, element)))

        return emit.map([mask_b, taken, emit.broadcast(x, shape)], element, body, name=emit.name)


# ---------------------------------------------------------------- affine scatters


def _select_into(
    emit: Emitter,
    x: SSAValue,
    src_view: SSAValue,
    axes: Sequence[int],
    on: Callable[[Body, Sequence[SSAValue]], SSAValue],
) -> SSAValue:
    """`on(pos..) ? src_view : x`, the positions of `axes` as i64 scalars."""
    shape = shape_of(x)
    along = positions(emit, shape, axes)
    element = emit.element

    def body(b: Body, v: SSAValue, old: SSAValue, *pos: SSAValue) -> SSAValue:
        return b.emit(arith.SelectOp(on(b, pos), _to(b, v, element), _to(b, old, element)))

    return emit.map([src_view, x, *along], element, body, name=emit.name)


class SliceScatter(Decomposition):
    """slice_scatter: `src` where the position is on `start:end:step` of `dim`."""

    targets = ("slice_scatter.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, src = emit.tensor("self"), emit.tensor("src")
        shape = shape_of(x)
        if not shape:
            raise Unsupported("slice_scatter into a 0-d tensor")
        dim = axis(int(op.arg("dim", 0)), len(shape))
        n, m = shape[dim], shape_of(src)[dim]
        start = op.arg("start", 0) or 0
        start = min(max(start + n if start < 0 else start, 0), n)
        step = int(op.arg("step", 1))
        if step < 1:
            raise Unsupported(f"slice step {step} must be positive")
        if m == 0 or 0 in shape:
            return emit.convert(x, emit.element)
        span = m * step
        dims = _dims(len(shape))
        exprs = list(dims)
        if m == 1:
            exprs[dim] = AffineExpr.constant(0)
        else:  # in bounds everywhere: (i - start) mod span, then which step of it
            shifted = (dims[dim] + (-start) % span) % span
            exprs[dim] = shifted if step == 1 else shifted // step
        view = emit.index_map(src, AffineMap(len(shape), 0, tuple(exprs)), shape)

        def on(b: Body, pos: Sequence[SSAValue]) -> SSAValue:
            offset = b.binary("sub", pos[0], b.const(start, i64))
            after = b.emit(arith.CmpiOp(offset, b.const(0, i64), "sge"))
            before = b.emit(arith.CmpiOp(offset, b.const(span - step + 1, i64), "slt"))
            inside = b.emit(arith.AndIOp(after, before))
            if step == 1:
                return inside
            rem = b.emit(arith.RemSIOp(offset, b.const(step, i64)))
            aligned = b.emit(arith.CmpiOp(rem, b.const(0, i64), "eq"))
            return b.emit(arith.AndIOp(inside, aligned))

        return _select_into(emit, x, view, [dim], on)


class DiagonalScatter(Decomposition):
    """diagonal_scatter: `src` on the diagonal `pos_dim2 - pos_dim1 == offset`."""

    targets = ("diagonal_scatter.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, src = emit.tensor("self"), emit.tensor("src")
        shape = shape_of(x)
        offset = int(op.arg("offset", 0))
        dim1 = axis(int(op.arg("dim1", 0)), len(shape))
        dim2 = axis(int(op.arg("dim2", 1)), len(shape))
        if dim1 == dim2 or len(shape) < 2:
            raise Unsupported(f"diagonal of dimensions {dim1} and {dim2}")
        length = shape_of(src)[-1]
        if length == 0 or 0 in shape:
            return emit.convert(x, emit.element)
        dims = _dims(len(shape))
        first = max(-offset, 0)
        exprs = [dims[e] for e in range(len(shape)) if e not in (dim1, dim2)]
        exprs.append(
            (dims[dim1] + (-first) % length) % length if length > 1 else AffineExpr.constant(0)
        )
        view = emit.index_map(src, AffineMap(len(shape), 0, tuple(exprs)), shape)

        def on(b: Body, pos: Sequence[SSAValue]) -> SSAValue:
            gap = b.binary("sub", pos[1], pos[0])
            return b.emit(arith.CmpiOp(gap, b.const(offset, i64), "eq"))

        return _select_into(emit, x, view, [dim1, dim2], on)
