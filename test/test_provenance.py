"""Provenance: every loop kernel knows the torch ops it covers and their source lines; the
--stats table against the eager baseline (one kernel per torch op).

The torch op of each ten op rides in its MLIR location (printed only with debug info), so
the tensor level reads as before; lift-to-loop turns it into each kernel's ``covers``.
"""

from __future__ import annotations

import io

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from deplodock.cli import main
from deplodock.dialects import make_context
from deplodock.dialects.loop import KernelOp
from deplodock.dialects.tensor import IndexMapOp
from deplodock.dialects.torch import AtenOp, Origin, merge_locations, origins, printed_names
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.kernel_stats import (
    OpStats,
    eager_stats,
    format_table,
    origin_table,
    program_stats,
    short_label,
)
from deplodock.pipeline import PassStep, lower

MATMUL = "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))"


def _debug_text(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module)
    return out.getvalue()


def _kernels(module: ModuleOp) -> list[KernelOp]:
    return [op for op in module.walk() if isinstance(op, KernelOp)]


def _covers(kernel: KernelOp) -> list[str]:
    return [a.data for a in kernel.attributes["covers"].data]  # type: ignore[attr-defined]


def _lowered(src: str) -> tuple[ModuleOp, ModuleOp, ModuleOp]:
    """(torch level, right after lift-to-loop, fused loop level) of an expression."""
    module = import_program(capture_expression(src).program).module
    torch_level = module.clone()
    lifted: list[ModuleOp] = []

    def keep(step: PassStep) -> None:
        if step.name == "lift-to-loop" and step.module is not None:
            lifted.append(step.module.clone())

    lower(module, to="loop", observer=keep)
    return torch_level, lifted[0], module


# --- the locations ---------------------------------------------------------------------------


def test_origin_location_round_trips() -> None:
    origin = Origin(
        "linear_1",
        "aten.linear.default",
        "layer.self_attn.k_proj",
        "transformers/models/llama/modeling_llama.py",
        245,
    )
    loc = origin.location()
    assert str(loc) == (
        'loc("linear_1"(callsite("aten.linear.default" at "layer.self_attn.k_proj"('
        '"transformers/models/llama/modeling_llama.py":245:0))))'
    )
    assert origins(loc) == [origin]
    assert origin.where == "modeling_llama.py:245" and origin.op == "linear"
    to = Origin("to", "aten.to.dtype")
    merged = merge_locations(to.location(), loc, to.location())
    assert origins(merged) == [to, origin]  # each op once, in order
    assert origins(merge_locations()) == []


def test_tensor_level_names_its_torch_ops_only_in_debug_info() -> None:
    module = import_program(capture_expression(MATMUL).program).module
    lower(module, to="tensor")
    assert "loc(" not in str(module)  # the printed tensor level is unchanged
    for op in module.walk():
        if op.name.startswith("ten."):
            (origin,) = origins(op.location)
            assert origin.file == "<expression>" and origin.line == 1
    names = {o.name: o.target for op in module.walk() for o in origins(op.location)}
    assert names == {
        "add": "aten.add.Tensor",
        "matmul": "aten.matmul.default",
        "relu": "aten.relu.default",
    }
    text = _debug_text(module)
    reparsed = Parser(make_context(), text).parse_module()
    assert _debug_text(reparsed) == text


def test_an_alias_is_carried_by_its_users() -> None:
    """`to` its own dtype decomposes to nothing: the op reading its result covers it."""
    _, _, fused = _lowered("torch.exp(torch.randn(4,8).to(torch.float32))")
    (kernel,) = _kernels(fused)
    assert _covers(kernel) == ["to", "exp"]


def test_a_folded_view_keeps_its_op() -> None:
    """A view of a view is one index_map; it names both torch ops."""
    module = import_program(capture_expression("torch.randn(4,8).view(8,4).t()").program).module
    lower(module, to="tensor")
    (view,) = [op for op in module.walk() if isinstance(op, IndexMapOp)]
    assert [o.name for o in origins(view.location)] == ["view", "t"]


# --- the loop level ---------------------------------------------------------------------------


def test_loop_kernels_cover_torch_ops_in_program_order() -> None:
    _, lifted, fused = _lowered(MATMUL)
    assert [_covers(k) for k in _kernels(lifted)] == [
        ["add"],
        ["add"],
        ["matmul"],
        ["matmul"],
        ["matmul"],
        ["matmul"],
        ["relu"],
    ]  # one kernel per ten op (broadcasts, product, reduce), each naming its torch op
    (kernel,) = _kernels(fused)
    assert _covers(kernel) == ["add", "matmul", "relu"]
    # the fused kernel's own location merges its parts' (not loc(unknown))
    assert sorted(o.name for o in origins(kernel.location)) == ["add", "matmul", "relu"]
    table = origin_table(fused)  # resolved from the locations of the fused kernel's ops
    assert [table[n].target for n in _covers(kernel)] == [
        "aten.add.Tensor",
        "aten.matmul.default",
        "aten.relu.default",
    ]


def test_eager_baseline_is_one_kernel_per_torch_op() -> None:
    _, lifted, fused = _lowered(MATMUL)
    eager = {s.origin.name: s for s in eager_stats(lifted)}
    assert list(eager) == ["add", "matmul", "relu"]
    f32 = 4
    assert eager["add"] == OpStats(
        eager["add"].origin, (16 * 64 + 64) * f32, 16 * 64 * f32, 16 * 64, view=False
    )
    matmul = eager["matmul"]  # reads its inputs once, not the (M, K, N) product
    assert (matmul.bytes_read, matmul.bytes_written) == ((16 * 64 + 64 * 16) * f32, 16 * 16 * f32)
    assert matmul.flops == 2 * 16 * 64 * 16
    assert eager["relu"].flops == 16 * 16
    (stats,) = program_stats(fused)
    assert stats.bytes_read == (16 * 64 + 64 + 64 * 16) * f32
    assert stats.bytes_written == 16 * 16 * f32


def test_views_are_free_in_the_baseline() -> None:
    _, lifted, _ = _lowered("torch.exp(torch.randn(4,8).t().to(torch.float32))")
    eager = {s.origin.name: s for s in eager_stats(lifted)}
    assert eager["t"].view and eager["to"].view and not eager["exp"].view
    assert eager["t"].bytes_read == eager["t"].bytes_written == 0


def test_short_label_names_whole_modules() -> None:
    table = {
        "linear": Origin("linear", "aten.linear.default", "layer.attn.q_proj"),
        "view": Origin("view", "aten.view.default", "layer.attn"),
        "mul": Origin("mul", "aten.mul.Tensor", "layer.attn"),
        "mul_1": Origin("mul_1", "aten.mul.Tensor", "layer.attn"),
        "neg": Origin("neg", "aten.neg.default", "layer.attn"),
        "add": Origin("add", "aten.add.Tensor", ""),
        "rsqrt": Origin("rsqrt", "aten.rsqrt.default", "layer.norm"),
    }
    assert short_label(["linear"], table, {"view"}) == "q_proj"
    assert short_label(["view", "mul", "neg", "mul_1"], table, {"view"}) == "attn: mul×2 neg"
    assert short_label(["linear", "view", "mul", "neg", "mul_1"], table, {"view"}) == "attn"
    assert short_label(["rsqrt", "linear", "mul", "neg", "mul_1"], table, {"view"}) == "layer"
    assert short_label(["add", "neg"], table, weight={"neg": 2}) == "attn: neg, add"


def test_cli_stats_table_for_an_expression(capsys) -> None:
    assert main(["compile", "-c", MATMUL, "--ir", "loop", "--stats", "-v"]) == 0
    err = capsys.readouterr().err
    table = err[err.index("kernel ") :]
    assert "torch ops" in table.splitlines()[0] and "roofline" in table.splitlines()[0]
    assert "add matmul relu" in table  # the one kernel, its ops at the root module
    assert "add (aten.add) <expression>:1" in table  # -v: each op on a line
    assert "unfused (eager)" in table and "3 kernels, one per torch op" in table


# --- the real TinyLlama layer -----------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_layer():
    pytest.importorskip("transformers")
    from deplodock.frontends.models import capture_model

    captured = capture_model("tinyllama", part="layer", seq=8, device="meta")
    module = import_program(captured.program).module
    torch_level = module.clone()
    lifted: list[ModuleOp] = []

    def keep(step: PassStep) -> None:
        if step.name == "lift-to-loop" and step.module is not None:
            lifted.append(step.module.clone())

    lower(module, to="loop", observer=keep)
    return torch_level, lifted[0], module


def _live_torch_ops(module: ModuleOp) -> dict[str, AtenOp]:
    """The torch ops the result depends on, by printed name (the graph holds a few dead
    ones, which no kernel computes)."""
    func = next(iter(module.ops))
    names = printed_names(func.body.blocks)  # type: ignore[attr-defined]
    ret = func.body.block.last_op  # type: ignore[attr-defined]
    live: set[AtenOp] = set()
    pending = [v.owner for v in ret.operands]
    while pending:
        op = pending.pop()
        if isinstance(op, AtenOp) and op not in live:
            live.add(op)
            pending.extend(v.owner for v in op.operands)
    return {names[op.results[0]]: op for op in live}


def test_llama_layer_provenance(llama_layer) -> None:
    torch_level, lifted, fused = llama_layer
    live = _live_torch_ops(torch_level)
    kernels = _kernels(fused)
    covered = {name for k in kernels for name in _covers(k)}
    assert all(_covers(k) for k in kernels)  # every kernel covers a torch op
    assert set(live) <= covered  # every torch op is computed by some kernel
    assert covered <= set(live)  # and covers names nothing else
    table = origin_table(lifted)
    assert set(table) == set(live)
    for name, op in live.items():
        assert table[name].target.removeprefix("aten.") == op.overload
    (q_proj,) = [k for k in kernels if any(table[n].scope.endswith(".q_proj") for n in _covers(k))]
    (linear,) = [table[n] for n in _covers(q_proj) if table[n].scope.endswith(".q_proj")]
    assert linear.op == "linear" and linear.file.endswith("models/llama/modeling_llama.py")
    assert linear.scope == "layer.self_attn.q_proj" and linear.line > 0


def test_llama_layer_eager_baseline(llama_layer) -> None:
    torch_level, lifted, fused = llama_layer
    live = _live_torch_ops(torch_level)
    eager = eager_stats(lifted)
    assert sorted(s.origin.name for s in eager) == sorted(live)  # one entry per torch op
    views = {s.origin.name for s in eager if s.view}
    assert {live[n].overload.split(".")[0] for n in views} <= {
        "to",
        "view",
        "transpose",
        "unsqueeze",
        "expand",
        "reshape",
        "slice",
        "contiguous",
    }
    by_name = {s.origin.name: s for s in eager}
    q = by_name["linear"]  # q_proj: x (1, 8, 2048) and W (2048, 2048) once, out once
    assert q.bytes_read == (8 * 2048 + 2048 * 2048) * 4 and q.bytes_written == 8 * 2048 * 4
    assert q.flops == 2 * 8 * 2048 * 2048
    text = format_table(program_stats(fused), eager, origin_table(lifted))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert f"{len(eager) - len(views)} kernels, one per torch op" in lines[-1]
    assert any(line.startswith("k_") and "q_proj" in line for line in lines)
    wide = format_table(program_stats(fused), eager, origin_table(lifted), verbose=True)
    assert "linear (aten.linear) modeling_llama.py:" in wide


def test_a_gather_reads_only_its_rows() -> None:
    """Minimum reads count what the loads reach: 8 rows of the table, not all 1000."""
    src = "torch.nn.Embedding(1000, 64)(torch.randint(0, 1000, (1, 8)))"
    _, lifted, fused = _lowered(src)
    (stats,) = program_stats(fused)
    assert stats.bytes_read == 8 * 64 * 4 + 8 * 8  # the rows, and the i64 ids
    (embedding,) = eager_stats(lifted)
    assert embedding.origin.op == "embedding" and embedding.bytes_read == stats.bytes_read


def test_cli_debuginfo_prints_locations(capsys) -> None:
    assert (
        main(["compile", "-c", "torch.relu(torch.randn(4,8) + 1)", "--ir", "loop", "--debuginfo"])
        == 0
    )
    out = capsys.readouterr().out
    assert 'loc("add"(callsite("aten.add.Tensor" at "<expression>":1:0)))' in out
    assert "loop.kernel @k_relu" in out


def test_roofline_seconds() -> None:
    from deplodock.kernel_stats import roofline_seconds
    from deplodock.target import target_for

    h200 = target_for("sm_90")
    assert roofline_seconds(4.25e9, 0, h200) == pytest.approx(1e-3)  # 4.25 GB at 4.25 TB/s
    work = 2 * 4096**3  # a 4096^3 matmul: 137 GFLOP, bound by the fp32 rate
    assert roofline_seconds(3 * 4096**2 * 4, work, h200) == pytest.approx(work / h200.fp32_flops)
    assert roofline_seconds(10**9, 0, target_for("sm_75")) > roofline_seconds(10**9, 0, h200)
