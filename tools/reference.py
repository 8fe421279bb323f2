"""PyTorch as the reference: fresh random inputs on the GPU, and the error measure.

Shared by ``deplodock run`` and ``deplodock bench``, so both check a program the same
way: user inputs and parameters drawn afresh (never the example values, never zeros), the
compiled program's outputs poisoned with NaN before it runs (``CompiledProgram`` does
that), and the error of each output as its largest absolute difference relative to the
largest magnitude of PyTorch's result.
"""

from __future__ import annotations

from dataclasses import dataclass


def fresh_inputs(captured, func, seed: int, device: str = "cuda"):
    """Random user inputs and parameters on the GPU, plus a closure computing eager's result.

    ``captured`` has ``module``, ``example_inputs`` (shapes and dtypes are what is used)
    and ``program`` (for lifted constants); ``func`` is the lowered ``@forward``, whose
    arguments say which tensor goes where. Returns (the arguments of ``func``, the user
    inputs alone, a zero-argument function returning eager's outputs as a list).

    Parameters are re-drawn too: a weight of all ones (RMSNorm's default) would hide a
    kernel that reads the wrong weight element. (``device="cpu"`` serves the tests.)
    """
    import torch

    from deplodock.frontends.export import graph_inputs

    gen = torch.Generator().manual_seed(seed)
    model = captured.module.to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype))
    users = iter(
        torch.randn(t.shape, generator=gen, dtype=t.dtype).to(device)
        if t.dtype.is_floating_point
        else t.to(device)
        for t in captured.example_inputs
    )
    user_inputs: list = []
    args = []
    for spec in graph_inputs(func):
        if spec.kind == "input":
            tensor = next(users)
            user_inputs.append(tensor)
        elif spec.kind == "param":
            tensor = model.get_parameter(spec.target).detach()
        elif spec.kind == "buffer":
            tensor = model.get_buffer(spec.target)
        else:
            tensor = captured.program.constants[spec.target].to(device)
        args.append(tensor.contiguous())

    def reference():
        with torch.no_grad():
            out = model(*user_inputs)
        return list(out) if isinstance(out, tuple | list) else [out]

    return args, user_inputs, reference


@dataclass(frozen=True)
class OutputError:
    shape: tuple[int, ...]
    dtype: str
    max_abs: float
    max_rel: float  # max |got - want| / max |want|; inf when an element was left unwritten

    def ok(self, rtol: float) -> bool:
        return self.max_rel <= rtol  # False for NaN too


def relative_error(got, want) -> float:
    """max |got - want| / max |want| (over max |got - want| alone when ``want`` is all
    zeros), in float64, on numpy arrays: the measure of the interpreter tests."""
    import numpy as np

    want = np.asarray(want, dtype=np.float64)
    diff = np.abs(np.asarray(got, dtype=np.float64) - want)
    if not diff.size:
        return 0.0
    return float(np.max(diff)) / (float(np.max(np.abs(want))) or 1.0)


def output_error(got, want) -> OutputError:
    """How far ``got`` (deplodock's output) is from ``want`` (PyTorch's)."""
    import torch

    err = (got.double() - want.double()).abs()
    max_abs = err.max().item() if err.numel() else 0.0
    scale = want.double().abs().max().item() if want.numel() else 1.0
    rel = max_abs / scale if scale > 0 else max_abs
    if torch.isnan(got).sum().item() > torch.isnan(want).sum().item():
        rel = float("inf")  # still the poison: some element no thread wrote
    return OutputError(tuple(got.shape), str(got.dtype), max_abs, rel)
