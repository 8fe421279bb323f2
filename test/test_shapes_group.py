"""The bench's shapes group (issue 19), at the small sizes of the same families.

``deplodock bench --filter shapes`` times the group at full size on the GPU; here every
family of it (``bench.cases.shapes_cases(small=True)``: primes, odd lengths, one past a
tile) is captured, its declared traffic checked against its program, lowered to the
kernel level and run in the SIMT interpreters (the race checker on) against PyTorch,
and compiled with NVRTC. No kernel may be one thread doing real work (a full reduction's
second stage adding a few partials may): a kernel of one thread (the full reduction of
a 4-d tensor was one, and NVRTC took 14 s over its nested loops) is a cliff, and so is
any kernel whose estimate lands beyond the roofline guard (``schedule/estimate.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from deplodock.bench.cases import shapes_cases
from deplodock.dialects import kernel
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import graph_inputs, import_program
from deplodock.passes.tile.schedule.estimate import beyond_guard, kernel_estimate
from deplodock.pipeline import lower
from deplodock.reference import fresh_inputs, relative_error

CASES = {c.name: c for c in shapes_cases(small=True)}


def _serial_steps(op) -> int:
    """Loop iterations one thread of ``op`` runs: the product of nested extents."""
    most = 1
    for child in op.body.block.ops if hasattr(op, "body") else ():
        if isinstance(child, kernel.ForOp):
            most = max(most, child.upper.data // max(child.step.data, 1) * _serial_steps(child))
    return most


@pytest.mark.parametrize("name", list(CASES))
def test_shapes_family_runs_correct(name: str) -> None:
    case = CASES[name]
    captured = case.build()
    imported = import_program(captured.program)
    func = imported.func
    args = sum(math.prod(a.shape) * a.dtype.itemsize for a in graph_inputs(func))
    results = sum(math.prod(r.get_shape()) * 4 for r in func.function_type.outputs.data)
    assert args + results == case.traffic_bytes
    module = imported.module
    lower(module, to="kernel")
    kernels = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    for k in kernels:
        if math.prod(k.block_shape) * math.prod(k.grid_shape) == 1:
            steps = _serial_steps(k)
            assert steps <= 32, f"@{k.sym_name.data} is one thread walking {steps} steps"
        estimate = kernel_estimate(k)
        assert not beyond_guard(estimate), f"@{k.sym_name.data}: {estimate}"
    inputs, _, reference = fresh_inputs(captured, func, 5, device="cpu")
    want = [w.numpy() for w in reference()]
    got = run_forward(module, [a.numpy() for a in inputs])
    for out, ref in zip(got, want, strict=True):
        assert relative_error(np.asarray(out), ref) <= case.rtol, name


def test_shapes_group_compiles() -> None:
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    from deplodock.backends.cuda.emit import emit_cuda

    for case in CASES.values():
        module = import_program(case.build().program).module
        lower(module, to="kernel")
        compiled = compile_cuda(emit_cuda(module), arch="sm_90")
        for name, report in compiled.resources.items():
            assert not report.spills, f"{case.name}: {name} spills: {report}"
