"""``torch.compile(model, backend="deplodock")``: deplodock as a TorchDynamo backend.

Registered the way PyTorch finds third-party backends: an entry point in the
``torch_dynamo_backends`` group (pyproject.toml: ``deplodock =
deplodock.torch_backend:deplodock_backend``), which ``torch._dynamo`` reads the first
time it meets a backend name it does not know. Nothing needs importing first.

Dynamo hands the backend each captured graph as an FX ``GraphModule`` (torch-level calls,
parameters lifted to placeholders) with example inputs. The backend exports that
GraphModule with ``torch.export`` (what the frontend imports), lowers it and compiles it
with ``deplodock.compile``, and returns a callable with the graph's signature; a decoder
stack of alike layers is exported cut to four layers, lowered once per distinct layer
and restacked (``frontends.layers.graph_template``), the whole graph never exported
unless its lowered layers turn out not to repeat. Where it
cannot, it warns (``warnings.warn``, category ``DeplodockFallbackWarning``) and returns
``gm.forward``, so that graph runs in eager PyTorch and the program still works:

- an op deplodock cannot lower (the warning lists each one, with its source line),
  or anything else the frontend cannot express (dynamic shapes, mutation, complex dtypes);
- no usable CUDA GPU (the check for unsupported ops runs first, so the warning says
  what would have happened on one), or example inputs that are not CUDA tensors;
- NVRTC failing on the generated source (a deplodock bug: reported, not hidden).

A graph compiled before is read from the program cache under a key of dynamo's graph
itself (its nodes, its inputs' shapes, dtypes and strides: ``frontends.export.
graph_fingerprint``), so a warm call exports, imports and lowers nothing; what remains
of a warm ``torch.compile`` is dynamo's own trace.

Calls: dynamo guards on shapes, dtypes and strides, so a graph always sees the strides
it was compiled for; a non-contiguous input (a transposed view passed to the model) is
made contiguous by the compiled program (``deplodock.api.Compiled``: one copy), because
the compiled kernels read dense row-major memory and a ``torch.compile``'d model must
keep eager semantics for any input. Outputs carry no autograd history: deplodock compiles
inference (run the model under ``torch.no_grad()`` or ``torch.inference_mode()``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from deplodock.boundary import collect_rarely

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


def _graph_key(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], arch: str) -> str | None:
    """The program cache key of dynamo's graph itself (``frontends.capture.graph_fingerprint``),
    so that a graph compiled before is found without exporting it again; None when the
    graph reads its module's attributes."""
    from deplodock.backends.cuda.program_key import program_key
    from deplodock.frontends.capture import graph_fingerprint

    fingerprint = graph_fingerprint(gm, example_inputs)
    return program_key(["dynamo", fingerprint], arch) if fingerprint is not None else None


def _runs_here(example_inputs: Sequence[Any]) -> str | None:
    """Why the compiled graph cannot run on these inputs here (None when it can)."""
    from deplodock.backends.cuda.driver import gpu_available

    if not gpu_available():
        return "no CUDA GPU is available on this machine"
    devices = {t.device.type for t in example_inputs}
    if devices != {"cuda"}:
        return f"its inputs are on {', '.join(sorted(devices))}; deplodock runs CUDA tensors"
    return None


def _recompiled(gm: torch.fx.GraphModule) -> None:
    """Give a lazy graph module (dynamo hands one over) its real ``forward`` now, so that
    torch.export names the program's inputs after the graph's placeholders, as it names
    those of ``graph_template``'s cut, rather than ``args_<i>`` after a ``*args``
    signature that is not yet generated."""
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:  # a torch without lazy graph modules generates forward at once
        return
    _LazyGraphModule.force_recompile(gm)


def _template(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], capture: Callable):
    """``frontends.layers.graph_template`` of dynamo's graph (a decoder stack lowered as
    four layers and restacked, as ``deplodock.compile`` lowers it), or None: inputs that
    are not all tensors (numbers are captured apart), not a stack of alike layers, its cut
    not exported, or constants in it (their names follow the whole program's numbering):
    then the whole graph is exported and every layer lowered, as before."""
    from deplodock.frontends.layers import graph_template

    if not all(isinstance(value, torch.Tensor) for value in example_inputs):
        return None
    try:
        found = graph_template(gm, list(example_inputs), lambda m, *i: capture(m, *i)[1])
    except Exception:  # the whole graph exported: lowering it all is still right
        return None
    return None if found is None or found[0].constants else found


def _restacked(imported, restack, arch: str, stages):
    """The ``CompiledProgram`` of dynamo's graph from its lowered four-layer template
    (``imported``) restacked, or None where the lowered layers do not repeat under moved
    names (``restack.NotRestackable``: the caller exports and lowers the whole graph)."""
    from deplodock.api import compile_layers_once
    from deplodock.restack import NotRestackable

    try:
        return compile_layers_once(None, arch, None, imported, restack, stages)
    except NotRestackable:
        return None


def _fake_constants(constants: Mapping[str, Any]) -> list[str]:
    """The names of ``constants`` (a program's lifted ones) that hold no data (fake or
    meta tensors)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return [
        name
        for name, value in constants.items()
        if isinstance(value, torch.Tensor) and (isinstance(value, FakeTensor) or value.is_meta)
    ]


def _runner(compiled: Any) -> Callable[..., Any]:
    def run(*args: torch.Tensor) -> Any:
        return compiled(*args)

    run.deplodock = compiled  # type: ignore[attr-defined]  (for inspection and tests)
    return run


@collect_rarely()
def deplodock_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **_options: Any
) -> Callable[..., Any]:
    """The TorchDynamo backend: ``gm`` compiled by deplodock, or ``gm.forward`` with a
    ``DeplodockFallbackWarning`` saying why not.

    A graph compiled before (by this compiler, for this arch) is read from the program
    cache under its own key (``_graph_key``): no export, no import, no lowering; else it
    is exported, looked up under the exported program's key (``deplodock.compile``'s),
    lowered and compiled, and stored under both.

    All of it runs outside dynamo's tracing context: torch.export and ``torch.load``
    find dynamo's fake mode there (torch 2.11's export did; ``torch.load`` does on 2.13
    too), and would give the constants the graph makes (``torch.tensor(2.0)``), or those
    the program cache keeps, as fake or meta tensors with no data."""
    from torch._guards import tracing

    with tracing(None):
        return _compiled_or_fallback(gm, example_inputs)


def _compiled_or_fallback(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
) -> Callable[..., Any]:
    """``deplodock_backend``'s work, outside dynamo's tracing context."""
    from torch.utils._pytree import treespec_dumps, treespec_loads

    from deplodock.api import (
        Compiled,
        _default_arch,
        _import,
        cached_exported,
        capture,
        compile_exported,
    )
    from deplodock.backends.cuda.program_cache import ProgramEntry, default_program_cache
    from deplodock.errors import UserInputError
    from deplodock.stages import stats_from_env

    why = _dynamic(gm, example_inputs)
    if why is not None:
        return _fallback(gm, why)
    arch = _default_arch()
    stages = stats_from_env(f"torch.compile backend, a graph of {len(gm.graph.nodes)} nodes")
    store = default_program_cache()
    with stages.step("program cache lookup"):
        key = _graph_key(gm, example_inputs, arch) if store is not None else None
        entry = store.get(key) if key is not None else None
    if entry is not None and _fake_constants(entry.constants):
        entry = None  # read without data after all: compiled again, never run empty
    if entry is not None:
        why = _runs_here(example_inputs)
        if why is not None:
            return _fallback(gm, why)
        out_spec = treespec_loads(entry.info["out_spec"])
        program = entry.program()
        stages.print()
        return _runner(Compiled(gm, None, program, constants=entry.constants, out_spec=out_spec))
    try:
        _recompiled(gm)
        with stages.step("cut to four layers, export"):
            template = _template(gm, example_inputs, capture)
        module, program, cached = gm, None, None
        if template is None:
            with stages.step("capture (torch.export)"):
                module, program = capture(gm, *example_inputs)
            unreal = _fake_constants(program.constants)
            if unreal:
                return _fallback(
                    gm, f"its constants {', '.join(unreal)} were captured without data"
                )
            # a graph exported to a program compiled before comes from the program cache
            cached = cached_exported(program, arch)
        imported = None
        if cached is None:
            from deplodock.pipeline import lower  # (xDSL and the passes: a hit needs neither)

            with stages.step("import, lower to loop"):
                imported = _import(template[0] if template else program)
                lower(imported, to="loop")  # every unsupported op is found here, GPU or not
    except UserInputError as error:
        return _fallback(gm, f"deplodock cannot compile it: {error}")
    why = _runs_here(example_inputs)
    if why is not None:
        return _fallback(gm, why)
    try:
        if template is not None:
            compiled_program = _restacked(imported, template[1], arch, stages)
            if compiled_program is None:  # the layers do not lower alike: every layer
                with stages.step("capture (torch.export)"):
                    module, program = capture(gm, *example_inputs)
        if program is not None:
            compiled_program = cached or compile_exported(
                program, arch, imported=None if template else imported, stages=stages
            )
        if program is None:
            out_spec = template[0].call_spec.out_spec  # the cut keeps the graph's output
            compiled = Compiled(module, None, compiled_program, constants={}, out_spec=out_spec)
        else:
            compiled = Compiled(module, program, compiled_program)
    except Exception as error:  # NVRTC on generated code: a deplodock bug, said plainly
        return _fallback(gm, f"compiling it failed: {type(error).__name__}: {error}")
    if key is not None:
        info = {"out_spec": treespec_dumps(compiled.out_spec)}
        store.put(key, ProgramEntry.of(compiled_program, compiled.constants, info))
    stages.print()
    return _runner(compiled)
