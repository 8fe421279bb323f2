"""Session 33: programmatic dependent launch (PDL) on and off, beside eager and
torch.compile in one run. Every kernel now starts with ``griddepcontrol.wait`` and
``griddepcontrol.launch_dependents`` (sm_90), and the launcher allows programmatic stream
serialization (``driver.KernelFunction._config``) unless ``DEPLODOCK_PDL=0``: a kernel's
launch and its blocks' start overlap the last blocks of the kernel ahead. The program's
output is checked both ways against eager; each candidate is captured in a CUDA graph
with the switch set as named (``time_graphs`` calls it during the capture).

    python3 docs/bench/h200-2026-12-06-s33/pdl.py [CASE ...]
"""

import os
import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")

from deplodock.backends.cuda.timing import time_graphs  # noqa: E402
from deplodock.bench import strict_fp32  # noqa: E402
from deplodock.bench.cases import all_cases  # noqa: E402
from deplodock.frontends.export import import_program  # noqa: E402
from deplodock.pipeline import compile_program  # noqa: E402
from deplodock.reference import fresh_inputs, output_error  # noqa: E402

CASES = [
    "rmsnorm/tinyllama/S128",
    "attention/tinyllama/S128",
    "layer/tinyllama/S128",
    "layer/qwen2.5-7b/S128",
    "layer/tinyllama/S512",
    "model/tinyllama/S128",
]


def _switched(program, inputs, on: bool):
    def call():
        os.environ["DEPLODOCK_PDL"] = "1" if on else "0"
        return program(*inputs, poison=False)

    return call


def main(names):
    strict_fp32()
    cases = {c.name: c for c in all_cases()}
    for name in names or CASES:
        case = cases[name]
        captured = case.build()
        started = time.perf_counter()
        program = compile_program(import_program(captured.program).module, arch="sm_90")
        compile_s = time.perf_counter() - started
        inputs, user_inputs, reference = fresh_inputs(captured, program.func, 0)
        want = reference()
        errors = {}
        for on in (True, False):
            got = _switched(program, inputs, on)()
            torch.cuda.synchronize()
            errors[on] = max(output_error(g, w).max_rel for g, w in zip(got, want, strict=True))
        candidates = {
            "pdl": _switched(program, inputs, True),
            "plain": _switched(program, inputs, False),
            "eager": reference,
        }
        torch._dynamo.reset()
        compiled = torch.compile(captured.module, dynamic=False)
        with torch.no_grad():
            compiled(*user_inputs)
            candidates["torch.compile"] = lambda c=compiled, u=user_inputs: c(*u)
            heavy = name.startswith("model")
            us = {
                k: v.median_us
                for k, v in time_graphs(candidates, 10 if heavy else 20, 3 if heavy else 10).items()
            }
        os.environ["DEPLODOCK_PDL"] = "1"
        print(
            f"{name}: {len(program.kernels)} kernels, compiled in {compile_s:.1f} s, max rel err "
            f"pdl {errors[True]:.1e} plain {errors[False]:.1e} (rtol {case.rtol:g}); "
            + ", ".join(f"{k} {v:.1f}" for k, v in us.items())
            + f" us; pdl {us['plain'] / us['pdl']:.3f}x plain, "
            f"{us['torch.compile'] / us['pdl']:.3f}x torch.compile "
            f"(plain {us['torch.compile'] / us['plain']:.3f}x), "
            f"{us['eager'] / us['pdl']:.2f}x eager",
            flush=True,
        )
        del program, inputs, want, candidates, compiled
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
