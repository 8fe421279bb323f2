"""Variants of a program, built through the passes' own options, against eager and
torch.compile in one run: the tool behind the sessions' probe scripts
(``docs/bench/*/rows.py``, ``large_rows.py``), which now only declare their cases and
variants::

    CASES = {"softmax_odd": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 50257)])}

    def variants(name):  # label -> {pass name: configured pass}; {} is the default pipeline
        return {"large": {}, "global": {"stage-inputs": StageInputs(large=False)}}

    if __name__ == "__main__":
        compare(CASES, variants, sys.argv[1:])

Each variant is lowered with ``lower(options=..., guard=False)`` (a forced schedule is
what is measured, so the roofline guard must not replace it), checked against eager on
the case's inputs (max |got - want| / max |want| at most ``TOLERANCE``: a variant that
misses it is reported and not timed), then every variant that passed, eager and
torch.compile are timed with ``time_graphs`` in one run (TF32 off). One line a case: each
one's µs, the fastest variant's speedups and its GB/s (each input read once, each output
written once) with its share of ``H200_COPY_BANDWIDTH``; indented beneath, each variant's
error, build time and kernels (name, grid, block, dynamic shared bytes). Needs a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

TOLERANCE = 1e-5
Case = tuple[Callable[..., torch.Tensor], Sequence[Callable[[], torch.Tensor]]]


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def build(module: torch.nn.Module, inputs, options: dict):
    """``module`` on ``inputs`` compiled for sm_90 with the passes ``options`` override."""
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.frontends.capture import export_module
    from deplodock.frontends.export import import_program
    from deplodock.pipeline import lower

    imported = import_program(export_module(module, tuple(inputs), "the case"))
    lowered = lower(imported.module, to="kernel", options=options, guard=False)
    return CompiledProgram(lowered, arch="sm_90", cache=False)


def run_case(name: str, case: Case, variants: dict[str, dict]) -> str:
    """The report of one case (see the module docstring)."""
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.bench import H200_COPY_BANDWIDTH

    fn, makers = case
    module = _Fn(fn)
    inputs = [make().cuda() for make in makers]
    want = module(*inputs)
    candidates, notes = {}, []
    for label, options in variants.items():
        started = time.perf_counter()
        try:
            program = build(module, inputs, options)
        except Exception as e:  # recorded, the run goes on
            notes.append(f"{label}: failed {type(e).__name__}: {str(e)[:160]}")
            continue
        seconds = time.perf_counter() - started
        (got,) = program(*inputs)
        error = ((got - want).abs().max() / want.abs().max()).item()
        kernels = [
            (k.sym_name.data, k.grid_shape[0], k.block_shape[0], k.dynamic_shared_bytes())
            for k in program.kernels
        ]
        notes.append(f"{label}: err {error:.1e}, {seconds:.1f} s, {kernels}")
        if error <= TOLERANCE:
            candidates[label] = lambda p=program: p(*inputs, poison=False)
    compiled = torch.compile(module)
    compiled(*inputs)
    candidates["eager"] = lambda: module(*inputs)
    candidates["torch.compile"] = lambda: compiled(*inputs)
    us = {k: v.median_us for k, v in time_graphs(candidates, 10, 5).items()}
    ours = {k: v for k, v in us.items() if k not in ("eager", "torch.compile")}
    line = f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in us.items()) + " us"
    if ours:
        best = min(ours, key=ours.get)
        d = us[best]
        moved = sum(i.numel() * i.element_size() for i in inputs)
        moved += want.numel() * want.element_size()
        rate = moved / (d * 1e-6)
        line += (
            f"; best {best}: {us['eager'] / d:.2f}x eager, {us['torch.compile'] / d:.2f}x "
            f"torch.compile, {rate / 1e9:.0f} GB/s ({100 * rate / H200_COPY_BANDWIDTH:.0f}% "
            "of 4.25 TB/s)"
        )
    return line + "\n    " + "\n    ".join(notes)


def compare(
    cases: dict[str, Case], variants: Callable[[str], dict[str, dict]], names: Sequence[str]
) -> None:
    """Print ``run_case`` for each of ``names`` (every case when empty). With no GPU:
    each variant built and compiled (NVRTC), nothing timed, and that said."""
    import deplodock
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.bench import strict_fp32

    unknown = [n for n in names if n not in cases]
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(unknown)}; the cases: {', '.join(cases)}")
    if not gpu_available():
        for name in names or list(cases):
            fn, makers = cases[name]
            module, inputs = _Fn(fn), [make() for make in makers]
            for label, options in variants(name).items():
                try:
                    build(module, inputs, options)
                    print(f"{name} {label}: built and compiled", flush=True)
                except Exception as e:  # recorded, the run goes on (as run_case)
                    print(f"{name} {label}: failed {type(e).__name__}: {str(e)[:160]}")
        print("no CUDA GPU on this machine: nothing timed")
        return
    strict_fp32()
    print(f"deplodock from {deplodock.__file__}", flush=True)
    for name in names or list(cases):
        print(run_case(name, cases[name], variants(name)), flush=True)
        torch.cuda.empty_cache()
