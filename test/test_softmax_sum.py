"""Fused attention: ``softmax-sum`` folds a softmax summed against values into one
``ten.softmax_sum``, lowered as one kernel whose walk over a row keeps a running max, the
weights' sum and the weighted values (the online group), so the scores are never stored.

Each program is captured from PyTorch, the pass must change it (a ``ten.softmax_sum``
appears, the softmax's reductions go) and the tensor interpreter must give PyTorch's
answer before and after; the whole pipeline then runs and the kernel level (SIMT, race
checker on) must too, at small and irregular shapes: sequence lengths 1, primes and one
more than a group of threads, head dims 16-128 and head dims split over two walks (96, 128;
a head dim of 1024, 16 walks, is left unfolded: MAX_WALKS), causal or not, grouped-query
heads, boolean and additive masks, a row with every key masked out. Programs the pass
must leave alone are left byte for byte.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from deplodock.dialects import kernel, make_context
from deplodock.dialects import tensor as ten
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.tensor.lift_to_loop import value_columns
from deplodock.passes.tensor.softmax_sum import SoftmaxSum
from deplodock.pipeline import lower
from deplodock.reference import fresh_inputs, relative_error

SDPA = "torch.nn.functional.scaled_dot_product_attention"


def _sdpa(b, hq, hkv, sq, sk, d, extra="", dv=None):
    dv = dv or d
    return (
        f"{SDPA}(torch.randn({b},{hq},{sq},{d}), torch.randn({b},{hkv},{sk},{d}), "
        f"torch.randn({b},{hkv},{sk},{dv}){extra})"
    )


FOLDED = {
    "causal_gqa": _sdpa(1, 8, 2, 37, 37, 16, ", is_causal=True, enable_gqa=True"),
    "plain": _sdpa(2, 3, 3, 5, 11, 32),
    "one_query": _sdpa(1, 4, 4, 1, 67, 64),
    "one_key": _sdpa(1, 2, 2, 7, 1, 16),
    "causal_33": _sdpa(1, 2, 2, 33, 33, 128, ", is_causal=True"),
    "additive_mask": _sdpa(1, 2, 2, 9, 13, 16, ", attn_mask=torch.randn(9,13)"),
    "boolean_mask": _sdpa(1, 2, 2, 9, 13, 16, ", attn_mask=torch.rand(9,13) > 0.4"),
    "value_dim_differs": _sdpa(1, 2, 2, 6, 10, 16, dv=24),
    "hand_written": (
        "torch.softmax(torch.randn(2,9,16) @ torch.randn(2,13,16).transpose(-1,-2) * 0.25, -1)"
        " @ torch.randn(2,13,8)"
    ),
}
LEFT = {
    "probabilities_returned": (
        "(lambda p: (p, p @ torch.randn(2,13,8)))(torch.softmax(torch.randn(2,9,13), -1))"
    ),
    "softmax_alone": "torch.softmax(torch.randn(4,33), -1)",
    "head_dim_1024": _sdpa(1, 1, 1, 3, 5, 1024),  # 16 walks: left (MAX_WALKS)
    "sum_over_another_axis": (
        "(torch.softmax(torch.randn(3,5,7), 1)[..., None] * torch.randn(3,5,7,2)).sum(2)"
    ),
}


def _to_tensor(expr: str):
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="tensor", until="softmax-sum")
    args, _, reference = fresh_inputs(captured, imported.func, 3, device="cpu")
    return module, [a.numpy() for a in args], [w.numpy() for w in reference()]


def _close(got, want, rtol: float = 1e-5) -> None:
    for out, ref in zip(got, want, strict=True):
        assert relative_error(np.asarray(out), ref) <= rtol


def _count(module: ModuleOp, kind) -> int:
    return sum(isinstance(o, kind) for o in module.walk())


@pytest.mark.parametrize("name", list(FOLDED))
def test_softmax_sum_folds_and_preserves_meaning(name: str) -> None:
    module, inputs, want = _to_tensor(FOLDED[name])
    assert _count(module, ten.SoftmaxSumOp) == 0
    _close(run_forward(module, inputs), want)
    SoftmaxSum().apply(make_context(), module)
    module.verify()
    assert _count(module, ten.SoftmaxSumOp) == 1, "the softmax and its product were not folded"
    assert not any(isinstance(o, ten.ReduceOp) and o.kind.data == "max" for o in module.walk())
    _close(run_forward(module, inputs), want)
    lower(module, to="kernel")
    _close(run_forward(module, inputs), want)
    kernels = [k.sym_name.data for k in module.walk() if isinstance(k, kernel.KernelOp)]
    # One walk over a row computes its scores inside; two or more read them from a
    # kernel of their own (recomputing the dot products per walk would cost more).
    walks = want[0].shape[-1] // value_columns(want[0].shape[-1])
    assert len(kernels) == (1 if walks == 1 else 2), kernels


@pytest.mark.parametrize("name", list(LEFT))
def test_softmax_sum_leaves_other_programs(name: str) -> None:
    module, _, _ = _to_tensor(LEFT[name])
    before = str(module)
    SoftmaxSum().apply(make_context(), module)
    assert str(module) == before


def test_scores_never_stored() -> None:
    """Causal grouped-query attention is one kernel reading q, k and v and writing the
    output: no buffer of the S x S scores or probabilities exists at the kernel level."""
    expr = _sdpa(1, 4, 2, 29, 29, 16, ", is_causal=True, enable_gqa=True")
    captured = capture_expression(expr)
    module = import_program(captured.program).module
    lower(module, to="kernel")
    (k,) = [o for o in module.walk() if isinstance(o, kernel.KernelOp)]
    shapes = [tuple(v.type.get_shape()) for v in [*k.inputs, *k.results]]
    assert shapes == [(1, 4, 29, 16), (1, 2, 29, 16), (1, 2, 29, 16), (1, 4, 29, 16)]


def test_rows_with_every_key_masked_give_zero() -> None:
    """PyTorch's safe softmax: a query whose boolean mask row is all False gives 0 (the
    fold keeps that, ``safe``); the others attend as usual."""
    q, k, v = (torch.randn(1, 2, 6, 16) for _ in range(3))
    mask = torch.rand(6, 6) > 0.3
    mask[2] = False
    mask[:, 0] |= torch.arange(6) != 2  # every other row keeps a key
    expr = _sdpa(1, 2, 2, 6, 6, 16, ", attn_mask=torch.rand(6,6) > 0.3")
    captured = capture_expression(expr)
    module = import_program(captured.program).module
    lower(module, to="tensor")
    assert any(isinstance(o, ten.SoftmaxSumOp) and o.safe is not None for o in module.walk())
    lower(module, to="kernel")
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).numpy()
    (got,) = run_forward(module, [q.numpy(), k.numpy(), v.numpy(), mask.numpy()])
    assert np.all(got[0, :, 2] == 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("columns", "walk"), [(64, 64), (128, 64), (1024, 64), (96, 48), (131, 1), (200, 50)]
)
def test_value_columns(columns: int, walk: int) -> None:
    assert value_columns(columns) == walk


@pytest.mark.parametrize(
    ("columns", "rows", "walk"),
    [
        (128, 16384, 128),
        (128, 4096, 128),
        (128, 32, 64),
        (1024, 16384, 1024),
        (1024, 256, 1024),
        (1024, 32, 64),
        (64, 1, 64),
    ],
)
def test_value_columns_count_the_lanes_a_row_will_have(columns: int, rows: int, walk: int) -> None:
    """A walk over many rows takes ``walk_column_lanes`` times more columns (a head dim of
    128: one walk of 4 or 8 lanes, the scores never stored; of 1024: one walk of a warp's
    32 lanes, 32 a lane); a decode step's few rows keep 64 columns a walk (its keys are
    split across threads, each keeping whole rows)."""
    assert value_columns(columns, rows=rows) == walk


def test_head_dim_128_is_one_kernel_with_the_scores_never_stored() -> None:
    """Qwen's head dim (128) over 512 query rows is one walk: one kernel reading q, k and
    v, and the interpreters (SIMT, race checker) give PyTorch's answer."""
    expr = _sdpa(1, 4, 2, 128, 128, 128, ", is_causal=True, enable_gqa=True")
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    lower(imported.module, to="kernel")
    kernels = [o for o in imported.module.walk() if isinstance(o, kernel.KernelOp)]
    assert [k.sym_name.data for k in kernels] == ["k_scaled_dot_product_attention"]
    args, _, reference = fresh_inputs(captured, imported.func, 23, device="cpu")
    want = [w.numpy() for w in reference()]
    _close(run_forward(imported.module, [a.numpy() for a in args]), want)


def test_softmax_sum_round_trips_and_verifies() -> None:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    text = """
    func.func @f(%s: tensor<2x5xf32>, %v: tensor<2x5x3xf32>) -> tensor<2x3xf32> {
      %o = ten.softmax_sum %s, %v dim 1 safe : tensor<2x5xf32>, tensor<2x5x3xf32> -> tensor<2x3xf32>
      func.return %o : tensor<2x3xf32>
    }
    """
    module = Parser(make_context(), text).parse_module()
    module.verify()
    assert "ten.softmax_sum %s, %v dim 1 safe :" in str(module)
    bad = text.replace("tensor<2x5x3xf32>", "tensor<2x4x3xf32>")
    with pytest.raises(VerifyException, match="values .* must be the scores' shape"):
        Parser(make_context(), bad).parse_module().verify()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "expr",
    [
        _sdpa(1, 8, 2, 131, 131, 64, ", is_causal=True, enable_gqa=True"),
        _sdpa(1, 4, 4, 1, 4099, 128),  # decode: one query, keys split across blocks
        _sdpa(1, 2, 2, 67, 67, 96),  # a head dim of 96: two walks of 48 columns
        _sdpa(1, 2, 2, 40, 52, 16, ", attn_mask=torch.rand(40,52) > 0.5"),
    ],
)
def test_fused_attention_runs_on_the_gpu(expr: str) -> None:
    """The fused kernel against eager on the GPU, outputs poisoned first."""
    from deplodock.backends.cuda.driver import gpu_available
    from deplodock.backends.cuda.runtime import CompiledProgram

    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    lower(imported.module, to="kernel")
    program = CompiledProgram(imported.module)
    args, _, reference = fresh_inputs(captured, imported.func, 5, device="cuda")
    want = reference()
    got = program(*args, poison=True)
    for g, w in zip(got, want, strict=True):
        assert relative_error(g.cpu().numpy(), w.cpu().numpy()) <= 1e-5


def _loop_level(expr: str, until: str):
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop", until=until)
    args, _, _ = fresh_inputs(captured, imported.func, 3, device="cpu")
    return module, [a.numpy() for a in args]


@pytest.mark.parametrize(
    "expr",
    [
        _sdpa(1, 4, 2, 13, 13, 16, ", is_causal=True, enable_gqa=True"),
        _sdpa(1, 2, 2, 5, 9, 8, ", attn_mask=torch.randn(5,9)"),
    ],
)
def test_unroll_dots_hoists_the_query_row_bit_for_bit(expr: str) -> None:
    """``unroll-dots`` unrolls the walk's dot product and moves the query row's loads
    before the walk; in one chain the loop interpreter gives the same bits before and
    after, in four (the default) the same up to rounding."""
    from deplodock.dialects import loop
    from deplodock.passes.loop.fuse import weighs_scores
    from deplodock.passes.loop.unroll_dots import UnrollDots

    module, inputs = _loop_level(expr, "unroll-dots")
    (walk,) = [w for w in module.walk() if isinstance(w, loop.ForOp) and weighs_scores(w)]
    inner = [o for o in walk.walk() if isinstance(o, loop.ForOp) and o is not walk]
    assert len(inner) == 1
    before = run_forward(module, inputs)
    chained = module.clone()
    UnrollDots(chains=1).apply(make_context(), module)
    module.verify()
    (walk,) = [w for w in module.walk() if isinstance(w, loop.ForOp) and weighs_scores(w)]
    assert not [o for o in walk.walk() if isinstance(o, loop.ForOp) and o is not walk]
    outside = [o for o in walk.parent_block().ops if isinstance(o, loop.LoadOp)]
    assert len(outside) >= 8, "the query row was not moved out of the walk"
    for got, want in zip(run_forward(module, inputs), before, strict=True):
        np.testing.assert_array_equal(got, want)
    # In four chains (the default) the sum is the same terms in another order.
    UnrollDots().apply(make_context(), chained)
    chained.verify()
    assert str(chained) != str(module)
    for got, want in zip(run_forward(chained, inputs), before, strict=True):
        assert relative_error(np.asarray(got), want) <= 1e-6


def test_unroll_dots_leaves_other_programs() -> None:
    from deplodock.passes.loop.unroll_dots import UnrollDots

    module, _ = _loop_level(
        "torch.softmax(torch.randn(4,33) @ torch.randn(33,7), -1)", "unroll-dots"
    )
    before = str(module)
    UnrollDots().apply(make_context(), module)
    assert str(module) == before


def test_rows_are_read_sixteen_bytes_at_a_time() -> None:
    """The emitter reads a key's and a value's row of 64 floats as 16 float4 loads each
    (``emit.packed_loads``), the query row too, and NVRTC accepts it (a whole row of 64
    sums a thread: not batched, ``walk_batch``); a row of 6 floats (rows 24 bytes apart,
    not 16-byte aligned) stays scalar."""
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    for d, packs in ((64, 48), (6, 0)):
        expr = _sdpa(1, 4, 2, 9, 9, d, ", is_causal=True, enable_gqa=True")
        module = import_program(capture_expression(expr).program).module
        lower(module, to="kernel")
        source = emit_cuda(module)
        assert source.count("const float4 ") == packs, (d, source.count("const float4 "))
        compile_cuda(source, arch="sm_90")


# --- chunk-walk: the block's rows share each chunk of keys in shared memory ---------------

CHUNKED = {
    # 64-key chunks: 96 keys end with a short chunk (its steps past the end add nothing).
    "causal_gqa_ragged": _sdpa(1, 4, 2, 96, 96, 64, ", is_causal=True, enable_gqa=True"),
    "cross_ragged": _sdpa(1, 8, 8, 64, 100, 32),
    # head dim 128 over 512 rows: one walk of 8 lanes since session 18 (was two walks)
    "two_walks": _sdpa(1, 4, 4, 128, 128, 128, ", is_causal=True"),
}


def _tile_kernels_with_chunked_walks(module: ModuleOp) -> int:
    from deplodock.dialects import loop, tile
    from deplodock.dialects.combine import ONLINE_MAX
    from deplodock.passes.tile.analysis import is_chunked

    return sum(
        any(
            isinstance(o, loop.ForOp) and ONLINE_MAX in o.kinds and is_chunked(o)
            for o in k.body.block.ops
        )
        for k in module.walk()
        if isinstance(k, tile.KernelOp)
    )


def _around_pass(expr, name: str, configured, measure, before, after, seed: int):
    """Lower ``expr`` (an expression, or a captured program: ``_captured``) to the tile
    level up to pass ``name``; the tile interpreter must give PyTorch's answer before and
    after ``configured`` runs, ``measure(module)`` must go from ``before`` to ``after``
    (the pass changed the program); then the whole pipeline at the kernel level must
    (SIMT, race checker on). Returns the kernel-level module."""
    captured = capture_expression(expr) if isinstance(expr, str) else expr
    imported = import_program(captured.program)
    module = lower(imported.module, to="tile", until=name)
    args, _, reference = fresh_inputs(captured, imported.func, seed, device="cpu")
    inputs = [a.numpy() for a in args]
    want = [w.numpy() for w in reference()]
    _close(run_forward(module, inputs), want)
    assert measure(module) == before
    configured.apply(make_context(), module)
    module.verify()
    assert measure(module) == after, f"{name} did not change the program as it should"
    _close(run_forward(module, inputs), want)
    imported = import_program(captured.program)
    lower(imported.module, to="kernel")
    _close(run_forward(imported.module, inputs), want)
    return imported.module


@pytest.mark.parametrize("name", list(CHUNKED))
def test_chunk_walk_preserves_meaning(name: str) -> None:
    """The tile interpreter gives PyTorch's answer before and after ``chunk-walk`` (which
    must change the program), and the whole pipeline, the walk's keys and values staged a
    chunk at a time, does at the kernel level (SIMT, race checker on)."""
    from deplodock.passes.tile.chunk_walk import ChunkWalk

    module = _around_pass(
        CHUNKED[name], "chunk-walk", ChunkWalk(), _tile_kernels_with_chunked_walks, 0, 1, 7
    )
    (walk,) = [
        k
        for k in module.walk()
        if isinstance(k, kernel.KernelOp) and k.sym_name.data.startswith("k_scaled")
    ]
    shared = [o for o in walk.walk() if isinstance(o, kernel.SharedOp)]
    staged = [o for o in walk.walk() if isinstance(o, kernel.CpAsyncOp)]
    assert shared and staged, "the chunks are not staged in shared memory"


def test_value_rows_read_across_heads_are_staged() -> None:
    """A decoder layer's values come straight from the projection's output, heads as
    columns: ``v[k, (h floordiv 8) * 32 + j]``, a block-uniform head and a lane's column
    (``stage_k_chunks._mixed_split``). ``stage-inputs`` stages their chunks with the keys',
    and the interpreters give PyTorch's answer before, after and at the kernel level."""
    from deplodock.dialects import tile
    from deplodock.passes.tile.stage_inputs import StageInputs

    expr = (
        f"{SDPA}(torch.randn(1,16,96,32), torch.randn(1,2,96,32), "
        "torch.randn(1,96,64).view(1,96,2,32).transpose(1,2), is_causal=True, enable_gqa=True)"
    )

    def staged(module: ModuleOp) -> list[str]:
        return sorted(o.source.name_hint for o in module.walk() if isinstance(o, tile.StageOp))

    _around_pass(expr, "stage-inputs", StageInputs(), staged, [], ["x1_b", "x2_b"], 3)


def test_chunked_walk_reads_shared_rows_sixteen_bytes_at_a_time() -> None:
    """A chunk's key and value rows are read from shared memory as float4s only (a
    lane's 8 floats of a key's 64: 2 each, ``split-walk-columns`` with 8 lanes, for each
    key of a batch), the lanes' pieces round the lanes (``u * 4``), and NVRTC accepts the
    kernel."""
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    module = import_program(capture_expression(CHUNKED["causal_gqa_ragged"]).program).module
    lower(module, to="kernel")
    source = emit_cuda(module)
    for slab in ("x1_smem[", "x2_smem["):
        lines = source.splitlines()
        reads = [line for line in lines if f"&{slab}buf" in line and "cp.async" not in line]
        wide = [line for line in reads if "float4*>(&" in line]
        assert wide and len(wide) == len(reads) and len(wide) % 2 == 0, reads
        assert all("u * 4" in line for line in wide)
    compile_cuda(source, arch="sm_90")


# --- skip-masked-chunks: a causal block walks only the chunks it can attend to ------------


def _bounded_walks(module: ModuleOp) -> int:
    from deplodock.dialects import loop

    return sum(isinstance(o, loop.ForOp) and o.limit is not None for o in module.walk())


@pytest.mark.parametrize(
    "expr",
    [
        _sdpa(1, 4, 2, 96, 96, 64, ", is_causal=True, enable_gqa=True"),  # a short last chunk
        _sdpa(1, 2, 2, 256, 256, 32, ", is_causal=True"),  # blocks reach 1 .. 4 chunks
    ],
)
def test_skip_masked_chunks_preserves_meaning(expr: str) -> None:
    """Causal walks get a ``below`` limit (the pass changes the program) and the tile
    interpreter gives PyTorch's answer before and after; so does the kernel level."""
    from deplodock.passes.tile.skip_masked_chunks import SkipMaskedChunks

    module = _around_pass(expr, "skip-masked-chunks", SkipMaskedChunks(), _bounded_walks, 0, 1, 11)
    assert _bounded_walks(module) == 0  # kernel.for carries it now


class _PackedCausal(torch.nn.Module):
    """Hugging Face's mask for packed sequences (``masking_utils``): causal, and a key
    only of its query's own sequence, the sequences told apart by where the position ids
    restart (``cumsum(diff != 1)``). ``same`` is the second condition's comparison: ``eq``
    keeps every row's own key (the diagonal), ``ne`` masks it."""

    def __init__(self, same: str = "eq") -> None:
        super().__init__()
        self.same = same

    def forward(self, q, k, v, position_ids):
        first = position_ids[:, :1] - 1
        restart = (position_ids - torch.cat([first, position_ids[:, :-1]], dim=-1)) != 1
        sequence = restart.cumsum(-1)
        i = torch.arange(q.shape[-2])
        causal = i[None, :] <= i[:, None]
        compare = torch.eq if self.same == "eq" else torch.ne
        mask = causal & compare(sequence[:, None, :], sequence[:, :, None])
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask[:, None], enable_gqa=True
        )


def _captured(module: torch.nn.Module, inputs: tuple):
    """A program as ``capture_expression`` gives one: the module, its inputs, its export."""
    from types import SimpleNamespace

    from deplodock.frontends.capture import export_module

    program = export_module(module, inputs, type(module).__name__)
    return SimpleNamespace(module=module, example_inputs=inputs, program=program)


def _packed(same: str):
    """Two packed sequences of 40 and 56 tokens: 16 query heads of 2 key/value heads,
    head dim 32 (blocks of rows walking keys in chunks of 64, the second short)."""
    positions = torch.cat([torch.arange(40), torch.arange(56)])[None]
    inputs = (
        torch.randn(1, 16, 96, 32),
        torch.randn(1, 2, 96, 32),
        torch.randn(1, 2, 96, 32),
        positions,
    )
    return _captured(_PackedCausal(same), inputs)


def test_skip_masked_chunks_sees_through_a_packed_sequence_mask() -> None:
    """Hugging Face's layer mask, ``key <= query and sequence[key] == sequence[query]``: the
    causal conjunct bounds the walk (the other holds on the diagonal, so every row keeps a
    live key: rows of the second sequence have their first 40 keys masked), and the
    interpreters give PyTorch's answer before, after and at the kernel level."""
    from deplodock.passes.tile.skip_masked_chunks import SkipMaskedChunks

    _around_pass(_packed("eq"), "skip-masked-chunks", SkipMaskedChunks(), _bounded_walks, 0, 1, 5)


def test_walks_without_a_causal_mask_walk_every_chunk() -> None:
    """No causal mask, or one whose other condition masks a row's own key (``ne``: a
    row could then lose every key it keeps): every chunk is walked."""
    from deplodock.passes.tile.skip_masked_chunks import SkipMaskedChunks

    for expr in (CHUNKED["cross_ragged"], _sdpa(1, 2, 2, 128, 128, 32), _packed("ne")):
        captured = capture_expression(expr) if isinstance(expr, str) else expr
        imported = import_program(captured.program)
        module = lower(imported.module, to="tile", until="skip-masked-chunks")
        before = str(module)
        SkipMaskedChunks().apply(make_context(), module)
        assert str(module) == before


# --- split-walk-columns: a row's lanes share its head dim ---------------------------------

SPLIT = {
    "causal_gqa": _sdpa(1, 4, 2, 64, 64, 32, ", is_causal=True, enable_gqa=True"),
    "ragged_rows": _sdpa(1, 8, 8, 100, 100, 64),  # 100 queries: blocks of 64, one ragged
    "masked_rows": _sdpa(
        1, 4, 4, 64, 64, 32, ", attn_mask=(torch.rand(64,64) > 0.3) & (torch.rand(64,1) > 0.2)"
    ),  # some rows have no key at all: safe softmax gives them 0
}


def _walk_clauses(module: ModuleOp) -> list[int]:
    from deplodock.dialects import loop, tile
    from deplodock.dialects.combine import ONLINE_MAX

    return [
        len(o.kinds)
        for k in module.walk()
        if isinstance(k, tile.KernelOp)
        for o in k.body.block.ops
        if isinstance(o, loop.ForOp) and ONLINE_MAX in o.kinds
    ]


@pytest.mark.parametrize("name", list(SPLIT))
def test_split_walk_columns_preserves_meaning(name: str) -> None:
    """The walk keeps its lane's share of the value columns (``walk_column_lanes``) and
    adds the lanes' partial dot products across them at every key; the tile interpreter
    gives PyTorch's answer before and after, and so does the kernel level (SIMT, race
    checker on)."""
    from deplodock.dialects import tile
    from deplodock.passes.tile.schedule.reduce import walk_column_lanes
    from deplodock.passes.tile.split_walk_columns import SplitWalkColumns

    captured = capture_expression(SPLIT[name])
    want = captured.module(*captured.example_inputs)
    columns = want.shape[-1]
    lanes = walk_column_lanes(want.numel() // columns, columns, columns)
    assert lanes > 1

    def measure(module):
        clauses = _walk_clauses(module)
        combines = sum(isinstance(o, tile.CombineOp) for o in module.walk())
        return clauses, combines

    _around_pass(
        SPLIT[name],
        "split-walk-columns",
        SplitWalkColumns(),
        measure,
        ([2 + columns], 0),
        ([2 + columns // lanes], 1),
        13,
    )


def test_head_dim_1024_is_one_walk_of_a_warp_of_lanes() -> None:
    """A head dim of 1024 over 256 rows: one kernel (the scores never stored), its rows
    dealt to 32 lanes (unroll-dots unrolls the 1024 products for the lanes to split),
    blocks of 4 rows, 4 keys a staged chunk in dynamic shared memory (11 keys: the last
    chunk ragged), one row a thread (two would hold 64 elements a lane: ``walk_rows``);
    the interpreters (SIMT, race checker) give PyTorch's answer."""
    expr = _sdpa(1, 1, 1, 256, 11, 1024, ", is_causal=True")
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    lower(imported.module, to="kernel")
    (walk,) = [o for o in imported.module.walk() if isinstance(o, kernel.KernelOp)]
    assert walk.block_shape == (128, 1, 1) and walk.grid_shape == (64, 1, 1)
    assert walk.dynamic_shared_bytes() == 2 * 2 * 4 * 1024 * 4
    args, _, reference = fresh_inputs(captured, imported.func, 5, device="cpu")
    want = [w.numpy() for w in reference()]
    _close(run_forward(imported.module, [a.numpy() for a in args]), want)


def _online_groups(module: ModuleOp) -> int:
    from deplodock.dialects import tile
    from deplodock.dialects.combine import ONLINE_MAX

    kernels = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    return sum(
        w.kinds.count(ONLINE_MAX) for k in kernels for w in k.body.block.ops if hasattr(w, "kinds")
    )


JAMMED = {
    "causal_gqa": _sdpa(1, 4, 2, 256, 256, 16, ", is_causal=True, enable_gqa=True"),
    "ragged_keys": _sdpa(1, 2, 2, 300, 77, 32),  # 77 keys: a ragged chunk
    "causal_ragged_rows": _sdpa(1, 2, 2, 131, 131, 64, ", is_causal=True"),
    "head_dim_128": _sdpa(1, 2, 1, 256, 40, 128, ", is_causal=True, enable_gqa=True"),
}


@pytest.mark.parametrize("name", list(JAMMED))
def test_jam_walk_rows_preserves_meaning(name: str) -> None:
    """``jam-walk-rows{rows=2}``: a thread keeps two query rows, its walk two online groups
    (one clause), the staged keys and values read once for both; the tile interpreter
    before and after, and the kernel level with the pass forced (SIMT, race checker),
    give PyTorch's answer. Head dim 128 over rows enough (4096: 16 heads) is jammed by
    the default pipeline too (``walk_rows``), over 512 (the case run) it is not."""
    from deplodock.passes.tile.jam_walk_rows import JamWalkRows

    expr = JAMMED[name]
    _around_pass(expr, "jam-walk-rows", JamWalkRows(rows=2), _online_groups, 1, 2, 5)
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    lower(imported.module, to="kernel", options={"jam-walk-rows": JamWalkRows(rows=2)})
    args, _, reference = fresh_inputs(captured, imported.func, 9, device="cpu")
    want = [w.numpy() for w in reference()]
    _close(run_forward(imported.module, [a.numpy() for a in args]), want)
    if name == "head_dim_128":  # the default pipeline: 8 lanes, two rows a thread
        imported = import_program(captured.program)
        lower(imported.module, to="tile")
        assert _online_groups(imported.module) == 1  # 512 rows: 2 thread-rows an SM
        many = capture_expression(
            _sdpa(1, 16, 2, 256, 40, 128, ", is_causal=True, enable_gqa=True")
        )
        imported = import_program(many.program)
        lower(imported.module, to="tile")
        assert _online_groups(imported.module) == 2
        lower(imported.module, to="kernel")
        (walk,) = [k for k in imported.module.walk() if isinstance(k, kernel.KernelOp)]
        assert walk.block_shape == (64, 1, 1)


def _kernels(module: ModuleOp) -> int:
    from deplodock.dialects import tile

    return sum(isinstance(o, tile.KernelOp) for o in module.walk())


@pytest.mark.parametrize(
    "expr",
    [
        _sdpa(1, 1, 1, 256, 515, 16),  # walk_chunks: 8 parts of 65 keys, the last ragged
        _sdpa(1, 4, 2, 64, 600, 32, ", enable_gqa=True"),
    ],
)
def test_chunk_reduce_splits_a_fused_walk_by_keys(expr: str) -> None:
    """A walk of few rows that is not causal, long (515 keys, ``walk_chunks``) or told to
    (``chunks=4``), is split by keys across blocks: the chunk kernel recomputes the query
    row it reads (``analysis.prelude``, hoisted before the walk by unroll-dots) and stores
    the value columns stacked, so split-walk-columns deals them to lanes; the tile
    interpreter before and after, and the whole pipeline at the kernel level, give
    PyTorch's answer."""
    from deplodock.passes.tile.chunk_reduce import ChunkReduce

    chunks = 0 if "515" in expr else 4
    module = _around_pass(expr, "chunk-reduce", ChunkReduce(chunks=chunks), _kernels, 1, 2, 11)
    if chunks == 0:  # the default pipeline split it too, and dealt the parts' rows to lanes
        names = [k.sym_name.data for k in module.walk() if isinstance(k, kernel.KernelOp)]
        assert names == ["k_scaled_dot_product_attention_chunks", "k_scaled_dot_product_attention"]


def test_split_walk_columns_leaves_decode_and_narrow_heads() -> None:
    """A decode step (few rows: their keys are split instead), a head dim too narrow for
    two lanes of eight and many rows (split by keys: fewer instructions) keep their walk
    whole."""
    from deplodock.passes.tile.split_walk_columns import SplitWalkColumns

    for expr in (
        _sdpa(1, 4, 4, 1, 67, 64),
        _sdpa(1, 8, 8, 64, 64, 8),
        _sdpa(1, 32, 32, 256, 8, 32),
    ):
        imported = import_program(capture_expression(expr).program)
        module = lower(imported.module, to="tile", until="split-walk-columns")
        before = str(module)
        SplitWalkColumns().apply(make_context(), module)
        assert str(module) == before


# --- batch-walk-steps: a walk merges its keys a batch at a time ---------------------------

BATCHED = {
    "causal_gqa_ragged": CHUNKED["causal_gqa_ragged"],  # the last chunk short, causal skips
    "prime_keys": _sdpa(1, 8, 8, 200, 131, 32),  # 131 keys, ragged row blocks, 4 lanes
    "two_walks": CHUNKED["two_walks"],  # head dim 128: one walk of 128 columns on 8 lanes
    "masked_rows": SPLIT["masked_rows"],  # rows of -inf scores only: safe softmax's 0
    # decode: the keys split across threads (a longer walk is split across blocks too,
    # chunk-reduce, whose parts of 64 keys take a key a thread: nothing to batch)
    "one_query": _sdpa(1, 4, 4, 1, 512, 16),
}


def _batches(module: ModuleOp) -> int:
    return sum(r.name_hint == "batch_max" for o in module.walk() for r in o.results)


@pytest.mark.parametrize("name", list(BATCHED))
def test_batch_walk_steps_preserves_meaning(name: str) -> None:
    """The walk's innermost loop merges a batch of keys at a time (its own maximum, the
    keys weighed by it, one merge into the running group); the tile interpreter gives
    PyTorch's answer before and after the pass, which must change the program, and the
    kernel level does (SIMT, race checker on)."""
    from deplodock.passes.tile.batch_walk_steps import BatchWalkSteps

    module = _around_pass(BATCHED[name], "batch-walk-steps", BatchWalkSteps(), _batches, 0, 1, 17)
    assert _batches(module) >= 1  # kept to the kernel level


def test_batch_walk_steps_merges_minus_infinity_batches_like_one_key_steps() -> None:
    """A batch whose scores are all -inf (keys masked for a row, or a row with none live)
    merges as the one-key rule merges its keys: a forced batch of 4 over rows masked
    entirely, partly and not at all gives PyTorch's answer (safe softmax's 0 included)."""
    from deplodock.passes.tile.batch_walk_steps import BatchWalkSteps

    mask = "torch.arange(12).reshape(12,1) % 3 != 0) & (torch.arange(20) < 12"
    expr = _sdpa(1, 2, 2, 12, 20, 16, f", attn_mask=({mask})")
    _around_pass(expr, "batch-walk-steps", BatchWalkSteps(batch=4), _batches, 0, 1, 19)


def test_batch_walk_steps_leaves_softmax_rows_and_odd_counts() -> None:
    """Softmax's online rows (weights of 1: a batch would only add exps) and a walk whose
    thread runs a prime number of keys (no batch divides it) are left as they were; a
    negative batch is refused with the option's name."""
    from xdsl.utils.exceptions import DiagnosticException

    from deplodock.passes.tile.batch_walk_steps import BatchWalkSteps

    for expr, options in (
        ("torch.softmax(torch.randn(2, 40000), -1)", {}),
        (_sdpa(1, 2, 2, 3, 7, 16), {"batch": 4}),
    ):
        imported = import_program(capture_expression(expr).program)
        module = lower(imported.module, to="tile", until="batch-walk-steps")
        before = str(module)
        BatchWalkSteps(**options).apply(make_context(), module)
        assert str(module) == before
    with pytest.raises(DiagnosticException, match="batch=-1"):
        BatchWalkSteps(batch=-1).apply(make_context(), module)
