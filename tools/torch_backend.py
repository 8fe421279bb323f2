"""``torch.compile(model, backend="deplodock")``: deplodock as a TorchDynamo backend.

Registered the way PyTorch finds third-party backends: an entry point in the
``torch_dynamo_backends`` group (pyproject.toml: ``deplodock =
deplodock.torch_backend:deplodock_backend``), which ``torch._dynamo`` reads the first
time it meets a backend name it does not know. Nothing needs importing first.

Dynamo hands the backend each captured graph as an FX ``GraphModule`` (torch-level calls,
parameters lifted to placeholders) with example inputs. The backend exports that
GraphModule with ``torch.export`` (what the frontend imports), lowers it and compiles it
with ``deplodock.compile``, and returns a callable with the graph's signature. Where it
cannot, it warns (``warnings.warn``, category ``DeplodockFallbackWarning``) and returns
``gm.forward``, so that graph runs in eager PyTorch and the program still works:

- an op deplodock cannot lower (the warning lists each one, with its source line),
  or anything else the frontend cannot express (dynamic shapes, mutation, complex dtypes);
- no usable CUDA GPU (the check for unsupported ops runs first, so the warning says
  what would have happened on one), or example inputs that are not CUDA tensors;
- NVRTC failing on the generated source (a deplodock bug: reported, not hidden).

Calls: dynamo guards on shapes, dtypes and strides, so a graph always sees the strides
it was compiled for; a non-contiguous input (a transposed view passed to the model) is
made contiguous by the compiled program (``deplodock.api.Compiled``: one copy), because
the compiled kernels read dense row-major memory and a ``torch.compile``'d model must
keep eager semantics for any input. Outputs carry no autograd history: deplodock compiles
inference (run the model under ``torch.no_grad()`` or ``torch.inference_mode()``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["DeplodockFallbackWarning", "deplodock_backend"]


class DeplodockFallbackWarning(UserWarning):
    """A graph deplodock did not compile runs in eager PyTorch instead."""


def _fallback(gm: torch.fx.GraphModule, why: str) -> Callable[..., Any]:
    warnings.warn(
        f"deplodock: running this graph in eager PyTorch: {why}",
        DeplodockFallbackWarning,
        stacklevel=3,
    )
    return gm.forward


def _dynamic(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> str | None:
    """Why the graph is not one of static shapes (None when it is)."""
    for value in example_inputs:
        if not isinstance(value, torch.Tensor):
            return f"it takes a {type(value).__name__} input (dynamic shapes are not supported)"
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        example = node.meta.get("example_value", node.meta.get("val"))
        shape = getattr(example, "shape", ())
        if any(not isinstance(d, int) for d in shape):
            return (
                f"input {node.name} has the dynamic shape {tuple(shape)} "
                "(compile with dynamic=False)"
            )
    return None


def deplodock_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **_options: Any
) -> Callable[..., Any]:
    """The TorchDynamo backend: ``gm`` compiled by deplodock, or ``gm.forward`` with a
    ``DeplodockFallbackWarning`` saying why not."""
    from deplodock.api import (
        Compiled,
        _default_arch,
        _import,
        cached_exported,
        capture,
        compile_exported,
    )
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.errors import UserInputError
    from deplodock.pipeline import lower

    why = _dynamic(gm, example_inputs)
    if why is not None:
        return _fallback(gm, why)
    arch = _default_arch()
    try:
        module, program = capture(gm, *example_inputs)
        # a graph compiled before comes from the program cache (as deplodock.compile's)
        cached = cached_exported(program, arch)
        imported = None
        if cached is None:
            imported = _import(program)
            lower(imported, to="loop")  # every unsupported op is found here, GPU or not
    except UserInputError as error:
        return _fallback(gm, f"deplodock cannot compile it: {error}")
    if not gpu_available():
        return _fallback(gm, "no CUDA GPU is available on this machine")
    devices = {t.device.type for t in example_inputs}
    if devices != {"cuda"}:
        return _fallback(
            gm, f"its inputs are on {', '.join(sorted(devices))}; deplodock runs CUDA tensors"
        )
    try:
        compiled_program = cached or compile_exported(program, arch, imported=imported)
        compiled = Compiled(module, program, compiled_program)
    except Exception as error:  # NVRTC on generated code: a deplodock bug, said plainly
        return _fallback(gm, f"compiling it failed: {type(error).__name__}: {error}")

    def run(*args: torch.Tensor) -> Any:
        return compiled(*args)

    run.deplodock = compiled  # type: ignore[attr-defined]  (for inspection and tests)
    return run
