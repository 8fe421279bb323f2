"""What each loop kernel costs at least: bytes it must move, arithmetic it must do.

The minimum traffic of a kernel is every distinct input tensor read once and every output
written once: what a perfect schedule moves through HBM. Arithmetic is the ops the loop
nest executes (each op times its trip count), the figure fusion's cost guard also uses.
Comparing the totals of the fused program with those of the program right after
lift-to-loop (one kernel per tensor op) shows what fusion saved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

from deplodock.dialects.interpreters.scalar import numpy_dtype
from deplodock.dialects.loop import KernelOp


def tensor_bytes(value: SSAValue) -> int:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return math.prod(type_.get_shape()) * numpy_dtype(type_.element_type).itemsize


@dataclass(frozen=True)
class KernelStats:
    name: str
    covers: tuple[str, ...]
    bytes_read: int
    bytes_written: int
    arithmetic: int


def kernel_stats(kernel: KernelOp) -> KernelStats:
    from deplodock.passes.loop.fuse import arithmetic_work

    covers = kernel.attributes.get("covers")
    names = tuple(a.data for a in covers.data) if covers is not None else ()  # type: ignore[attr-defined]
    distinct = {id(v): v for v in kernel.inputs}.values()
    return KernelStats(
        name=kernel.sym_name.data,
        covers=names,
        bytes_read=sum(tensor_bytes(v) for v in distinct),
        bytes_written=sum(tensor_bytes(v) for v in kernel.results),
        arithmetic=arithmetic_work(kernel)[0],
    )


def program_stats(module: ModuleOp) -> list[KernelStats]:
    return [kernel_stats(op) for op in module.walk() if isinstance(op, KernelOp)]


def _size(n: float, unit: str = "B") -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} {prefix}{unit}" if prefix == "" else f"{n:.1f} {prefix}{unit}"
        n /= 1000
    return f"{n} {unit}"


def format_table(fused: list[KernelStats], unfused: list[KernelStats] | None) -> str:
    """Per kernel: what it covers, its minimum reads and writes, its arithmetic; totals."""
    lines = [f"{'kernel':<28} {'reads':>10} {'writes':>10} {'ops':>10}  covers"]
    for k in fused:
        covers = ", ".join(k.covers)
        if len(covers) > 60:
            covers = covers[:57] + "..."
        lines.append(
            f"{k.name:<28} {_size(k.bytes_read):>10} {_size(k.bytes_written):>10} "
            f"{_size(k.arithmetic, ''):>10}  {covers}"
        )

    def total(label: str, rows: list[KernelStats]) -> str:
        return (
            f"{label:<28} {_size(sum(k.bytes_read for k in rows)):>10} "
            f"{_size(sum(k.bytes_written for k in rows)):>10} "
            f"{_size(sum(k.arithmetic for k in rows), ''):>10}  {len(rows)} kernels"
        )

    lines.append(total("total", fused))
    if unfused is not None:
        lines.append(total("unfused (after lift-to-loop)", unfused))
    return "\n".join(lines)
