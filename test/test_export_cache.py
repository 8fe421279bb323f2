"""The capture's decomposition, sped up (``frontends/capture.py: to_core_aten``).

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

import deplodock.frontends.capture as ex


class _Program(torch.nn.Module):
    def forward(self, x):  # hardswish and cumsum: ops the default table decomposes
        return torch.nn.functional.hardswish(x).cumsum(0) + torch.addcmul(x, x, x)


class _Composites(torch.nn.Module):
    """CompositeImplicitAutograd ops of each kind: kept whole by the compiler (linear),
    kept by torch's default table (upsample_bilinear2d.vec), and decomposed by their own
    kernel (the ``_natural_cia`` left out of the override: group_norm, pixel_shuffle,
    cosine_similarity), beside a non-composite op the table decomposes (hardswish)."""

    def forward(self, x, w):
        y = torch.nn.functional.linear(x, w)
        z = torch.nn.functional.group_norm(y.reshape(2, 8, 2, 4), 2)
        z = torch.nn.functional.pixel_shuffle(z, 2)
        up = torch.nn.functional.interpolate(z, scale_factor=2.0, mode="bilinear")
        near = torch.nn.functional.cosine_similarity(x, x.flip(0))
        return torch.nn.functional.hardswish(up).sum() + near.sum()


def _decomposed(cached: bool, program=None, inputs=None) -> str:
    program = program or _Program()
    inputs = inputs or (torch.randn(4, 5),)
    ep = torch.export.export(program, inputs, strict=False)
    if cached:
        return str(ex.to_core_aten(ep, ex.lowered_targets()).graph)
    table = torch.export.default_decompositions()
    for op in [op for op in table if ex.target_name(op) in ex.lowered_targets()]:
        del table[op]
    return str(ep.run_decompositions(table).graph)


def test_the_cached_decomposition_is_torchs() -> None:
    assert _decomposed(cached=True) == _decomposed(cached=False)
    assert "hardswish" not in _decomposed(cached=True)  # it did decompose


def test_leaving_natural_composites_out_of_the_override_keeps_torchs_program() -> None:
    """Every kind of composite op decomposes (or stays) exactly as torch's own
    ``run_decompositions`` has it. (The same was checked on the first three samples of
    every OpInfo entry that decomposes: docs/bench/cpu-2026-12-06-s27.)"""
    inputs = (torch.randn(8, 8), torch.randn(16, 8))
    ours = _decomposed(True, _Composites(), inputs)
    assert ours == _decomposed(False, _Composites(), inputs)
    for kept in ("aten.linear.default", "upsample_bilinear2d.vec"):
        assert kept in ours
    for gone in ("aten.group_norm", "pixel_shuffle", "cosine_similarity", "hardswish"):
        assert gone not in ours


def test_only_composites_that_change_are_overridden(monkeypatch) -> None:
    """torch overrides the CompositeImplicitAutograd kernel of every op it collects, for
    each decomposition (525 ops on torch 2.13, half the time of a small capture); the ops whose
    default entry is their own kernel are left out, so far fewer are."""
    import torch.export.exported_program as exported

    counts = []
    original = exported._override_composite_implicit_decomp

    def counting(cia_ops_to_callable, *args, **kwargs):
        counts.append(len(cia_ops_to_callable))
        return original(cia_ops_to_callable, *args, **kwargs)

    monkeypatch.setattr(exported, "_override_composite_implicit_decomp", counting)
    assert "hardswish" not in _decomposed(cached=True)
    assert counts and max(counts) < 150, counts
    assert len(ex._natural_cia()) > 300  # the composites decomposed by their own kernel


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


def test_a_decomposition_says_nothing_of_torchs_own_deprecations(monkeypatch) -> None:
    """torch 2.13's ``run_decompositions`` deep-copies its tree specs through a deprecated
    ``isinstance(treespec, LeafSpec)`` and warned (a FutureWarning about torch's code on
    every capture that decomposes: ``deplodock bench`` printed it per case). Other
    warnings raised while decomposing still reach the user."""
    import warnings

    ep = torch.export.export(_Program(), (torch.randn(5),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        decomposed = ex.to_core_aten(ep, frozenset())
    assert decomposed is not ep  # it did decompose (hardswish, cumsum)
    assert not [w for w in caught if "LeafSpec" in str(w.message)]
    decompose = torch.export.ExportedProgram.run_decompositions

    def warning_both(self, *args, **kwargs):
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning, 1)
        warnings.warn("another", FutureWarning, stacklevel=1)
        return decompose(self, *args, **kwargs)

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", warning_both)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex.to_core_aten(torch.export.export(_Program(), (torch.randn(5),)), frozenset())
    assert [str(w.message) for w in caught] == ["another"]
