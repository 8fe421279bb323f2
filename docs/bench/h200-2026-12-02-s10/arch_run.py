"""Issue 18 on the H200: the schedule each target gets, run and checked against eager.

Every bench case but the whole model is lowered for each of ``ARCHS`` (its schedule is
that target's: no cp.async on sm_75, no TMA below sm_90, each one's SM count and shared
memory in the cost models), compiled with NVRTC for the GPU it runs on
(``runtime.binary_arch``: an sm_80 cubin would not load on sm_90) and run on fresh random
inputs against eager, at the case's own tolerance. One process per target; each writes
``$OUT/arch-<target>.jsonl`` line by line (what finished survives a cut).

    python3 docs/bench/h200-2026-12-02-s10/arch_run.py sm_75 sm_80 sm_86 sm_89
"""

import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context


def run_arch(arch: str) -> str:
    warnings.filterwarnings("ignore")
    import torch

    from deplodock.backends.cuda.runtime import binary_arch
    from deplodock.bench.cases import all_cases
    from deplodock.frontends.export import import_program
    from deplodock.pipeline import compile_program
    from deplodock.reference import fresh_inputs, output_error

    path = os.path.join(os.environ.get("OUT", "."), f"arch-{arch}.jsonl")
    passed = failed = 0
    with open(path, "w") as out:
        for index, case in enumerate(all_cases()):
            if case.group == "model":
                continue
            row = {"case": case.name, "arch": arch, "binary": binary_arch(arch)}
            started = time.perf_counter()
            try:
                captured = case.build()
                module = import_program(captured.program).module
                program = compile_program(module, arch=arch, cache=False)
                row["cp_async"] = "cp.async" in program.source
                row["tma"] = "cp.async.bulk.tensor" in program.source
                inputs, _, reference = fresh_inputs(captured, program.func, 1000 + index)
                got = program(*inputs)
                want = reference()
                torch.cuda.synchronize()
                errors = [output_error(g, w) for g, w in zip(got, want, strict=True)]
                row["max_rel"] = max((e.max_rel for e in errors), default=0.0)
                row["ok"] = all(e.ok(case.rtol) for e in errors)
                del got, want, inputs, program, captured
            except Exception as error:  # recorded, the run goes on
                row["ok"], row["error"] = False, f"{type(error).__name__}: {error}"[:400]
            row["s"] = round(time.perf_counter() - started, 1)
            passed, failed = passed + row["ok"], failed + (not row["ok"])
            out.write(json.dumps(row) + "\n")
            out.flush()
            torch.cuda.empty_cache()
    return f"{arch}: {passed} correct, {failed} not"


if __name__ == "__main__":
    archs = sys.argv[1:] or ["sm_75", "sm_80", "sm_86", "sm_89"]
    with ProcessPoolExecutor(len(archs), mp_context=get_context("spawn")) as pool:
        for line in pool.map(run_arch, archs):
            print(line, flush=True)
