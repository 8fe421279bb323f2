"""Time bench cases with whatever deplodock is importable (no eager, no torch.compile):
run twice, with two versions on PYTHONPATH, for an A/B of the same cases in one GPU call.

    python3 docs/bench/h200-2026-12-03-s15/ab.py LABEL PATTERN [PATTERN ...]
"""

import sys
import warnings

warnings.filterwarnings("ignore")

if __name__ == "__main__":
    import torch

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.bench import strict_fp32
    from deplodock.bench.cases import select
    from deplodock.frontends.export import import_program
    from deplodock.pipeline import lower
    from deplodock.reference import fresh_inputs

    strict_fp32()
    label, patterns = sys.argv[1], sys.argv[2:]
    for case in select(patterns):
        captured = case.build()
        imported = import_program(captured.program)
        lower(imported.module, to="kernel")
        program = CompiledProgram(imported.module, arch="sm_90", cache=False)
        args, _, _ = fresh_inputs(captured, imported.func, 1, device="cuda")
        timing = time_graphs({"p": lambda: program(*args, poison=False)}, 10, 5)["p"]
        print(f"{label} {case.name}: {timing.median_us:.1f} us", flush=True)
    torch.cuda.synchronize()
