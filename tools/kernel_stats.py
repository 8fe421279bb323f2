"""What each loop kernel covers and costs at least; the same program run op by op, eagerly.

Per kernel (``program_stats``):

- **covers**: the torch ops it computes, its ``covers`` list (lift-to-loop fills it from
  the provenance decompose leaves in each op's location; fuse merges the lists). The names
  are the ops' result names in the printed torch level (``linear_1``); ``origin_table``
  resolves them to their ATen overload, module and source line (`Origin`), from the
  locations the module's ops carry.
- **reads / writes**: the minimum HBM traffic, every distinct input tensor read once and
  every output written once: what a perfect schedule moves. A tensor the kernel's loads
  reach only in part (the rows a gather takes, a slice) counts those elements: the loads'
  trip counts bound them.
- **FLOPs**: the arithmetic the loop nest executes, each op times its trip count, plus one
  combine per iteration of each reduce loop (so a matmul is 2·M·N·K); casts, constants and
  index math are free. Recomputation that fusion accepted shows here.
- **roofline**: the least time the kernel can take on the target (``roofline_seconds``):
  its minimum traffic at the target's memory bandwidth or its FLOPs at its fp32 rate,
  whichever is longer.

The baseline (``eager_stats``) is the program as eager PyTorch runs it: one kernel per
torch op, reading each of its inputs once and writing its result once, with the FLOPs of
its decomposition. It is computed from the loop level right after lift-to-loop, where
every kernel computes (a part of) one torch op, the last in its ``covers``: an op's
kernels together read the tensors they do not produce themselves and write those that
leave them. A view function (view, transpose, unsqueeze, expand, slice, reshape, ...)
whose kernels only copy one tensor, or an op with no kernel at all (``to`` its own
dtype), is a *view*: eager PyTorch moves no data for it, so it costs nothing here. (Eager
does copy for a reshape of a non-contiguous tensor or ``contiguous()`` of one; the
baseline leaves those copies out.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, StoreOp, YieldOp
from deplodock.dialects.torch import Origin, origins
from deplodock.passes.loop.cost import flops, read_bytes, tensor_bytes

__all__ = [
    "KernelStats",
    "OpStats",
    "eager_stats",
    "flops",
    "format_table",
    "kernel_stats",
    "origin_table",
    "program_stats",
    "roofline_seconds",
    "short_label",
    "tensor_bytes",
]


def covers(kernel: KernelOp) -> tuple[str, ...]:
    attr = kernel.attributes.get("covers")
    if not isinstance(attr, ArrayAttr):
        return ()
    return tuple(a.data for a in attr.data if isinstance(a, StringAttr))


def _distinct(values: Iterable[SSAValue]) -> list[SSAValue]:
    return list({id(v): v for v in values}.values())


@dataclass(frozen=True)
class KernelStats:
    name: str
    covers: tuple[str, ...]
    bytes_read: int
    bytes_written: int
    flops: int


def kernel_stats(kernel: KernelOp) -> KernelStats:
    return KernelStats(
        name=kernel.sym_name.data,
        covers=covers(kernel),
        bytes_read=sum(read_bytes([kernel]).values()),
        bytes_written=sum(tensor_bytes(v) for v in kernel.results),
        flops=flops(kernel),
    )


def program_stats(module: ModuleOp) -> list[KernelStats]:
    return [kernel_stats(op) for op in module.walk() if isinstance(op, KernelOp)]


def origin_table(module: Operation) -> dict[str, Origin]:
    """Every torch op the locations in ``module`` name, by name, in order of appearance."""
    table: dict[str, Origin] = {}
    for op in module.walk():
        for origin in origins(op.location):
            table.setdefault(origin.name, origin)
    return table


# --- the eager baseline --------------------------------------------------------------------


@dataclass(frozen=True)
class OpStats:
    """One torch op run by itself, as eager PyTorch runs it."""

    origin: Origin
    bytes_read: int
    bytes_written: int
    flops: int
    view: bool  # moves no data in eager PyTorch: not a kernel


def _is_copy(kernel: KernelOp) -> bool:
    """One tensor copied (possibly re-indexed): a view's kernel."""
    ops = [op for op in kernel.walk() if op is not kernel]
    return (
        len(_distinct(kernel.inputs)) == 1
        and all(isinstance(op, LoadOp | StoreOp | YieldOp | ForOp) for op in ops)
        and not any(isinstance(op, ForOp) and op.is_reduce for op in ops)
        and sum(isinstance(op, LoadOp) for op in ops) == 1
    )


_EAGER_VIEWS = frozenset(
    {
        "view",
        "_unsafe_view",
        "reshape",
        "transpose",
        "t",
        "permute",
        "unsqueeze",
        "squeeze",
        "expand",
        "expand_as",
        "slice",
        "select",
        "narrow",
        "alias",
        "as_strided",
        "contiguous",
        "to",
        "_to_copy",
        "detach",
        "view_as",
        "flatten",
        "unflatten",
        "movedim",
        "swapaxes",
        "diagonal",
        "split",
        "chunk",
        "unbind",
        "lift_fresh_copy",
        "clone",
    }
)
"""ATen functions that eager PyTorch runs as a view (or, for `to`, `contiguous` and
`clone` of what is already in place, not at all) whenever a view can express them."""


def _is_view(origin: Origin, group: Sequence[KernelOp]) -> bool:
    """No kernel of its own (it aliases a value), or a view function whose kernels only
    copy one tensor."""
    if not group:
        return True
    named = not origin.target or origin.op in _EAGER_VIEWS
    return named and all(_is_copy(k) for k in group)


def eager_stats(lifted: ModuleOp) -> list[OpStats]:
    """The baseline of the module docstring, from the module right after lift-to-loop:
    one entry per torch op its kernels name, in order of first appearance."""
    table = origin_table(lifted)
    kernels = [op for op in lifted.walk() if isinstance(op, KernelOp)]
    groups: dict[str, list[KernelOp]] = {}
    for kernel in kernels:
        names = covers(kernel) or (kernel.sym_name.data,)
        for name in names:
            groups.setdefault(name, [])
        groups[names[-1]].append(kernel)
    stats: list[OpStats] = []
    for name, group in groups.items():
        origin = table.get(name, Origin(name, ""))
        if _is_view(origin, group):
            stats.append(OpStats(origin, 0, 0, 0, view=True))
            continue
        members = set(group)
        produced = {id(r) for k in group for r in k.results}
        outputs = [
            r for k in group for r in k.results if any(u.operation not in members for u in r.uses)
        ]
        stats.append(
            OpStats(
                origin,
                sum(b for v, b in read_bytes(group).items() if v not in produced),
                sum(tensor_bytes(v) for v in outputs),
                sum(flops(k) for k in group),
                view=False,
            )
        )
    return stats


# --- the table -----------------------------------------------------------------------------

_SHORT_OPS = {"scaled_dot_product_attention": "sdpa"}


def _op_kind(origin: Origin) -> str:
    kind = origin.op.strip("_") if origin.target else origin.name
    return _SHORT_OPS.get(kind, kind)


def _leaf(scope: str) -> str:
    """A module's short name: its attribute name, qualified by the index of the innermost
    numbered container around it (``layers.3.self_attn.q_proj`` → ``3.q_proj``; the
    layer itself ``layers.3``)."""
    parts = scope.split(".")
    numbered = [i for i, part in enumerate(parts) if part.isdigit()]
    if not numbered or len(parts) == 1:
        return parts[-1]
    i = numbered[-1]
    return ".".join(parts[-2:]) if i == len(parts) - 1 else f"{parts[i]}.{parts[-1]}"


def _within(scope: str, module: str) -> bool:
    return scope == module or scope.startswith(module + ".")


def short_label(
    names: Sequence[str],
    table: dict[str, Origin],
    views: set[str] | frozenset[str] = frozenset(),
    weight: dict[str, int] | None = None,
) -> str:
    """A kernel's torch ops, short. Views are left out (free in eager PyTorch). A module
    whose every other op, its submodules' included, the kernel covers is named alone
    (``q_proj``, ``input_layernorm``), the outermost such; the remaining ops are grouped
    under the module they ran in (``self_attn: neg mul×2 cat add``; bare at the root).
    Groups come in order of ``weight`` (an op's eager FLOPs, say), heaviest first, else in
    program order."""
    kept = [n for n in names if n not in views] or list(names)
    covered = set(kept)
    live = {n: o for n, o in table.items() if n not in views}
    whole: dict[str, bool] = {}

    def is_whole(module: str) -> bool:
        if module not in whole:
            inside = {n for n, o in live.items() if _within(o.scope, module)}
            whole[module] = bool(inside) and inside <= covered
        return whole[module]

    groups: dict[str, list[Origin]] = {}  # label -> its ops, in order of appearance
    for name in kept:
        origin = table.get(name, Origin(name, ""))
        parts = origin.scope.split(".") if origin.scope else []
        module = next(
            (
                ".".join(parts[:i])
                for i in range(1, len(parts) + 1)
                if is_whole(".".join(parts[:i]))
            ),
            None,
        )
        key = f"={module}" if module is not None else origin.scope
        groups.setdefault(key, []).append(origin)

    def text(key: str, members: list[Origin]) -> str:
        if key.startswith("="):
            return _leaf(key[1:])
        counts: dict[str, int] = {}
        for origin in members:
            kind = _op_kind(origin)
            counts[kind] = counts.get(kind, 0) + 1
        ops = " ".join(k if n == 1 else f"{k}×{n}" for k, n in counts.items())
        return f"{_leaf(key)}: {ops}" if key else ops

    order = list(groups.items())
    if weight is not None:
        order.sort(key=lambda kv: -sum(weight.get(o.name, 0) for o in kv[1]))
    return ", ".join(text(k, m) for k, m in order)


def _size(n: float, unit: str = "B") -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if abs(n) < 1000 or prefix == "T":
            return f"{n:.0f} {prefix}{unit}" if prefix == "" else f"{n:.1f} {prefix}{unit}"
        n /= 1000
    return f"{n} {unit}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def roofline_seconds(bytes_moved: int, work: int, target=None) -> float:
    """The least time a kernel moving ``bytes_moved`` and doing ``work`` FLOPs can take on
    ``target`` (``deplodock.target``; None: sm_90): the longer of the two at its rates."""
    from deplodock.target import target_for

    target = target or target_for()
    return max(bytes_moved / target.bandwidth, work / target.fp32_flops)


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} µs" if us < 1e4 else f"{us / 1e3:.1f} ms"


def format_table(
    fused: list[KernelStats],
    eager: list[OpStats] | None = None,
    table: dict[str, Origin] | None = None,
    *,
    verbose: bool = False,
    width: int = 120,
    target=None,
) -> str:
    """Per kernel: minimum reads and writes, FLOPs, its roofline on ``target`` (None:
    sm_90), the torch ops it covers (short; with ``verbose`` each op on a line of its
    own: name, overload, source line, module); totals, and the eager baseline when
    given."""
    table = table or {}
    views = {s.origin.name for s in eager if s.view} if eager is not None else set()
    weight = {s.origin.name: s.flops for s in eager} if eager is not None else None
    name_w = min(max([len(k.name) for k in fused] + [len("unfused (eager)")]), 30)
    head = f"{'kernel':<{name_w}} {'reads':>9} {'writes':>9} {'FLOPs':>9} {'roofline':>9}  "
    ops_w = max(width - len(head), 20)
    lines = [head + "torch ops"]

    def row(label: str, read: int, written: int, work: int, what: str) -> str:
        roof = _us(roofline_seconds(read + written, work, target))
        return (
            f"{_clip(label, name_w):<{name_w}} {_size(read):>9} {_size(written):>9} "
            f"{_size(work, ''):>9} {roof:>9}  {what}"
        )

    for k in fused:
        lines.append(
            row(
                k.name,
                k.bytes_read,
                k.bytes_written,
                k.flops,
                _clip(short_label(k.covers, table, views, weight), ops_w),
            )
        )
        if verbose:
            for name in k.covers:
                origin = table.get(name)
                if origin is None or not origin.target:
                    lines.append(f"    {name}")
                    continue
                packet = (
                    origin.target.rsplit(".", 1)[0]
                    if origin.target.count(".") >= 2
                    else origin.target
                )
                text = f"    {name} ({packet})"
                text += f" {origin.where}" if origin.where else ""
                text += f" in {origin.scope}" if origin.scope else ""
                text += "  [view]" if name in views else ""
                lines.append(text)
    lines.append(
        row(
            "total",
            sum(k.bytes_read for k in fused),
            sum(k.bytes_written for k in fused),
            sum(k.flops for k in fused),
            f"{len(fused)} kernels",
        )
    )
    if eager is not None:
        ops = [s for s in eager if not s.view]
        lines.append(
            row(
                "unfused (eager)",
                sum(s.bytes_read for s in ops),
                sum(s.bytes_written for s in ops),
                sum(s.flops for s in ops),
                f"{len(ops)} kernels, one per torch op (+{len(eager) - len(ops)} views, free)",
            )
        )
    return "\n".join(lines)
