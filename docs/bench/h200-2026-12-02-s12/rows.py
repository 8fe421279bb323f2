"""Row reductions of several passes on the H200: the online softmax against the two-pass
form it replaces, each beside eager and torch.compile in one run.

    python3 docs/bench/h200-2026-12-02-s12/rows.py [CASE ...]      # default: all

Each case is lowered three ways through the passes' own options (never by patching a
planner): ``online`` (the default pipeline), ``two-pass`` (``online-softmax{min_row}``
above the row: the max and exp-sum loops kept apart, the code before session 12) and
``online-t128`` (``cooperative-reduce{threads=128}`` on top: a smaller group a row).
Every variant is checked against eager (max |got - want| / max |want| <= 1e-5) on fresh
inputs, then all are timed with ``time_graphs`` in one run. One line a case: each
variant's µs, eager's and torch.compile's, the best variant's speedups and its GB/s
(each input read once, the output written once) against the measured copy bandwidth.
"""

import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")

F = torch.nn.functional
CASES = {  # name: (function, input makers)
    "softmax_seed": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(1, 28, 2048, 2048)]),
    "softmax_odd": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(4096, 50257)]),
    "softmax_short_rows": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8192, 16, 1000)]),
    "softmax_few_long": (lambda x: torch.softmax(x, -1), [lambda: torch.randn(8, 2**22)]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [lambda: torch.randn(16384, 8191)]),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), [lambda: torch.randn(16384, 8191)]),
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


def variants():
    from deplodock.passes.loop.online_softmax import OnlineSoftmax
    from deplodock.passes.tile.cooperative_reduce import CooperativeReduce

    return {
        "online": {},
        "two-pass": {"online-softmax": OnlineSoftmax(min_row=2**40)},
        "online-t128": {"cooperative-reduce": CooperativeReduce(threads=128)},
    }


def build(module, inputs, options):
    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.frontends.export import export_module, import_program
    from deplodock.pipeline import lower

    imported = import_program(export_module(module, tuple(inputs), "rows"))
    lowered = lower(imported.module, to="kernel", options=options)
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
    for label, options in variants().items():
        started = time.perf_counter()
        try:
            program = build(module, inputs, options)
        except Exception as e:  # recorded, the run goes on
            notes.append(f"{label}: failed {type(e).__name__}: {str(e)[:160]}")
            continue
        seconds = time.perf_counter() - started
        (got,) = program(*inputs)
        error = ((got - want).abs().max() / want.abs().max()).item()
        shape = [(k.sym_name.data, k.grid_shape[0], k.block_shape[0]) for k in program.kernels]
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
            f"torch.compile, {moved / d / 1e3:.0f} GB/s ({100 * moved / (d * 1e-6) / bandwidth:.0f}% of copy)"
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
