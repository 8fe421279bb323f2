"""``vector V`` loops: their meaning in both SIMT interpreters, the pass's decision, and
which accesses ``vector_access`` proves 16-byte wide (the emitter's rule)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects import kernel, make_context, tile
from deplodock.dialects.access import vector_access
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import lower


def _parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def _owner_map(level: str, threads: int, size: int, vector: int) -> str:
    """Each element records the thread that wrote it, through a (vector) strided loop."""
    if level == "kernel":
        return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{
  %y = kernel.kernel @k grid(1, 1, 1) block({threads}, 1, 1)
      ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<{size}xf32>) {{
    %t = kernel.thread_id x
    kernel.for %a = %t to {size} step {threads} vector {vector} {{
      %i = arith.index_cast %t : index to i32
      %f = arith.sitofp %i : i32 to f32
      kernel.store %f, %yb[%a] : memref<{size}xf32>
    }}
  }}
  func.return %y : tensor<{size}xf32>
}}"""
    return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{
  %y = tile.kernel @k axes(%t : {threads} = thread)
      ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<{size}xf32>) {{
    tile.strided_for %a = %t to {size} step {threads} vector {vector} {{
      %i = arith.index_cast %t : index to i32
      %f = arith.sitofp %i : i32 to f32
      loop.store %f, %yb[%a] : memref<{size}xf32>
    }}
  }}
  func.return %y : tensor<{size}xf32>
}}"""


@pytest.mark.parametrize("level", ["tile", "kernel"])
@pytest.mark.parametrize("size", [64, 72])  # 72: 18 groups, threads 0 and 1 take two
def test_vector_loop_gives_each_thread_consecutive_groups(level: str, size: int) -> None:
    threads, vector = 16, 4
    x = np.zeros(size, np.float32)
    (y,) = run_forward(_parse(_owner_map(level, threads, size, vector)), [x])
    expected = (np.arange(size) // vector) % threads
    np.testing.assert_array_equal(y, expected.astype(np.float32))


def test_vector_must_divide_the_bound() -> None:
    with pytest.raises(VerifyException, match="vector 4 does not divide the upper bound 66"):
        _parse(_owner_map("kernel", 16, 66, 4))
    with pytest.raises(VerifyException, match="vector 3 is not a supported width"):
        _parse(_owner_map("tile", 16, 66, 3))


@pytest.mark.parametrize(
    ("index", "wide"),
    [
        ("%b, %a", True),
        ("%b, (%a + 32) mod 64", True),  # RoPE's rotate-half: a group stays together
        ("%b, (%a + 2) mod 64", False),  # a group would start off a 16-byte boundary
        ("%b, %a floordiv 2", False),
        ("%a, %b", False),  # transposed: a row apart per element
        ("%b * 0, %a", True),
        ("%b floordiv 3, %a", True),  # any row: rows are 64 floats, a multiple of 4
    ],
)
def test_vector_access_rule(index: str, wide: bool) -> None:
    module = _parse(f"""
func.func @forward(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {{
  %y = kernel.kernel @k grid(64, 1, 1) block(16, 1, 1)
      ins(%xb = %x : tensor<64x64xf32>) outs(%yb : tensor<64x64xf32>) {{
    %t = kernel.thread_id x
    %b = kernel.block_id x
    kernel.for %a = %t to 64 step 16 {{
      %v = kernel.load %xb[{index}] : memref<64x64xf32>
      kernel.store %v, %yb[%b, %a] : memref<64x64xf32>
    }}
  }}
  func.return %y : tensor<64x64xf32>
}}""")
    (loop,) = [op for op in module.walk() if isinstance(op, kernel.ForOp)]
    (load,) = [op for op in loop.walk() if isinstance(op, kernel.LoadOp)]
    assert vector_access(load, loop, 4) is wide


def test_memory_bound_seeds_are_vectorised() -> None:
    """RMSNorm's and softmax's row loops all take float4 steps; the kernels still match
    the reference in the pass-by-pass checks (test_simt_interpreters)."""
    for expr in (
        "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))",
        "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))",
    ):
        module = import_program(capture_expression(expr).program).module
        lower(module, to="tile")
        loops = [op for op in module.walk() if isinstance(op, tile.StridedForOp)]
        assert loops and all(op.vector is not None and op.vector.data == 4 for op in loops)
