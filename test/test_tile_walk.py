"""``tile-walk``: the register-tiled attention walk, checked for meaning at every pass.

Each program is captured from PyTorch at a small, ragged shape (sequence lengths below
the block, primes and one more than the block; head dims 16, 32 and 40; causal and not;
grouped-query heads; a boolean mask, a key-padding mask and an additive one with a
scale; a hand-written ``softmax(q k^T) v``), lowered to the loop level, then taken
through every tile pass and
materialize with ``tile-walk`` forced to small blocks (``rows=16`` or ``32``,
``chunk=16``: several chunks, a short last one, causal chunks skipped). The two passes
that change the walk's kernel (tile-walk and materialize; the others leave it alone,
which is checked) give the loop level's result within 1e-5 in the interpreters (the
kernel level's with its race checker). The scores never reach global memory: the walk's
kernel stores only its output. The planner's choices are checked at the edges of its
rule, and a mutation (the causal reach one chunk short) is caught.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from xdsl.dialects.builtin import AffineMapAttr
from xdsl.ir.affine import AffineMap
from xdsl.parser import Parser

from deplodock.dialects import kernel, make_context, tile
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import PIPELINE, get_pass
from deplodock.passes.tile.schedule.reduce import TILED_WALK_UNROLL, tiled_walk_plan
from deplodock.passes.tile.tile_walk import WALK_MARK
from deplodock.pipeline import lower
from deplodock.reference import relative_error
from deplodock.target import target_for

SDPA = "torch.nn.functional.scaled_dot_product_attention"
PROGRAMS = {
    "causal_gqa_ragged": (
        f"{SDPA}(torch.randn(1,4,37,16), torch.randn(1,2,37,16), torch.randn(1,2,37,16), "
        "is_causal=True, enable_gqa=True)",
        {"rows": 16, "chunk": 16},
    ),
    "full_prime": (
        f"{SDPA}(torch.randn(1,2,67,32), torch.randn(1,2,67,32), torch.randn(1,2,67,32))",
        {"rows": 32, "chunk": 16},
    ),
    "few_rows": (
        f"{SDPA}(torch.randn(1,2,5,16), torch.randn(1,2,17,16), torch.randn(1,2,17,16))",
        {"rows": 16, "chunk": 16},
    ),
    "causal_one_past_the_block": (
        f"{SDPA}(torch.randn(2,1,33,16), torch.randn(2,1,33,16), torch.randn(2,1,33,16), "
        "is_causal=True)",
        {"rows": 32, "chunk": 16},
    ),
    "head_dim_40": (  # a lane's 5 columns: no float4 runs, one contiguous share
        f"{SDPA}(torch.randn(1,2,37,40), torch.randn(1,2,37,40), torch.randn(1,2,37,40), "
        "is_causal=True)",
        {"rows": 16, "chunk": 16},
    ),
    "bool_mask_batch": (
        f"{SDPA}(torch.randn(2,2,33,16), torch.randn(2,2,41,16), torch.randn(2,2,41,16), "
        "attn_mask=torch.randn(33,41) > 0)",
        {"rows": 16, "chunk": 16},
    ),
    "key_padding_mask": (  # a mask read per key: rows of a block share its loads
        f"{SDPA}(torch.randn(1,2,37,16), torch.randn(1,2,41,16), torch.randn(1,2,41,16), "
        "attn_mask=torch.randn(1,1,1,41) > -1)",
        {"rows": 16, "chunk": 16},
    ),
    "additive_mask_scale": (
        f"{SDPA}(torch.randn(1,2,33,16), torch.randn(1,2,33,16), torch.randn(1,2,33,16), "
        "attn_mask=torch.randn(33,33), scale=0.3)",
        {"rows": 16, "chunk": 16},
    ),
    "hand_written": (
        "torch.softmax(torch.randn(1,2,40,16) @ torch.randn(1,2,40,16).transpose(-2, -1) "
        "* 0.25, -1) @ torch.randn(1,2,40,16)",
        {"rows": 16, "chunk": 16},
    ),
}
TILE_PASSES = [name for level, _, name, _ in PIPELINE if level in ("tile", "kernel")]


@functools.cache
def _loop_level(name: str) -> str:
    captured = capture_expression(PROGRAMS[name][0])
    return str(lower(import_program(captured.program).module, to="loop"))


def _parse(text: str):
    return Parser(make_context(), text).parse_module()


def _inputs(text: str) -> list[np.ndarray]:
    func = next(o for o in _parse(text).walk() if o.name == "func.func")
    rng = np.random.default_rng(7)
    shapes = [a.type.get_shape() for a in func.body.block.args]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@functools.cache
def _stages(name: str) -> dict[str, str]:
    """The program after each tile pass and materialize, ``tile-walk`` forced."""
    ctx = make_context()
    module = Parser(ctx, _loop_level(name)).parse_module()
    texts = {}
    for pass_name in TILE_PASSES:
        options = PROGRAMS[name][1] if pass_name == "tile-walk" else {}
        get_pass(pass_name)(**options).apply(ctx, module)
        module.verify()
        texts[pass_name] = str(module)
    return texts


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tile_walk_takes_the_walk(name: str) -> None:
    module = _parse(_stages(name)["tile-walk"])
    (walk,) = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    assert WALK_MARK in walk.attributes
    assert any(isinstance(o, tile.ShareOp) for o in walk.walk())


@pytest.mark.parametrize(
    ("name", "pass_name"),
    [(n, p) for n in PROGRAMS for p in ("tile-walk", "materialize")],
)
def test_every_pass_keeps_the_meaning(name: str, pass_name: str) -> None:
    """The two passes that change the walk's kernel (the others leave it as tile-walk made
    it: ``test_only_tile_walk_and_materialize_change_it``), each checked on what it made."""
    inputs = _inputs(_loop_level(name))
    (want,) = run_forward(_parse(_loop_level(name)), inputs)
    (got,) = run_forward(_parse(_stages(name)[pass_name]), inputs)
    assert not np.isnan(got).any()
    assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_only_tile_walk_and_materialize_change_it(name: str) -> None:
    texts = _stages(name)
    pairs = zip(TILE_PASSES, TILE_PASSES[1:], strict=False)
    changed = [p for before, p in pairs if texts[p] != texts[before]]
    assert changed == ["tile-walk", "materialize"]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_scores_never_reach_global_memory(name: str) -> None:
    """The walk's kernel writes its output and nothing else: one store a lane's column and
    row (the head dim dealt to 8 lanes, four rows a thread), all of the output buffer."""
    module = _parse(_stages(name)["materialize"])
    (walk,) = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    outputs = set(walk.body.block.args[len(walk.inputs) :])
    stores = [o for o in walk.walk() if isinstance(o, kernel.StoreOp)]
    global_stores = [s for s in stores if s.buffer in outputs]
    shared = {o.result for o in walk.walk() if isinstance(o, kernel.SharedOp)}
    assert global_stores and all(s.buffer in outputs | shared for s in stores)
    head_dim = walk.body.block.args[-1].type.get_shape()[-1]
    assert len(global_stores) == 4 * head_dim // 8


def test_a_causal_reach_one_chunk_short_is_caught() -> None:
    """The causal bound is needed exactly: one chunk fewer drops keys rows attend to."""
    name = "causal_gqa_ragged"
    module = _parse(_stages(name)["tile-walk"])
    (reach,) = [o for o in module.walk() if o.name == "affine.apply" and "reach" in str(o)]
    old = reach.map.data  # type: ignore[attr-defined]
    shorter = AffineMap(old.num_dims, old.num_symbols, (old.results[0] - 1,))
    reach.properties["map"] = AffineMapAttr(shorter)
    inputs = _inputs(_loop_level(name))
    (want,) = run_forward(_parse(_loop_level(name)), inputs)
    (got,) = run_forward(module, inputs)
    assert not relative_error(got, want) <= 1e-5  # rows short of their keys (or 0 / 0: NaN)


H100 = target_for("sm_90")


@pytest.mark.parametrize(
    ("rows", "beside", "dims", "plan"),
    [
        (512, 32, 64, (64, 64)),  # TinyLlama S=512: 256 blocks of 64 rows
        (512, 28, 128, (64, 32)),  # Qwen S=512: chunks of 64 would leave one block an SM
        (1000, 8, 64, (32, 64)),  # 128 blocks of 64 rows: fewer than the SMs, 32 rows
        (4096, 32, 64, (64, 64)),
        (2048, 16, 128, (64, 32)),
        (128, 32, 64, None),  # 64 blocks of 64, 128 of 32: the lane-split walk keeps it
        (1, 32, 128, None),  # decode
    ],
)
def test_tiled_walk_plan(rows: int, beside: int, dims: int, plan) -> None:
    assert tiled_walk_plan(rows, beside, dims, dims, H100) == plan


def test_wide_heads_and_short_sequences_keep_the_lane_split_walk() -> None:
    """Head dim 1024 would keep 4 x 128 accumulators a thread: the pass declines, as it
    does at S=128 (the planner); both still compile to the lane-split walk."""
    for expr in (
        f"{SDPA}(torch.randn(1,4,512,1024), torch.randn(1,4,512,1024), torch.randn(1,4,512,1024))",
        f"{SDPA}(torch.randn(1,32,128,64), torch.randn(1,32,128,64), torch.randn(1,32,128,64))",
    ):
        captured = capture_expression(expr)
        module = lower(import_program(captured.program).module, to="tile")
        walks = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
        assert walks and not any(WALK_MARK in k.attributes for k in walks)
        assert not any(isinstance(o, tile.ShareOp) for k in walks for o in k.walk())


@pytest.mark.parametrize(
    ("pass_name", "options"),
    [
        ("chunk-walk", {"chunk": 4}),
        ("skip-masked-chunks", {}),
        ("stage-inputs", {}),
        ("batch-walk-steps", {"batch": 2}),
        ("jam-walk-rows", {"rows": 2}),
    ],
)
def test_the_other_walk_passes_keep_off_a_tiled_walk(pass_name: str, options: dict) -> None:
    """Forced, each would rewrite some loop of the tiled walk (chunk-walk wrapped its chunk
    loop in TinyLlama's layer at S=512, leaving its copies synchronous and its causal
    chunks unskipped); the kernel's mark keeps them off."""
    ctx = make_context()
    text = _stages("key_padding_mask")["tile-walk"]
    module = Parser(ctx, text).parse_module()
    get_pass(pass_name)(**options).apply(ctx, module)
    assert str(module) == str(_parse(text))


def test_unroll_marks_the_two_inner_loops() -> None:
    """``tile-walk{unroll=4}``: the score loop and the P V loop ask for ``#pragma unroll 4``
    (the kernel interpreter's result unchanged); the default asks ``TILED_WALK_UNROLL``,
    ``unroll=0`` nothing."""
    ctx = make_context()
    module = Parser(ctx, _loop_level("full_prime")).parse_module()
    for name in ("tileify", "tile-walk", "materialize"):
        options = {"rows": 32, "chunk": 16, "unroll": 4} if name == "tile-walk" else {}
        get_pass(name)(**options).apply(ctx, module)
    unrolled = [o for o in module.walk() if getattr(o, "unroll", None) is not None]
    assert len(unrolled) == 2 and all(o.unroll.data == 4 for o in unrolled)
    inputs = _inputs(_loop_level("full_prime"))
    (want,) = run_forward(_parse(_loop_level("full_prime")), inputs)
    (got,) = run_forward(module, inputs)
    assert relative_error(got, want) <= 1e-5
    default = _parse(_stages("full_prime")["materialize"])
    marked = [o for o in default.walk() if getattr(o, "unroll", None) is not None]
    assert len(marked) == 2 and all(o.unroll.data == TILED_WALK_UNROLL for o in marked)
    module = Parser(ctx, _loop_level("full_prime")).parse_module()
    for name in ("tileify", "tile-walk", "materialize"):
        options = {"rows": 32, "chunk": 16, "unroll": 0} if name == "tile-walk" else {}
        get_pass(name)(**options).apply(ctx, module)
    assert not [o for o in module.walk() if getattr(o, "unroll", None) is not None]


def test_notes_say_what_the_pass_did_and_why_not() -> None:
    """``deplodock -v``'s notes for the pass: the plan of a walk it scheduled, and why it
    left one to the lane-split walk."""
    from deplodock.passes.tile.tile_walk import TileWalk, notes

    ctx = make_context()
    forced = Parser(ctx, _loop_level("causal_gqa_ragged")).parse_module()
    get_pass("tileify")().apply(ctx, forced)
    options = TileWalk(rows=16, chunk=16)
    options.apply(ctx, forced)
    (note,) = notes(forced, options)
    assert note == (
        "@k_scaled_dot_product_attention: register-tiled walk, 16 rows a block (4 a thread), "
        "chunks of 16 keys, 8 lanes a row, inner loops unrolled 8, causal: chunks up to the "
        "block's last row + 0"
    )
    planned = Parser(ctx, _loop_level("causal_gqa_ragged")).parse_module()
    get_pass("tileify")().apply(ctx, planned)
    TileWalk().apply(ctx, planned)
    (note,) = notes(planned, TileWalk())
    assert note == (
        "@k_scaled_dot_product_attention: left to the lane-split walk: 4 x 37 query rows make "
        "fewer blocks than the 132 SMs at 32 rows a block"
    )


def test_before_sm_80_the_chunks_are_copied_in_place() -> None:
    """No cp.async before sm_80: the key and value chunks are single copies refilled each
    chunk (a barrier before the fill), and the result is the same."""
    ctx = make_context()
    module = Parser(ctx, _loop_level("causal_gqa_ragged")).parse_module()
    get_pass("tileify")().apply(ctx, module)
    get_pass("tile-walk")(rows=16, chunk=16, arch="sm_75").apply(ctx, module)
    stages = [o for o in module.walk() if isinstance(o, tile.StageOp)]
    assert len(stages) == 3 and not any(s.is_async or s.buffer_count > 1 for s in stages)
    get_pass("materialize")().apply(ctx, module)
    assert not any(isinstance(o, kernel.CpAsyncOp) for o in module.walk())
    inputs = _inputs(_loop_level("causal_gqa_ragged"))
    (want,) = run_forward(_parse(_loop_level("causal_gqa_ragged")), inputs)
    (got,) = run_forward(module, inputs)
    assert relative_error(got, want) <= 1e-5


def test_select_merge_is_the_online_rule() -> None:
    """``cuda_online_step(branch=False)``, the merge ``tile-walk{merge=select}`` asks the
    emitter for, compiled by g++ beside the branch form and run on steps that hit every
    case of the rule (the maximum rising, holding, both -inf, +inf, NaN): both agree
    with the rule in numpy (``combine.step_arrays``) to the last bits a multiply-add may
    round differently."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from deplodock.dialects.combine import cuda_online_step, step_arrays

    if shutil.which("g++") is None:
        pytest.skip("no g++ to compile the merge with")
    inf, nan = np.inf, np.nan
    ms = [0.5, 2.0, -inf, -inf, 1.0, 3.0, inf, 1.0, -inf]
    xs = [2.0, 0.5, -inf, 1.5, 1.0, nan, inf, inf, 0.25]
    rng = np.random.default_rng(0)
    a, v = rng.standard_normal((2, len(ms), 3)).astype(np.float32)
    names = iter(range(1000))
    forms = {}
    for branch in (True, False):
        lines = cuda_online_step(
            ["m", "a0", "a1", "a2"],
            ["x", "v0", "v1", "v2"],
            lambda hint: f"t{next(names)}",
            _c,
            branch=branch,
        )
        forms[branch] = "\n".join(lines)
    src = "#include <cmath>\n#include <cstdio>\nint main() {\n"
    for i in range(len(ms)):
        for body in forms.values():
            src += "{\n" + f"float m = {_c(ms[i])}, x = {_c(xs[i])};\n"
            src += "".join(f"float a{j} = {_c(a[i, j])}, v{j} = {_c(v[i, j])};\n" for j in range(3))
            src += body + '\nprintf("%a %a %a %a\\n", m, a0, a1, a2);\n}\n'
    src += "return 0;\n}\n"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "merge.cpp").write_text(src)
        exe = Path(tmp) / "merge"
        subprocess.run(["g++", "-O1", "-o", str(exe), str(Path(tmp) / "merge.cpp")], check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    rows = [[float.fromhex(t) for t in line.split()] for line in out.splitlines()]
    kinds = ["online_max"] + ["online_sum"] * 3
    for i in range(len(ms)):
        m, x = np.float32(ms[i]), np.float32(xs[i])
        want = step_arrays(kinds, [m, *a[i]], [x, *v[i]])
        for got in rows[2 * i : 2 * i + 2]:
            np.testing.assert_allclose(got, np.array(want, np.float64), rtol=1e-6, equal_nan=True)


def _c(value: float) -> str:
    """A float literal for C (``INFINITY``, ``NAN`` for the special values)."""
    if np.isnan(value):
        return "NAN"
    if np.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return f"{float(value)!r}f"


def test_merge_select_marks_the_chunk_loop_and_the_emitter_follows() -> None:
    """``tile-walk{merge=select}``: the chunk loop carries ``tile.SELECT_MERGE``, the
    CUDA merges without the ``if (rising)`` branch and NVRTC compiles it; the default
    keeps the branch."""
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    sources = {}
    for merge in ("branch", "select"):
        ctx = make_context()
        module = Parser(ctx, _loop_level("full_prime")).parse_module()
        for name in ("tileify", "tile-walk", "materialize"):
            options = {"rows": 32, "chunk": 16, "merge": merge} if name == "tile-walk" else {}
            get_pass(name)(**options).apply(ctx, module)
        marked = [o for o in module.walk() if tile.SELECT_MERGE in o.attributes]
        assert len(marked) == (merge == "select")
        sources[merge] = emit_cuda(module)
    assert "_rising) {" in sources["branch"] and "_keep" not in sources["branch"]
    assert "_rising) {" not in sources["select"] and "_keep = " in sources["select"]
    compile_cuda(sources["select"])
    with pytest.raises(Exception, match="merge"):
        get_pass("tile-walk")(merge="maybe").apply(
            make_context(), _parse(_loop_level("full_prime"))
        )


def test_the_estimate_counts_the_register_tile_as_parallel_chains() -> None:
    """``kernel_estimate``'s latency term follows the longest chain of dependent ops: the
    walk's score and P V tiles are many independent sums, so its chain is a fraction of
    its ops and the kernel is not priced as latency-bound (before: every op dependent,
    the H100's 72.7 us TinyLlama walk estimated at 226 us); a serial walk (one sum, the
    roofline guard's test) still is."""
    from deplodock.passes.tile.schedule.estimate import (
        kernel_estimate,
        per_thread_chain,
        per_thread_ops,
    )

    module = _parse(_stages("full_prime")["materialize"])
    (k,) = [o for o in module.walk() if isinstance(o, kernel.KernelOp)]
    assert per_thread_chain(k) < per_thread_ops(k) / 8
    assert kernel_estimate(k).bound != "latency"
