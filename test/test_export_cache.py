"""The capture's decomposition, sped up (``frontends/export.py: to_core_aten``).

``run_decompositions`` re-collects every CompositeImplicitAutograd op on each call; the
frontend keeps that collection and the default table while no operator is registered
(``_keyed``), and swaps the collection into torch only while it decomposes. The program it
gives must be torch's own, the swap must not outlive the call, and a newly registered
operator must be seen.
"""

from __future__ import annotations

import contextlib
import importlib

import torch

import deplodock.frontends.export as ex


class _Program(torch.nn.Module):
    def forward(self, x):  # hardswish and cumsum: ops the default table decomposes
        return torch.nn.functional.hardswish(x).cumsum(0) + torch.addcmul(x, x, x)


def _decomposed(cached: bool) -> str:
    ep = torch.export.export(_Program(), (torch.randn(4, 5),), strict=False)
    if cached:
        return str(ex.to_core_aten(ep, ex.lowered_targets()).graph)
    table = torch.export.default_decompositions()
    for op in [op for op in table if ex._target_name(op) in ex.lowered_targets()]:
        del table[op]
    return str(ep.run_decompositions(table).graph)


def test_the_cached_decomposition_is_torchs() -> None:
    assert _decomposed(cached=True) == _decomposed(cached=False)
    assert "hardswish" not in _decomposed(cached=True)  # it did decompose


def test_the_swap_ends_with_the_call() -> None:
    modules = [importlib.import_module(m) for m in ex._CIA_MODULES]
    before = [getattr(m, "_collect_all_valid_cia_ops", None) for m in modules]
    _decomposed(cached=True)
    assert [getattr(m, "_collect_all_valid_cia_ops", None) for m in modules] == before
    with contextlib.suppress(RuntimeError), ex._cia_ops_cached():
        raise RuntimeError("a failing decomposition restores them too")
    assert [getattr(m, "_collect_all_valid_cia_ops", None) for m in modules] == before


def test_a_registered_operator_refreshes_the_cache(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(ex, "_cached", {})
    count = iter([10, 10, 11])
    monkeypatch.setattr(ex, "_operator_count", lambda: next(count))
    for _ in range(3):
        ex._keyed("probe", lambda: calls.append(1) or len(calls))
    assert len(calls) == 2  # computed, reused, computed again after the new operator
