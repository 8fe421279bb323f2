"""Session 41: what a call of a ``deplodock.compile``d function costs on the host.
``plan_shapes.py`` (session 40, timed in call 3) measured ~190-230 us a call for small
attention programs whose kernel takes ~10-30 us: the calls, not the kernels. Here, for a
one-kernel program (``x * 2 + 1`` on 4096 elements) and a small attention, the time of a
call (wall clock, host and device, 200 calls after a warm-up, synchronized at the end),
beside eager and ``torch.compile`` in the same process, with ``graph=True`` too, then
where a call's host time goes (cProfile, the top functions by their own time).

    python3 overhead.py
"""

import cProfile
import pstats
import sys
import time

import torch
import torch.nn.functional as F

import deplodock
from deplodock.bench.profile import kernel_times


class Affine(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def per_call_us(fn, args, calls: int = 200) -> float:
    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> int:
    gpu = torch.cuda.is_available()
    dev = "cuda" if gpu else "cpu"
    torch.manual_seed(0)
    programs = [
        ("x * 2 + 1, 4096 elements", Affine(), (torch.randn(4096, device=dev),)),
        (
            "causal attention 1 x 16 x 256 x 64",
            Attention(),
            tuple(torch.randn(1, 16, 256, 64, device=dev) for _ in range(3)),
        ),
    ]
    for name, module, args in programs:
        fn = deplodock.compile(module, *args, cache=False)
        if not gpu:
            print(f"{name}: compiled; no GPU to run on")
            continue
        graphed = deplodock.compile(module, *args, cache=False, graph=True)
        compiled = torch.compile(module)
        times = {
            "eager": per_call_us(module, args),
            "torch.compile": per_call_us(compiled, args),
            "deplodock": per_call_us(fn, args),
            "deplodock graph=True": per_call_us(graphed, args),
        }
        print(f"== {name}: " + "; ".join(f"{k} {v:.1f} us a call" for k, v in times.items()))
        for label, f in (("eager", module), ("deplodock", fn)):
            rows = kernel_times(lambda f=f, args=args: f(*args), calls=5)
            print(
                f"   {label} GPU work a call: "
                + "; ".join(f"{r.name[:50]} x{r.launches:g} {r.us:.1f} us" for r in rows[:4])
            )
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(200):
            fn(*args)
        torch.cuda.synchronize()
        profile.disable()
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
