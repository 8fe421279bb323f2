"""Test-wide settings: compiled kernels go to a cache of the test session's own, never the
user's ``~/.cache/deplodock`` (tests that study the cache set their own directory)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _session_kernel_cache(tmp_path_factory: pytest.TempPathFactory):
    patch = pytest.MonkeyPatch()
    patch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    yield
    patch.undo()
