"""Does NVRTC compile in parallel on the host's cores? ``compile_kernels`` runs the
missing units on a thread pool (``jobs``): the distinct kernels of a two-layer TinyLlama
at seq 128 compiled with 1 thread, with every core, and in a pool of processes (fork),
no disk cache, wall time and this process's CPU time (children's included) each.

    python3 docs/bench/h200-2026-12-05-s24/nvrtc_threads.py
"""

import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from deplodock.backends.cuda.emit import emit_kernel_sources
from deplodock.backends.cuda.nvrtc import compile_cuda, compile_kernels, normalise_kernel
from deplodock.frontends.export import import_program
from deplodock.frontends.models import capture_model
from deplodock.pipeline import compile_fitting


class _NoCompile:
    resources: dict = {}


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


captured = capture_model("tinyllama", layers=2, seq=128, device="meta")
lowered, _, _ = compile_fitting(
    import_program(captured.program).module, compile_source=lambda s: _NoCompile()
)
sources = emit_kernel_sources(lowered)
units = {normalise_kernel(n, s): n for n, s in sources.items()}
cores = len(os.sched_getaffinity(0))
print(f"{len(sources)} kernels, {len(units)} units, {cores} cores")
for jobs in (1, cores, 1, cores):
    wall, used = time.perf_counter(), cpu()
    compile_kernels(sources, cache=False, jobs=jobs)
    print(f"threads {jobs:>2}: wall {time.perf_counter() - wall:.2f} s, cpu {cpu() - used:.2f} s")
wall, used = time.perf_counter(), cpu()
with ProcessPoolExecutor(cores, mp_context=get_context("fork")) as pool:
    list(pool.map(compile_cuda, list(sources[n] for n in units.values()), ["sm_90"] * len(units)))
print(f"processes {cores} (fork, start and stop included): wall "
      f"{time.perf_counter() - wall:.2f} s, cpu {cpu() - used:.2f} s")
