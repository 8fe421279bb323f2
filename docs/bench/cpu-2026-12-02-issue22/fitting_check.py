"""The cases whose kernels spill when lowered straight for an arch (``arch_check.py``),
compiled as ``deplodock run`` and ``bench`` compile them, by ``pipeline.compile_program``
(a capped register tile that spills is compiled again uncapped, a fused reduction that
still spills is split off: ``compile_fitting``): the spilling kernels left. No GPU needed:
    python docs/bench/cpu-2026-12-02-issue22/fitting_check.py ARCH:CASE ... > fitting.txt"""

import sys
import time
import warnings

warnings.filterwarnings("ignore")

from deplodock.bench.cases import all_cases  # noqa: E402
from deplodock.frontends.export import import_program  # noqa: E402
from deplodock.pipeline import compile_program  # noqa: E402

cases = {c.name: c for c in all_cases()}
for item in sys.argv[1:]:
    arch, name = item.split(":", 1)
    start = time.perf_counter()
    module = import_program(cases[name].build().program).module
    program = compile_program(module, arch=arch, cache=False)
    spilled = sorted(k for k, r in program.resources.items() if r.spills)
    seconds = time.perf_counter() - start
    left = ", ".join(spilled) if spilled else "none"
    print(f"{arch} {name}: {len(program.resources)} kernels, spilling: {left} ({seconds:.0f} s)")
