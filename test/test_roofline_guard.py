"""The roofline guard (``passes/tile/schedule/estimate.py``): a kernel's estimate from its
launch and loop nest against the least time any schedule takes.

A schedule that leaves the GPU idle (a long reduction in one block, one thread walking a
tensor) is beyond the guard, the pipeline's own schedule of the same program is not, and
the estimate of a schedule that fills the GPU lands near its roofline. ``-v`` says so
for a kernel beyond it; ``--resources`` prints the figures.
"""

from __future__ import annotations

from pathlib import Path

from deplodock.dialects import kernel
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.tile.chunk_reduce import ChunkReduce
from deplodock.passes.tile.schedule.estimate import beyond_guard, kernel_estimate
from deplodock.pipeline import lower

SUM = "torch.randn(4096,4096).sum()"


def _kernels(expr: str, options=None) -> list[kernel.KernelOp]:
    module = import_program(capture_expression(expr).program).module
    lower(module, to="kernel", options=options)
    return [k for k in module.walk() if isinstance(k, kernel.KernelOp)]


def test_one_block_for_a_big_reduction_is_beyond_the_guard() -> None:
    (alone,) = _kernels(SUM, {"chunk-reduce": ChunkReduce(chunks=1)})
    assert alone.grid_shape[0] == 1
    estimate = kernel_estimate(alone)
    assert beyond_guard(estimate) and estimate.bound == "memory", estimate
    planned = _kernels(SUM)
    assert len(planned) == 2  # the chunks across blocks, then their sum
    for k in planned:
        assert not beyond_guard(kernel_estimate(k)), k.sym_name.data
    chunks = kernel_estimate(planned[0])
    assert chunks.seconds <= 1.5 * chunks.roofline  # the GPU filled: near the roofline


def test_one_thread_walking_a_row_is_beyond_the_guard() -> None:
    text = """
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
    from xdsl.parser import Parser

    from deplodock.dialects import make_context

    module = Parser(make_context(), text).parse_module()
    (k,) = [o for o in module.walk() if isinstance(o, kernel.KernelOp)]
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
