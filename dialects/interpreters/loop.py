"""The loop level on numpy, vectorised: each loop body runs once, over all its iterations.

Running ``loop.for`` one iteration at a time in Python would take minutes on a (2, 8, 64)
test; instead every loop runs its body *once*, with its induction variable a numpy array
over the whole iteration range on a fresh broadcast axis. Inside a loop nested ``d``
loops deep (counting every ``loop.for`` between it and its kernel), the iv has shape
``(n, 1, .., 1)`` with ``d`` trailing ones, so each value in the body is an array that
broadcasts over the iteration space of the loops around it (outer loops on the right,
numpy's broadcasting aligns them), and values from outside a loop broadcast in unchanged:

* ``loop.load``: the affine indices evaluate on those arrays (``affine_syntax.eval_map``)
  and the load is a fancy-indexing gather; indices are bounds-checked (numpy would
  silently wrap a negative one). An index operand need not be an iv: a lifted
  ``ten.gather`` loads a row id and indexes the table with it (``arith.index_cast``
  of a loaded value), an array that broadcasts over the loops it varies with like any
  other value, so the same fancy indexing reads one row per iteration.
* ``loop.store``: indices and value broadcast together, then one scatter.
* a reduce loop: its body yields one contribution per iteration, an array with the loop's
  axis; the kind's numpy reduction (``combine.COMBINE_KINDS``) removes that axis. A
  contribution that does not vary with the iv is broadcast along it first (``n`` equal
  terms, as the sequential loop would add).
* scalar ``arith``/``math`` already work elementwise on arrays (``scalar.py``).

Why this is the sequential meaning: iterations of a free loop are independent (a loop
kernel has no loop-carried state except reduce accumulators, whose combine is
associative and commutative up to rounding), and inside a kernel loads read *inputs*
only, which nothing in the kernel writes, so running all iterations of a body at once
computes the same values as running them one after the other. A kernel that loads a
buffer it also stores would break that (a later iteration could read an earlier one's
write); the interpreter refuses such a kernel with an error instead of computing
something else. Reductions combine in numpy's order (pairwise for sums), so results
agree with a sequential loop up to floating-point rounding.

Outputs start as NaN (the minimum integer for integer types), so an element that no store
writes shows up in a comparison instead of passing as a stale value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from deplodock.dialects.affine_syntax import eval_map
from deplodock.dialects.combine import reduce_arrays
from deplodock.dialects.interpreters.scalar import numpy_dtype
from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, StoreOp, YieldOp


def poisoned(type_: TensorType | MemRefType) -> np.ndarray:
    """A fresh array of ``type_`` filled with a value no correct kernel leaves behind."""
    dtype = numpy_dtype(type_.element_type)
    shape = tuple(type_.get_shape())
    if np.issubdtype(dtype, np.floating):
        return np.full(shape, np.nan, dtype)
    if dtype == np.bool_:
        return np.zeros(shape, dtype)
    return np.full(shape, np.iinfo(dtype).min, dtype)


def loop_depth(op: Operation) -> int:
    """How many ``loop.for`` enclose ``op`` inside its kernel (its broadcast axes).

    Stops at a kernel of any level (an op with a ``sym_name``), so the count is the same
    for a loop nest inside a tile kernel.
    """
    depth = 0
    parent = op.parent_op()
    while parent is not None and "sym_name" not in parent.properties:
        if isinstance(parent, ForOp):
            depth += 1
        parent = parent.parent_op()
    return depth


def check_vectorisable(kernel: KernelOp) -> None:
    """Refuse a kernel that loads a buffer it also stores (see the module docstring)."""
    loaded = {op.buffer for op in kernel.walk() if isinstance(op, LoadOp)}
    stored = {op.buffer for op in kernel.walk() if isinstance(op, StoreOp)}
    both = [b for b in kernel.body.block.args if b in loaded and b in stored]
    if both:
        names = ", ".join(f"%{b.name_hint or b.index}" for b in both)
        raise InterpretationError(
            f"loop.kernel @{kernel.sym_name.data}: loads and stores the same buffer ({names}); "
            "the vectorised loop interpreter needs loads to read inputs only"
        )


def _indices(op: LoadOp | StoreOp, args: tuple[Any, ...], buffer: np.ndarray) -> tuple:
    """The evaluated, bounds-checked index of every axis (ints or int arrays)."""
    indices = eval_map(op.map.data, args)
    for axis, (index, size) in enumerate(zip(indices, buffer.shape, strict=True)):
        if np.size(index) == 0:  # a loop of no iterations: nothing is accessed
            continue
        low, high = np.min(index), np.max(index)
        if low < 0 or high >= size:
            name = op.buffer.name_hint or "buffer"
            raise InterpretationError(
                f"{op.name} %{name}: index {axis} reaches [{low}, {high}], outside the extent "
                f"{size}"
            )
    return tuple(indices)


def guarded_indices(buffer: np.ndarray, indices) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """A guarded access's indices clipped into ``buffer``, and where they were inside (the
    loop and the SIMT interpreters both read 0 / store nothing outside)."""
    arrays = [np.asarray(i, dtype=np.int64) for i in indices]
    inside = np.ones((), bool)
    for index, size in zip(arrays, buffer.shape, strict=True):
        inside = inside & (index >= 0) & (index < size)
    clipped = tuple(
        np.clip(a, 0, max(size - 1, 0)) for a, size in zip(arrays, buffer.shape, strict=True)
    )
    return clipped, inside


@register_impls
class LoopFunctions(InterpreterFunctions):
    """loop.kernel / loop.for / loop.load / loop.store / loop.yield, vectorised."""

    @impl(KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: KernelOp, args: tuple[Any, ...]):
        check_vectorisable(op)
        inputs = [np.asarray(a) for a in args]
        outputs = [poisoned(r.type) for r in op.results]  # type: ignore[arg-type]
        interpreter.run_ssacfg_region(op.body, (*inputs, *outputs), op.sym_name.data)
        return tuple(outputs)

    @impl(ForOp)
    def run_for(self, interpreter: Interpreter, op: ForOp, args: tuple[Any, ...]):
        depth = loop_depth(op)
        lower, upper = op.lower.data, op.upper.data
        iv = np.arange(lower, upper, dtype=np.int64).reshape((upper - lower,) + (1,) * depth)
        results = interpreter.run_ssacfg_region(op.body, (iv,), "loop.for")
        if not op.is_reduce:
            return ()
        values = []
        for value in results:
            value = np.asarray(value)
            values.append(np.broadcast_to(value, np.broadcast_shapes(value.shape, iv.shape)))
        totals = reduce_arrays(op.kinds, values, -(depth + 1))  # the iv's axis
        return tuple(
            np.asarray(total).astype(numpy_dtype(result.type), copy=False)[()]
            for total, result in zip(totals, op.results, strict=True)
        )

    @impl(LoadOp)
    def run_load(self, interpreter: Interpreter, op: LoadOp, args: tuple[Any, ...]):
        buffer: np.ndarray = args[0]
        if op.is_guarded:
            indices, inside = guarded_indices(buffer, eval_map(op.map.data, args[1:]))
            return (np.where(inside, buffer[indices], np.zeros((), buffer.dtype)),)
        return (buffer[_indices(op, args[1:], buffer)],)

    @impl(StoreOp)
    def run_store(self, interpreter: Interpreter, op: StoreOp, args: tuple[Any, ...]):
        value, buffer = args[0], args[1]
        if op.is_guarded:
            indices, inside = guarded_indices(buffer, eval_map(op.map.data, args[2:]))
            *indices, value, inside = np.broadcast_arrays(*indices, np.asarray(value), inside)
            buffer[tuple(i[inside] for i in indices)] = value[inside]
            return ()
        indices = _indices(op, args[2:], buffer)
        *indices, value = np.broadcast_arrays(*indices, np.asarray(value))
        buffer[tuple(indices)] = value
        return ()

    @impl_terminator(YieldOp)
    def run_yield(self, interpreter: Interpreter, op: YieldOp, args: tuple[Any, ...]):
        return ReturnedValues(args), ()
