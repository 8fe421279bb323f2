"""Test-wide settings: compiled kernels go to a cache of the test session's own, never the
user's ``~/.cache/deplodock`` (tests that study the cache set their own directory); the
slowest test files run first.

The README's command runs the suite on one pytest-xdist worker a core, a file at a time
per worker (``--dist loadfile --no-loadscope-reorder``: a file's module fixtures, OpInfo's
run among them, are computed once). Files are handed out in collection order, so the
slowest go first (``SLOWEST_FIRST``, their seconds on the 2-core CI machine in session 13)
and the short ones fill in behind them: the workers end together.
"""

from __future__ import annotations

import os

import pytest

SLOWEST_FIRST = (
    "test_opinfo.py",  # 240 s: every OpInfo entry, one sample, both interpreters
    "test_writeup.py",  # 166 s: the write-up's commands, each a process (Qwen's whole model)
    "test_filecheck.py",  # 164 s: lit, 212 deplo-opt processes
    "test_simt_interpreters.py",  # 92 s
    "test_restack.py",  # 90 s (session 17)
    "test_models.py",  # 72 s
    "test_matmul_schedule.py",  # 67 s
    "test_bench.py",  # 47 s
    "test_lift_fuse.py",  # 46 s
    "test_real_kernels_compile.py",  # 41 s
    "test_reduction_layouts.py",  # 38 s
    "test_seed_examples.py",  # 38 s
    "test_mutation.py",  # 18 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of ``SLOWEST_FIRST`` first, in its order; the rest as collected."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session")
def jobs() -> int:
    """Processes a test may start for its own pool: one under pytest-xdist (the workers
    already take every core), else up to two."""
    return 1 if os.environ.get("PYTEST_XDIST_WORKER") else min(2, os.cpu_count() or 1)


@pytest.fixture(autouse=True, scope="session")
def _session_kernel_cache(tmp_path_factory: pytest.TempPathFactory):
    patch = pytest.MonkeyPatch()
    patch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    yield
    patch.undo()


TINY_DECODER = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 128,
    "max_position_embeddings": 256,
}
"""A decoder small enough to trace and lower in a second, with grouped-query attention."""


@pytest.fixture(scope="session")
def tiny_decoder():
    """``tiny_decoder(family, layers, **extra)``: a transformers config of ``TINY_DECODER``
    (``family``: "llama" or "qwen2")."""
    transformers = pytest.importorskip("transformers")

    def make(family: str, layers: int, **extra):
        fields = {**TINY_DECODER, "num_hidden_layers": layers, **extra}
        if family == "llama":
            return transformers.LlamaConfig(**fields, rms_norm_eps=1e-5, rope_theta=10000.0)
        return transformers.Qwen2Config(**fields, rms_norm_eps=1e-6, rope_theta=1e6)

    return make
