"""What a loop-level kernel costs: how often each op runs (``trips``), the work it does
(ops, arithmetic executed and necessary) and the memory it moves (bytes loaded, the
minimum HBM traffic) and ``--stats``' figures: ``read_bytes`` (what the loads can reach,
each distinct index map once) and ``flops`` (computing ops and reduce combines,
conversions free). Fusion decides with the first (``fuse.fusion_cost``) and
``deplodock.kernel_stats`` reports the others, from this one module.

Two read measures remain, and they differ where one input is loaded by two loops at the
same elements: ``minimum_traffic`` (fusion) counts each load's points, so a gathered
embedding row that RMSNorm reads twice counts twice (TinyLlama's ``k_mul_4``: 533 KB),
while ``read_bytes`` (``--stats``) counts each distinct map once (271 KB). On the 173
loop kernels of the benchmark suite they agree; making fusion use ``read_bytes`` may
change its decisions, so it waits for a measured GPU run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Operation, SSAValue

from deplodock.dialects.interpreters.scalar import numpy_dtype
from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, StoreOp, YieldOp


def external_operands(op: Operation) -> Iterator[SSAValue]:
    """Operands of ``op`` and of the ops nested in it that are defined outside ``op``."""
    if not op.regions:
        yield from op.operands
        return
    for inner in op.walk():
        for value in inner.operands:
            if not op.is_ancestor(value.owner):
                yield value


def trips(op: Operation) -> int:
    """How many times ``op`` runs: the product of the extents of the loops around it."""
    count = 1
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        if isinstance(parent, ForOp):
            count *= parent.extent
        parent = parent.parent_op()
    return count


def work(kernel: KernelOp) -> int:
    """Ops executed: every op but loops and yields, times its trip count."""
    return sum(
        trips(op)
        for op in kernel.walk()
        if op is not kernel and not isinstance(op, ForOp | YieldOp)
    )


def is_arithmetic(op: Operation) -> bool:
    """Ops that compute (not data movement, loop structure or index math)."""
    return not op.regions and not isinstance(
        op, LoadOp | StoreOp | YieldOp | arith.ConstantOp | affine.ApplyOp
    )


def dependences(kernel: KernelOp) -> dict[Operation, frozenset[ForOp]]:
    """For each op of ``kernel``, the loops whose induction variables its value depends on
    (through its operands, transitively; a reduce loop's result not on the loop itself)."""
    depends: dict[Operation, frozenset[ForOp]] = {}

    def of(value: SSAValue) -> frozenset[ForOp]:
        owner = value.owner
        if isinstance(owner, Operation):
            return depends.get(owner, frozenset())
        loop = owner.parent_op()
        return frozenset([loop]) if isinstance(loop, ForOp) else frozenset()

    for op in kernel.walk():
        if op is not kernel:
            depends[op] = frozenset().union(*(of(v) for v in external_operands(op)))
    return depends


def points(loops: Iterable[ForOp]) -> int:
    """Iterations of a set of loops together: the product of their extents."""
    return math.prod(loop.extent for loop in loops)


def arithmetic_work(
    kernel: KernelOp, depends: dict[Operation, frozenset[ForOp]] | None = None
) -> tuple[int, int]:
    """(executed, necessary) arithmetic: each op times its trip count, and times only the
    extents of the loops its value depends on (what it would cost computed once per point).

    The gap is recomputation: an op left inside a loop it does not depend on because a
    loop it does depend on is nested there (a prologue inside a matmul's K loop reruns per
    output column). ``depends``: ``dependences(kernel)``, where the caller has it.
    """
    executed = necessary = 0
    for op, loops in (depends or dependences(kernel)).items():
        if is_arithmetic(op):
            executed += trips(op)
            necessary += points(loops)
    return executed, necessary


def bytes_read(kernel: KernelOp, cached_bytes: int = 0) -> int:
    """Bytes loaded: every load's element size times its trip count, except that a buffer
    of at most ``cached_bytes`` counts its size once (it stays in cache after first use).
    """
    total = 0
    small: set[SSAValue] = set()
    for op in kernel.walk():
        if isinstance(op, LoadOp):
            type_ = op.buffer.type
            assert isinstance(type_, MemRefType)
            size = numpy_dtype(type_.element_type).itemsize
            if math.prod(type_.get_shape()) * size <= cached_bytes:
                small.add(op.buffer)
            else:
                total += trips(op) * size
    for buf in small:
        assert isinstance(buf.type, MemRefType)
        total += math.prod(buf.type.get_shape()) * numpy_dtype(buf.type.element_type).itemsize
    return total


def minimum_traffic(
    kernel: KernelOp, depends: dict[Operation, frozenset[ForOp]] | None = None
) -> tuple[int, int]:
    """HBM bytes (read, written) at least: each output written once, each input read once,
    or only the elements its loads can touch where that is fewer (each load touches at
    most one element per point of the loops its index depends on: a gather of 128 rows
    reads 128 rows of a 32000-row embedding table, not the table). ``depends``:
    ``dependences(kernel)``, where the caller has it."""
    touched: dict[SSAValue, int] = {}
    for op, loops in (depends or dependences(kernel)).items():
        if isinstance(op, LoadOp):
            touched[op.buffer] = touched.get(op.buffer, 0) + points(loops)
    read = written = 0
    inputs = set(kernel.input_buffers)
    for buf in kernel.body.block.args:
        type_ = buf.type
        assert isinstance(type_, MemRefType)
        count = math.prod(type_.get_shape())
        size = numpy_dtype(type_.element_type).itemsize
        if buf in inputs:
            read += min(count, touched.get(buf, 0)) * size
        else:
            written += count * size
    return read, written


def minimum_bytes(
    kernel: KernelOp, depends: dict[Operation, frozenset[ForOp]] | None = None
) -> int:
    """Bytes read and written at least (``minimum_traffic``)."""
    return sum(minimum_traffic(kernel, depends))


def tensor_bytes(value: SSAValue) -> int:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return math.prod(type_.get_shape()) * numpy_dtype(type_.element_type).itemsize


_FREE = (
    LoadOp,
    StoreOp,
    YieldOp,
    arith.ConstantOp,
    arith.IndexCastOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.SIToFPOp,
    arith.FPToSIOp,
    arith.ExtSIOp,
    arith.ExtUIOp,
    arith.TruncIOp,
)  # data movement, constants and conversions: no FLOPs


def flops(kernel: KernelOp) -> int:
    """Arithmetic executed: each computing op times its trip count, plus one combine per
    iteration of a reduce loop for each value it carries."""
    total = 0
    for op in kernel.walk():
        if op is kernel:
            continue
        if isinstance(op, ForOp):
            if op.is_reduce:
                total += trips(op) * op.extent * len(op.results)
        elif not op.regions and not isinstance(op, _FREE) and op.name != "affine.apply":
            total += trips(op)
    return total


def read_bytes(kernels: Sequence[KernelOp]) -> dict[int, int]:
    """Bytes read of each input tensor (by id) of ``kernels``: the whole tensor once, or
    what the loads can reach when that is less (the rows a gather takes, a slice). A
    load reaches at most its trip count of elements; loads at the same index map reach
    the same ones (a row read by two loops), so each distinct map counts once."""
    whole: dict[int, int] = {}
    reach: dict[tuple[int, str], int] = {}
    for kernel in kernels:
        for value, buf in zip(kernel.inputs, kernel.input_buffers, strict=True):
            whole[id(value)] = tensor_bytes(value)
            for use in buf.uses:
                if isinstance(use.operation, LoadOp):
                    load = use.operation
                    key = (id(value), str(load.map.data))
                    elements = trips(load) * numpy_dtype(load.result.type).itemsize
                    reach[key] = max(reach.get(key, 0), elements)
    loaded: dict[int, int] = {}
    for (value, _), n in reach.items():
        loaded[value] = loaded.get(value, 0) + n
    return {v: min(b, loaded.get(v, 0)) for v, b in whole.items()}
