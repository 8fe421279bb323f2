"""The online softmax: a row's maximum and exp-sum in one pass (``online-softmax``), and
the online group of reduction kinds every level knows (``dialects/combine.py``).

Each program is lowered to the loop level up to the pass; the pass must change it (a
test that it merged a pair of loops) and the loop interpreter must give PyTorch's
answer before and after; then the rest of the pipeline runs and the kernel level (SIMT,
race checker on) must too, so the group's threads' combine (shuffles, a shared-memory
stage), a chunked row's partials and the emitted loop are all exercised. Programs the
pass must leave alone are left byte for byte. The rule itself is checked against float64
on rows with -inf and +inf, and for the symmetry the warp butterfly relies on.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplodock.dialects import kernel, loop, make_context
from deplodock.dialects.combine import ONLINE_MAX, reduce_arrays, step_arrays
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.loop.online_softmax import MIN_ONLINE_ROW, OnlineSoftmax
from deplodock.pipeline import lower
from deplodock.reference import fresh_inputs, relative_error

MERGED = {
    "softmax_odd_rows": "torch.softmax(torch.randn(9,5003), -1)",
    "softmax_3d_scaled": "torch.softmax(torch.randn(2,3,17,31) * 3, -1)",
    "log_softmax": "torch.log_softmax(torch.randn(7,333), -1)",
    "logsumexp": "torch.logsumexp(torch.randn(5,1001), -1)",
    "cross_entropy": (
        "torch.nn.functional.cross_entropy(torch.randn(33,1001), torch.randint(0, 1001, (33,)))"
    ),
    "masked_softmax": (
        "torch.softmax(torch.where(torch.randn(6,97) > 0.7, float('-inf'), torch.randn(6,97)), -1)"
    ),
    "long_rows_chunked": "torch.softmax(torch.randn(2,40960), -1)",  # merged by default too
}
LEFT = {
    "other_tensors_max": (
        "torch.exp(torch.randn(5,33) - torch.randn(5,33).amax(-1, keepdim=True)).sum(-1)"
    ),
    "no_exp": "torch.randn(4,50).amax(-1) + torch.randn(4,50).sum(-1)",
}


def _to_loop(expr: str):
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop", until="online-softmax")
    args, _, reference = fresh_inputs(captured, imported.func, 3, device="cpu")
    return module, [a.numpy() for a in args], [w.numpy() for w in reference()]


def _reduce_loops(module) -> tuple[int, int]:
    loops = [o for o in module.walk() if isinstance(o, loop.ForOp) and o.is_reduce]
    return len(loops), sum(ONLINE_MAX in o.kinds for o in loops)


def _close(got, want, rtol: float = 1e-5) -> None:
    for out, ref in zip(got, want, strict=True):
        assert relative_error(np.asarray(out), ref) <= rtol


@pytest.mark.parametrize("name", list(MERGED))
def test_online_softmax_merges_and_preserves_meaning(name: str) -> None:
    module, inputs, want = _to_loop(MERGED[name])
    before, online = _reduce_loops(module)
    assert online == 0
    _close(run_forward(module, inputs), want)
    OnlineSoftmax(min_row=0).apply(make_context(), module)  # every row, short ones too
    module.verify()
    after, online = _reduce_loops(module)
    assert online >= 1 and after == before - online, "no max and exp-sum pair merged"
    _close(run_forward(module, inputs), want)
    lower(module, to="kernel", options={"online-softmax": OnlineSoftmax(min_row=0)})
    if name == "long_rows_chunked":  # two rows of 40960: each split across blocks
        names = [k.sym_name.data for k in module.walk() if isinstance(k, kernel.KernelOp)]
        assert any(n.endswith("_chunks") for n in names), names
    _close(run_forward(module, inputs), want)


@pytest.mark.parametrize("name", list(LEFT))
def test_online_softmax_leaves_other_programs(name: str) -> None:
    module, _, _ = _to_loop(LEFT[name])
    before = str(module)
    OnlineSoftmax(min_row=0).apply(make_context(), module)
    assert str(module) == before
    assert _reduce_loops(module)[1] == 0


@pytest.mark.parametrize(
    ("expr", "merged"),
    [
        ("torch.softmax(torch.randn(136,50257), -1)", 0),  # read a third time, 27 MB
        ("torch.log_softmax(torch.randn(136,50257), -1)", 0),
        ("torch.logsumexp(torch.randn(136,50257), -1)", 1),  # read by the two loops alone
        ("torch.softmax(torch.randn(256,28000), -1)", 1),  # two blocks' slabs an SM fit
        ("torch.softmax(torch.randn(128,60000), -1)", 1),  # past one block's: not staged
        ("torch.softmax(torch.randn(3,50257), -1)", 1),  # 600 KB: stays in L2, few rows
    ],
)
def test_a_row_staged_alone_and_read_again_keeps_two_loops(expr: str, merged: int) -> None:
    """A row that only one block an SM can stage (112-223 KB of fp32 on the H200) and
    that a loop reads after the two (softmax's normalising loop) keeps them: they walk
    shared memory. Merged where the row is read by the two loops alone, where two blocks'
    slabs fit (the default up to session 35), where no block's does, or where the input
    is too small to be staged (its rows split across blocks); on sm_75 (no
    ``cp.async``: nothing staged past 48 KB) every long row is merged."""
    module, _, _ = _to_loop(expr)
    OnlineSoftmax().apply(make_context(), module)
    assert _reduce_loops(module)[1] == merged
    module, _, _ = _to_loop(expr)
    OnlineSoftmax(arch="sm_75").apply(make_context(), module)
    assert _reduce_loops(module)[1] == 1


def test_kept_rows_are_noted_for_v() -> None:
    """``deplodock -v`` says which long rows kept their two loops and why (the pass's
    notes, ``online_softmax.kept``); a merged row gets no note."""
    from deplodock.passes.loop.online_softmax import kept

    module, _, _ = _to_loop("torch.softmax(torch.randn(136,50257), -1)")
    pass_ = OnlineSoftmax()
    pass_.apply(make_context(), module)
    (note,) = kept(module, pass_)
    assert "a row of 50257 (196 KB) keeps its max and exp-sum loops" in note
    module, _, _ = _to_loop("torch.logsumexp(torch.randn(136,50257), -1)")
    pass_.apply(make_context(), module)
    assert kept(module, pass_) == []


def test_only_long_rows_by_default() -> None:
    """The default leaves a row shorter than ``MIN_ONLINE_ROW`` two loops (its group of
    threads keeps it in registers) and merges a longer one."""
    for extent, merged in ((MIN_ONLINE_ROW - 1, 0), (MIN_ONLINE_ROW, 1)):
        module, _, _ = _to_loop(f"torch.softmax(torch.randn(3,{extent}), -1)")
        OnlineSoftmax().apply(make_context(), module)
        assert _reduce_loops(module)[1] == merged


@pytest.mark.parametrize("op", ["softmax", "logsumexp"])
def test_online_rows_with_infinities(op: str) -> None:
    """Rows with -inf (masked), +inf and all -inf give what PyTorch gives, NaNs included."""
    import torch

    expr = f"torch.{op}(torch.randn(4,37), -1)"
    captured = capture_expression(expr)
    module = import_program(captured.program).module
    lower(module, to="kernel", options={"online-softmax": OnlineSoftmax(min_row=0)})
    x = np.random.default_rng(0).standard_normal((4, 37)).astype(np.float32)
    x[0, ::3] = -np.inf
    x[1, 5] = np.inf
    x[2, :] = -np.inf
    (got,) = run_forward(module, [x])
    want = getattr(torch, op)(torch.from_numpy(x), -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0, equal_nan=True)


def test_online_rule_against_float64() -> None:
    """The rule merged step by step, reduced at once, and in a butterfly of partials
    gives ``max`` and ``sum exp(x - max) * v`` of float64; merging two partials either
    way round gives the same bits."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 257)) * 20).astype(np.float32)
    x[0, :100] = -np.inf
    v = rng.standard_normal((6, 257)).astype(np.float32)
    kinds = ["online_max", "online_sum"]
    m64 = x.astype(np.float64).max(-1)
    want = (np.exp(x.astype(np.float64) - m64[:, None]) * v).sum(-1)

    m, s = reduce_arrays(kinds, [x, v], -1)
    np.testing.assert_array_equal(m, m64.astype(np.float32))
    np.testing.assert_allclose(s, want, rtol=1e-5)

    accs = [np.full(6, -np.inf, np.float32), np.zeros(6, np.float32)]
    for i in range(x.shape[1]):
        accs = step_arrays(kinds, accs, [x[:, i], v[:, i]])
    np.testing.assert_allclose(accs[1], want, rtol=1e-5)

    parts = reduce_arrays(kinds, [x.reshape(6, 1, 257), v.reshape(6, 1, 257)], -1)
    a = reduce_arrays(kinds, [x[:, :128], v[:, :128]], -1)
    b = reduce_arrays(kinds, [x[:, 128:], v[:, 128:]], -1)
    ab, ba = step_arrays(kinds, a, b), step_arrays(kinds, b, a)
    np.testing.assert_array_equal(ab[0], ba[0])
    np.testing.assert_array_equal(ab[1], ba[1])
    np.testing.assert_allclose(ab[1], want, rtol=1e-5)
    np.testing.assert_allclose(parts[1].reshape(6), want, rtol=1e-5)


def test_online_cuda_compiles() -> None:
    """The emitted online step and the group's shuffle combine compile with NVRTC."""
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    from deplodock.backends.cuda.emit import emit_cuda

    module = import_program(capture_expression(MERGED["softmax_odd_rows"]).program).module
    lower(module, to="kernel", options={"online-softmax": OnlineSoftmax(min_row=0)})
    source = emit_cuda(module)
    assert "__shfl_xor_sync" in source and "expf(-fabsf(" in source, source
    compiled = compile_cuda(source, arch="sm_90")
    assert all(not r.spills for r in compiled.resources.values())
