"""The roofline guard (``passes/tile/schedule/estimate.py``): a kernel's estimate from its
launch and loop nest against the least time any schedule takes.

A schedule that leaves the GPU idle (a long reduction in one block, one thread walking a
tensor) is beyond the guard, the pipeline's own schedule of the same program is not, and
the estimate of a schedule that fills the GPU lands near its roofline. ``-v`` says so
for a kernel beyond it; ``--resources`` prints the figures. Where options forced such a
schedule, ``lower`` lowers that kernel again with the defaults and keeps the better
(``estimate.prefer_default``), which means the same and says so under ``-v``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deplodock.dialects import kernel
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.tile.chunk_reduce import ChunkReduce
from deplodock.passes.tile.schedule.estimate import (
    beyond_guard,
    kernel_estimate,
    prefer_default,
)
from deplodock.pipeline import lower

SUM = "torch.randn(4096,4096).sum()"
ONE_CHUNK = {"chunk-reduce": ChunkReduce(chunks=1)}  # every reduction in one block


def _kernels(expr: str, options=None, guard: bool = True) -> list[kernel.KernelOp]:
    module = import_program(capture_expression(expr).program).module
    lower(module, to="kernel", options=options, guard=guard)
    return [k for k in module.walk() if isinstance(k, kernel.KernelOp)]


def test_one_block_for_a_big_reduction_is_beyond_the_guard() -> None:
    (alone,) = _kernels(SUM, ONE_CHUNK, guard=False)
    assert alone.grid_shape[0] == 1
    estimate = kernel_estimate(alone)
    assert beyond_guard(estimate) and estimate.bound == "memory", estimate
    planned = _kernels(SUM)
    assert len(planned) == 2  # the chunks across blocks, then their sum
    for k in planned:
        assert not beyond_guard(kernel_estimate(k)), k.sym_name.data
    chunks = kernel_estimate(planned[0])
    assert chunks.seconds <= 1.5 * chunks.roofline  # the GPU filled: near the roofline


SERIAL = """
    func.func @forward(%x: tensor<1000000xf32>) -> tensor<f32> {
      %s = kernel.kernel @k_serial grid(1, 1, 1) block(1, 1, 1)
          ins(%xb = %x : tensor<1000000xf32>) outs(%sb : tensor<f32>) {
        %c0 = arith.constant 0 : index
        %acc = kernel.for %i = %c0 to 1000000 step 1 reduce(add) -> f32 {
          %v = kernel.load %xb[%i] : memref<1000000xf32>
          kernel.yield %v : f32
        }
        kernel.store %acc, %sb[] : memref<f32>
      }
      func.return %s : tensor<f32>
    }
    """


def _serial() -> kernel.KernelOp:
    """One thread walking a million floats (a kernel no pass would make)."""
    from xdsl.parser import Parser

    from deplodock.dialects import make_context

    module = Parser(make_context(), SERIAL).parse_module()
    (k,) = [o for o in module.walk() if isinstance(o, kernel.KernelOp)]
    return k


def test_one_thread_walking_a_row_is_beyond_the_guard() -> None:
    k = _serial()
    estimate = kernel_estimate(k)
    assert beyond_guard(estimate) and estimate.threads == 1, estimate
    assert estimate.seconds > 1e-3 > 1e3 * estimate.roofline  # milliseconds for 4 MB


def test_verbose_warns_of_a_kernel_beyond_the_guard(tmp_path: Path, capsys) -> None:
    """``-v`` names the kernel beyond the guard; the planned program has none."""
    from deplodock.cli import main

    out = ["--ir", "cuda", "-o", str(tmp_path / "k.cu"), "-v"]
    assert main(["compile", "-c", SUM, *out]) == 0
    assert "its roofline" not in capsys.readouterr().err
    module = import_program(capture_expression(SUM).program).module
    lower(module, to="tile", options={"chunk-reduce": ChunkReduce(chunks=1)})
    (tmp_path / "one.mlir").write_text(str(module))
    assert main(["compile", str(tmp_path / "one.mlir"), *out]) == 0
    err = capsys.readouterr().err
    assert "warning: @k_sum is estimated at" in err and "x its roofline" in err


# A sum one block cannot carry (beyond the guard in one chunk), one it can (within the
# guard in one chunk, though the planner would chunk it), and no reduction at all.
THREE = "(torch.randn(131072).sum(), torch.randn(60000).sum(), torch.randn(64,64).exp())"


def _lowered(expr: str, **kw):
    """(module at the kernel level, the -v notes, the arguments, eager's outputs)."""
    from deplodock.reference import fresh_inputs

    captured = capture_expression(expr)
    imported = import_program(captured.program)
    notes: list[str] = []
    if kw.pop("observed", False):
        kw["observer"] = lambda step: notes.extend(step.notes)
    lower(imported.module, to="kernel", **kw)
    args, _, reference = fresh_inputs(captured, imported.func, 5, device="cpu")
    want = [w.numpy() for w in reference()]
    return imported.module, notes, [a.numpy() for a in args], want


def _by_name(module) -> dict[str, str]:
    return {k.sym_name.data: str(k) for k in module.walk() if isinstance(k, kernel.KernelOp)}


def test_a_forced_schedule_beyond_the_guard_gets_the_default() -> None:
    """``chunk-reduce{chunks=1}`` leaves the 131072-float sum in one block, far above its
    roofline: that kernel alone is lowered again with the defaults (chunks across
    blocks, then their sum), the others keep the forced schedule, the note says so, and
    the program still computes what PyTorch does (the kernel-level interpreter)."""
    from deplodock.dialects.interpreters.run import run_forward
    from deplodock.reference import relative_error

    module, notes, args, want = _lowered(THREE, options=ONE_CHUNK, observed=True)
    (note,) = notes
    assert note.startswith("k_sum: schedule beyond the roofline guard (estimate "), note
    assert "replaced by the default schedule (estimate " in note, note
    ks = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    assert not [k.sym_name.data for k in ks if beyond_guard(kernel_estimate(k))]
    got = _by_name(module)
    default = _by_name(_lowered(THREE)[0])
    forced = _by_name(_lowered(THREE, options=ONE_CHUNK, guard=False)[0])
    assert beyond_guard(kernel_estimate(_kernels("torch.randn(131072).sum()", ONE_CHUNK, False)[0]))
    assert list(got) == ["k_sum_chunks", "k_sum", "k_sum_1", "k_exp"]
    assert {n: got[n] for n in ("k_sum_chunks", "k_sum")} == {
        n: default[n] for n in ("k_sum_chunks", "k_sum")
    }
    assert "k_sum_1_chunks" in default and "k_sum_1_chunks" not in got  # kept: one chunk
    assert {n: got[n] for n in ("k_sum_1", "k_exp")} == {n: forced[n] for n in ("k_sum_1", "k_exp")}
    # unobserved (each kernel lowered once, copied) and kernel by kernel: the same program
    assert str(_lowered(THREE, options=ONE_CHUNK)[0]) == str(module)
    assert str(_lowered(THREE, options=ONE_CHUNK, memo=False)[0]) == str(module)
    for out, ref in zip(run_forward(module, args), want, strict=True):
        assert relative_error(np.asarray(out), ref) <= 1e-5


def test_nothing_replaced_within_the_guard() -> None:
    """A forced schedule within the guard stays as forced, unremarked; without options
    the guard lowers nothing twice."""
    within = "(torch.randn(60000).sum(), torch.randn(64,64).exp())"
    module, notes, _, _ = _lowered(within, options=ONE_CHUNK, observed=True)
    assert notes == []
    assert str(module) == str(_lowered(within, options=ONE_CHUNK, guard=False)[0])
    assert str(module) != str(_lowered(within)[0])  # forced: one chunk, not the planner's
    assert str(_lowered(within)[0]) == str(_lowered(within, guard=False)[0])


def test_the_guard_keeps_a_schedule_the_default_does_not_beat() -> None:
    """``prefer_default``: the forced schedule stays where the default is no faster or did
    not lower, and says so; one within the guard needs no note."""
    serial = _serial()
    take, note = prefer_default("k_serial", [serial], [serial])
    assert not take and note is not None, note
    assert note.startswith("k_serial: schedule beyond the roofline guard (estimate ")
    assert "kept: the default schedule is no better" in note
    take, note = prefer_default("k_serial", [serial], None)
    assert not take and note is not None and "kept: the default schedule did not lower" in note
    planned = _kernels(SUM)
    assert prefer_default("k_sum", planned, None) == (False, None)
    assert prefer_default("k_sum", [serial], planned)[0]


def test_verbose_says_the_guard_replaced_a_forced_schedule(tmp_path: Path, capsys) -> None:
    """``-p chunk-reduce{chunks=1} -v``: the note under materialize, no warning left, and
    the CUDA of the planned program."""
    from deplodock.cli import main

    planned, forced = tmp_path / "planned.cu", tmp_path / "forced.cu"
    assert main(["compile", "-c", SUM, "-o", str(planned)]) == 0
    capsys.readouterr()
    p = ["-p", "chunk-reduce{chunks=1}"]
    assert main(["compile", "-c", SUM, *p, "-v", "-o", str(forced)]) == 0
    err = capsys.readouterr().err
    assert "k_sum: schedule beyond the roofline guard" in err, err
    assert "replaced by the default schedule" in err and "warning:" not in err
    assert forced.read_text() == planned.read_text()
    assert main(["compile", "-c", SUM, "-p", "chunk-reduce{chunkz=1}"]) == 1
    assert "--pass-options chunk-reduce" in capsys.readouterr().err
