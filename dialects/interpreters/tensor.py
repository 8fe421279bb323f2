"""The tensor level (`ten`) on numpy: each op is one whole-array numpy computation.

A `ten.map` body runs once, on the full operand arrays: the arith/math interpreter
(scalar.py) works elementwise on arrays, so a map over a million elements is one numpy
call per body op rather than a million interpreter steps. Values are numpy arrays of the
element type (`scalar.numpy_dtype`), so an f32 program is interpreted in f32.
"""

from __future__ import annotations

import numpy as np
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
from xdsl.utils.exceptions import InterpretationError

from deplodock.dialects.affine_syntax import eval_map
from deplodock.dialects.combine import COMBINE_KINDS
from deplodock.dialects.interpreters.scalar import numpy_dtype
from deplodock.dialects.tensor import (
    ConstantOp,
    GatherOp,
    IndexMapOp,
    IotaOp,
    MapOp,
    ReduceOp,
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
        kind = COMBINE_KINDS[op.kind.data]
        out = kind.numpy_reduce(np.asarray(args[0]), axis=op.reduced_dims)
        return (_as(out, op.result),)

    @impl(IndexMapOp)
    def run_index_map(
        self, interpreter: Interpreter, op: IndexMapOp, args: PythonValues
    ) -> PythonValues:
        shape, _ = _type(op.result)
        grid = np.indices(shape, sparse=True) if shape else ()
        indices = eval_map(op.map.data, grid)
        return (_as(np.asarray(args[0])[indices], op.result),)

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
        extent = table.shape[op.gather_axis]
        if ids.size and (ids.min() < 0 or ids.max() >= extent):
            raise InterpretationError(
                f"ten.gather: indices reach [{ids.min()}, {ids.max()}], outside the extent "
                f"{extent} of axis {op.gather_axis}"
            )
        return (_as(np.take(table, ids, axis=op.gather_axis), op.result),)
