"""The program cache (backends/cuda/program_cache.py): a compiled program read back without
its IR is the same plan, kernels and argument specs; a second compile is a hit that runs
no lowering; any change of the key is a miss; a damaged entry is a miss, never a crash;
two writers leave one whole entry. CPU only: NVRTC compiles without a GPU. Every test uses
a temporary cache directory."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import deplodock
import deplodock.pipeline
from deplodock.api import Compiled, _import, capture
from deplodock.backends.cuda import nvrtc, program_cache
from deplodock.backends.cuda import program_key as keys
from deplodock.backends.cuda.driver import gpu_available
from deplodock.backends.cuda.program_cache import (
    ProgramCache,
    ProgramEntry,
    compiler_hash,
    default_program_cache,
    program_key,
)
from deplodock.backends.cuda.runtime import IRNotKept
from deplodock.frontends.capture import program_fingerprint
from deplodock.frontends.models import ModelSpec, program_identity, resolve


class Block(torch.nn.Module):
    """Linear → ReLU → RMSNorm, a buffer, and a tensor attribute (a lifted constant)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 64)
        self.norm = torch.nn.RMSNorm(64)
        self.register_buffer("shift", torch.randn(64))
        self.scale = torch.linspace(0.5, 1.5, 64)  # neither parameter nor buffer

    def forward(self, x):
        h = self.norm(torch.relu(self.linear(x)))
        return h * self.scale + self.shift, h.sum(-1)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(directory))
    monkeypatch.delenv("DEPLODOCK_CACHE", raising=False)
    return directory


@pytest.fixture
def block():
    torch.manual_seed(0)
    return Block().eval(), torch.randn(4, 32)


@pytest.fixture
def no_compiler(monkeypatch: pytest.MonkeyPatch):
    """Make every way into the compiler fail: a hit must not need it."""

    def refuse(*args, **kwargs):
        raise AssertionError("the compiler ran on a program cache hit")

    monkeypatch.setattr(deplodock.pipeline, "lower", refuse)
    monkeypatch.setattr(deplodock.pipeline, "compile_program", refuse)
    monkeypatch.setattr(nvrtc, "compile_cuda", refuse)


def programs(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.prog"))


def temporaries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.name.endswith(".tmp"))


def units(compiled) -> list:
    return [
        (u.key, u.symbol, u.kernels, u.compiled.cubin, u.compiled.source, u.compiled.log)
        for u in compiled.units
    ]


def assert_same_program(got, want) -> None:
    assert got.plan == want.plan
    assert list(got.inputs) == list(want.inputs)
    assert tuple(got.kernel_names) == tuple(want.kernel_names)
    assert units(got.compiled) == units(want.compiled)
    assert got.compiled.arch == want.compiled.arch
    assert got.resources == want.resources
    assert {k: u.key for k, u in got.compiled.unit_of.items()} == {
        k: u.key for k, u in want.compiled.unit_of.items()
    }


# ---------------------------------------------------------------------- round trip


def test_a_program_round_trips_without_its_ir(tmp_path, block):
    model, x = block
    _, exported = capture(model, x)
    program = deplodock.pipeline.compile_program(_import(exported))
    assert exported.constants, "the block should lift a constant"
    store = ProgramCache(tmp_path / "store")
    key = "ab" * 32
    assert store.put(key, ProgramEntry.of(program, exported.constants, {"title": "block"}))
    assert len(programs(store.root)) == 1 and not temporaries(store.root)

    entry = store.get(key)
    assert entry is not None and store.hits == 1
    assert entry.info == {"title": "block"}
    assert entry.constants.keys() == exported.constants.keys()
    for name, tensor in exported.constants.items():
        assert torch.equal(entry.constants[name], tensor)
    restored = entry.program()
    assert restored.from_cache and not program.from_cache
    assert_same_program(restored, program)
    assert all(u.cached for u in restored.compiled.units)
    for what in ("module", "func", "kernels"):
        with pytest.raises(IRNotKept, match="program cache"):
            getattr(restored, what)
    for unit in program.compiled.units:
        assert unit.compiled.source in restored.source

    # What deplodock run binds on a hit: the same arguments, constants from the entry.
    cold = Compiled(model, exported, program).arguments(x)
    warm = Compiled(model, None, restored, constants=entry.constants).arguments(x)
    assert len(cold) == len(warm)
    for a, b in zip(cold, warm, strict=True):
        assert a.shape == b.shape and torch.equal(a, b)


# ------------------------------------------------------------------ hits and misses


def test_a_second_compile_is_a_hit_and_runs_no_lowering(block, private_cache, request):
    model, x = block
    cold = deplodock.compile(model, x)
    assert not cold.program.from_cache
    assert len(programs(private_cache)) == 1
    request.getfixturevalue("no_compiler")
    warm = deplodock.compile(model, x)
    assert warm.program.from_cache
    assert_same_program(warm.program, cold.program)
    assert [s.kind for s in warm.inputs] == [s.kind for s in cold.inputs]
    assert "Block: " in repr(warm)
    with pytest.raises(AssertionError, match="compiler ran"):  # the patch does bite
        deplodock.compile(model, x, cache=False)


def test_a_decoder_stack_hits_from_its_two_layer_trace(tiny_decoder, private_cache, monkeypatch):
    """``deplodock.compile`` of a transformers decoder stack: a second compile is keyed by
    the two-layer trace (``LayerStack.fingerprint``) and hits without stitching the stack
    or importing it; its lifted constants and output structure are the stitched program's.
    A stack of another depth is a miss."""
    transformers = pytest.importorskip("transformers")
    from deplodock.frontends import layers

    def model(depth: int):
        torch.manual_seed(0)
        config = tiny_decoder("llama", depth, use_cache=False)
        return transformers.LlamaForCausalLM(config).eval(), config

    lm, config = model(5)
    ids = torch.randint(0, config.vocab_size, (1, 8))
    cold = deplodock.compile(lm, ids)
    stack = layers.export_stack(lm, (ids,), "lm", deplodock.frontends.capture.export_module)
    stitched = stack.stitched()
    assert program_fingerprint(stitched) == program_fingerprint(cold.exported)
    assert stitched.call_spec.out_spec == stack.two.call_spec.out_spec
    assert len(programs(private_cache)) == 2  # the stitched program's key and the stack's

    def refuse(*args, **kwargs):
        raise AssertionError("stitched on a hit")

    with monkeypatch.context() as patch:
        patch.setattr(deplodock.pipeline, "lower", refuse)
        patch.setattr(deplodock.pipeline, "compile_program", refuse)
        patch.setattr(nvrtc, "compile_cuda", refuse)
        patch.setattr(layers, "stitch_layers", refuse)
        warm = deplodock.compile(lm, ids)
    assert warm.program.from_cache and warm.exported is None
    assert_same_program(warm.program, cold.program)
    assert warm.out_spec == cold.out_spec and warm.constants.keys() == cold.constants.keys()
    deeper, _ = model(6)
    assert not deplodock.compile(deeper, ids).program.from_cache


def test_a_warm_compile_loads_no_xdsl(tiny_decoder, private_cache):
    """A warm ``deplodock.compile`` is a trace (of two layers, for a decoder stack), a key
    and a file read: in a fresh process it hits without loading xDSL, the dialects or the
    passes (the targets the capture keeps come from the output cache,
    ``api._lowered_targets``), which were a third of its time; and the programs it reads
    run the same plans. A decoder stack and a plain function."""
    transformers = pytest.importorskip("transformers")
    config = tiny_decoder("llama", 3, use_cache=False)
    lm = transformers.LlamaForCausalLM(config).eval()
    ids = torch.zeros(1, 8, dtype=torch.long)
    a, b = torch.ones(16, 8), torch.ones(8, 4)
    cold = [deplodock.compile(lm, ids), deplodock.compile(_relu_matmul, a, b)]
    script = textwrap.dedent(
        f"""\
        import json, sys, torch, transformers, deplodock
        def _relu_matmul(a, b):  # the test module's (importing it would load the passes)
            return torch.relu(a @ b)
        config = transformers.LlamaConfig.from_dict(json.loads({config.to_json_string()!r}))
        lm = transformers.LlamaForCausalLM(config).eval()
        ids = torch.zeros(1, 8, dtype=torch.long)
        a, b = torch.ones(16, 8), torch.ones(8, 4)
        warm = [deplodock.compile(lm, ids), deplodock.compile(_relu_matmul, a, b)]
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "xdsl"
                        or m.startswith(("deplodock.passes", "deplodock.dialects.")))
        print(json.dumps([[w.program.from_cache for w in warm], loaded,
                          [repr(w.program.plan) for w in warm]]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from_cache, loaded, plans = json.loads(done.stdout.strip().splitlines()[-1])
    assert from_cache == [True, True]
    assert loaded == ["deplodock.dialects.signature"]  # GraphInput, without xDSL
    assert plans == [repr(c.program.plan) for c in cold]


def _relu_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a @ b)


def test_a_different_shape_arch_or_compiler_is_a_miss(block, private_cache, monkeypatch):
    model, x = block
    deplodock.compile(model, x)
    assert not deplodock.compile(model, torch.randn(8, 32)).program.from_cache
    assert not deplodock.compile(model, x, arch="sm_80").program.from_cache
    assert deplodock.compile(model, x).program.from_cache  # the first is still there
    monkeypatch.setattr(keys, "compiler_hash", lambda: "an edited compiler")
    assert not deplodock.compile(model, x).program.from_cache
    assert len(programs(private_cache)) == 4


def test_the_key_covers_arch_options_compiler_and_identity(monkeypatch):
    identity = ["model", {"seq": 8}]
    key = program_key(identity, "sm_90")
    assert key == program_key(["model", {"seq": 8}], "sm_90")
    assert key != program_key(["model", {"seq": 16}], "sm_90")
    assert key != program_key(identity, "sm_80")
    assert key != program_key(identity, "sm_90", ["-lineinfo"])
    monkeypatch.setattr(keys, "compiler_hash", lambda: "0" * 64)
    assert key != program_key(identity, "sm_90")


def test_editing_any_source_file_changes_the_compiler_hash(tmp_path, monkeypatch):
    package = tmp_path / "fakecompiler"
    (package / "passes").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "passes" / "tile.py").write_text("UNROLL = 4\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(keys, "_PACKAGES", ("fakecompiler",))
    compute = compiler_hash.__wrapped__  # the uncached function
    before = compute()
    assert before == compute()
    (package / "passes" / "tile.py").write_text("UNROLL = 8\n")
    assert compute() != before
    assert len(compiler_hash()) == 64 and compiler_hash() == compiler_hash()


def test_the_model_identity_covers_what_decides_the_program():
    base = program_identity("tinyllama", layers=1, seq=8)
    assert base == program_identity("TinyLlama/TinyLlama-1.1B-Chat-v1.0", layers=1, seq=8)
    assert base["config"]["num_hidden_layers"] == 1 and base["transformers"]
    json.dumps(base)  # it is JSON
    for other in (
        program_identity("tinyllama", layers=2, seq=8),
        program_identity("tinyllama", layers=1, seq=16),
        program_identity("tinyllama", layers=1, seq=8, part="layer"),
        program_identity("tinyllama", layers=1, seq=8, device="meta"),
    ):
        assert other != base
    spec = resolve("tinyllama")
    edited = ModelSpec(spec.name, {**spec.config, "rms_norm_eps": 1e-6})
    assert program_identity(edited, layers=1, seq=8) != base


def test_the_cache_is_off_with_the_kernel_caches_switch(block, private_cache, monkeypatch):
    assert default_program_cache() is not None
    assert default_program_cache().root == private_cache
    monkeypatch.setenv("DEPLODOCK_CACHE", "0")
    assert default_program_cache() is None
    model, x = block
    deplodock.compile(model, x)
    assert not deplodock.compile(model, x).program.from_cache
    assert not programs(private_cache)


# ------------------------------------------------------------------------- damage


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    header = program_cache._HEADER
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(b"not a program" * 100)
    elif how == "format":  # an entry of another format version
        magic, _, meta_len, blob_len, digest = header.unpack_from(data)
        path.write_bytes(header.pack(magic, 999, meta_len, blob_len, digest) + data[header.size :])
    elif how == "json":  # the hash checks out, the JSON is not an entry
        key = path.stem
        magic, version, meta_len, _, _ = header.unpack_from(data)
        meta = json.loads(data[header.size : header.size + meta_len])
        del meta["plan"]
        text = json.dumps(meta).encode()
        body = text + data[header.size + meta_len :]
        digest = hashlib.sha256(key.encode() + body).digest()
        path.write_bytes(
            header.pack(magic, version, len(text), len(body) - len(text), digest) + body
        )
    else:
        raise ValueError(how)


@pytest.mark.parametrize("how", ["truncate", "flip", "empty", "garbage", "format", "json"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(block, private_cache, how, caplog):
    model, x = block
    deplodock.compile(model, x)
    (path,) = programs(private_cache)
    _damage(path, how)
    store = ProgramCache(private_cache)
    assert store.get(path.stem) is None and store.corrupt == 1
    assert "damaged" in caplog.text
    again = deplodock.compile(model, x)  # compiled again, no exception
    assert not again.program.from_cache
    assert deplodock.compile(model, x).program.from_cache  # and the entry rewritten


# ------------------------------------------------------------------- two writers


def test_two_processes_storing_one_program_leave_one_whole_entry(tmp_path):
    directory = tmp_path / "shared-cache"
    script = textwrap.dedent(
        """\
        import torch, deplodock
        from deplodock.api import capture, compile_exported
        from deplodock.backends.cuda.program_cache import (
            ProgramEntry, default_program_cache, program_key)
        from deplodock.frontends.capture import program_fingerprint

        def fn(a, b):
            return torch.relu(a @ b) * 2.0

        a, b = torch.randn(64, 32), torch.randn(32, 48)
        _, exported = capture(fn, a, b)
        program = compile_exported(exported)
        store = default_program_cache()
        key = program_key(["exported", program_fingerprint(exported)], "sm_90")
        entry = ProgramEntry.of(program)
        for _ in range(40):  # many overlapping writes; a read never sees half a file
            assert store.put(key, entry)
            got = store.get(key)
            assert got is not None and got.plan == program.plan
        assert store.corrupt == 0
        print("ok")
        """
    )
    env = {**__import__("os").environ, "DEPLODOCK_CACHE_DIR": str(directory)}
    env.pop("DEPLODOCK_CACHE", None)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert out.strip() == "ok"
    assert len(programs(directory)) == 1 and not temporaries(directory)
    (path,) = programs(directory)
    assert ProgramCache(directory).get(path.stem) is not None


# --------------------------------------------------------------- deplodock run MODEL


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_run_model_twice_is_a_hit_with_no_export_and_no_lowering(
    capsys, private_cache, monkeypatch
):
    pytest.importorskip("transformers")
    from deplodock import cli
    from deplodock.frontends import models

    argv = ["run", "tinyllama", "--layers", "1", "--seq", "8", "-q", "--no-gpu-ok", "-v"]
    assert cli.main(argv) == 0
    cold = capsys.readouterr().out
    assert "program cache hit" not in cold and len(programs(private_cache)) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the compiler ran on a program cache hit")

    for module, name in [
        (models, "capture_model"),
        (models, "require_transformers"),
        (torch.export, "export"),
        (deplodock.pipeline, "lower"),
        (deplodock.pipeline, "compile_program"),
        (nvrtc, "compile_cuda"),
    ]:
        monkeypatch.setattr(module, name, refuse)
    assert cli.main(argv) == 0
    warm = capsys.readouterr().out
    assert "tinyllama-1.1b, 1 layer, seq 8" in warm and "(program cache hit)" in warm

    # the same kernels, launch shapes and resource reports as the cold compile
    def kernel_lines(out: str) -> list[str]:
        return [line for line in out.splitlines() if line.startswith(("  kernel ", "  21 "))]

    assert len(kernel_lines(cold)) == 15 and kernel_lines(warm) == kernel_lines(cold)
    # another --seq is another program; --no-cache compiles (and so fails here)
    assert cli.main([*argv[:5], "16", *argv[6:]]) == 3
    assert cli.main([*argv, "--no-cache"]) == 3
    assert "the compiler ran" in capsys.readouterr().err
