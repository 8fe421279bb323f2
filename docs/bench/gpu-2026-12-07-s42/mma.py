"""Matmuls on tensor cores (``mma-contract{precision=tf32x3}``) against the default FMA
schedule and eager (cuBLAS fp32) in one process: each output checked against eager.

    python3 docs/bench/gpu-2026-12-07-s42/mma.py PATTERN [PATTERN ...]
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
    from deplodock.passes import get_pass
    from deplodock.pipeline import lower
    from deplodock.reference import fresh_inputs

    strict_fp32()
    for case in select(sys.argv[1:]):
        captured = case.build()
        row = {}
        outs = {}
        for label, options in (
            ("fma", None),
            ("tf32x3", {"mma-contract": get_pass("mma-contract")(precision="tf32x3")}),
        ):
            imported = import_program(captured.program)
            lower(imported.module, to="kernel", options=options, guard=False)
            applied = "kernel.mma" in str(imported.module)
            program = CompiledProgram(imported.module, arch="sm_90", cache=False)
            torch.manual_seed(0)
            args, _, _ = fresh_inputs(captured, imported.func, 1, device="cuda")
            outs[label] = program(*args, poison=False)[0]
            t = time_graphs({"p": lambda: program(*args, poison=False)}, 20, 5)["p"]
            row[label] = (t.median_us, applied)
        module = captured.module.to("cuda") if hasattr(captured.module, "to") else captured.module
        eager_args = [a.cuda() for a in captured.example_inputs]
        with torch.no_grad():
            t = time_graphs({"e": lambda: module(*eager_args)}, 20, 5)["e"]
        err = ((outs["tf32x3"] - outs["fma"]).abs().max() / outs["fma"].abs().max()).item()
        print(
            f"{case.name}: fma {row['fma'][0]:.1f} us | tf32x3 {row['tf32x3'][0]:.1f} us"
            f" (mma {'yes' if row['tf32x3'][1] else 'NOT APPLIED'}) | eager {t.median_us:.1f} us"
            f" | fma/tf32x3 {row['fma'][0] / row['tf32x3'][0]:.2f}x, eager/tf32x3"
            f" {t.median_us / row['tf32x3'][0]:.2f}x | max rel diff tf32x3 vs fma {err:.2e}",
            flush=True,
        )
    torch.cuda.synchronize()
