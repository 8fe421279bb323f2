"""Reductions of every layout: over several axes (``collapse-reduce`` makes the nest one
row) and down columns (threads on the outputs, long columns split across blocks).

Each program is lowered to the loop level and through ``tileify``; the pass must change
every program listed as collapsing (a test that it did) and leave the others as they
are; the interpreters run the tile level before and after, and the whole pipeline to the
kernel level, against PyTorch on random inputs. Then the schedule the planners give a
collapsed row: threads, and for a long row blocks with a second, deterministic stage.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplodock.dialects import kernel, loop, make_context, tile
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.pipeline import lower
from deplodock.reference import fresh_inputs, relative_error

COLLAPSING = {
    "sum_all_4d": "torch.randn(2,3,10,68).sum((0,1,2,3))",
    "amax_two_axes": "torch.randn(4,6,33).amax((1,2))",
    "prod_all": "(torch.rand(3,5,7) + 0.5).prod()",
    "mse_loss": "torch.nn.functional.mse_loss(torch.randn(8,3,40), torch.randn(8,3,40))",
    "var_all": "torch.randn(5,7,9).var()",
    "long_row": "torch.randn(2,3,40000).sum()",
}
LEFT = {
    "one_axis": "torch.randn(6,50).sum(-1)",
    "matmul": "torch.matmul(torch.randn(16,64), torch.randn(64,16))",
}


def _lowered(expr: str):
    captured = capture_expression(expr)
    imported = import_program(captured.program)
    module = lower(imported.module, to="loop")
    args, _, reference = fresh_inputs(captured, imported.func, 7, device="cpu")
    return module, [a.numpy() for a in args], [w.numpy() for w in reference()]


def _loop_nest_depth(module) -> int:
    def depth(op) -> int:
        inner = [o for o in op.body.block.ops if isinstance(o, loop.ForOp) and o.is_reduce]
        return 1 + max((depth(o) for o in inner), default=0)

    kernels = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    return max(
        (depth(r) for k in kernels for r in k.body.block.ops if isinstance(r, loop.ForOp)),
        default=0,
    )


@pytest.mark.parametrize("name", [n for n in [*COLLAPSING, *LEFT] if n != "long_row"])
def test_collapse_reduce_preserves_meaning(name: str) -> None:
    """The tile level after collapse-reduce computes what eager does (on the tile-level
    interpreter: ``long_row``'s 240,000 elements take it 23 s there, so its collapsed row
    is run at the kernel level only, by ``test_collapsed_rows_are_spread_over_threads``)."""
    expr = {**COLLAPSING, **LEFT}[name]
    module, inputs, want = _lowered(expr)
    ctx = make_context()
    get_pass("tileify")().apply(ctx, module)
    before, depth = str(module), _loop_nest_depth(module)
    get_pass("collapse-reduce")().apply(ctx, module)
    module.verify()
    if name in LEFT:
        assert str(module) == before
        return
    assert str(module) != before and depth > 1 and _loop_nest_depth(module) < depth
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(out, ref) <= 1e-5
    get_pass("collapse-reduce")().apply(ctx, module)  # idempotent
    assert _loop_nest_depth(module) < depth


@pytest.mark.parametrize("name", list(COLLAPSING))
def test_collapsed_rows_are_spread_over_threads(name: str) -> None:
    """What the planners make of a collapsed row, and the kernels it gives, run."""
    module, inputs, want = _lowered(COLLAPSING[name])
    lower(module, to="kernel")
    kernels = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    widest = max(k.block_shape[0] for k in kernels)
    assert widest >= 32, [(k.sym_name.data, k.block_shape) for k in kernels]
    if name == "long_row":  # 240,000 elements: blocks share the row, a second kernel adds
        assert len(kernels) == 2 and kernels[0].grid_shape[0] > 1
    outputs = run_forward(module, inputs)
    for out, ref in zip(outputs, want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


COLUMNS = {  # reductions down columns: (expression, outputs, rows)
    "middle_axis": ("torch.randn(8,512,64).sum(1)", 512, 512),
    "mean_middle": ("torch.randn(3,100,40).mean(1)", 120, 100),
    "first_axis_max": ("torch.randn(64,48).amax(0)", 48, 64),
    "softmax_dim0": ("torch.softmax(torch.randn(40,32), dim=0)", 32, 40),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_column_reductions_put_threads_on_the_outputs(name: str) -> None:
    """No group of threads on one output (no tile.combine: its loads would be a row
    apart); the innermost axis of every kernel is a thread axis over consecutive
    outputs; a chunked one keeps its chunk axis first. Then the kernels run correct."""
    expr, _, _ = COLUMNS[name]
    module, inputs, want = _lowered(expr)
    lower(module, to="tile")
    kernels = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    assert not any(isinstance(o, tile.CombineOp) for k in kernels for o in k.walk())
    for k in kernels:
        assert k.axes[-1][2] == "thread", (k.sym_name.data, k.axes)
        names = [a.name_hint for a, _, _ in k.axes]
        if "c" in names:
            assert names[0] == "c"
    module, inputs, want = _lowered(expr)
    lower(module, to="kernel")
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


def test_column_planners() -> None:
    from deplodock.passes.tile.schedule.reduce import column_chunks_for, cooperation_threads
    from deplodock.target import target_for

    h200 = target_for("sm_90")
    assert cooperation_threads(4096, 32768, columns=True) == 0
    assert cooperation_threads(4096, 32768) == 256  # a row reduction cooperates
    # (8, 4096, 4096).sum(1): 32768 outputs are 128 blocks; 8 chunks of 512 rows: 1024
    assert column_chunks_for(32768, 4096, h200) == 8
    assert column_chunks_for(32768, 4096, target_for("sm_75")) == 2  # 40 SMs
    assert column_chunks_for(10**6, 4096, h200) == 1  # enough blocks already
    assert column_chunks_for(512, 48, h200) == 1  # a chunk keeps 32 rows


def test_short_contraction_rows_are_dealt_to_lanes() -> None:
    """A contraction left to the default schedule with many outputs of short rows (decode
    attention's scores, q . k over rows of 128) deals each row out to a few lanes, 16
    elements each, so a warp's float4 loads read whole rows, coalesced; a long row gets a
    block, few outputs get a block each, and a contraction down columns keeps a thread an
    output. The kernel then reads its rows a float4 a lane and combines by shuffles, and
    computes PyTorch's scores (kernel-level interpreter, race checker on)."""
    from deplodock.backends.cuda.emit import emit_kernel_sources
    from deplodock.passes.tile.schedule.reduce import cooperation_threads

    assert cooperation_threads(128, 32 * 32768, contraction=True) == 8  # 16 floats a lane
    assert cooperation_threads(96, 10**5, contraction=True) == 4
    assert cooperation_threads(40, 10**5, contraction=True) == 4
    assert cooperation_threads(512, 10**5, contraction=True) == 256  # a long row
    assert cooperation_threads(128, 64, contraction=True) == 128  # few outputs
    assert cooperation_threads(128, 10**5, contraction=True, columns=True) == 0
    expr = (
        "torch.nn.functional.scaled_dot_product_attention(torch.randn(1,8,1,128),"
        " torch.randn(1,2,600,128), torch.randn(1,2,600,128), enable_gqa=True)"
    )
    module, inputs, want = _lowered(expr)
    lower(module, to="kernel")
    sources = emit_kernel_sources(module)
    scores = sources["k_scores"]  # head dim 128: the scores stored
    assert "__shfl_xor_sync" in scores and "const float4 in4_1" in scores
    # The walk over 600 keys of 65 values is long in bytes (``chunks_for``'s step_bytes):
    # chunked, its 16 rows' partials merged a lane a partial, by shuffles, not as float4s
    # (66 of them a step would take 264 registers: ``vectorize.MAX_VECTOR_REGISTERS``).
    combine = sources["k_scaled_dot_product_attention"]
    assert "k_scaled_dot_product_attention_chunks" in sources
    assert "__shfl_xor_sync" in combine and "float4" not in combine
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5
    # 263 rows (a prime) of 8 lanes cannot share blocks: a warp a row.
    module, inputs, want = _lowered(
        "torch.nn.functional.linear(torch.randn(1,128), torch.randn(263,128))"
    )
    lower(module, to="kernel")
    assert "__launch_bounds__(32)" in emit_kernel_sources(module)["k_linear"]
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


def test_rows_read_again_stay_in_l2() -> None:
    """A row read more than once (softmax: max, sum, normalise) gets a larger group of
    threads when the rows in flight would overflow the L2, so they are re-read from it."""
    from deplodock.passes.tile.schedule.reduce import cooperation_threads
    from deplodock.target import target_for

    h200 = target_for("sm_90")
    assert cooperation_threads(50257, 4096, reductions=2, target=h200) == 1024  # 200 KB rows
    assert cooperation_threads(2048, 28 * 2048, reductions=2, target=h200) == 128  # fit: as was
    assert cooperation_threads(50257, 4096, reductions=1, target=h200) == 256  # read once
    # the online softmax: one reduction, but its normalising loop reads the row again
    assert cooperation_threads(50257, 4096, reductions=1, reads=2, target=h200) == 1024
    assert cooperation_threads(50257, 64, reductions=2, target=h200) == 256  # few rows
    assert cooperation_threads(5003, 400, reductions=2, target=target_for("sm_75")) == 512


def test_long_softmax_rows_run_correct_with_wide_groups() -> None:
    module, inputs, want = _lowered("torch.softmax(torch.randn(400,5003), -1)")
    lower(module, to="kernel", arch="sm_75")  # 4 MB of L2: 512 threads a row
    (k,) = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    assert k.block_shape[0] == 512
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


SIBLINGS = {  # independent reductions fusion puts in one kernel
    "two_sums": "torch.randn(30,70).sum() + torch.randn(500).sum()",
    "sum_and_max": "torch.randn(7,300).sum() * torch.randn(41,13).amax()",
}


@pytest.mark.parametrize("name", list(SIBLINGS))
def test_sibling_reductions_are_each_chunked(name: str) -> None:
    """``chunk-reduce`` splits each of a kernel's independent reductions across blocks (a
    chunk kernel each, the kernel combines both), and the result is PyTorch's."""
    from deplodock.passes.tile.chunk_reduce import ChunkReduce

    module, inputs, want = _lowered(SIBLINGS[name])
    (fused,) = [k for k in module.walk() if isinstance(k, loop.KernelOp)]
    assert sum(isinstance(o, loop.ForOp) and o.is_reduce for o in fused.body.block.ops) == 2
    lower(module, to="kernel", options={"chunk-reduce": ChunkReduce(chunks=3)}, guard=False)
    names = sorted(k.sym_name.data for k in module.walk() if isinstance(k, kernel.KernelOp))
    assert len(names) == 3 and sum(n.endswith(("_chunks", "_chunks2")) for n in names) == 2, names
    for out, ref in zip(run_forward(module, inputs), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


def test_two_large_sums_fill_the_gpu() -> None:
    """The program the roofline guard caught: two sums of 16M and 20K floats added, fused
    into one kernel that ran on one block (528x its roofline); now each sum is chunked
    across blocks by the planner's own choice, and no kernel is beyond the guard."""
    from deplodock.passes.tile.schedule.estimate import beyond_guard, kernel_estimate

    captured = capture_expression("torch.randn(4096,4096).sum() + torch.randn(20000).sum()")
    module = import_program(captured.program).module
    lower(module, to="kernel")
    kernels = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    assert max(k.grid_shape[0] for k in kernels) >= 132, [k.grid_shape for k in kernels]
    assert not [k.sym_name.data for k in kernels if beyond_guard(kernel_estimate(k))]
