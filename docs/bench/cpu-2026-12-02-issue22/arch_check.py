"""Every benchmark case (whole models excepted) lowered for each target and compiled
with NVRTC for it: NVRTC errors and spills per arch, and which schedule features the
CUDA uses (issue 22's new targets; session 9's check, building one case at a time so the
run stays within a few GB; no GPU needed):
    python docs/bench/cpu-2026-12-02-issue22/arch_check.py [ARCH ...] > arch_check.txt"""

import gc
import sys
import time
import warnings
from collections import Counter

warnings.filterwarnings("ignore")

from deplodock.backends.cuda.emit import emit_kernel_sources  # noqa: E402
from deplodock.backends.cuda.nvrtc import NvrtcError, compile_kernels, nvrtc_version  # noqa: E402
from deplodock.bench.cases import all_cases  # noqa: E402
from deplodock.frontends.export import import_program  # noqa: E402
from deplodock.pipeline import lower  # noqa: E402
from deplodock.target import TARGETS  # noqa: E402

archs = sys.argv[1:] or [a for a in TARGETS if a != "sm_90a"]
cases = [c for c in all_cases() if c.group != "model"]
FEATURES = {"cp.async": "cp.async", "TMA": "cp.async.bulk.tensor", "mbarrier": "mbarrier"}
print(f"NVRTC {'.'.join(map(str, nvrtc_version()))}", flush=True)
for arch in archs:
    start = time.perf_counter()
    failed, spilled, used = [], [], Counter()
    for case in cases:
        module = import_program(case.build().program).module
        lower(module, to="kernel", arch=arch)
        sources = emit_kernel_sources(module)
        del module
        gc.collect()
        text = "".join(sources.values())
        used.update(name for name, mark in FEATURES.items() if mark in text)
        try:
            compiled = compile_kernels(sources, arch=arch, cache=False, jobs=2)
        except NvrtcError as e:
            failed.append(f"{case.name}: {str(e).splitlines()[0][:160]}")
            continue
        spilled += [f"{case.name}:{k}" for k, r in compiled.resources.items() if r.spills]
    seconds = time.perf_counter() - start
    print(
        f"{arch}: {len(cases)} cases, {len(failed)} NVRTC errors, {len(spilled)} spilling "
        f"kernels; cases using {dict(used) or 'no async copies'} ({seconds:.0f} s)",
        flush=True,
    )
    for line in failed + spilled:
        print("   ", line, flush=True)
