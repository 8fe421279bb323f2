"""Rows past 48 KB on the H200: stage-inputs' large slab (the whole row in dynamic shared
memory, filled by cp.async) against the row read from global memory again, beside eager
and torch.compile in one run.

    python3 docs/bench/h200-2026-12-03-s13/large_rows.py [CASE ...]      # default: all

Each case is lowered two ways through the passes' own options (``variants``): ``large``
(the default pipeline of session 13) and ``global`` (``stage-inputs{large=false}``: the
row re-read from HBM, the code before); ``two_sums`` (two independent sums fused into one
kernel) ``chunked`` against ``one-block``. Every variant is checked against eager (max
|got - want| / max |want| <= 1e-5) on fresh inputs, then all are timed with
``time_graphs`` in one run. One line a case: each variant's µs, eager's and
torch.compile's, the best variant's speedups and its GB/s (each input read once, the
output written once) against the measured copy bandwidth; its notes give each variant's
kernels (name, grid, block, dynamic shared bytes).
"""

import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")

F = torch.nn.functional
CASES = {  # name: (function, input makers)
    "softmax_odd": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "softmax_12289": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(16384, 12289)]),
    "softmax_16k": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 16384)]),
    "softmax_32k": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 32768)]),
    "log_softmax_odd": (lambda x: torch.log_softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "layernorm_20011": (
        lambda x, w, b: F.layer_norm(x, (20011,), w, b),
        [lambda: torch.randn(8192, 20011), lambda: torch.randn(20011), lambda: torch.randn(20011)],
    ),
    "rmsnorm_32k": (
        lambda x, w: F.rms_norm(x, (32768,), w),
        [lambda: torch.randn(4096, 32768), lambda: torch.randn(32768)],
    ),
    "softmax_24000": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 24000)]),
    "softmax_28000": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 28000)]),
    "two_sums": (
        lambda x, y: x.sum() + y.sum(),
        [lambda: torch.randn(16384, 16384), lambda: torch.randn(20000)],
    ),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t),
        [lambda: torch.randn(8192, 32001), lambda: torch.randint(0, 32001, (8192,))],
    ),
}


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def variants(name: str):
    """The default pipeline against the code before it: rows re-read from global memory
    (``stage-inputs{large=false}``); for ``two_sums`` the fused kernel left whole
    (``chunk-reduce{chunks=1}``, what chunk-reduce did with two reductions before)."""
    from deplodock.passes.tile.chunk_reduce import ChunkReduce
    from deplodock.passes.tile.stage_inputs import StageInputs

    if name == "two_sums":
        return {"chunked": {}, "one-block": {"chunk-reduce": ChunkReduce(chunks=1)}}
    return {"large": {}, "global": {"stage-inputs": StageInputs(large=False)}}


def build(module, inputs, options):
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.frontends.export import export_module, import_program
    from deplodock.pipeline import lower

    imported = import_program(export_module(module, tuple(inputs), "rows"))
    lowered = lower(imported.module, to="kernel", options=options, guard=False)
    return CompiledProgram(lowered, arch="sm_90", cache=False)


def copy_bandwidth() -> float:
    from deplodock.backends.cuda.timing import time_graphs

    x = torch.empty(2**29, device="cuda")
    copy = time_graphs({"copy": lambda: x.clone()}, rounds=5, calls=5)["copy"].median_us
    return 2 * x.numel() * 4 / (copy * 1e-6)


def run_case(name: str, bandwidth: float) -> str:
    from deplodock.backends.cuda.timing import time_graphs

    fn, makers = CASES[name]
    module = Fn(fn)
    inputs = [m().cuda() for m in makers]
    want = module(*inputs)
    candidates, notes = {}, []
    for label, options in variants(name).items():
        started = time.perf_counter()
        try:
            program = build(module, inputs, options)
        except Exception as e:  # recorded, the run goes on
            notes.append(f"{label}: failed {type(e).__name__}: {str(e)[:160]}")
            continue
        seconds = time.perf_counter() - started
        (got,) = program(*inputs)
        error = ((got - want).abs().max() / want.abs().max()).item()
        shape = [
            (k.sym_name.data, k.grid_shape[0], k.block_shape[0], k.dynamic_shared_bytes())
            for k in program.kernels
        ]
        notes.append(f"{label}: err {error:.1e}, {seconds:.1f} s, {shape}")
        if error <= 1e-5:
            candidates[label] = lambda p=program: p(*inputs, poison=False)
    compiled = torch.compile(module)
    compiled(*inputs)
    candidates["eager"] = lambda: module(*inputs)
    candidates["torch.compile"] = lambda: compiled(*inputs)
    us = {k: v.median_us for k, v in time_graphs(candidates, 10, 5).items()}
    ours = {k: v for k, v in us.items() if k not in ("eager", "torch.compile")}
    best = min(ours, key=ours.get) if ours else None
    moved = sum(i.numel() * i.element_size() for i in inputs) + want.numel() * 4
    line = f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in us.items()) + " us"
    if best is not None:
        d = us[best]
        line += (
            f"; best {best}: {us['eager'] / d:.2f}x eager, {us['torch.compile'] / d:.2f}x "
            f"torch.compile, {moved / d / 1e3:.0f} GB/s "
            f"({100 * moved / (d * 1e-6) / bandwidth:.0f}% of copy)"
        )
    return line + "\n    " + "\n    ".join(notes)


def main(names):
    import deplodock
    from deplodock.bench import strict_fp32

    strict_fp32()
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s ({deplodock.__file__})", flush=True)
    for name in names:
        print(run_case(name, bandwidth), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
