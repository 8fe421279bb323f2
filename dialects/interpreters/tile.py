"""The tile level on numpy, SIMT-vectorised; and the SIMT core the kernel level shares.

The SIMT model
--------------
A GPU runs the threads of a block in lockstep, one op at a time, each thread on its own
registers. Here every value of a kernel body is a numpy array over *lanes* (one lane per
thread, or per (thread, block) pair when blocks run together), and each op runs once for
all lanes: ``arith``/``math``/``affine.apply`` already work elementwise on arrays
(``scalar.py``). A value that does not depend on some lane dimensions keeps size 1 there
(numpy broadcasting), so a row's ``rsqrt`` is computed once per row, not once per thread.

Control flow is a **mask** over the lanes, as in a GPU's divergent warps:

* ``scf.if`` on a uniform condition (a plain scalar) runs the taken branch; on a per-lane
  condition it runs *both* branches, each under the mask of the lanes that take it, and
  merges the results lane by lane. Side effects (stores, and at the kernel level shared
  memory, barriers and shuffles) act on active lanes only.
* A loop whose start does not depend on the lane (``loop.for``, a ``kernel.for`` from a
  constant) runs its trip count uniformly. One that starts at the thread index
  (``tile.strided_for %i = %t to N step S``) gives each lane its own trip count
  ``ceil((N - start) / S)``: the loop runs the largest one, and once a lane's count is
  spent the lane is masked off (its accumulators stop changing). A reduce loop keeps one
  accumulator per lane, starting at the kind's identity and combined in iteration order,
  as the thread on the GPU does.
* Loads gather and stores scatter over the active lanes; every active lane's index is
  bounds-checked (``OutOfBounds`` names the op, the buffer, the index and the lane), and
  masked lanes never touch memory.

Lockstep preserves each lane's program order, so a lane always reads what it wrote before.
What it cannot show is an order *between* lanes that the GPU does not guarantee either:
that is the kernel level's race checker (``kernel.py``).

The tile level
--------------
A ``tile.kernel`` has one lane dimension per axis (``thread``, ``block`` and ``free`` alike),
the axis's induction value being ``arange(extent)`` along its dimension. Blocks are
vectorised together with threads because the tile level has no state shared between
lanes: ``tile.combine`` is a value op (reduce along the thread axis's dimension, every
thread gets the result) and there is no shared memory or barrier. When the lanes would
exceed ``TILE_LANES``, the outermost non-thread axes are iterated instead, one index at a
time, so memory stays bounded on large shapes.

The loop level's ops (``loop.for``/``load``/``store``/``yield``) mean something else
inside a tile kernel (lanes and masks instead of the loop interpreter's vectorised
iteration space), so ``tile.kernel`` runs its body in a nested xDSL ``Interpreter`` with
the tables of this module; the loop level's global implementations stay untouched.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import StringIO
from typing import Any

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import AnyFloat, ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.printer import Printer
from xdsl.utils.exceptions import InterpretationError

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import eval_map
from deplodock.dialects.combine import combine_kind, reduce_arrays, step_arrays
from deplodock.dialects.interpreters.loop import guarded_indices, poisoned
from deplodock.dialects.interpreters.scalar import ScalarFunctions, numpy_dtype
from deplodock.dialects.loop import vector_of
from deplodock.dialects.mma import WARP, mma_arrays

TILE_LANES = 1 << 18
"""Most lanes a tile kernel vectorises at once; beyond, outer block/free axes iterate."""


# --- errors --------------------------------------------------------------------------------------


class SimtError(InterpretationError):
    """A kernel did something a GPU would not do reliably; the message names the op."""


class OutOfBounds(SimtError):
    """An active lane loads or stores outside its buffer."""


class Divergence(SimtError):
    """An op that needs a whole group of threads (combine, barrier, shuffle) ran on part
    of it."""


def op_text(op: Operation) -> str:
    """The op as it prints inside its kernel, and where: `` `%a = ...` (line 7 of @k)``.

    Printed within the whole kernel so its SSA names are the listing's (unique), not the
    bare name hints an op printed alone would show.
    """
    kernel = op
    while kernel.parent_op() is not None and "sym_name" not in kernel.properties:
        kernel = kernel.parent_op()  # type: ignore[assignment]
    stream = StringIO()
    found: list[int] = []

    class _Marking(Printer):
        def print_op(self, o: Operation) -> None:
            if o is op:
                found.append(stream.tell())
            super().print_op(o)

    _Marking(stream=stream).print_op(kernel)
    text = stream.getvalue()
    if not found:
        return f"`{op.name}`"
    start = found[0]
    line = text[start:].split("\n", 1)[0].strip()
    number = text[:start].count("\n") + 1
    name = kernel.properties.get("sym_name")
    where = f"line {number} of @{name.data}" if name is not None else f"line {number}"  # type: ignore[attr-defined]
    return f"`{line}` ({where})"


def buffer_name(op: Operation) -> str:
    """``%xb``: the buffer operand of a load or store, as the message names it."""
    value = op.buffer  # type: ignore[attr-defined]
    return f"%{value.name_hint or 'buffer'}"


# --- lanes and masks -----------------------------------------------------------------------------


class Lanes:
    """The lane space of one SIMT run: its shape, and how to name one lane in a message."""

    shape: tuple[int, ...] = ()

    def describe(self, index: tuple[int, ...]) -> str:
        raise NotImplementedError


class Simt:
    """The state of one SIMT run: its lanes and the mask of the lanes now active.

    ``mask`` is None when every lane is active, else a bool array that broadcasts to the
    lane shape (compact: a mask that only depends on the thread has size 1 over blocks).
    """

    def __init__(self, lanes: Lanes):
        self.lanes = lanes
        self.mask: np.ndarray | None = None

    def active(self) -> np.ndarray:
        """The mask over the full lane shape (a read-only broadcast view)."""
        if self.mask is None:
            return np.ones(self.lanes.shape, np.bool_)
        return np.broadcast_to(self.mask, self.lanes.shape)

    def full(self, value: Any) -> np.ndarray:
        """``value`` broadcast to one element per lane."""
        return np.broadcast_to(np.asarray(value), self.lanes.shape)

    @contextmanager
    def masked(self, cond: np.ndarray | None) -> Iterator[bool]:
        """Narrow the mask to ``cond`` inside the block; yields whether any lane is active."""
        outer = self.mask
        if cond is not None:
            self.mask = cond if outer is None else outer & cond
        try:
            yield self.mask is None or bool(np.any(self.mask))
        finally:
            self.mask = outer


def _first_lane(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def checked_indices(
    op: Operation, state: Simt, name: str, shape: Sequence[int], indices: Sequence[Any]
) -> list[np.ndarray]:
    """The index arrays of an access, after raising ``OutOfBounds`` for any active lane
    whose index leaves ``shape``."""
    arrays = [np.asarray(i, dtype=np.int64) for i in indices]
    for axis, (index, size) in enumerate(zip(arrays, shape, strict=True)):
        out = (index < 0) | (index >= size)
        if state.mask is not None:
            out = out & state.mask
        if not out.any():
            continue
        lane = _first_lane(np.broadcast_to(out, np.broadcast_shapes(out.shape, state.lanes.shape)))
        at = tuple(int(state.full(i)[lane]) for i in arrays)
        raise OutOfBounds(
            f"{op_text(op)}: {state.lanes.describe(lane)} accesses {name}"
            f"[{', '.join(map(str, at))}]: index {axis} is {at[axis]}, outside the extent "
            f"{size} (shape {tuple(shape)})"
        )
    return arrays


def gather(
    op: Operation, state: Simt, buffer: np.ndarray, indices: Sequence[Any], guarded: bool = False
) -> Any:
    """A load from a global buffer; inactive lanes read element 0 and get no value that
    matters. ``guarded`` (or a guarded op): an index outside the buffer reads 0."""
    if guarded or getattr(op, "is_guarded", False):
        arrays, inside = guarded_indices(buffer, indices)
        if state.mask is not None and buffer.size:
            arrays = [np.where(state.mask, a, 0) for a in arrays]
        return np.where(inside, buffer[tuple(arrays)], np.zeros((), buffer.dtype))
    arrays = checked_indices(op, state, buffer_name(op), buffer.shape, indices)
    if state.mask is not None and buffer.size:
        arrays = [np.where(state.mask, a, 0) for a in arrays]
    return buffer[tuple(arrays)]


def scatter(
    op: Operation, state: Simt, buffer: np.ndarray, indices: Sequence[Any], value: Any
) -> np.ndarray:
    """A store to a global buffer by the active lanes; returns the flat indices written.
    A guarded op's lanes whose index leaves the buffer store nothing."""
    inside = None
    if getattr(op, "is_guarded", False):
        arrays, inside = guarded_indices(buffer, indices)
    else:
        arrays = checked_indices(op, state, buffer_name(op), buffer.shape, indices)
    keep = state.mask if inside is None else inside & (True if state.mask is None else state.mask)
    parts = [*arrays, np.asarray(value)]
    if keep is not None:
        parts.append(np.asarray(keep))
    parts = list(np.broadcast_arrays(*parts))
    if keep is not None:
        keep = parts.pop()
        parts = [p[keep] for p in parts]
    *where, values = (p.reshape(-1) for p in parts)
    if not values.size:
        return np.zeros(0, np.int64)
    if buffer.ndim == 0:
        buffer[()] = values[-1]
        return np.zeros(1, np.int64)
    buffer[tuple(where)] = values
    return np.ravel_multi_index(tuple(where), buffer.shape)


# --- loops ---------------------------------------------------------------------------------------


def identity(kind: str, type_: Attribute) -> Any:
    """The accumulator's start for ``kind`` in the numpy dtype of ``type_``."""
    dtype = numpy_dtype(type_)
    value = combine_kind(kind).identity
    if not isinstance(type_, AnyFloat) and np.isinf(value):
        info = np.iinfo(dtype)
        value = info.min if value < 0 else info.max
    return np.asarray(value).astype(dtype)[()]


def run_loop(
    interpreter: Interpreter,
    state: Simt,
    op: Operation,
    start: Any,
    upper: int,
    step: int,
    kinds: Sequence[str],
    vector: int = 1,
    below: Any = None,
) -> tuple[Any, ...]:
    """A counted loop ``start, start + step, .. < upper`` over every active lane.

    A scalar start gives every lane the same trip count; a per-lane start gives each its
    own, and lanes whose count is spent are masked off for the remaining iterations. With
    ``vector V`` the count runs below ``upper / V`` and each count ``c`` runs the body for
    ``V*c, .., V*c + V - 1``. ``below`` (the loop's ``below`` limit, scalar or per lane)
    stops it earlier where it is smaller.
    """
    body: Region = op.regions[0]
    name = op.name
    accs = [identity(k, r.type) for k, r in zip(kinds, op.results, strict=True)]
    dtypes = [numpy_dtype(r.type) for r in op.results]

    def accumulate(values: Sequence[Any], where: np.ndarray | None) -> None:
        for i, merged in enumerate(step_arrays(kinds, accs, values)):
            if where is not None:
                merged = np.where(where, merged, accs[i])
            accs[i] = np.asarray(merged).astype(dtypes[i], copy=False)[()]

    limit = upper // vector
    start = np.asarray(start, dtype=np.int64)
    if below is not None:
        below = np.asarray(below, dtype=np.int64)
        if below.ndim == 0 or below.size == 1:
            limit = min(limit, int(below.reshape(())))
        else:
            limit = np.minimum(limit, below)
            start = np.broadcast_to(start, np.broadcast_shapes(start.shape, below.shape))
    if start.ndim == 0 or start.size == 1:
        for count in range(int(start.reshape(())), limit, step):
            for lane in range(vector):
                iv = np.int64(count * vector + lane)
                accumulate(interpreter.run_ssacfg_region(body, (iv,), name), None)
        return tuple(accs)

    trips = np.maximum(0, -((start - limit) // step))
    live = np.broadcast_to(trips, np.broadcast_shapes(trips.shape, state.lanes.shape))
    if state.mask is not None:
        live = live[np.broadcast_to(state.mask, live.shape)]
    if not live.size:
        return tuple(accs)
    fewest, most = int(live.min()), int(live.max())
    for j in range(most):
        count = start + j * step
        running = None if j < fewest else count < limit
        with state.masked(running):
            for lane in range(vector):
                iv = count * vector + lane
                accumulate(interpreter.run_ssacfg_region(body, (iv,), name), running)
    return tuple(accs)


def run_strided_loop(interpreter: Interpreter, state: Simt, op, args: tuple) -> tuple:
    """``tile.strided_for`` and ``kernel.for`` (``start`` and an optional ``below`` limit
    as operands): ``run_loop`` with the loop's bound, step and vector width."""
    below = args[1] if len(args) > 1 else None
    return run_loop(
        interpreter,
        state,
        op,
        args[0],
        op.upper.data,
        op.step.data,
        op.kinds,
        vector_of(op),
        below,
    )


# --- functions shared by the tile and kernel levels ----------------------------------------------


@register_impls
class SimtFunctions(InterpreterFunctions):
    """``scf.if`` as a lane mask; the base of each level's body table."""

    def __init__(self, state: Simt):
        self.state = state

    @impl(scf.IfOp)
    def run_if(self, interpreter: Interpreter, op: scf.IfOp, args: tuple[Any, ...]):
        cond = np.asarray(args[0])
        if cond.ndim == 0 or cond.size == 1:
            region = op.true_region if bool(cond.reshape(())) else op.false_region
            return interpreter.run_ssacfg_region(region, (), "scf.if")
        branches = []
        for region, taken in ((op.true_region, cond), (op.false_region, ~cond)):
            with self.state.masked(taken) as any_active:
                ran = any_active and bool(region.blocks)
                branches.append(
                    interpreter.run_ssacfg_region(region, (), "scf.if") if ran else None
                )
        then, other = branches
        if not op.results:
            return ()
        if then is None or other is None:
            chosen = then if then is not None else other
            if chosen is None:  # no lane active: any value will do
                return tuple(np.zeros((), numpy_dtype(r.type))[()] for r in op.results)
            return tuple(chosen)
        return tuple(
            np.where(cond, a, b).astype(numpy_dtype(r.type), copy=False)
            for a, b, r in zip(then, other, op.results, strict=True)
        )

    @impl_terminator(scf.YieldOp)
    def run_scf_yield(self, interpreter: Interpreter, op: scf.YieldOp, args: tuple[Any, ...]):
        return ReturnedValues(args), ()


def nested_interpreter(op: Operation, functions: InterpreterFunctions) -> Interpreter:
    """An interpreter for one kernel body: scalar math plus ``functions``."""
    top = op.get_toplevel_object()
    interpreter = Interpreter(top if isinstance(top, ModuleOp) else ModuleOp([]))
    interpreter.register_implementations(ScalarFunctions())
    interpreter.register_implementations(functions)
    return interpreter


# --- the tile level ------------------------------------------------------------------------------


class TileLanes(Lanes):
    """One lane dimension per tile axis; iterated axes have size 1 and a fixed index."""

    def __init__(self, kernel: tile.KernelOp, fixed: dict[int, int]):
        self.kernel = kernel
        self.fixed = fixed
        self.shape = tuple(
            1 if k in fixed else extent for k, (_, extent, _) in enumerate(kernel.axes)
        )

    def axis_values(self) -> list[np.ndarray]:
        values = []
        ndim = len(self.shape)
        for k, (_, extent, _) in enumerate(self.kernel.axes):
            shape = [1] * ndim
            if k in self.fixed:
                values.append(np.full(shape, self.fixed[k], np.int64))
            else:
                shape[k] = extent
                values.append(np.arange(extent, dtype=np.int64).reshape(shape))
        return values

    def describe(self, index: tuple[int, ...]) -> str:
        parts = []
        for k, (arg, _, binding) in enumerate(self.kernel.axes):
            value = self.fixed.get(k, index[k] if k < len(index) else 0)
            parts.append(f"%{arg.name_hint or f'axis{k}'} = {value} ({binding})")
        return "the lane " + ", ".join(parts) if parts else "the kernel's single lane"


def iterated_axes(kernel: tile.KernelOp, budget: int | None = None) -> list[int]:
    """The outermost non-thread axes to iterate so the vectorised lanes fit ``budget``
    (``TILE_LANES`` by default)."""
    budget = TILE_LANES if budget is None else budget
    lanes = 1
    for _, extent, _ in kernel.axes:
        lanes *= extent
    chosen = []
    for k, (_, extent, binding) in enumerate(kernel.axes):
        if lanes <= budget:
            break
        if binding != "thread":
            chosen.append(k)
            lanes //= extent
    return chosen


class StagedSlab:
    """The value of a ``tile.stage``: a window on the (read-only) input it copies.

    The tile level has no shared state between lanes, and a staged input is never written
    inside the kernel, so reading the copy is reading the source at ``origin + index``.
    What the window adds is the bounds check: a load outside the slab is ``OutOfBounds``
    even when the source would have had the element, as shared memory would not.
    """

    def __init__(self, op: tile.StageOp, source: np.ndarray, origin: tuple[Any, ...]):
        self.op = op
        self.source = source
        self.origin = origin
        # What the copy writes, in the stored order: a load of the padding is out of bounds.
        self.shape = op.written_shape

    def indices(self, op: Operation, state: Simt, indices: Sequence[Any]) -> list[Any]:
        name = self.op.result.name_hint or "slab"
        inner = self.op.box_index(checked_indices(op, state, name, self.shape, indices))
        lead = len(self.origin) - len(inner)
        return [
            *self.origin[:lead],
            *(o + i for o, i in zip(self.origin[lead:], inner, strict=True)),
        ]


class SharedValues:
    """The value of a ``tile.share``: the array each block wrote, one per block.

    Its numpy array has one dimension per kernel axis (size 1 along thread axes: the
    threads of a block share it; the lane space's size along block axes) followed by the
    shared array's dimensions, and a count of the writes of each element, so an element
    written twice, or read before any thread of its block wrote it, is an error rather
    than a value.
    """

    def __init__(self, op: tile.ShareOp, state: Simt, lanes: TileLanes, args: Sequence[Any]):
        self.op = op
        shape = op.result.type.get_shape()  # type: ignore[attr-defined]
        self.name = op.result.name_hint or "shared"
        self.shared_shape = tuple(shape)
        # the block's coordinates: 0 along thread axes (shared by the block's threads) and
        # along iterated axes (their one index at a time is stored at 0)
        self.lead = [
            np.zeros_like(value) if binding == "thread" or k in lanes.fixed else value
            for k, ((_, _, binding), value) in enumerate(
                zip(lanes.kernel.axes, lanes.axis_values(), strict=True)
            )
        ]
        blocks = tuple(
            1 if b == "thread" or k in lanes.fixed else lanes.shape[k]
            for k, (_, _, b) in enumerate(lanes.kernel.axes)
        )
        dtype = numpy_dtype(op.result.type.element_type)  # type: ignore[attr-defined]
        self.array = np.full(blocks + self.shared_shape, np.nan, dtype)
        self.writes = np.zeros(blocks + self.shared_shape, np.int64)
        values, indices = args[: len(op.values)], args[len(op.values) :]
        for k, value in enumerate(values):
            where = checked_indices(op, state, self.name, shape, eval_map(op.value_map(k), indices))
            parts = np.broadcast_arrays(*self.lead, *where, np.asarray(value), state.active())
            *at, written, keep = (np.asarray(x) for x in parts)
            at = tuple(a[keep] for a in at)
            self.array[at] = written[keep]
            np.add.at(self.writes, at, 1)
        if (self.writes > 1).any():
            bad = tuple(int(i) for i in np.argwhere(self.writes > 1)[0])
            raise SimtError(
                f"{op_text(op)}: element {list(bad[len(blocks) :])} of {self.name} is written "
                "by more than one thread of its block"
            )

    def gather(self, op: Operation, state: Simt, indices: Sequence[Any]) -> Any:
        where = checked_indices(op, state, self.name, self.shared_shape, indices)
        at = [*self.lead, *where]
        if state.mask is not None:
            at = [np.where(state.mask, a, 0) for a in at]
        unwritten = self.writes[tuple(at)] == 0
        if state.mask is not None:
            unwritten = unwritten & state.mask
        if unwritten.any():
            lane = _first_lane(np.broadcast_to(unwritten, state.lanes.shape))
            raise SimtError(
                f"{op_text(op)}: {state.lanes.describe(lane)} reads an element of "
                f"{self.name} that no thread of its block wrote"
            )
        return self.array[tuple(at)]


@register_impls
class TileBodyFunctions(SimtFunctions):
    """The ops of a tile kernel's body, on lanes: loops, loads/stores, combine."""

    @impl(loop.ForOp)
    def run_for(self, interpreter: Interpreter, op: loop.ForOp, args: tuple[Any, ...]):
        below = args[0] if args else None
        lower, upper = op.lower.data, op.upper.data
        return run_loop(interpreter, self.state, op, lower, upper, 1, op.kinds, 1, below)

    @impl(tile.StridedForOp)
    def run_strided_for(
        self, interpreter: Interpreter, op: tile.StridedForOp, args: tuple[Any, ...]
    ):
        return run_strided_loop(interpreter, self.state, op, args)

    @impl(tile.StageOp)
    def run_stage(self, interpreter: Interpreter, op: tile.StageOp, args: tuple[Any, ...]):
        return (StagedSlab(op, args[0], eval_map(op.map.data, args[1:])),)

    @impl(tile.ShareOp)
    def run_share(self, interpreter: Interpreter, op: tile.ShareOp, args: tuple[Any, ...]):
        lanes = self.state.lanes
        assert isinstance(lanes, TileLanes)
        return (SharedValues(op, self.state, lanes, args),)

    @impl(loop.LoadOp)
    def run_load(self, interpreter: Interpreter, op: loop.LoadOp, args: tuple[Any, ...]):
        indices = eval_map(op.map.data, args[1:])
        if isinstance(args[0], SharedValues):
            return (args[0].gather(op, self.state, indices),)
        if isinstance(args[0], StagedSlab):
            slab = args[0]
            source = slab.indices(op, self.state, indices)
            return (gather(op, self.state, slab.source, source, slab.op.is_guarded),)
        return (gather(op, self.state, args[0], indices),)

    @impl(loop.StoreOp)
    def run_store(self, interpreter: Interpreter, op: loop.StoreOp, args: tuple[Any, ...]):
        scatter(op, self.state, args[1], eval_map(op.map.data, args[2:]), args[0])
        return ()

    @impl_terminator(loop.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: loop.YieldOp, args: tuple[Any, ...]):
        return ReturnedValues(args), ()

    @impl(tile.CombineOp)
    def run_combine(self, interpreter: Interpreter, op: tile.CombineOp, args: tuple[Any, ...]):
        """Reduce along the thread axis's lane dimension; every thread gets the result.

        Every thread of a group must take part (on the GPU the shuffles and the barriers
        of the shared-memory tree need all of them), so a mask that splits a group is an
        error, not a partial combine.
        """
        owner = op.axis.owner
        kernel = owner.parent_op() if isinstance(owner, Block) else None
        if not isinstance(kernel, tile.KernelOp):
            raise SimtError(f"{op_text(op)}: the combined axis is not an axis of the kernel")
        dim = op.axis.index  # type: ignore[attr-defined]
        shape = self.state.lanes.shape
        if self.state.mask is not None:
            mask = np.broadcast_to(self.state.mask, shape)
            split = mask.any(axis=dim) & ~mask.all(axis=dim)
            if split.any():
                lane = list(_first_lane(split))
                lane.insert(dim, 0)
                raise Divergence(
                    f"{op_text(op)}: only part of the group of {shape[dim]} threads across "
                    f"%{op.axis.name_hint or 'axis'} at {self.state.lanes.describe(tuple(lane))} "
                    "reaches the combine"
                )
        values = []
        for value in args[: len(op.values)]:
            value = np.asarray(value)
            value = value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
            target = list(value.shape)
            target[dim] = shape[dim]
            values.append(np.broadcast_to(value, target))
        totals = reduce_arrays(op.kind_names, values, dim, keepdims=True)
        return tuple(
            np.asarray(total).astype(numpy_dtype(r.type), copy=False)
            for total, r in zip(totals, op.results, strict=True)
        )

    @impl(tile.MmaOp)
    def run_mma(self, interpreter: Interpreter, op: tile.MmaOp, args: tuple[Any, ...]):
        """A warp's tensor-core product (``mma.mma_arrays``). The warps are the block's
        threads taken 32 at a time in ``materialize``'s order (thread axes row-major, the
        last fastest); a mask that splits a warp is an error, as on the GPU."""
        kernel = loop.enclosing_kernel(op)
        assert isinstance(kernel, tile.KernelOp)  # the verifier's
        dims = [k for k, (_, _, binding) in enumerate(kernel.axes) if binding == "thread"]
        shape = self.state.lanes.shape
        threads = math.prod(shape[k] for k in dims)
        if not dims or threads % WARP:
            raise SimtError(f"{op_text(op)}: {threads} threads are not whole warps of {WARP}")

        def warps(value: Any) -> np.ndarray:
            full = np.broadcast_to(np.asarray(value), shape)
            moved = np.moveaxis(full, dims, list(range(len(shape) - len(dims), len(shape))))
            return moved.reshape(*moved.shape[: len(shape) - len(dims)], threads // WARP, WARP)

        if self.state.mask is not None:
            active = warps(self.state.active())
            split = active.any(axis=-1) & ~active.all(axis=-1)
            if split.any():
                raise Divergence(
                    f"{op_text(op)}: only part of a warp runs the tensor-core product "
                    f"(warp {int(np.argwhere(split)[0][-1])} of the block)"
                )
        n_a, n_b = len(op.a), len(op.b)
        regs = [warps(v) for v in args]
        d = mma_arrays(regs[:n_a], regs[n_a : n_a + n_b], regs[n_a + n_b :], op.precision.data)
        kept = [shape[k] for k in range(len(shape)) if k not in dims]
        back = len(shape) - len(dims)
        return tuple(
            np.moveaxis(
                r.reshape(*kept, *(shape[k] for k in dims)),
                list(range(back, len(shape))),
                dims,
            )
            for r in d
        )


@register_impls
class TileFunctions(InterpreterFunctions):
    """``tile.kernel``: runs its body SIMT-vectorised in a nested interpreter."""

    @impl(tile.KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: tile.KernelOp, args: tuple[Any, ...]):
        inputs = [np.asarray(a) for a in args]
        outputs = [poisoned(r.type) for r in op.results]  # type: ignore[arg-type]
        iterated = iterated_axes(op)
        extents = [extent for _, extent, _ in op.axes]
        for indices in itertools.product(*(range(extents[k]) for k in iterated)):
            lanes = TileLanes(op, dict(zip(iterated, indices, strict=True)))
            body = nested_interpreter(op, TileBodyFunctions(Simt(lanes)))
            body.run_ssacfg_region(
                op.body, (*lanes.axis_values(), *inputs, *outputs), op.sym_name.data
            )
        return tuple(outputs)
