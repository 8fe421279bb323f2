"""Issue 19's reduction families on the H200: deplodock against eager and torch.compile.

    python3 docs/bench/h200-2026-12-02-s10/reductions.py [CASE ...]    # default: all

Each case is a function of CUDA tensors compiled with ``deplodock.compile`` (fp32, TF32
off), checked against eager (max |got - want| / max |want| <= 1e-4 for the 1e9-element
loss, 1e-5 else), then timed beside eager and torch.compile with ``time_graphs`` in one
run. Prints one line a case: the three times, the speedups, and deplodock's GB/s (each
input read once) against the measured copy bandwidth. Run once with the session's code
and once with the code before it (``PYTHONPATH`` of an older wheel) for before/after.
"""

import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")

CASES = {  # name: (function, input shapes, rtol)
    "middle_axis_sum": (lambda x: x.sum(1), [(8, 4096, 4096)], 1e-5),
    "middle_axis_mean": (lambda x: x.mean(1), [(32, 2048, 2048)], 1e-5),
    "first_axis_amax": (lambda x: x.amax(0), [(8192, 8192)], 1e-5),
    "full_sum_2d": (lambda x: x.sum(), [(4096, 4096)], 1e-5),
    "full_sum_4d_small": (lambda x: x.sum((0, 1, 2, 3)), [(2, 3, 10, 68)], 1e-5),
    "mse_1e9": (
        lambda a, b: torch.nn.functional.mse_loss(a, b),
        [(1024, 1024, 1024), (1024, 1024, 1024)],
        1e-4,
    ),
}


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def copy_bandwidth() -> float:
    from deplodock.backends.cuda.timing import time_graphs

    x = torch.empty(2**29, device="cuda")
    copy = time_graphs({"copy": lambda: x.clone()}, rounds=5, calls=5)["copy"].median_us
    return 2 * x.numel() * 4 / (copy * 1e-6)


def run_case(name: str, bandwidth: float) -> str:
    import deplodock
    from deplodock.backends.cuda.timing import time_graphs

    fn, shapes, rtol = CASES[name]
    module = Fn(fn)
    inputs = [torch.randn(*s, device="cuda") for s in shapes]
    started = time.perf_counter()
    try:
        fast = deplodock.compile(module, *inputs, cache=False)
    except Exception as e:  # recorded, the run goes on
        return f"{name}: compile failed: {type(e).__name__}: {str(e)[:200]}"
    compile_s = time.perf_counter() - started
    got, want = fast(*inputs), module(*inputs)
    error = ((got - want).abs().max() / want.abs().max()).item()
    kernels = [(k.sym_name.data, k.grid_shape[0], k.block_shape[0]) for k in fast.program.kernels]
    if error > rtol:
        return f"{name}: WRONG, max rel err {error:.2e}"
    compiled = torch.compile(module)
    compiled(*inputs)
    one = time_graphs({"deplodock": lambda: fast(*inputs)}, rounds=1, calls=1)
    slow = one["deplodock"].median_us > 2e5  # a pathological schedule: time it less
    rounds, calls = (3, 1) if slow else (10, 5)
    candidates = {
        "deplodock": lambda: fast(*inputs),
        "eager": lambda: module(*inputs),
        "torch.compile": lambda: compiled(*inputs),
    }
    us = {k: v.median_us for k, v in time_graphs(candidates, rounds, calls).items()}
    moved = sum(i.numel() * 4 for i in inputs) + got.numel() * 4
    rate = moved / (us["deplodock"] * 1e-6)
    d, e, c = us["deplodock"], us["eager"], us["torch.compile"]
    return (
        f"{name} {[list(s) for s in shapes]}: err {error:.1e}; deplodock {d:.1f} us, "
        f"eager {e:.1f}, torch.compile {c:.1f}; {e / d:.2f}x eager, {c / d:.2f}x "
        f"torch.compile; {rate / 1e9:.0f} GB/s ({100 * rate / bandwidth:.0f}% of copy); "
        f"compiled in {compile_s:.1f} s; kernels {kernels}"
    )


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
