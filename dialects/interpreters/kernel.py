"""The kernel level on numpy: SIMT lanes over (blocks, threads), exact barriers, shuffles
and shared memory, and a checker for shared-memory races and out-of-bounds accesses.

Lanes
-----
A ``kernel.kernel`` runs a chunk of blocks at a time, every value an array over
``(blocks of the chunk, threads of a block)`` (``tile.py`` describes the SIMT model: masks
for ``scf.if`` and per-thread trip counts, gathers and scatters on active lanes).
``kernel.thread_id`` is ``arange(threads)`` along the second dimension (x fastest, then y
and z), ``kernel.block_id`` the chunk's block indices along the first. Blocks of one
launch never synchronise with each other, so running a chunk of them in lockstep is
exact; shared memory and the race checker's state are kept per block.

A launch can run **only chosen blocks** (``KernelFunctions(blocks=...)``, see
``select_blocks``): the first, the middle and the last of a full-size grid, say, so the
schedule chosen for a real shape is checked without running 57344 blocks. Outputs start
as NaN (``poisoned``), so what the skipped blocks would have written stays NaN, and each
``Launch`` records the elements its blocks stored.

Hardware primitives
-------------------
* ``kernel.shared``: one array per block of the chunk, uninitialised (NaN) as on the GPU.
* ``kernel.local``: one array per thread (registers on the GPU), uninitialised (NaN).
* ``kernel.barrier``: every thread of a block must reach it. A barrier reached by some
  threads of a block and not others (a barrier under a thread-dependent ``scf.if``, or in a
  loop whose trip count depends on the thread) is ``BarrierDivergence``: it deadlocks the
  block on the GPU. A block whose threads all skip it just goes on.
* ``kernel.shfl_xor %v, o``: lane ``l`` of each warp of 32 gets the value of lane ``l ^ o``
  (``__shfl_xor_sync`` with the full mask). All threads of the warp must execute it
  together, and the source lane must exist (a block of 48 threads has a half warp);
  anything else is undefined on the GPU and a ``Divergence`` error here.
* ``kernel.for`` from a thread-dependent start gives each lane its own trip count.
* ``kernel.cp_async``: the source is read when the copy is issued (inputs are read-only),
  the data is held in the block's open group; ``kernel.cp_async_commit`` closes the group
  and ``kernel.cp_async_wait N`` lands every committed group but the newest N, as writes
  by the issuing threads at that moment (so other warps may read them only after a
  barrier, as on the GPU).
* ``kernel.mbarrier``: per block, per barrier, the state of its current phase (arrivals
  still expected, transaction bytes expected and issued, the TMA copies of the phase)
  and, per thread, how many of its phases the thread has *observed* complete.
  ``kernel.mbarrier_init`` starts phase 0; another warp's use of the barrier before a
  ``kernel.barrier`` follows the init is a race (the init is not visible yet).
* ``kernel.tma_load``: each active lane issues one copy of the whole box: the source is
  read at once (inputs are read-only), the destination is checked as a write by the
  issuing thread now (a read of it by another warp in this epoch is a race: the buffer
  is refilled before every reader is done), and the box is *pending* on the barrier's
  current phase, its elements in flight. ``kernel.mbarrier_arrive_expect_tx`` arrives and
  adds expected bytes. A phase can complete once all its arrivals came and exactly the
  expected bytes were issued; it does at the first ``kernel.mbarrier_wait`` for it: its
  copies land (written by the async proxy: no epoch of their own) and the waiting
  threads observe it. A ``kernel.barrier`` passes what each thread observed on to the
  whole block (``bar.sync`` orders the waiters' reads before everyone after it).
  A wait for parity ``p`` when the current phase's parity is not ``p`` returns at once
  (``try_wait.parity``: the phase before it has completed), observing nothing new.
  A wait for a phase that can never complete (arrivals missing, fewer bytes issued than
  expected: nothing after the wait in program order can complete it) is
  ``MBarrierDeadlock`` instead of a hang; more bytes issued than expected is a race (the
  phase may complete with a copy still in flight), reported at the wait.
  Model: every arrival and copy of a phase precedes, in program order, the waits for it
  (no producer warp issues later while the others wait), which is how materialize
  schedules TMA; and a thread re-arriving on a barrier whose phase already has all its
  arrivals, before anyone waited for it, is an error rather than a guess at the timing.

The race checker: epochs
------------------------
Each block counts the barriers it has passed: its *epoch*. Two accesses to one shared
element in the same epoch have no barrier between them, so nothing orders them. For each
element of each shared array the checker keeps the epoch, thread and op of its last write,
and, for the epoch of its latest reads, one reading thread (and op) per warp. Then:

* a read of an element written in the same epoch by another warp's thread,
* a write to an element written, or read, in the same epoch by another warp's thread,
* one store op whose lanes write *different* values to one element (which wins is
  undefined),

or an access to an element a ``kernel.cp_async`` or a ``kernel.tma_load`` is still copying
to (issued and not yet covered by a ``kernel.cp_async_wait``, or by a completed phase of
its mbarrier: the data may land at any moment between), or an access to an element a TMA
copy landed on a phase the thread has not observed (no ``kernel.mbarrier_wait`` for it,
nor a ``kernel.barrier`` after another thread's) raise ``SharedMemoryRace``, naming the
op (as it prints in its kernel, with its line), the shared array, the element, the block
and both threads (and the earlier access's op). A read of an element no thread has
written yet is ``UninitializedRead``; an index outside the array is ``OutOfBounds``, as
for global memory.

Lanes of one warp count as one agent: a warp executes in lockstep, so its lanes'
accesses are ordered by program order (warp-synchronous execution, which materialize's
shared-memory tree relies on: the 32 lanes of an active warp read their slot and write it
back with one value). Hence the rules speak of *another warp's* thread. Volta's
independent thread scheduling formally needs ``__syncwarp`` for that; the kernel dialect
has none, so hazards between lanes of one warp are reported only in the third case.
Global memory is checked for bounds only: blocks communicating through it within one
launch is undefined and no pass generates it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from deplodock.dialects import kernel
from deplodock.dialects.affine_syntax import eval_map
from deplodock.dialects.interpreters.loop import poisoned
from deplodock.dialects.interpreters.tile import (
    Divergence,
    Lanes,
    OutOfBounds,
    Simt,
    SimtError,
    SimtFunctions,
    buffer_name,
    checked_indices,
    gather,
    nested_interpreter,
    op_text,
    run_strided_loop,
    scatter,
)
from deplodock.dialects.mma import mma_arrays

WARP = 32
LANES = 1 << 15
"""Most lanes (blocks x threads) run at once; a launch runs in chunks of blocks."""
SHADOW = 1 << 22
"""Most per-warp reader entries the race checker keeps for one chunk."""

BlockChoice = None | str | Sequence[int] | Callable[[int], Sequence[int]]
"""Which blocks of a launch run: None (all), ``"sample"`` (the first, the middle and the
last), linear block indices (negative ones count from the end), or a function of the
grid's block count returning indices."""


class SharedMemoryRace(SimtError):
    """Two threads of different warps access one shared element with no barrier between,
    one of them writing."""


class UninitializedRead(SimtError):
    """A thread reads a shared element that no thread has written."""


class BarrierDivergence(Divergence):
    """Some threads of a block reach a barrier and others do not."""


class MBarrierError(SimtError):
    """An mbarrier used in a way the hardware does not define (not initialised, more
    arrivals than a phase expects)."""


class MBarrierDeadlock(MBarrierError):
    """A thread waits for an mbarrier phase that can never complete."""


ASYNC_EPOCH = -2
"""``w_epoch`` of an element a TMA copy wrote: the async proxy, ordered by the mbarrier
(``SharedArray.tma_slot``), not by the block's barriers."""


def select_blocks(choice: BlockChoice, count: int) -> np.ndarray:
    """The linear block indices ``choice`` picks from a grid of ``count`` blocks, sorted."""
    if choice is None:
        return np.arange(count, dtype=np.int64)
    if isinstance(choice, str):
        if choice != "sample":
            raise ValueError(f"blocks='{choice}': expected 'sample', indices or a function")
        picked: Sequence[int] = [0, count // 2, count - 1]
    elif callable(choice):
        picked = choice(count)
    else:
        picked = choice
    out = []
    for index in picked:
        if not -count <= index < count:
            raise ValueError(f"block {index} is outside the grid's {count} blocks")
        out.append(index % count)
    return np.unique(np.asarray(out, dtype=np.int64))


@dataclass
class Launch:
    """One ``kernel.kernel`` run: which blocks ran and which output elements they stored."""

    op: kernel.KernelOp
    blocks: np.ndarray
    stores: list[list[np.ndarray]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.op.sym_name.data

    def written(self, result: int) -> np.ndarray:
        """Sorted flat indices of the elements of result ``result`` that were stored."""
        parts = self.stores[result]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def written_mask(self, result: int) -> np.ndarray:
        """A bool array of result ``result``'s shape: True where a stored element is."""
        shape = tuple(self.op.results[result].type.get_shape())  # type: ignore[attr-defined]
        mask = np.zeros(int(np.prod(shape)), np.bool_)
        mask[self.written(result)] = True
        return mask.reshape(shape)


class BlockLanes(Lanes):
    """Lanes ``(i, j)``: thread ``j`` of block ``blocks[i]``."""

    def __init__(self, op: kernel.KernelOp, blocks: np.ndarray):
        self.block_shape = op.block_shape
        self.grid_shape = op.grid_shape
        self.threads = int(np.prod(self.block_shape))
        self.blocks = blocks
        self.shape = (len(blocks), self.threads)

    @staticmethod
    def _xyz(linear: int, shape: tuple[int, int, int]) -> str:
        if shape[1] == shape[2] == 1:
            return str(linear)
        x, y, z = linear % shape[0], linear // shape[0] % shape[1], linear // (shape[0] * shape[1])
        return f"{linear} ({x}, {y}, {z})"

    def thread(self, j: int) -> str:
        return f"thread {self._xyz(int(j), self.block_shape)}"

    def block(self, i: int) -> str:
        return f"block {self._xyz(int(self.blocks[i]), self.grid_shape)}"

    def describe(self, index: tuple[int, ...]) -> str:
        return f"{self.thread(index[1])} of {self.block(index[0])}"

    def ids(self, linear: np.ndarray, shape: tuple[int, int, int], dim: str) -> np.ndarray:
        """The x, y or z component of linear ids (x fastest)."""
        if dim == "x":
            return linear % shape[0]
        if dim == "y":
            return linear // shape[0] % shape[1]
        return linear // (shape[0] * shape[1])


class _Array:
    """What a kernel's named array (``kernel.shared``, ``kernel.local``) knows of itself."""

    def __init__(self, op: kernel.SharedOp | kernel.LocalOp):
        self.type = op.result.type
        assert isinstance(self.type, MemRefType)
        self.name = op.sym_name.data
        self.shape = tuple(self.type.get_shape())
        self.size = int(np.prod(self.shape))
        self.strides = [int(np.prod(self.shape[k + 1 :])) for k in range(len(self.shape))]

    def flat(self, indices: Sequence[np.ndarray]) -> Any:
        total: Any = 0
        for index, stride in zip(indices, self.strides, strict=True):
            total = total + index * stride
        return total


class SharedArray(_Array):
    """One ``kernel.shared`` allocation for every block of a chunk, with the race
    checker's shadow state (see the module docstring)."""

    def __init__(self, op: kernel.SharedOp, blocks: int, warps: int):
        super().__init__(op)
        size = self.size
        self.data = poisoned(self.type).reshape(1, size).repeat(blocks, axis=0)
        self.w_epoch = np.full((blocks, size), -1, np.int64)
        self.w_thread = np.full((blocks, size), -1, np.int64)
        self.w_op = np.full((blocks, size), -1, np.int64)
        self.r_epoch = np.full((blocks, size), -1, np.int64)
        self.r_thread = np.full((blocks, size, warps), -1, np.int64)
        self.r_op = np.full((blocks, size, warps), -1, np.int64)
        self.in_flight = np.full((blocks, size), -1, np.int64)  # thread of a pending cp.async
        # TMA: the barrier slot (BlockSimt.slots) of a copy in flight to the element, and of
        # the copy that landed it with its phase (-1: none, or since written by a thread).
        self.tma_pending = np.full((blocks, size), -1, np.int64)
        self.tma_slot = np.full((blocks, size), -1, np.int64)
        self.tma_phase = np.full((blocks, size), -1, np.int64)
        self.has_tma = False  # no TMA copy has targeted it: the checks above can skip TMA

    def element(self, e: int) -> str:
        if not self.shape:
            return f'"{self.name}"'
        at = np.unravel_index(int(e), self.shape)
        return f'"{self.name}"[{", ".join(str(int(i)) for i in at)}]'


class LocalArray(_Array):
    """One ``kernel.local`` allocation: an array of its own for every thread of the
    chunk's blocks, uninitialised (NaN). Private, so no race can involve it."""

    def __init__(self, op: kernel.LocalOp, lanes: tuple[int, int]):
        super().__init__(op)
        poison = poisoned(self.type).reshape(1, 1, self.size)
        self.data = poison.repeat(lanes[0], 0).repeat(lanes[1], 1)


class BlockSimt(Simt):
    """A chunk of blocks: lanes, masks, barrier epochs, and where stores are recorded."""

    def __init__(self, lanes: BlockLanes, launch: Launch, outputs: Sequence[np.ndarray]):
        super().__init__(lanes)
        self.lanes: BlockLanes = lanes
        self.launch = launch
        self.epoch = np.zeros(lanes.shape[0], np.int64)
        self.warps = -(-lanes.threads // WARP)
        self.output_of = {id(a): i for i, a in enumerate(outputs)}
        self.ops: list[Operation] = []
        self._op_ids: dict[int, int] = {}
        self.open_copies: list[PendingCopy] = []  # cp.async not yet committed
        self.copy_groups: list[list[PendingCopy]] = []  # committed, in flight, oldest first
        # mbarriers: (array, index) per slot, and per lane the phases of each slot it has
        # observed complete (it may read what copies of phases below that landed).
        self.slots: list[tuple[MBarrierArray, int]] = []
        self.observed = np.zeros((*lanes.shape, 0), np.int64)

    def op_id(self, op: Operation) -> int:
        if id(op) not in self._op_ids:
            self._op_ids[id(op)] = len(self.ops)
            self.ops.append(op)
        return self._op_ids[id(op)]

    def active_lanes(self) -> tuple[np.ndarray, np.ndarray]:
        """(block row, thread) of every active lane."""
        return np.nonzero(self.active())


def _whole_warps(op: Operation, state: BlockSimt, what: str) -> None:
    """Raise ``Divergence`` where only part of a warp is active at ``op`` (a shuffle or a
    tensor-core product needs every lane of its warp)."""
    active = state.active()
    pad = (-state.lanes.threads) % WARP
    by_warp = np.pad(active, ((0, 0), (0, pad)), mode="edge") if pad else active
    by_warp = by_warp.reshape(active.shape[0], -1, WARP)
    split = by_warp.any(axis=2) & ~by_warp.all(axis=2)
    if split.any():
        i, w = (int(x) for x in np.argwhere(split)[0])
        raise Divergence(f"{op_text(op)}: only part of warp {w} of {state.lanes.block(i)} {what}")


def _race(
    op: Operation,
    state: BlockSimt,
    shared: SharedArray,
    row: int,
    element: int,
    what: str,
    other_thread: int,
    other: str,
    other_op: int,
) -> SharedMemoryRace:
    """The error for ``what`` racing with ``other_thread``'s access at ``other_op``
    (-1: the same op, where the racing lanes ran together)."""
    lanes = state.lanes
    if other_op >= 0:
        tail = f" at {op_text(state.ops[other_op])} with no kernel.barrier between"
    else:
        tail = " (which value lands is undefined)"
    return SharedMemoryRace(
        f"{op_text(op)}: shared-memory race in {lanes.block(row)} on "
        f"{shared.element(element)}: {what}, but {lanes.thread(other_thread)} {other}{tail}"
    )


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    equal = a == b
    if np.issubdtype(a.dtype, np.floating):
        equal |= np.isnan(a) & np.isnan(b)
    return equal


@dataclass
class PendingCopy:
    """The lanes of one ``kernel.cp_async`` whose data has not landed yet."""

    op: Operation
    shared: SharedArray
    b: np.ndarray
    t: np.ndarray
    e: np.ndarray
    v: np.ndarray


def _check_in_flight(op: Operation, state: BlockSimt, shared: SharedArray, b, t, e, what) -> None:
    """A shared element with a cp.async or a TMA copy in flight may be neither read nor
    written; one a TMA copy landed only by a thread that observed the copy's phase."""
    pending = shared.in_flight[b, e]
    if (pending >= 0).any():
        i = int(np.argmax(pending >= 0))
        raise SharedMemoryRace(
            f"{op_text(op)}: shared-memory race in {state.lanes.block(b[i])} on "
            f"{shared.element(e[i])}: {state.lanes.thread(t[i])} {what} it while "
            f"{state.lanes.thread(pending[i])}'s cp.async to it is still in flight (no "
            "kernel.cp_async_wait covers it yet)"
        )
    if not shared.has_tma:
        return
    tma = shared.tma_pending[b, e]
    if (tma >= 0).any():
        i = int(np.argmax(tma >= 0))
        array, index = state.slots[int(tma[i])]
        raise SharedMemoryRace(
            f"{op_text(op)}: shared-memory race in {state.lanes.block(b[i])} on "
            f"{shared.element(e[i])}: {state.lanes.thread(t[i])} {what} it while a TMA copy "
            f"to it is still in flight (it completes on {array.element(index)}, whose "
            "phase no kernel.mbarrier_wait has seen complete yet)"
        )
    slot = shared.tma_slot[b, e]
    landed = slot >= 0
    if landed.any():
        seen = state.observed[b[landed], t[landed], slot[landed]]
        unseen = seen <= shared.tma_phase[b[landed], e[landed]]
        if unseen.any():
            i = int(np.flatnonzero(landed)[np.argmax(unseen)])
            array, index = state.slots[int(slot[i])]
            raise SharedMemoryRace(
                f"{op_text(op)}: shared-memory race in {state.lanes.block(b[i])} on "
                f"{shared.element(e[i])}: {state.lanes.thread(t[i])} {what} it, but the TMA "
                f"copy that wrote it completed on phase {int(shared.tma_phase[b[i], e[i]])} "
                f"of {array.element(index)}, which that thread has not waited for (no "
                "kernel.mbarrier_wait of it, nor a kernel.barrier after one): the copy may "
                "still be in flight for it"
            )


def check_read(op: Operation, state: BlockSimt, shared: SharedArray, b, t, e) -> None:
    """Raise on a read of an unwritten element or one another warp wrote this epoch;
    then record the readers."""
    _check_in_flight(op, state, shared, b, t, e, "reads")
    epoch = state.epoch[b]
    written = shared.w_epoch[b, e]
    never = written == -1
    if never.any():
        i = int(np.argmax(never))
        raise UninitializedRead(
            f"{op_text(op)}: {state.lanes.describe((b[i], t[i]))} reads "
            f"{shared.element(e[i])}, which no thread has written"
        )
    writer = shared.w_thread[b, e]
    race = (written == epoch) & (writer // WARP != t // WARP)
    if race.any():
        i = int(np.argmax(race))
        raise _race(
            op,
            state,
            shared,
            b[i],
            e[i],
            f"{state.lanes.thread(t[i])} reads it",
            writer[i],
            "wrote it",
            shared.w_op[b[i], e[i]],
        )
    stale = shared.r_epoch[b, e] != epoch
    if stale.any():
        shared.r_thread[b[stale], e[stale], :] = -1
        shared.r_epoch[b[stale], e[stale]] = epoch[stale]
    shared.r_thread[b, e, t // WARP] = t
    shared.r_op[b, e, t // WARP] = state.op_id(op)


def check_write(
    op: Operation, state: BlockSimt, shared: SharedArray, b, t, e, v, write: bool = True
) -> None:
    """Raise on a write that races with a write or read of another warp this epoch, or
    with another lane of the same store writing a different value; then write (unless
    ``write`` is False: a cp.async checked when issued, written when waited for)."""
    _check_in_flight(op, state, shared, b, t, e, "writes")
    epoch, warp = state.epoch[b], t // WARP
    key = b * shared.data.shape[1] + e
    order = np.argsort(key, kind="stable")
    dup = key[order][1:] == key[order][:-1]
    if dup.any():
        first, second = order[:-1][dup], order[1:][dup]
        clash = (warp[first] != warp[second]) | ~_same(v[first], v[second])
        if clash.any():
            k = int(np.argmax(clash))
            i, j = first[k], second[k]
            raise _race(
                op,
                state,
                shared,
                b[i],
                e[i],
                f"{state.lanes.thread(t[j])} writes {v[j]} to it",
                t[i],
                f"writes {v[i]} to it in the same store",
                -1,
            )
    written, writer = shared.w_epoch[b, e], shared.w_thread[b, e]
    race = (written == epoch) & (writer // WARP != warp)
    if race.any():
        i = int(np.argmax(race))
        raise _race(
            op,
            state,
            shared,
            b[i],
            e[i],
            f"{state.lanes.thread(t[i])} writes it",
            writer[i],
            "wrote it",
            shared.w_op[b[i], e[i]],
        )
    readers = shared.r_thread[b, e]
    others = (
        (shared.r_epoch[b, e] == epoch)[:, None]
        & (readers >= 0)
        & (np.arange(state.warps)[None, :] != warp[:, None])
    )
    if others.any():
        i, w = (int(x) for x in np.argwhere(others)[0])
        raise _race(
            op,
            state,
            shared,
            b[i],
            e[i],
            f"{state.lanes.thread(t[i])} writes it",
            readers[i, w],
            "read it",
            shared.r_op[b[i], e[i], w],
        )
    if not write:
        return
    shared.data[b, e] = v
    shared.w_epoch[b, e] = epoch
    shared.w_thread[b, e] = t
    shared.w_op[b, e] = state.op_id(op)
    if shared.has_tma:
        shared.tma_slot[b, e] = -1


class MBarrierArray:
    """One ``kernel.mbarrier`` allocation for every block of a chunk: per block and
    barrier, the current phase's state (see the module docstring)."""

    def __init__(self, op: kernel.MBarrierOp, state: BlockSimt):
        type_ = op.result.type
        assert isinstance(type_, MemRefType)
        self.name = op.sym_name.data
        (self.size,) = type_.get_shape()
        rows = state.lanes.shape[0]
        shape = (rows, self.size)
        self.count = np.zeros(shape, np.int64)  # arrivals a phase; 0: not initialised
        self.arrivals = np.zeros(shape, np.int64)  # still expected in the current phase
        self.expected = np.zeros(shape, np.int64)  # transaction bytes
        self.issued = np.zeros(shape, np.int64)
        self.phase = np.zeros(shape, np.int64)  # phases completed so far
        self.init_epoch = np.full(shape, -1, np.int64)
        self.init_thread = np.full(shape, -1, np.int64)
        self.pending: dict[tuple[int, int], list[PendingTma]] = {}
        self.base = len(state.slots)
        state.slots.extend((self, i) for i in range(self.size))
        state.observed = np.concatenate(
            [state.observed, np.zeros((*state.lanes.shape, self.size), np.int64)], axis=2
        )

    def element(self, index: int) -> str:
        return f'"{self.name}"[{index}]'


@dataclass
class PendingTma:
    """One TMA copy whose box has not landed yet: its lane, where and what it writes."""

    op: Operation
    shared: SharedArray
    b: np.ndarray  # the block row, once per element
    t: np.ndarray  # the issuing thread, once per element
    e: np.ndarray  # flat destination elements
    v: np.ndarray
    bytes: int


def swizzled(offsets: np.ndarray, element_bytes: int, swizzle: int | None) -> np.ndarray:
    """Where the TMA swizzle mode puts each element offset of a dense box (the offset
    from a destination aligned to the pattern's repeat): 16-byte chunk ``c`` of the
    ``swizzle``-byte row ``r`` goes to chunk ``c xor (r mod (swizzle / 16))``."""
    if swizzle is None:
        return offsets
    byte = offsets * element_bytes
    chunks = swizzle // 16
    row = byte // swizzle
    chunk = (byte // 16) % chunks
    moved = (chunk ^ (row % chunks)) * 16 + byte % 16 + row * swizzle
    return moved // element_bytes


def _barrier_lanes(op, state: BlockSimt, array: MBarrierArray, indices) -> tuple:
    """(block row, thread, barrier index) of each active lane, the index bounds-checked."""
    (index,) = checked_indices(op, state, f'"{array.name}"', (array.size,), indices)
    b, t = state.active_lanes()
    return b, t, state.full(index)[b, t]


def _check_initialised(op, state: BlockSimt, array: MBarrierArray, b, t, i) -> None:
    """The barrier was initialised, and the init is visible to the thread: its own warp
    did it, or a kernel.barrier lies between."""
    missing = array.count[b, i] == 0
    if missing.any():
        k = int(np.argmax(missing))
        raise MBarrierError(
            f"{op_text(op)}: {state.lanes.describe((b[k], t[k]))} uses "
            f"{array.element(int(i[k]))}, which no kernel.mbarrier_init initialised"
        )
    unseen = (array.init_epoch[b, i] == state.epoch[b]) & (
        array.init_thread[b, i] // WARP != t // WARP
    )
    if unseen.any():
        k = int(np.argmax(unseen))
        raise SharedMemoryRace(
            f"{op_text(op)}: shared-memory race in {state.lanes.block(b[k])} on "
            f"{array.element(int(i[k]))}: {state.lanes.thread(t[k])} uses it, but "
            f"{state.lanes.thread(array.init_thread[b[k], i[k]])} initialised it with no "
            "kernel.barrier between"
        )


def _complete(state: BlockSimt, array: MBarrierArray, row: int, index: int) -> None:
    """The current phase of barrier ``index`` in block ``row`` completes: its copies land
    as writes of the async proxy, marked with the phase."""
    phase = int(array.phase[row, index])
    slot = array.base + index
    for copy in array.pending.pop((row, index), []):
        shared = copy.shared
        shared.tma_pending[copy.b, copy.e] = -1
        shared.data[copy.b, copy.e] = copy.v
        shared.w_epoch[copy.b, copy.e] = ASYNC_EPOCH
        shared.w_thread[copy.b, copy.e] = copy.t
        shared.w_op[copy.b, copy.e] = state.op_id(copy.op)
        shared.tma_slot[copy.b, copy.e] = slot
        shared.tma_phase[copy.b, copy.e] = phase
    array.phase[row, index] += 1
    array.arrivals[row, index] = array.count[row, index]
    array.expected[row, index] = 0
    array.issued[row, index] = 0


@register_impls
class KernelBodyFunctions(SimtFunctions):
    """The ops of a kernel body on (block, thread) lanes."""

    state: BlockSimt

    @impl(kernel.ThreadIdOp)
    def run_thread_id(self, interpreter: Interpreter, op: kernel.ThreadIdOp, args: tuple):
        lanes = self.state.lanes
        linear = np.arange(lanes.threads, dtype=np.int64).reshape(1, -1)
        return (lanes.ids(linear, lanes.block_shape, op.dim.data),)

    @impl(kernel.BlockIdOp)
    def run_block_id(self, interpreter: Interpreter, op: kernel.BlockIdOp, args: tuple):
        lanes = self.state.lanes
        return (lanes.ids(lanes.blocks.reshape(-1, 1), lanes.grid_shape, op.dim.data),)

    @impl(kernel.SharedOp)
    def run_shared(self, interpreter: Interpreter, op: kernel.SharedOp, args: tuple):
        return (SharedArray(op, self.state.lanes.shape[0], self.state.warps),)

    @impl(kernel.LocalOp)
    def run_local(self, interpreter: Interpreter, op: kernel.LocalOp, args: tuple):
        return (LocalArray(op, self.state.lanes.shape),)

    @impl(kernel.BarrierOp)
    def run_barrier(self, interpreter: Interpreter, op: kernel.BarrierOp, args: tuple):
        state = self.state
        active = state.active()
        every = active.all(axis=1)
        split = active.any(axis=1) & ~every
        if split.any():
            i = int(np.argmax(split))
            missing = int(np.argmin(active[i]))
            raise BarrierDivergence(
                f"{op_text(op)}: {int(active[i].sum())} of the {state.lanes.threads} threads of "
                f"{state.lanes.block(i)} reach the barrier ({state.lanes.thread(missing)} does "
                "not): a barrier every thread must reach deadlocks the block"
            )
        state.epoch[every] += 1
        if state.observed.shape[2] and every.any():
            # bar.sync orders every waiter's observation before all threads after it.
            seen = state.observed[every].max(axis=1, keepdims=True)
            state.observed[every] = seen
        return ()

    @impl(kernel.ShflXorOp)
    def run_shfl_xor(self, interpreter: Interpreter, op: kernel.ShflXorOp, args: tuple):
        state = self.state
        threads = state.lanes.threads
        active = state.active()
        _whole_warps(op, state, "executes the full-warp shuffle")
        source = np.arange(threads) ^ op.offset.data
        missing = active & (source >= threads)[None, :]
        if missing.any():
            i, j = (int(x) for x in np.argwhere(missing)[0])
            raise Divergence(
                f"{op_text(op)}: {state.lanes.describe((i, j))} reads lane {source[j] % WARP} "
                f"of its warp (thread {source[j]}), which a block of {threads} threads lacks"
            )
        value = state.full(args[0])
        return (value[:, np.minimum(source, threads - 1)],)

    @impl(kernel.MmaOp)
    def run_mma(self, interpreter: Interpreter, op: kernel.MmaOp, args: tuple):
        """A warp's tensor-core product (``mma.mma_arrays``) over each warp of 32 threads;
        every lane of a warp must run it (verified: the block is whole warps)."""
        state = self.state
        blocks, threads = state.lanes.shape
        _whole_warps(op, state, "runs the tensor-core product")
        regs = [state.full(v).reshape(blocks, threads // WARP, WARP) for v in args]
        n_a, n_b = len(op.a), len(op.b)
        d = mma_arrays(regs[:n_a], regs[n_a : n_a + n_b], regs[n_a + n_b :], op.precision.data)
        return tuple(r.reshape(blocks, threads) for r in d)

    @impl(kernel.ForOp)
    def run_for(self, interpreter: Interpreter, op: kernel.ForOp, args: tuple):
        return run_strided_loop(interpreter, self.state, op, args)

    @impl(kernel.LoadOp)
    def run_load(self, interpreter: Interpreter, op: kernel.LoadOp, args: tuple):
        buffer, indices = args[0], eval_map(op.map.data, args[1:])
        if isinstance(buffer, LocalArray):
            flat = self._local_elements(op, buffer, indices)
            b, t = np.indices(flat.shape)
            return (buffer.data[b, t, flat],)
        if not isinstance(buffer, SharedArray):
            return (gather(op, self.state, buffer, indices),)
        state = self.state
        arrays = checked_indices(op, state, f'"{buffer.name}"', buffer.shape, indices)
        flat = state.full(buffer.flat(arrays))
        b, t = state.active_lanes()
        check_read(op, state, buffer, b, t, flat[b, t])
        if state.mask is not None:
            flat = np.where(state.active(), flat, 0)
        rows = np.arange(flat.shape[0]).reshape(-1, 1)
        return (buffer.data[rows, flat],)

    @impl(kernel.StoreOp)
    def run_store(self, interpreter: Interpreter, op: kernel.StoreOp, args: tuple):
        value, buffer, indices = args[0], args[1], eval_map(op.map.data, args[2:])
        state = self.state
        if isinstance(buffer, LocalArray):
            flat = self._local_elements(op, buffer, indices)
            values = state.full(np.asarray(value).astype(buffer.data.dtype, copy=False))
            b, t = state.active_lanes()
            buffer.data[b, t, flat[b, t]] = values[b, t]
            return ()
        if not isinstance(buffer, SharedArray):
            written = scatter(op, state, buffer, indices, value)
            result = state.output_of.get(id(buffer))
            if result is not None:
                state.launch.stores[result].append(written)
            return ()
        arrays = checked_indices(op, state, f'"{buffer.name}"', buffer.shape, indices)
        flat = state.full(buffer.flat(arrays))
        values = state.full(np.asarray(value).astype(buffer.data.dtype, copy=False))
        b, t = state.active_lanes()
        check_write(op, state, buffer, b, t, flat[b, t], values[b, t])
        return ()

    def _local_elements(self, op: Operation, buffer: LocalArray, indices) -> np.ndarray:
        """Each lane's flat element of a local array (inactive lanes: element 0)."""
        state = self.state
        arrays = checked_indices(op, state, f'"{buffer.name}"', buffer.shape, indices)
        flat = state.full(np.asarray(buffer.flat([state.full(a) for a in arrays])))
        return np.where(state.active(), flat, 0) if state.mask is not None else flat

    @impl(kernel.CpAsyncOp)
    def run_cp_async(self, interpreter: Interpreter, op: kernel.CpAsyncOp, args: tuple):
        """Read the source now (it is read-only), check the target as a write now, and
        hold the data in the thread's open group until a wait lands it."""
        source, target, indices = args[0], args[1], args[2:]
        state = self.state
        values = gather(op, state, source, eval_map(op.source_map.data, indices))
        target_indices = eval_map(op.target_map.data, indices)
        arrays = checked_indices(op, state, f'"{target.name}"', target.shape, target_indices)
        flat = state.full(target.flat(arrays))
        full = state.full(np.asarray(values).astype(target.data.dtype, copy=False))
        b, t = state.active_lanes()
        e, v = flat[b, t], full[b, t]
        check_write(op, state, target, b, t, e, v, write=False)
        target.in_flight[b, e] = t
        state.open_copies.append(PendingCopy(op, target, b, t, e, v))
        return ()

    @impl(kernel.CpAsyncCommitOp)
    def run_commit(self, interpreter: Interpreter, op: kernel.CpAsyncCommitOp, args: tuple):
        self.state.copy_groups.append(self.state.open_copies)
        self.state.open_copies = []
        return ()

    @impl(kernel.CpAsyncWaitOp)
    def run_wait(self, interpreter: Interpreter, op: kernel.CpAsyncWaitOp, args: tuple):
        """Land every committed group but the newest ``pending``: the copies become the
        issuing threads' writes now (other warps see them after the next barrier)."""
        state = self.state
        while len(state.copy_groups) > op.pending.data:
            for copy in state.copy_groups.pop(0):
                copy.shared.in_flight[copy.b, copy.e] = -1
                check_write(copy.op, state, copy.shared, copy.b, copy.t, copy.e, copy.v)
        return ()

    @impl(kernel.MBarrierOp)
    def run_mbarrier(self, interpreter: Interpreter, op: kernel.MBarrierOp, args: tuple):
        return (MBarrierArray(op, self.state),)

    @impl(kernel.MBarrierInitOp)
    def run_mbarrier_init(self, interpreter: Interpreter, op: kernel.MBarrierInitOp, args: tuple):
        state, array = self.state, args[0]
        b, t, i = _barrier_lanes(op, state, array, eval_map(op.map.data, args[1:]))
        for row, index in set(zip(b.tolist(), i.tolist(), strict=True)):
            if array.pending.get((row, index)):
                raise MBarrierError(
                    f"{op_text(op)}: {state.lanes.block(row)} initialises "
                    f"{array.element(index)} again while TMA copies complete on it"
                )
        array.count[b, i] = op.count.data
        array.arrivals[b, i] = op.count.data
        array.expected[b, i] = 0
        array.issued[b, i] = 0
        array.init_epoch[b, i] = state.epoch[b]
        array.init_thread[b, i] = t
        return ()

    @impl(kernel.MBarrierArriveExpectTxOp)
    def run_arrive_expect_tx(
        self, interpreter: Interpreter, op: kernel.MBarrierArriveExpectTxOp, args: tuple
    ):
        state, array = self.state, args[0]
        b, t, i = _barrier_lanes(op, state, array, eval_map(op.map.data, args[1:]))
        _check_initialised(op, state, array, b, t, i)
        for row, thread, index in zip(b.tolist(), t.tolist(), i.tolist(), strict=True):
            if array.arrivals[row, index] == 0:
                raise MBarrierError(
                    f"{op_text(op)}: {state.lanes.describe((row, thread))} arrives on phase "
                    f"{int(array.phase[row, index])} of {array.element(index)}, which already "
                    "has all its arrivals and no kernel.mbarrier_wait saw it complete: the "
                    "arrival counts toward that phase or the next one, depending on timing"
                )
            array.arrivals[row, index] -= 1
            array.expected[row, index] += op.bytes.data
        return ()

    @impl(kernel.TmaLoadOp)
    def run_tma_load(self, interpreter: Interpreter, op: kernel.TmaLoadOp, args: tuple):
        """Each active lane issues one copy of the box: read the source now, check the
        destination as the issuing thread's write now, and hold the box on the barrier's
        current phase."""
        source, target, array, indices = args[0], args[1], args[2], args[3:]
        state = self.state
        box = op.box_shape
        b, t, i = _barrier_lanes(op, state, array, eval_map(op.barrier_map.data, indices))
        _check_initialised(op, state, array, b, t, i)
        origin = [
            state.full(np.asarray(x, np.int64))[b, t] for x in eval_map(op.source_map.data, indices)
        ]
        lead = len(origin) - len(box)
        for dim, (o, extent, size) in enumerate(
            zip(origin, [1] * lead + list(box), source.shape, strict=True)
        ):
            out = (o < 0) | (o + extent > size)
            if out.any():
                k = int(np.argmax(out))
                raise OutOfBounds(
                    f"{op_text(op)}: {state.lanes.describe((b[k], t[k]))} copies a box "
                    f"{list(box)} at {[int(x[k]) for x in origin]} of {buffer_name(op)}: "
                    f"dimension {dim} leaves the extent {size} (shape {tuple(source.shape)})"
                )
        target_indices = eval_map(op.target_map.data, indices)
        arrays = checked_indices(op, state, f'"{target.name}"', target.shape, target_indices)
        start = state.full(target.flat(arrays))[b, t]
        count = int(np.prod(box))
        element = source.dtype.itemsize
        offsets = swizzled(np.arange(count, dtype=np.int64), element, op.swizzle_bytes)
        grid = np.indices(box).reshape(len(box), -1)
        for row, thread, index, base, k in zip(
            b.tolist(), t.tolist(), i.tolist(), start.tolist(), range(len(b)), strict=True
        ):
            where = tuple(
                [np.full(count, int(o[k])) for o in origin[:lead]]
                + [int(o[k]) + g for o, g in zip(origin[lead:], grid, strict=True)]
            )
            values = np.asarray(source[where]).astype(target.data.dtype, copy=False)
            e = base + offsets
            rows, threads = np.full(count, row), np.full(count, thread)
            check_write(op, state, target, rows, threads, e, values, write=False)
            target.has_tma = True
            target.tma_pending[rows, e] = array.base + index
            array.pending.setdefault((row, index), []).append(
                PendingTma(op, target, rows, threads, e, values, count * element)
            )
            array.issued[row, index] += count * element
        return ()

    @impl(kernel.MBarrierWaitOp)
    def run_mbarrier_wait(self, interpreter: Interpreter, op: kernel.MBarrierWaitOp, args: tuple):
        """Wait for the phase of the given parity (see the module docstring): complete the
        current phase when its parity is asked for (or report why it never can), then the
        waiting lanes observe every phase before the current one."""
        state, array = self.state, args[0]
        b, t, i = _barrier_lanes(op, state, array, eval_map(op.map.data, args[2:]))
        _check_initialised(op, state, array, b, t, i)
        parity = state.full(np.asarray(args[1], np.int64))[b, t]
        for row, index, p in set(zip(b.tolist(), i.tolist(), parity.tolist(), strict=True)):
            phase = int(array.phase[row, index])
            if p % 2 != phase % 2:
                continue  # the phase before the current one has completed: returns at once
            where = f"phase {phase} of {array.element(index)} in {state.lanes.block(row)}"
            arrivals = int(array.arrivals[row, index])
            expected, issued = int(array.expected[row, index]), int(array.issued[row, index])
            if arrivals:
                raise MBarrierDeadlock(
                    f"{op_text(op)}: deadlock: waits for {where}, which can never complete: "
                    f"{arrivals} arrival(s) missing (no kernel.mbarrier_arrive_expect_tx "
                    "before the wait arrives on it)"
                )
            if issued < expected:
                raise MBarrierDeadlock(
                    f"{op_text(op)}: deadlock: waits for {where}, which can never complete: "
                    f"it expects {expected} bytes, but the TMA copies issued on it bring "
                    f"{issued}"
                )
            if issued > expected:
                raise SharedMemoryRace(
                    f"{op_text(op)}: shared-memory race: {where} expects {expected} bytes "
                    f"(kernel.mbarrier_arrive_expect_tx) but TMA copies of {issued} bytes "
                    "complete on it: the phase may complete while "
                    f"{issued - expected} bytes are still in flight"
                )
            _complete(state, array, row, index)
        slots = array.base + i
        state.observed[b, t, slots] = np.maximum(state.observed[b, t, slots], array.phase[b, i])
        return ()

    @impl_terminator(kernel.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: kernel.YieldOp, args: tuple):
        return ReturnedValues(args), ()


def blocks_per_chunk(op: kernel.KernelOp) -> int:
    """How many blocks run in lockstep: ``LANES`` lanes, ``SHADOW`` reader entries."""
    threads = int(np.prod(op.block_shape))
    warps = -(-threads // WARP)
    shared = sum(
        int(np.prod(s.result.type.get_shape()))  # type: ignore[attr-defined]
        for s in op.walk()
        if isinstance(s, kernel.SharedOp)
    )
    return max(1, min(LANES // threads, SHADOW // max(1, shared * warps)))


@register_impls
class KernelFunctions(InterpreterFunctions):
    """``kernel.kernel``: launches its grid (or the chosen blocks) SIMT-vectorised.

    ``blocks`` picks the blocks of every launch (``BlockChoice``); each run is appended to
    ``launches``.
    """

    def __init__(self, blocks: BlockChoice = None):
        self.blocks = blocks
        self.launches: list[Launch] = []

    @impl(kernel.KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: kernel.KernelOp, args: tuple[Any, ...]):
        inputs = [np.asarray(a) for a in args]
        outputs = [poisoned(r.type) for r in op.results]  # type: ignore[arg-type]
        blocks = select_blocks(self.blocks, int(np.prod(op.grid_shape)))
        launch = Launch(op, blocks, [[] for _ in outputs])
        chunk = blocks_per_chunk(op)
        for start in range(0, len(blocks), chunk):
            lanes = BlockLanes(op, blocks[start : start + chunk])
            body = nested_interpreter(op, KernelBodyFunctions(BlockSimt(lanes, launch, outputs)))
            body.run_ssacfg_region(op.body, (*inputs, *outputs), op.sym_name.data)
        self.launches.append(launch)
        return tuple(outputs)


__all__ = [
    "BarrierDivergence",
    "MBarrierDeadlock",
    "MBarrierError",
    "BlockChoice",
    "Divergence",
    "KernelFunctions",
    "Launch",
    "OutOfBounds",
    "SharedMemoryRace",
    "UninitializedRead",
    "select_blocks",
]
