"""Matmuls on tensor cores (``mma-contract{precision=tf32x3}``) against the default FMA
schedule and eager (cuBLAS fp32) in one process, each output checked against eager's.

    python3 docs/bench/gpu-2026-12-07-s42/mma.py PATTERN [PATTERN ...]

Variants: ``fma`` (the default pipeline), ``tc`` (the planner's tile, its products on
tensor cores), ``tc 128x128 kN`` (the register tile forced to 8 x 8 on 16 x 16 threads,
K chunks of N: 8 warps of 64 x 32). ``MMA_VARIANTS="fma,tc"`` runs only those.
"""

import os
import sys
import warnings

warnings.filterwarnings("ignore")


def variants(get_pass):
    mma = get_pass("mma-contract")(precision="tf32x3")

    def forced(bk):
        return get_pass("register-tile")(tm=8, tn=8, threads_m=16, threads_n=16, bk=bk)

    chosen = os.environ.get("MMA_VARIANTS")
    table = {
        "fma": None,
        "tc": {"mma-contract": mma},
        "tc 128x128 k16": {"mma-contract": mma, "register-tile": forced(16)},
        "tc 128x128 k32": {"mma-contract": mma, "register-tile": forced(32)},
    }
    return {k: v for k, v in table.items() if not chosen or k in chosen.split(",")}


if __name__ == "__main__":
    import torch

    from deplodock.backends.cuda.runtime import CompiledProgram
    from deplodock.backends.cuda.timing import time_graphs
    from deplodock.bench import strict_fp32
    from deplodock.bench.cases import select
    from deplodock.frontends.export import import_program
    from deplodock.passes import get_pass
    from deplodock.pipeline import lower
    from deplodock.reference import fresh_inputs

    strict_fp32()
    for case in select(sys.argv[1:]):
        captured = case.build()
        parts = []
        eager_us = None
        for label, options in variants(get_pass).items():
            imported = import_program(captured.program)
            lower(imported.module, to="kernel", options=options, guard=False)
            applied = "kernel.mma" in str(imported.module)
            program = CompiledProgram(imported.module, arch="sm_90", cache=False)
            args, users, eager = fresh_inputs(captured, imported.func, 1, device="cuda")
            with torch.no_grad():
                want = eager()[0]
                if eager_us is None:
                    eager_us = time_graphs({"e": eager}, 20, 5)["e"].median_us
                    parts.append(f"eager {eager_us:.1f}")
            got = program(*args, poison=False)[0]
            err = ((got - want).abs().max() / want.abs().max()).item()
            run = lambda p=program, a=args: p(*a, poison=False)  # noqa: E731
            t = time_graphs({"p": run}, 20, 5)["p"].median_us
            mark = "" if label == "fma" or applied else " NOT-APPLIED"
            parts.append(f"{label} {t:.1f}{mark} ({eager_us / t:.2f}x eager, err {err:.1e})")
            del program
        print(f"{case.name}: " + " | ".join(parts), flush=True)
    torch.cuda.synchronize()
