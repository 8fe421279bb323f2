"""Programmatic dependent launch (PDL): each generated kernel waits for the grid ahead
(``griddepcontrol.wait``) before its first access to memory, on sm_90 and later (the grid
behind launches once every block has exited: the implicit trigger); the launcher allows
programmatic stream serialization for such kernels (``LoadedModule.waits_for_the_grid_ahead``)
unless ``DEPLODOCK_PDL`` says off (``driver.PROGRAMMATIC_DEFAULT``: on). On the CPU: the
emitted lines come first in every kernel and compile with NVRTC on either side of
sm_90; on the GPU: a program of several dependent kernels launched that way matches
PyTorch, with PDL on and off, inside a CUDA graph too. With the driver stubbed: a driver
that refuses the programmatic launch gets a plain one (warned once a process), and any
other failure of the launch is raised.
"""

from __future__ import annotations

import pytest
import torch

from deplodock.backends.cuda import compile_cuda, gpu_available
from deplodock.backends.cuda.driver import programmatic_launch_enabled
from deplodock.backends.cuda.emit import GRID_DEPENDENCY, emit_cuda
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import lower

# A program of three dependent kernels (a row reduction, a product, an elementwise tail)
CHAIN = "torch.softmax(torch.randn(67, 129), -1) @ torch.randn(129, 33) + torch.randn(33)"


def _source(expr: str) -> str:
    module = import_program(capture_expression(expr).program).module
    return emit_cuda(lower(module, to="kernel"))


def _bodies(source: str) -> list[list[str]]:
    """Each kernel's body lines, in order."""
    bodies, lines = [], source.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('extern "C" __global__'):
            start = next(j for j in range(i, len(lines)) if lines[j].endswith(") {")) + 1
            bodies.append(lines[start:])
    return bodies


def test_every_kernel_waits_for_the_grid_ahead_first() -> None:
    source = _source(CHAIN)
    bodies = _bodies(source)
    assert len(bodies) >= 2
    for body in bodies:
        assert body[: len(GRID_DEPENDENCY)] == GRID_DEPENDENCY
    assert GRID_DEPENDENCY[0] == "#if __CUDA_ARCH__ >= 900"  # no-ops before Hopper
    assert any("griddepcontrol.wait" in line for line in GRID_DEPENDENCY)
    # The grid behind launches at the implicit trigger (every block exited): triggered first
    # thing, its waiting blocks took SM room from this grid (session 34: 5-10% slower).
    assert "launch_dependents" not in source


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_before_and_from_sm_90(arch: str) -> None:
    compiled = compile_cuda(_source(CHAIN), arch=arch)
    assert compiled.cubin and compiled.resources


def test_switch(monkeypatch) -> None:
    from deplodock.backends.cuda.driver import PROGRAMMATIC_DEFAULT

    monkeypatch.delenv("DEPLODOCK_PDL", raising=False)
    assert programmatic_launch_enabled() == (PROGRAMMATIC_DEFAULT == "1")
    for off in ("0", "off", "False", " no "):
        monkeypatch.setenv("DEPLODOCK_PDL", off)
        assert not programmatic_launch_enabled()
    monkeypatch.setenv("DEPLODOCK_PDL", "1")
    assert programmatic_launch_enabled()


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
def test_dependent_kernels_match_torch_with_pdl_on_and_off(monkeypatch) -> None:
    from deplodock.backends.cuda.runtime import CompiledProgram

    captured = capture_expression(CHAIN)
    module = lower(import_program(captured.program).module, to="kernel")
    program = CompiledProgram(module, arch="sm_90", cache=False)
    inputs = [t.cuda() for t in captured.example_inputs]
    want = captured.module(*inputs)
    program(*inputs)
    major, _ = torch.cuda.get_device_capability()
    functions = program._launchers[1]  # the launchable kernel of every step
    assert len(functions) >= 2 and all(f._programmatic == (major >= 9) for f in functions)
    for switch in ("1", "0"):
        monkeypatch.setenv("DEPLODOCK_PDL", switch)
        for _ in range(3):
            (got,) = program(*inputs)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            (graphed,) = program(*inputs, poison=False)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(graphed, want, rtol=1e-5, atol=1e-5)


def _stub_function(monkeypatch, refusal: str):
    """A ``KernelFunction`` over stubbed driver calls: ``cuLaunchKernelEx`` answers
    ``refusal``, ``cuLaunchKernel`` succeeds; returns it and the list of plain launches."""
    import contextlib

    from deplodock.backends.cuda import driver

    plain: list[tuple] = []
    cu = driver._cu
    monkeypatch.setattr(driver, "_current", lambda context: contextlib.nullcontext())
    monkeypatch.setattr(driver, "_pdl_refusal_told", False)
    monkeypatch.setattr(cu, "cuLaunchKernelEx", lambda *args: (getattr(cu.CUresult, refusal),))
    monkeypatch.setattr(
        cu, "cuLaunchKernel", lambda *args: plain.append(args) or (cu.CUresult.CUDA_SUCCESS,)
    )
    function = object.__new__(driver.KernelFunction)
    function.name = function.symbol = "k"
    function.module = type("Module", (), {"_context": None, "device": 0})()
    function._handle = None
    function._dynamic_shared_limit = 48 * 1024
    function._configs = {}
    function._programmatic = True
    function._param_sizes = None
    return function, plain


def test_a_driver_that_refuses_pdl_launches_plainly_and_says_so_once(monkeypatch) -> None:
    from deplodock.backends.cuda.driver import ProgrammaticLaunchWarning

    monkeypatch.delenv("DEPLODOCK_PDL", raising=False)
    function, plain = _stub_function(monkeypatch, "CUDA_ERROR_NOT_SUPPORTED")
    with pytest.warns(ProgrammaticLaunchWarning, match="without programmatic dependent launch"):
        function.launch((2, 1, 1), (32, 1, 1), [], stream=0)
    assert len(plain) == 1 and not function._programmatic  # plainly, and from now on
    other, plain_other = _stub_function(monkeypatch, "CUDA_ERROR_NOT_SUPPORTED")
    monkeypatch.setattr("deplodock.backends.cuda.driver._pdl_refusal_told", True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # told once a process: no second warning
        other.launch((2, 1, 1), (32, 1, 1), [], stream=0)
    assert len(plain_other) == 1


def test_any_other_pdl_launch_failure_is_raised(monkeypatch) -> None:
    from deplodock.backends.cuda.driver import CudaDriverError

    monkeypatch.delenv("DEPLODOCK_PDL", raising=False)
    function, plain = _stub_function(monkeypatch, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    with pytest.raises(CudaDriverError, match="PDL.*CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        function.launch((2, 1, 1), (32, 1, 1), [], stream=0)
    assert not plain and function._programmatic
