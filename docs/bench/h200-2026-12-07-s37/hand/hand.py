"""Session 37: time hand-edited variants of the 16 x 8 gate kernel (TinyLlama's gate at
S=512, K in 3: ``k_linear_chunks``, grid 528 x 128) against the generated one, to see
which fill keeps its issue slots busy (Nsight Compute: 80% against cuBLAS's 85%; ptxas
sinks the register prefetch's global loads to ~250 instructions before their stores).

    python3 hand.py g_prefetch.cu d_store_first.cu n_narrow.cu e_narrow_lanes.cu

g: as generated (register prefetch); d: the prefetched registers stored at the top of the
next iteration, loads two chunks ahead; n: ``fill-k-loop{narrow=true}`` (4-byte cp.async,
each thread four consecutive k); e: n with consecutive threads on consecutive elements
(every copy instruction a warp's whole sectors, conflict-free shared stores).
"""

import statistics
import sys
from pathlib import Path

import torch

from deplodock.backends.cuda.driver import LoadedModule
from deplodock.backends.cuda.nvrtc import compile_cuda

torch.manual_seed(0)
x = torch.randn(512, 2048, device="cuda")
w = torch.randn(5632, 2048, device="cuda") / 2048**0.5
want = x @ w.T
fns = {}
for name in sys.argv[1:]:
    compiled = compile_cuda(Path(name).read_text())
    res = compiled.resources["k_linear_chunks"]
    fns[name] = LoadedModule(compiled).function("k_linear_chunks")
    print(f"{name}: {res.registers} registers, {res.shared_bytes} B shared, spills {res.spill_stores}")
parts = {}
for name, fn in fns.items():
    p = torch.full((3, 512, 5632), float("nan"), device="cuda")
    fn.launch((528, 1, 1), (128, 1, 1), [x, w, p])
    torch.cuda.synchronize()
    err = ((p.sum(0) - want).abs().max() / want.abs().max()).item()
    parts[name] = p
    print(f"{name}: max rel err {err:.2e}")
times = {n: [] for n in fns}
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
p = torch.empty(3, 512, 5632, device="cuda")
for _ in range(7):
    for name, fn in fns.items():
        for _ in range(3):
            fn.launch((528, 1, 1), (128, 1, 1), [x, w, p])
        start.record()
        for _ in range(20):
            fn.launch((528, 1, 1), (128, 1, 1), [x, w, p])
        end.record()
        torch.cuda.synchronize()
        times[name].append(start.elapsed_time(end) * 1000 / 20)
for name, ts in times.items():
    print(f"{name}: median {statistics.median(ts):.1f} us (min {min(ts):.1f}, max {max(ts):.1f})")
