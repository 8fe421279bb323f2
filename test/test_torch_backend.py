"""torch.compile(model, backend="deplodock") (tools/torch_backend.py).

On the CPU: TorchDynamo finds the backend through its entry point, and a graph it cannot
compile (an unsupported op, no GPU, dynamic shapes) runs in eager PyTorch with a
DeplodockFallbackWarning saying why. GPU-marked: compiled graphs match eager."""

from __future__ import annotations

import dataclasses
import warnings
from importlib.metadata import entry_points

import pytest
import torch

from deplodock.backends.cuda.driver import gpu_available
from deplodock.torch_backend import DeplodockFallbackWarning, deplodock_backend

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compiled_call(fn, *args):
    """(result, the DeplodockFallbackWarnings raised while compiling and calling)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            out = torch.compile(fn, backend="deplodock")(*args)
    return out, [w for w in caught if issubclass(w.category, DeplodockFallbackWarning)]


def test_entry_point_is_installed() -> None:
    names = {ep.name: ep.value for ep in entry_points(group="torch_dynamo_backends")}
    assert names.get("deplodock") == "deplodock.torch_backend:deplodock_backend", (
        "the entry point is missing: re-run pip install -e ."
    )


def test_dynamo_finds_the_backend_by_name() -> None:
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    assert lookup_backend("deplodock") is deplodock_backend
    assert "deplodock" in list_backends(exclude_tags=())


class _Zeta(torch.nn.Module):
    """A layer of an op deplodock does not lower (Hurwitz zeta has no dense lowering)."""

    def forward(self, x):
        return torch.special.zeta(x.abs() + 2, 1.5)


def test_unsupported_op_falls_back_with_a_warning_naming_it() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), _Zeta(), torch.nn.RMSNorm(16))
    x = torch.randn(2, 8)
    out, fallbacks = _compiled_call(model, x)
    assert len(fallbacks) == 1
    message = str(fallbacks[0].message)
    assert "eager PyTorch" in message and "special_zeta" in message and "unsupported op" in message
    with torch.no_grad():
        torch.testing.assert_close(out, model(x))


def test_several_unsupported_ops_are_all_named() -> None:
    def fn(x):
        return torch.kthvalue(torch.special.zeta(x.abs() + 2, 1.5), 2, 0).values

    _, fallbacks = _compiled_call(fn, torch.randn(4, 4))
    (warning,) = fallbacks
    assert "special_zeta" in str(warning.message) and "kthvalue" in str(warning.message)


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_no_gpu_falls_back_with_a_clear_warning() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU())
    x = torch.randn(2, 8)
    out, fallbacks = _compiled_call(model, x)
    (warning,) = fallbacks
    assert "no CUDA GPU" in str(warning.message)
    with torch.no_grad():
        assert torch.equal(out, model(x))


def test_cpu_inputs_fall_back() -> None:
    """On a GPU machine a model left on the CPU still runs (eagerly), with a warning;
    without a GPU the no-GPU warning comes first: either way, one clear warning."""
    _, fallbacks = _compiled_call(lambda x: torch.relu(x) + 1, torch.randn(4, 4))
    (warning,) = fallbacks
    assert "on cpu" in str(warning.message) or "no CUDA GPU" in str(warning.message)


def test_non_tensor_inputs_fall_back() -> None:
    gm = torch.fx.symbolic_trace(lambda x, n: x * n)
    with pytest.warns(DeplodockFallbackWarning, match="dynamic shapes are not supported"):
        fn = deplodock_backend(gm, [torch.randn(3), 2])
    assert fn == gm.forward


# ------------------------------------------------------------ the graph's own cache key


class _Block(torch.nn.Module):
    """Linear, RMSNorm, a constant the graph computes (lifted by torch.export), two outputs."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 32)
        self.norm = torch.nn.RMSNorm(32)

    def forward(self, x):
        y = self.norm(self.linear(x)) * torch.tensor(2.0)
        return y, y.sum(-1)


def _graphs(model, *inputs):
    """The (GraphModule, example inputs) dynamo hands a backend for ``model(*inputs)``."""
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=backend)(*inputs)
    return seen


def test_graph_fingerprint_is_the_graph_and_its_inputs() -> None:
    from deplodock.frontends.capture import graph_fingerprint

    model = _Block()
    x = torch.randn(4, 16)
    ((gm, inputs),) = _graphs(model, x)
    ((again, again_inputs),) = _graphs(model, x)
    assert gm is not again
    assert graph_fingerprint(gm, inputs) == graph_fingerprint(again, again_inputs)
    ((other, other_inputs),) = _graphs(model, torch.randn(5, 16))  # another shape
    assert graph_fingerprint(other, other_inputs) != graph_fingerprint(gm, inputs)
    ((strided, strided_inputs),) = _graphs(model, torch.randn(16, 4).t())  # other strides
    assert graph_fingerprint(strided, strided_inputs) != graph_fingerprint(gm, inputs)
    traced = torch.fx.symbolic_trace(model)  # reads its module's parameters (get_attr)
    assert graph_fingerprint(traced, [x]) is None


def test_a_graph_compiled_before_is_read_back_without_exporting(
    monkeypatch, tmp_path, capsys
) -> None:
    """With the GPU checks stubbed (NVRTC needs no GPU), the backend compiles dynamo's
    graph and stores it; dynamo's next trace of the same model is answered from the
    program cache without torch.export: the same kernels, constants and outputs' structure."""
    import deplodock.api
    import deplodock.torch_backend as backend

    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    monkeypatch.setattr(backend, "_runs_here", lambda inputs: None)
    model = _Block()
    ((gm, inputs),) = _graphs(model, torch.randn(4, 16))
    first = backend.deplodock_backend(gm, inputs).deplodock
    assert first.exported is not None and "lifted_tensor_0" in first.constants

    def no_export(*args, **kwargs):
        raise AssertionError("a cached graph was exported again")

    monkeypatch.setattr(deplodock.api, "capture", no_export)
    monkeypatch.setenv("DEPLODOCK_STATS", "1")
    ((gm, inputs),) = _graphs(model, torch.randn(4, 16))
    hit = backend.deplodock_backend(gm, inputs).deplodock
    stats = capsys.readouterr().err
    assert "deplodock stats: torch.compile backend" in stats and "program cache lookup" in stats
    assert hit.exported is None and hit.module is gm
    assert hit.program.kernel_names == first.program.kernel_names
    assert [(s.kind, s.target) for s in hit.inputs] == [(s.kind, s.target) for s in first.inputs]
    assert hit.out_spec == first.out_spec
    assert set(hit.constants) == set(first.constants)
    for name, value in first.constants.items():
        assert torch.equal(hit.constants[name], value)
    ((gm, inputs),) = _graphs(model, torch.randn(5, 16))  # another shape: exported again
    with pytest.raises(AssertionError, match="exported again"):
        backend.deplodock_backend(gm, inputs)


_WARM_SCRIPT = """
import json, sys, torch
import deplodock.torch_backend as backend
backend._runs_here = lambda inputs: None  # NVRTC needs no GPU


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 32)
        self.norm = torch.nn.RMSNorm(32)

    def forward(self, x):
        return self.norm(self.linear(x)) * torch.tensor(2.0)


seen = []
before = set(sys.modules)


def compiler(gm, example_inputs):
    seen.append(backend.deplodock_backend(gm, list(example_inputs)).deplodock)
    return gm.forward


with torch.no_grad():
    torch.compile(Block(), backend=compiler)(torch.randn(4, 16))
loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "xdsl"
                or m.startswith(("deplodock.passes", "deplodock.dialects.", "deplodock.pipeline")))
print(json.dumps([seen[0].exported is None, loaded]))
"""


def test_a_warm_graph_loads_no_xdsl(tmp_path) -> None:
    """A graph the program cache holds is answered, in a fresh process, without loading
    xDSL, the dialects, the passes or the pipeline (they were most of the backend's own
    part of a warm first call: 0.45 of 0.5 s for TinyLlama on the 2-core CPU)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "DEPLODOCK_CACHE_DIR": str(tmp_path)}
    env.pop("DEPLODOCK_CACHE", None)
    answers = []
    for _ in ("cold", "warm"):
        done = subprocess.run(
            [sys.executable, "-c", _WARM_SCRIPT],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    (cold_hit, cold_loaded), (warm_hit, warm_loaded) = answers
    assert not cold_hit and "deplodock.pipeline" in cold_loaded  # the check can see them
    assert warm_hit and warm_loaded == ["deplodock.dialects.signature"]  # GraphInput, no xDSL


def test_the_graph_is_exported_outside_dynamos_tracing_context(monkeypatch, tmp_path) -> None:
    """Inside a backend, dynamo's fake mode is found through its tracing context; an export
    run there (torch 2.11) lifts the constants the graph makes as fake tensors with no
    data, which then fail the first call from the program cache. The backend exports
    outside that context, and falls back (a warning, not a crash) if a constant has no data."""
    from torch._guards import detect_fake_mode

    import deplodock.api
    import deplodock.torch_backend as backend

    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(backend, "_runs_here", lambda inputs: None)
    capture, seen = deplodock.api.capture, []

    def spy(*args):
        seen.append(detect_fake_mode())
        return capture(*args)

    monkeypatch.setattr(deplodock.api, "capture", spy)
    model = _Block()
    x = torch.randn(4, 16)

    def within_dynamo(gm, example_inputs):
        assert detect_fake_mode() is not None  # what the backend must step out of
        backend.deplodock_backend(gm, example_inputs)
        return gm.forward  # compiled, not run: no GPU here

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=within_dynamo)(x)
    assert seen == [None]

    def fake_constant(*args):
        module, program = capture(*args)
        program.constants["lifted_tensor_0"] = torch.empty((), device="meta")
        return module, program

    monkeypatch.setattr(deplodock.api, "capture", fake_constant)
    ((gm, inputs),) = _graphs(model, torch.randn(3, 16))
    with pytest.warns(backend.DeplodockFallbackWarning, match="lifted_tensor_0 were captured"):
        assert backend.deplodock_backend(gm, inputs) == gm.forward


def test_a_warm_graph_reads_its_constants_outside_dynamos_tracing_context(
    monkeypatch, tmp_path
) -> None:
    """``torch.load`` inside a backend finds dynamo's fake mode through its tracing context
    and reads every tensor as meta (no data): the cached program's constants then failed
    its first call ("Cannot copy out of meta tensor", torch 2.11 on the H200). The backend
    reads the program cache outside that context: a hit from within dynamo gives the
    constants' values."""
    from torch._guards import detect_fake_mode

    import deplodock.torch_backend as backend

    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    monkeypatch.setattr(backend, "_runs_here", lambda inputs: None)
    model = _Block()
    ((gm, inputs),) = _graphs(model, torch.randn(4, 16))
    with torch.no_grad():  # the grad mode is part of the key
        first = backend.deplodock_backend(gm, inputs).deplodock  # compiled and stored
    hits = []

    def within_dynamo(gm, example_inputs):
        assert detect_fake_mode() is not None  # what the lookup must step out of
        hits.append(backend.deplodock_backend(gm, example_inputs).deplodock)
        return gm.forward  # compiled, not run: no GPU here

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=within_dynamo)(torch.randn(4, 16))
    (hit,) = hits
    assert hit.exported is None  # from the program cache
    for name, value in first.constants.items():
        assert not hit.constants[name].is_meta, name
        assert torch.equal(hit.constants[name], value)
    # an entry read without data all the same is compiled again, never run empty
    from deplodock.backends.cuda.program_cache import ProgramCache

    get = ProgramCache.get

    def read_as_meta(self, key):
        entry = get(self, key)
        return entry and dataclasses.replace(
            entry, constants={k: v.to("meta") for k, v in entry.constants.items()}
        )

    monkeypatch.setattr(ProgramCache, "get", read_as_meta)
    with torch.no_grad():
        again = backend.deplodock_backend(gm, inputs).deplodock
    assert again.exported is not None and not again.constants["lifted_tensor_0"].is_meta


def test_a_stack_is_lowered_once_per_layer_and_restacked(
    monkeypatch, tmp_path, capsys, tiny_decoder
) -> None:
    """Dynamo's graph of a six-layer Llama: the backend exports it cut to four layers
    (``frontends.layers.graph_template``), lowers that and restacks it; the program is
    the one lowering every layer gives: the same inputs and kernels, the same CUDA byte
    for byte (NVRTC needs no GPU: the GPU checks are stubbed)."""
    import deplodock.torch_backend as backend
    from deplodock.api import compile_exported
    from deplodock.frontends.layers import graph_template
    from deplodock.frontends.models import CausalLMLogits, build_model

    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DEPLODOCK_STATS", "1")
    monkeypatch.setattr(backend, "_runs_here", lambda inputs: None)
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (1, 8))
    import deplodock.frontends.layers as layers

    made, runs, graphs = [], [], []
    monkeypatch.setattr(
        layers, "graph_template", lambda *a: made.append(graph_template(*a)) or made[-1]
    )
    exported = []
    import deplodock.api as api

    real_capture = api.capture

    def spy_capture(module, *inputs):  # which graphs the backend exports
        exported.append(len(module.graph.nodes))
        return real_capture(module, *inputs)

    monkeypatch.setattr(api, "capture", spy_capture)

    def within_dynamo(gm, example_inputs):  # the graph as dynamo hands it over: lazy
        graphs.append((gm, list(example_inputs)))
        runs.append(backend.deplodock_backend(gm, example_inputs))
        return gm.forward  # compiled, not run: no GPU here

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(CausalLMLogits(build_model(tiny_decoder("llama", 6))), backend=within_dynamo)(
            ids
        )
    restacked = runs[0].deplodock
    stats = capsys.readouterr().err
    assert made[0] is not None and made[0][1].layers == 6
    assert "cut to four layers, export" in stats and "lower every layer" not in stats
    # only the cut is exported, never dynamo's whole graph
    ((gm, inputs),) = graphs
    assert len(exported) == 1 and exported[0] < len(gm.graph.nodes)
    assert "capture (torch.export)" not in stats
    assert restacked.exported is None and restacked.constants == {}
    _, program = real_capture(gm, *inputs)
    assert restacked.out_spec == program.call_spec.out_spec
    whole = compile_exported(program, cache=False)  # every layer lowered
    assert restacked.program.kernel_names == whole.kernel_names
    assert [(i.name, i.shape) for i in restacked.program.inputs] == [
        (i.name, i.shape) for i in whole.inputs
    ]
    assert restacked.program.source == whole.source
    assert "layers_modules_5" in restacked.program.inputs[-3].name
    # four layers are not cut; a model of no layers is not a stack
    ((four, four_inputs),) = _graphs(CausalLMLogits(build_model(tiny_decoder("llama", 4))), ids)
    assert graph_template(four, four_inputs, None) is None
    ((block, block_inputs),) = _graphs(_Block(), torch.randn(4, 16))
    assert graph_template(block, block_inputs, None) is None


class _Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


class _Stack(torch.nn.Module):
    """Seven alike layers whose input dynamo files under layer 0 (its first reader)."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(_Residual() for _ in range(7))
        self.head = torch.nn.Linear(32, 8)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_a_plain_stack_is_cut_and_its_lowering_checked(monkeypatch, tmp_path) -> None:
    """Not transformers': cut to four layers (an input under layer 0 counts as its), and
    where the lowered layers do not repeat under moved names (this fusion names a
    kernel after the next layer's nodes) every layer is lowered: the same CUDA."""
    import deplodock.torch_backend as backend
    from deplodock.api import capture, compile_exported
    from deplodock.frontends.layers import graph_template

    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(backend, "_runs_here", lambda inputs: None)
    ((gm, inputs),) = _graphs(_Stack(), torch.randn(4, 32))
    _, program = capture(gm, *inputs)
    template, restacker = graph_template(gm, inputs, lambda m, *i: capture(m, *i)[1])
    assert restacker.layers == 7
    assert sum(n.op == "placeholder" for n in template.graph.nodes) == 11  # x, 4 x 2, head
    compiled = backend.deplodock_backend(gm, inputs).deplodock
    assert compiled.program.source == compile_exported(program, cache=False).source


# ------------------------------------------------------------------------------ GPU


def _no_fallback(fallbacks) -> None:
    assert not fallbacks, [str(w.message) for w in fallbacks]


@pytest.mark.gpu
@needs_gpu
def test_compiled_model_matches_eager() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.RMSNorm(128)
    ).cuda()
    x = torch.randn(4, 64, device="cuda")
    out, fallbacks = _compiled_call(model, x)
    _no_fallback(fallbacks)
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@needs_gpu
def test_non_contiguous_input_is_made_contiguous() -> None:
    x = torch.randn(64, 32, device="cuda").t()  # a transposed view
    out, fallbacks = _compiled_call(lambda a: torch.softmax(a, -1), x)
    _no_fallback(fallbacks)
    torch.testing.assert_close(out, torch.softmax(x, -1))


@pytest.mark.gpu
@needs_gpu
def test_llama_layers_through_the_backend() -> None:
    pytest.importorskip("transformers")
    from deplodock.frontends.models import CausalLMLogits, build_model

    model = CausalLMLogits(build_model("tinyllama", layers=2)).cuda()
    ids = torch.randint(0, 32000, (1, 32), device="cuda")
    out, fallbacks = _compiled_call(model, ids)
    _no_fallback(fallbacks)
    with torch.no_grad():
        want = model(ids)
    assert (out - want).abs().max().item() <= 1e-4 * want.abs().max().item()


@pytest.mark.gpu
@needs_gpu
def test_a_restacked_stack_through_the_backend_matches_eager(tiny_decoder, monkeypatch, capsys):
    """Six layers: the backend lowers four and restacks them (the CPU test checks the CUDA
    against lowering every layer); here the logits against eager on the GPU."""
    from deplodock.frontends.models import CausalLMLogits, build_model

    monkeypatch.setenv("DEPLODOCK_STATS", "1")
    monkeypatch.setenv("DEPLODOCK_CACHE", "0")
    torch.manual_seed(0)
    model = CausalLMLogits(build_model(tiny_decoder("llama", 6))).cuda()
    ids = torch.randint(0, 128, (1, 37), device="cuda")
    torch._dynamo.reset()
    out, fallbacks = _compiled_call(model, ids)
    _no_fallback(fallbacks)
    stats = capsys.readouterr().err
    assert "cut to four layers, export" in stats and "lower every layer" not in stats
    with torch.no_grad():
        want = model(ids)
    assert (out - want).abs().max().item() <= 1e-4 * want.abs().max().item()


@pytest.mark.gpu
@needs_gpu
def test_a_warm_graph_from_the_program_cache_matches_eager(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    torch.manual_seed(0)
    model = _Block().cuda()
    x = torch.randn(4, 16, device="cuda")
    for attempt in ("cold", "warm"):
        torch._dynamo.reset()
        seen = []

        def spy(gm, example_inputs, seen=seen):
            run = deplodock_backend(gm, example_inputs)
            seen.append(run)
            return run

        with torch.no_grad():
            out = torch.compile(model, backend=spy)(x)
            want = model(x)
        (run,) = seen
        assert (run.deplodock.exported is None) == (attempt == "warm"), attempt
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
