"""The tensor level (`ten`) on numpy: each op is one whole-array numpy computation.

A `ten.map` body runs once, on the full operand arrays: the arith/math interpreter
(scalar.py) works elementwise on arrays, so a map over a million elements is one numpy
call per body op rather than a million interpreter steps. Values are numpy arrays of the
element type (`scalar.numpy_dtype`), so an f32 program is interpreted in f32.

Matmuls decompose into broadcast views, a product over (M, K, N) and a sum over K. Taken
literally that is M·K·N floats of memory (1.6 GB for one projection of a Qwen2.5-7B layer
at 32 tokens), so two shortcuts keep real model sizes interpretable: an index_map that
only broadcasts or transposes returns a numpy view (no copy), and a product of two such
views whose only use is a sum is not built: the sum evaluates it as one `np.einsum` over
the views' sources (BLAS). Both compute the same values as the literal reading.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr
from xdsl.utils.exceptions import InterpretationError

from deplodock.dialects.affine_syntax import eval_map
from deplodock.dialects.combine import COMBINE_KINDS, identity_attr
from deplodock.dialects.interpreters.scalar import numpy_dtype
from deplodock.dialects.tensor import (
    ConstantOp,
    GatherOp,
    IndexMapOp,
    IotaOp,
    MapOp,
    ReduceOp,
    SoftmaxSumOp,
    YieldOp,
)


def _type(value: SSAValue) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and numpy dtype of a tensor value."""
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape()), numpy_dtype(value.type.element_type)


def _as(array: object, value: SSAValue) -> np.ndarray:
    """`array` as a fresh array of `value`'s shape and dtype (broadcasting a scalar)."""
    shape, dtype = _type(value)
    out = np.asarray(array, dtype=dtype)
    return out if out.shape == shape else np.broadcast_to(out, shape).copy()


@register_impls
class TensorFunctions(InterpreterFunctions):
    """ten.map / reduce / index_map / constant / iota / gather on numpy arrays."""

    @impl(MapOp)
    def run_map(self, interpreter: Interpreter, op: MapOp, args: PythonValues) -> PythonValues:
        if _contracted_product(op) is not None:
            return (_DEFERRED,)  # the sum that reads it computes it (module docstring)
        (out,) = interpreter.run_ssacfg_region(
            op.body, tuple(np.asarray(a) for a in args), "ten.map"
        )
        return (_as(out, op.result),)

    @impl_terminator(YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(ReduceOp)
    def run_reduce(
        self, interpreter: Interpreter, op: ReduceOp, args: PythonValues
    ) -> PythonValues:
        if args[0] is _DEFERRED:
            return (_as(_einsum(interpreter, op), op.result),)
        kind = COMBINE_KINDS[op.kind.data]
        x = np.asarray(args[0])
        if x.size == 0:  # an empty axis: the identity, as a loop of no iterations gives
            identity = identity_attr(op.kind.data, op.result.type.element_type)
            return (_as(identity.value.data, op.result),)
        out = kind.numpy_reduce(x, axis=op.reduced_dims)
        return (_as(out, op.result),)

    @impl(SoftmaxSumOp)
    def run_softmax_sum(
        self, interpreter: Interpreter, op: SoftmaxSumOp, args: PythonValues
    ) -> PythonValues:
        """The online group's answer (``combine.reduce_arrays``): weights ``exp(s - max)``
        (1 each in a row of -inf scores), their sum ``l``, and ``sum_r w * v / l``, as one
        einsum over the columns (``v`` is often a broadcast view); 0 for a row of -inf
        scores when ``safe``."""
        r = op.reduced_dim
        s = np.moveaxis(np.asarray(args[0]), r, -1)
        v = np.moveaxis(np.asarray(args[1]), r, -2)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            m = np.max(s, axis=-1, keepdims=True)
            empty = (s == m) & (m == -np.inf)
            w = np.where(empty, np.ones((), s.dtype), np.exp(s - m))
            total = np.sum(w, axis=-1)
            out = np.einsum("...r,...rc->...c", w, v) / total[..., None]
            if op.safe is not None:
                out = np.where(m == -np.inf, np.zeros((), out.dtype), out)
        return (_as(out, op.result),)

    @impl(IndexMapOp)
    def run_index_map(
        self, interpreter: Interpreter, op: IndexMapOp, args: PythonValues
    ) -> PythonValues:
        shape, dtype = _type(op.result)
        source = np.asarray(args[0])
        if 0 in shape:  # no elements: nothing is read
            return (np.zeros(shape, dtype),)
        if (view := _broadcast_view(source, op)) is not None:
            return (view,)
        grid = np.indices(shape, sparse=True) if shape else ()
        indices = eval_map(op.map.data, grid)
        return (_as(source[indices], op.result),)

    @impl(ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: ConstantOp, args: PythonValues
    ) -> PythonValues:
        shape, dtype = _type(op.result)
        return (np.asarray(op.value.get_values(), dtype=dtype).reshape(shape),)

    @impl(IotaOp)
    def run_iota(self, interpreter: Interpreter, op: IotaOp, args: PythonValues) -> PythonValues:
        shape, dtype = _type(op.result)
        return (np.indices(shape, dtype=dtype)[op.axis],)

    @impl(GatherOp)
    def run_gather(
        self, interpreter: Interpreter, op: GatherOp, args: PythonValues
    ) -> PythonValues:
        table, ids = np.asarray(args[0]), np.asarray(args[1]).astype(np.int64)
        shape, dtype = _type(op.result)
        if 0 in shape:  # no elements: nothing is read
            return (np.zeros(shape, dtype),)
        extent = table.shape[op.gather_axis]
        if ids.size and (ids.min() < 0 or ids.max() >= extent):
            raise InterpretationError(
                f"ten.gather: indices reach [{ids.min()}, {ids.max()}], outside the extent "
                f"{extent} of axis {op.gather_axis}"
            )
        return (_as(np.take(table, ids, axis=op.gather_axis), op.result),)


# --- matmul-shaped programs without their (M, K, N) intermediates --------------------------

_DEFERRED = object()  # a product a following sum will evaluate (see the module docstring)


def _source_dims(op: IndexMapOp) -> list[int | None] | None:
    """Per source axis, the result axis it follows (None: a size-1 axis read at 0), when the
    view only broadcasts and transposes; None when it does anything else."""
    source_shape = tuple(op.source.type.get_shape())  # type: ignore[union-attr]
    result_shape = tuple(op.result.type.get_shape())  # type: ignore[union-attr]
    dims: list[int | None] = []
    for expr, extent in zip(op.map.data.results, source_shape, strict=True):
        if isinstance(expr, AffineDimExpr) and result_shape[expr.position] == extent:
            dims.append(expr.position)
        elif isinstance(expr, AffineConstantExpr) and expr.value == 0 and extent == 1:
            dims.append(None)
        else:
            return None
    used = [d for d in dims if d is not None]
    return dims if len(used) == len(set(used)) else None


def _broadcast_view(source: np.ndarray, op: IndexMapOp) -> np.ndarray | None:
    """The index_map as a read-only numpy view of ``source``, when it is one."""
    dims = _source_dims(op)
    if dims is None:
        return None
    shape, dtype = _type(op.result)
    if source.dtype != dtype:
        return None
    kept = source[tuple(0 if d is None else slice(None) for d in dims)]
    axes = [d for d in dims if d is not None]  # the result axis of each kept source axis
    moved = np.transpose(kept, sorted(range(len(axes)), key=axes.__getitem__))
    present = sorted(axes)
    expanded = moved.reshape([shape[i] if i in present else 1 for i in range(len(shape))])
    return np.broadcast_to(expanded, shape)


def _contracted_product(op: MapOp) -> tuple[IndexMapOp, IndexMapOp] | None:
    """The two views of ``op`` when it is ``a * b`` of pure views summed by its only user."""
    body = list(op.body.block.ops)
    uses = list(op.result.uses)
    if len(op.inputs) != 2 or len(body) != 2 or len(uses) != 1:
        return None
    mul, end = body
    user = uses[0].operation
    if not (isinstance(mul, arith.MulfOp) and isinstance(end, YieldOp)):
        return None
    if set(mul.operands) != set(op.body.block.args) or end.value is not mul.result:
        return None
    if not (isinstance(user, ReduceOp) and user.kind.data == "add"):
        return None
    views = [v.owner for v in op.inputs]
    if not all(isinstance(v, IndexMapOp) and _source_dims(v) is not None for v in views):
        return None
    # Every axis of the product must come from a view: an axis both broadcast (a copy of
    # the same values) would be dropped by the einsum, or counted once when summed.
    covered = {d for v in views for d in _source_dims(v) or () if d is not None}
    if covered != set(range(len(op.result.type.get_shape()))):  # type: ignore[union-attr]
        return None
    return views[0], views[1]  # type: ignore[return-value]


def _einsum(interpreter: Interpreter, reduce: ReduceOp) -> np.ndarray:
    """The sum of a deferred product, as one einsum over the two views' sources."""
    product = reduce.input.owner
    assert isinstance(product, MapOp)
    views = _contracted_product(product)
    assert views is not None
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    operands, subscripts = [], []
    for view in views:
        dims = _source_dims(view)
        assert dims is not None
        (source,) = interpreter.get_values((view.source,))
        source = np.asarray(source)[tuple(0 if d is None else slice(None) for d in dims)]
        operands.append(source)
        subscripts.append("".join(letters[d] for d in dims if d is not None))
    rank = len(reduce.input.type.get_shape())  # type: ignore[union-attr]
    out = "".join(letters[d] for d in range(rank) if d not in reduce.reduced_dims)
    return np.einsum(f"{subscripts[0]},{subscripts[1]}->{out}", *operands, optimize=True)
