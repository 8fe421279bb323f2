"""What a scheduled kernel will take, roughly, against the least it could take.

``kernel_estimate`` prices any ``kernel.kernel`` from its launch and its loop nest, with
no measurement of its own: the work every thread does (each op times the trips of the
loops around it, ``per_thread_ops``), how many threads an SM holds at once (threads,
shared memory), and the target's rates. Three times bound it from below, and the
estimate is the longest:

* **memory**: the kernel's minimum traffic (each buffer of the signature read or written
  once) at the target's bandwidth, scaled up when too few threads are resident to keep
  it busy (``BANDWIDTH_THREADS`` an SM; a one-block kernel reaches a fraction of it);
* **issue**: every thread's ops at the target's rate of one op a lane a cycle
  (``fp32_flops / 2``: an FMA is two FLOPs), scaled up likewise for too few warps;
* **latency**: the busiest thread's longest chain of dependent ops (``CYCLES_PER_OP``
  each; ``per_thread_chain``: a reduce loop's body shared among its accumulators), once a
  wave of blocks (a kernel of one thread walking a long loop is this; a register tile's
  many sums are not: before session 40 every op counted as dependent, and the register-
  tiled attention walk, 72.7 us on an H100, was estimated at 226 us, latency-bound).

The *roofline* is the longer of the traffic at the bandwidth and the FLOPs at the fp32
rate: what no schedule beats (``kernel_stats.roofline_seconds``'s rule). A kernel whose
estimate is more than ``ROOFLINE_GUARD`` times its roofline (or ``LAUNCH_SECONDS``,
whichever is longer: a tiny kernel is bound by its launch) has a schedule that throws
the GPU away (one thread, one block of a big reduction, a serial loop over a whole
tensor); ``beyond_guard`` says which, ``--resources`` prints the figures, ``-v`` warns,
and a test keeps the corpus and the benchmark's programs within it.

The model is coarse by design (no caches, no bank conflicts, no coalescing): it finds
cliffs of parallelism, an order of magnitude or more, not the last 20%; the schedules'
own cost functions (``matmul.estimate_seconds``, ``reduce.cooperation_threads``) are the
fine ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import Operation

from deplodock.dialects import kernel
from deplodock.dialects.access import memref_bytes
from deplodock.dialects.loop import vector_of
from deplodock.dialects.mma import LANE_FLOPS
from deplodock.target import Target, target_for

THREADS_PER_SM = 2048  # resident threads an SM holds at most (sm_80 on; sm_75: 1024)
BLOCKS_PER_SM = 32  # resident blocks an SM holds at most
BANDWIDTH_THREADS = 1024  # resident threads an SM needs to keep memory busy (Little's law)
ISSUE_THREADS = 512  # resident threads an SM needs to issue every cycle (4 schedulers)
CYCLES_PER_OP = 8  # a dependent op's latency, roughly (ALU 4-6, shared memory 20-30)
CLOCK_HZ = 1.75e9  # the SM clock the latency term counts in
LAUNCH_SECONDS = 2e-6  # a launch and its tail: below this a kernel is as fast as any
ROOFLINE_GUARD = 16.0  # an estimate this many rooflines away is a cliff


@dataclass(frozen=True)
class Estimate:
    seconds: float  # the estimate
    roofline: float  # the least time any schedule takes
    bound: str  # what bounds the estimate: memory, issue or latency
    threads: int  # threads launched

    @property
    def ratio(self) -> float:
        """The estimate in rooflines (the launch time at least)."""
        return self.seconds / max(self.roofline, LAUNCH_SECONDS)


def _trips(loop: kernel.ForOp) -> int:
    """A thread's iterations of ``loop``: its count from 0 by its step, vectors counted."""
    count = loop.upper.data // vector_of(loop)
    return max(1, -(-count // loop.step.data))


def _counted(op: Operation, counts, chains: int | None = None) -> float:
    """Ops of ``op``'s body one thread executes that ``counts``, each times the trips of
    the loops around it inside ``op`` (a branch counted as if taken). With ``chains``
    (``per_thread_chain``), an op directly in a reduce loop's body counts once per
    accumulator of that loop (its ops spread over the accumulators' chains)."""
    total = 0.0
    for region in op.regions[:1]:
        for child in region.block.ops if region.blocks else ():
            if isinstance(child, kernel.ForOp):
                inner = None if chains is None else max(1, len(child.results))
                total += _trips(child) * _counted(child, counts, inner)
            elif child.regions:
                total += _counted(child, counts, chains)
            else:
                total += int(counts(child)) / (chains or 1)
    return total


def _costs(op: Operation) -> int:
    """Issue slots: one an op; a tensor-core product as the FMAs it replaces (the model
    has no tensor-core rate: it prices them no faster than FMAs, a bound from above)."""
    if isinstance(op, kernel.MmaOp):
        return LANE_FLOPS // 2
    return int(not isinstance(op, arith.ConstantOp | affine.ApplyOp))


def per_thread_ops(op: Operation) -> int:
    """Ops one thread executes in ``op`` (constants and index math free)."""
    return int(_counted(op, _costs))


def per_thread_chain(op: Operation) -> float:
    """The longest chain of dependent ops one thread executes in ``op``, roughly: its ops
    one after another, except that the ops directly in a reduce loop's body are shared
    among its accumulators' independent chains (a register tile of 32 sums is 32 chains;
    one sum, a serial walk, is one). Nested loops run one after another."""
    return _counted(op, _costs, 1)


def _flops(op: Operation) -> int:
    if isinstance(op, kernel.MmaOp):
        return LANE_FLOPS
    if isinstance(op, kernel.YieldOp):  # a reduce loop's combine, one a value
        return sum(isinstance(v.type, AnyFloat) for v in op.operands)
    float_result = any(isinstance(r.type, AnyFloat) for r in op.results)
    return int(float_result and op.name.startswith(("arith.", "math.")))


def thread_flops(op: Operation) -> int:
    """Float arithmetic one thread executes in ``op``: float ops and the combines of its
    reduce loops (a matmul's thread does 2 FLOPs a product)."""
    return int(_counted(op, _flops))


def traffic_bytes(op: kernel.KernelOp) -> int:
    """Each buffer of the kernel's signature read or written once."""
    return sum(memref_bytes(b.type) for b in (*op.input_buffers, *op.output_buffers))


def kernel_estimate(op: kernel.KernelOp, target: Target | None = None) -> Estimate:
    """The estimate of ``op`` on ``target`` (None: sm_90; module docstring)."""
    target = target or target_for()
    block = math.prod(op.block_shape)
    grid = math.prod(op.grid_shape)
    shared = op.shared_bytes()
    fit = min(THREADS_PER_SM // max(block, 1), BLOCKS_PER_SM)
    if shared:
        fit = min(fit, max(1, target.shared_bytes // shared))
    fit = max(fit, 1)
    resident_blocks = min(grid, target.sm_count * fit)
    resident = resident_blocks * block / target.sm_count  # threads an SM, on average
    waves = -(-grid // (target.sm_count * fit))
    ops = per_thread_ops(op)
    traffic = traffic_bytes(op)
    memory = traffic / target.bandwidth / min(1.0, resident / BANDWIDTH_THREADS)
    issue = ops * grid * block / (target.fp32_flops / 2) / min(1.0, resident / ISSUE_THREADS)
    latency = waves * per_thread_chain(op) * CYCLES_PER_OP / CLOCK_HZ
    seconds, bound = max((memory, "memory"), (issue, "issue"), (latency, "latency"))
    flops = thread_flops(op) * grid * block
    roofline = max(traffic / target.bandwidth, flops / target.fp32_flops)
    return Estimate(seconds, roofline, bound, grid * block)


def beyond_guard(estimate: Estimate) -> bool:
    """Whether a kernel's estimate is a cliff: ``ROOFLINE_GUARD`` rooflines or more."""
    return estimate.ratio > ROOFLINE_GUARD


def worst_beyond_guard(
    kernels: Sequence[kernel.KernelOp], target: Target | None = None
) -> tuple[kernel.KernelOp, Estimate] | None:
    """The kernel of ``kernels`` furthest beyond the guard, with its estimate; None where
    each is within it."""
    beyond = [(k, e) for k in kernels if beyond_guard(e := kernel_estimate(k, target))]
    return max(beyond, key=lambda ke: ke[1].ratio, default=None)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def prefer_default(
    name: str,
    forced: Sequence[kernel.KernelOp],
    default: Sequence[kernel.KernelOp] | None,
    target: Target | None = None,
) -> tuple[bool, str | None]:
    """The roofline guard's decision for the loop kernel ``name``: whether the ``default``
    lowering (the planners' schedule; None: it did not lower) replaces the ``forced`` one
    (the options' schedule), and the note saying so (None: ``forced`` is within the guard
    and stays, unremarked). A forced lowering beyond the guard gives way to a default
    whose estimate (its kernels' in all) is lower; else it stays, and the note says why."""
    worst = worst_beyond_guard(forced, target)
    if worst is None:
        return False, None
    op, e = worst
    forced_s = sum(kernel_estimate(k, target).seconds for k in forced)
    if e.roofline >= LAUNCH_SECONDS:
        floor = f"its roofline {_us(e.roofline)}"
    else:  # the ratio's floor is a launch
        floor = f"a launch, {_us(LAUNCH_SECONDS)}; its roofline {_us(e.roofline)}"
    what = f"estimate {_us(e.seconds)}, {e.ratio:.0f}x {floor}"
    if len(forced) > 1:
        what = f"@{op.sym_name.data}'s {what}; {_us(forced_s)} in all"
    head = f"{name}: schedule beyond the roofline guard ({what})"
    if default is None:
        return False, f"{head}; kept: the default schedule did not lower"
    default_s = sum(kernel_estimate(k, target).seconds for k in default)
    if default_s < forced_s:
        return True, f"{head}; replaced by the default schedule (estimate {_us(default_s)})"
    return False, f"{head}; kept: the default schedule is no better (estimate {_us(default_s)})"
