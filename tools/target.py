"""The GPU a program is compiled for: ``Target``, one per CUDA architecture.

Every pass that decides something from the hardware (how many blocks fill the GPU, how
much shared memory a block may take, whether ``cp.async`` or TMA exist, how fast an SM
multiplies) reads it from the ``Target`` of the arch it was given (``arch`` option,
``sm_90`` by default), and the CLI and the API check ``--arch`` / ``arch=`` against
``TARGETS`` before any work: an architecture deplodock has no description of is an
error, not a silent sm_90 schedule.

The numbers: the sm_90 entry is the H200 this project is measured on (132 SMs; cuBLAS's
fp32 GEMM at 51 TFLOP/s and a 4.25 TB/s copy, measured); the others are one common part
of each architecture, from its datasheet (SM count, fp32 peak, memory bandwidth, L2) and
CUDA's per-architecture limits (shared memory a block may opt in to). Their schedules
follow from those numbers and their features; only sm_90 code has run (on the H200). An
sm_80 cubin does not load on sm_90 (a cubin runs within its major version): running sm_80's
schedules on the H200 needs their PTX (``compute_80``) compiled there by the driver.

The architectures are those NVRTC 13 compiles for that have a part to take numbers from:
sm_75 T4, sm_80 A100, sm_86 A10, sm_87 Jetson AGX Orin, sm_89 L4, sm_90 H200 (and sm_90a,
the same with ``wgmma``), sm_100 B200, sm_120 GeForce RTX 5090 (the write-up's GPU). NVRTC
13 also knows sm_88, sm_103 (B300), sm_107, sm_110 (Jetson Thor) and sm_121 (DGX Spark);
they have no entry yet (no datasheet this project has checked gives every number), so
``--arch`` refuses them before any work, and a GPU of one of them is described from the
device when it is the one present (``backends.cuda.driver.device_target``). The features
are derived from the arch: ``cp.async`` from sm_80, TMA and transaction-count mbarriers
from sm_90 (sm_100 and sm_120 included: the copies the schedules use are sm_90's PTX),
``wgmma`` on sm_90a only (sm_100's tensor-core MMA is ``tcgen05`` of sm_100a, sm_120 has
neither); ``mma`` lists the element types of ``mma.sync`` (f8 from sm_89).

This module imports nothing of deplodock's: every level may use it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass


class UnknownTarget(ValueError):
    """An ``arch`` that names no architecture deplodock describes (says which do)."""


@dataclass(frozen=True)
class Target:
    """One CUDA architecture and the part its numbers are taken from."""

    arch: str  # what NVRTC is given: sm_90, sm_90a, ...
    part: str  # the GPU the numbers describe
    sm_count: int
    shared_bytes: int  # shared memory one block may use (opt-in above 48 KB)
    fp32_flops: float  # the part's fp32 FMA rate, FLOP/s (measured on the H200, else peak)
    bandwidth: float  # bytes/s of device memory (measured on the H200, else peak)
    mma: tuple[str, ...] = ()  # element types of the warp-level mma.sync it has
    registers_per_thread: int = 255
    registers_per_sm: int = 65536
    threads_per_block: int = 1024
    warp_size: int = 32
    static_shared_bytes: int = 48 * 1024  # above this a kernel needs dynamic shared memory
    measured: bool = False  # the rates were measured here (else datasheet figures)
    l2_bytes: int = 4 * 1024 * 1024  # the L2 cache (the datasheet's)

    @property
    def sm(self) -> int:
        """The compute capability as a number: 90 for sm_90 and sm_90a."""
        return int(re.match(r"sm_(\d+)", self.arch).group(1))

    @property
    def cp_async(self) -> bool:
        """Asynchronous global-to-shared copies (``cp.async``, sm_80 on)."""
        return self.sm >= 80

    @property
    def tma(self) -> bool:
        """The tensor memory accelerator (``cp.async.bulk.tensor``, mbarriers: sm_90 on)."""
        return self.sm >= 90

    @property
    def wgmma(self) -> bool:
        """Warp-group matrix multiply (``wgmma.mma_async``): sm_90a only."""
        return self.arch == "sm_90a"

    @property
    def sm_flops(self) -> float:
        """One SM's share of ``fp32_flops``."""
        return self.fp32_flops / self.sm_count


_H200 = Target(
    "sm_90",
    "NVIDIA H200",
    sm_count=132,
    shared_bytes=227 * 1024,
    fp32_flops=51e12,
    bandwidth=4.25e12,
    mma=("f16", "bf16", "tf32", "f8"),
    measured=True,
    l2_bytes=60 * 1024 * 1024,
)

TARGETS: dict[str, Target] = {
    t.arch: t
    for t in (
        Target("sm_75", "NVIDIA T4", 40, 64 * 1024, 8.1e12, 320e9, mma=("f16",), l2_bytes=4 << 20),
        Target(
            "sm_80",
            "NVIDIA A100 SXM 80 GB",
            108,
            163 * 1024,
            19.5e12,
            2.04e12,
            mma=("f16", "bf16", "tf32"),
            l2_bytes=40 << 20,
        ),
        Target(
            "sm_86",
            "NVIDIA A10",
            72,
            99 * 1024,
            31.2e12,
            600e9,
            mma=("f16", "bf16", "tf32"),
            l2_bytes=6 << 20,
        ),
        Target(
            "sm_87",
            "NVIDIA Jetson AGX Orin 64 GB",
            16,
            163 * 1024,
            5.3e12,
            204.8e9,
            mma=("f16", "bf16", "tf32"),
            l2_bytes=4 << 20,
        ),
        Target(
            "sm_89",
            "NVIDIA L4",
            58,
            99 * 1024,
            30.3e12,
            300e9,
            mma=("f16", "bf16", "tf32", "f8"),
            l2_bytes=48 << 20,
        ),
        _H200,
        dataclasses.replace(_H200, arch="sm_90a"),
        Target(
            "sm_100",
            "NVIDIA B200 (HGX, 1000 W)",
            148,
            227 * 1024,
            80e12,
            8e12,
            mma=("f16", "bf16", "tf32", "f8"),
            l2_bytes=126 << 20,
        ),
        Target(
            "sm_120",
            "NVIDIA GeForce RTX 5090",
            170,
            99 * 1024,
            104.8e12,
            1.792e12,
            mma=("f16", "bf16", "tf32", "f8"),
            l2_bytes=96 << 20,
        ),
    )
}

DEFAULT_ARCH = "sm_90"

MAX_SHARED_BYTES = max(t.shared_bytes for t in TARGETS.values())
"""The most shared memory a block has on any target: what the dialects' verifiers allow
(a schedule for a smaller target is that target's planner's to keep within it)."""


def target_for(arch: str | None = None) -> Target:
    """The ``Target`` of ``arch`` (None: ``DEFAULT_ARCH``), or ``UnknownTarget``."""
    arch = arch or DEFAULT_ARCH
    if arch not in TARGETS:
        raise UnknownTarget(
            f"unknown CUDA architecture {arch!r}: deplodock has targets for "
            f"{', '.join(TARGETS)} (sm_90 is the H100/H200, sm_120 the RTX 5090)"
        )
    return TARGETS[arch]


def pass_target(pass_name: str, arch: str) -> Target:
    """``target_for(arch)`` for a pass's ``arch`` option: an unknown one is the pass's
    diagnostic (``deplo-opt -p 'fill-k-loop{arch=sm_7}'`` says so, exit 1)."""
    from xdsl.utils.exceptions import DiagnosticException

    try:
        return target_for(arch)
    except UnknownTarget as e:
        raise DiagnosticException(f"{pass_name}: {e}") from None


def register_target(target: Target) -> None:
    """Add ``target`` to ``TARGETS`` (a GPU this process runs on that has no entry:
    ``backends.cuda.driver.device_target`` describes it from the device)."""
    TARGETS.setdefault(target.arch, target)
