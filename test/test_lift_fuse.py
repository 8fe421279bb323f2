# ruff: noqa: E501  (the programs are MLIR text, one op per line)
"""lift-to-loop and fuse preserve meaning, and fuse makes the kernels an engineer would write.

Each program is written by hand at the tensor level, then run three ways on random inputs:
lifted (one kernel per op), lifted and fused, and against a numpy reference. The loop
interpreter is the vectorised one (dialects/interpreters/loop.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import InterpretationError

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.loop import ForOp, KernelOp
from deplodock.passes.loop.fuse import Fuse, fuse_module, fusion_cost, substitute
from deplodock.passes.tensor.lift_to_loop import LiftToLoop

RTOL = 1e-5

# --- programs ------------------------------------------------------------------------------

RMSNORM = """
func.func @forward(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %sq = ten.map(%x) : tensor<2x8x64xf32> -> tensor<2x8x64xf32> {
  ^bb0(%a: f32):
    %m = arith.mulf %a, %a : f32
    ten.yield %m : f32
  }
  %ss = ten.reduce add %sq dims [2] : tensor<2x8x64xf32> -> tensor<2x8xf32>
  %r = ten.map(%ss) : tensor<2x8xf32> -> tensor<2x8xf32> {
  ^bb0(%a: f32):
    %inv = arith.constant 1.562500e-02 : f32
    %eps = arith.constant 1.0e-06 : f32
    %m = arith.mulf %a, %inv : f32
    %e = arith.addf %m, %eps : f32
    %q = math.rsqrt %e : f32
    ten.yield %q : f32
  }
  %rb = ten.index_map %r (d0, d1, d2) -> (d0, d1) : tensor<2x8xf32> -> tensor<2x8x64xf32>
  %n = ten.map(%x, %rb) : tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    ten.yield %m : f32
  }
  %wb = ten.index_map %w (d0, d1, d2) -> (d2) : tensor<64xf32> -> tensor<2x8x64xf32>
  %rms_norm = ten.map(%n, %wb) : tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    ten.yield %m : f32
  }
  func.return %rms_norm : tensor<2x8x64xf32>
}
"""


def rmsnorm_ref(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


SOFTMAX = """
func.func @forward(%x: tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> {
  %mx = ten.reduce max %x dims [3] : tensor<1x2x8x64xf32> -> tensor<1x2x8xf32>
  %mxb = ten.index_map %mx (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<1x2x8xf32> -> tensor<1x2x8x64xf32>
  %sub = ten.map(%x, %mxb) : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.subf %a, %b : f32
    ten.yield %s : f32
  }
  %ex = ten.map(%sub) : tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32> {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    ten.yield %e : f32
  }
  %sum = ten.reduce add %ex dims [3] : tensor<1x2x8x64xf32> -> tensor<1x2x8xf32>
  %sumb = ten.index_map %sum (d0, d1, d2, d3) -> (d0, d1, d2) : tensor<1x2x8xf32> -> tensor<1x2x8x64xf32>
  %softmax = ten.map(%ex, %sumb) : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.divf %a, %b : f32
    ten.yield %d : f32
  }
  func.return %softmax : tensor<1x2x8x64xf32>
}
"""


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


MATMUL = """
func.func @forward(%x: tensor<16x64xf32>, %bias: tensor<64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %bias_bc = ten.index_map %bias (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
  %add = ten.map(%x, %bias_bc) : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    ten.yield %s : f32
  }
  %add_bc = ten.index_map %add (d0, d1, d2) -> (d0, d1) : tensor<16x64xf32> -> tensor<16x64x16xf32>
  %w_bc = ten.index_map %w (d0, d1, d2) -> (d1, d2) : tensor<64x16xf32> -> tensor<16x64x16xf32>
  %prod = ten.map(%add_bc, %w_bc) : tensor<16x64x16xf32>, tensor<16x64x16xf32> -> tensor<16x64x16xf32> {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    ten.yield %p : f32
  }
  %red = ten.reduce add %prod dims [1] : tensor<16x64x16xf32> -> tensor<16x16xf32>
  %relu = ten.map(%red) : tensor<16x16xf32> -> tensor<16x16xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %a, %z : f32
    ten.yield %r : f32
  }
  func.return %relu : tensor<16x16xf32>
}
"""


def matmul_ref(x, bias, w):
    return np.maximum((x + bias) @ w, 0)


# Row and column broadcasts of vectors into a matrix.
BROADCAST = """
func.func @forward(%x: tensor<8x32xf32>, %row: tensor<32xf32>, %col: tensor<8xf32>) -> tensor<8x32xf32> {
  %rb = ten.index_map %row (d0, d1) -> (d1) : tensor<32xf32> -> tensor<8x32xf32>
  %cb = ten.index_map %col (d0, d1) -> (d0) : tensor<8xf32> -> tensor<8x32xf32>
  %y = ten.map(%x, %rb, %cb) : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.mulf %s, %c : f32
    ten.yield %t : f32
  }
  func.return %y : tensor<8x32xf32>
}
"""

# A transposed operand, after an elementwise producer.
TRANSPOSE = """
func.func @forward(%x: tensor<8x16xf32>, %z: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %e = ten.map(%x) : tensor<8x16xf32> -> tensor<8x16xf32> {
  ^bb0(%a: f32):
    %v = math.exp %a : f32
    ten.yield %v : f32
  }
  %t = ten.index_map %e (d0, d1) -> (d1, d0) : tensor<8x16xf32> -> tensor<16x8xf32>
  %y = ten.map(%t, %z) : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    ten.yield %m : f32
  }
  func.return %y : tensor<16x8xf32>
}
"""

# Elementwise chain where one intermediate is used twice and also returned.
ELEMENTWISE = """
func.func @forward(%x: tensor<4x8x16xf32>, %y: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %e = ten.map(%x) : tensor<4x8x16xf32> -> tensor<4x8x16xf32> {
  ^bb0(%a: f32):
    %v = math.tanh %a : f32
    ten.yield %v : f32
  }
  %p = ten.map(%e, %y) : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32> {
  ^bb0(%a: f32, %b: f32):
    %v = arith.mulf %a, %b : f32
    ten.yield %v : f32
  }
  %q = ten.map(%p, %e, %x) : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.addf %a, %b : f32
    %u = arith.subf %v, %c : f32
    ten.yield %u : f32
  }
  func.return %q, %e : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}
"""


def elementwise_ref(x, y):
    e = np.tanh(x)
    return [e * y + e - x, e]


# Reshape (floordiv/mod indices) and a slice, a splat constant, a literal constant.
RESHAPE = """
func.func @forward(%x: tensor<4x6xf32>, %y: tensor<12xf32>) -> tensor<12xf32> {
  %two = ten.constant dense<2.0> : tensor<24xf32>
  %k = ten.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]> : tensor<12xf32>
  %flat = ten.index_map %x (d0) -> (d0 floordiv 6, d0 mod 6) : tensor<4x6xf32> -> tensor<24xf32>
  %s = ten.map(%flat, %two) : tensor<24xf32>, tensor<24xf32> -> tensor<24xf32> {
  ^bb0(%a: f32, %b: f32):
    %v = arith.mulf %a, %b : f32
    ten.yield %v : f32
  }
  %half = ten.index_map %s (d0) -> (d0 + 12) : tensor<24xf32> -> tensor<12xf32>
  %r = ten.map(%half, %y, %k) : tensor<12xf32>, tensor<12xf32>, tensor<12xf32> -> tensor<12xf32> {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %v = arith.addf %a, %b : f32
    %u = arith.mulf %v, %c : f32
    ten.yield %u : f32
  }
  func.return %r : tensor<12xf32>
}
"""


def reshape_ref(x, y):
    return ((x.reshape(24) * 2)[12:] + y) * np.arange(1, 13, dtype=np.float32)


# A reduction over two axes (one of extent 1), then a mean-like scale.
MULTI_REDUCE = """
func.func @forward(%x: tensor<3x1x5x7xf32>) -> tensor<5xf32> {
  %s = ten.reduce add %x dims [0, 1, 3] : tensor<3x1x5x7xf32> -> tensor<5xf32>
  %m = ten.map(%s) : tensor<5xf32> -> tensor<5xf32> {
  ^bb0(%a: f32):
    %n = arith.constant 21.0 : f32
    %v = arith.divf %a, %n : f32
    ten.yield %v : f32
  }
  func.return %m : tensor<5xf32>
}
"""

# matmul(transpose(matmul(a, b)), w): the inner matmul is refused into the outer one.
MATMUL_TRANSPOSED = """
func.func @forward(%a: tensor<8x16xf32>, %b: tensor<16x12xf32>, %w: tensor<8x10xf32>) -> tensor<12x10xf32> {
  %a_bc = ten.index_map %a (d0, d1, d2) -> (d0, d1) : tensor<8x16xf32> -> tensor<8x16x12xf32>
  %b_bc = ten.index_map %b (d0, d1, d2) -> (d1, d2) : tensor<16x12xf32> -> tensor<8x16x12xf32>
  %p1 = ten.map(%a_bc, %b_bc) : tensor<8x16x12xf32>, tensor<8x16x12xf32> -> tensor<8x16x12xf32> {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    ten.yield %m : f32
  }
  %mm1 = ten.reduce add %p1 dims [1] : tensor<8x16x12xf32> -> tensor<8x12xf32>
  %t = ten.index_map %mm1 (d0, d1) -> (d1, d0) : tensor<8x12xf32> -> tensor<12x8xf32>
  %t_bc = ten.index_map %t (d0, d1, d2) -> (d0, d1) : tensor<12x8xf32> -> tensor<12x8x10xf32>
  %w_bc = ten.index_map %w (d0, d1, d2) -> (d1, d2) : tensor<8x10xf32> -> tensor<12x8x10xf32>
  %p2 = ten.map(%t_bc, %w_bc) : tensor<12x8x10xf32>, tensor<12x8x10xf32> -> tensor<12x8x10xf32> {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    ten.yield %m : f32
  }
  %mm2 = ten.reduce add %p2 dims [1] : tensor<12x8x10xf32> -> tensor<12x10xf32>
  func.return %mm2 : tensor<12x10xf32>
}
"""

# A column sum consumed per element of the whole matrix: it would be re-reduced per row.
COLUMN_SUM = """
func.func @forward(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %cs = ten.reduce add %x dims [0] : tensor<16x32xf32> -> tensor<32xf32>
  %csb = ten.index_map %cs (d0, d1) -> (d1) : tensor<32xf32> -> tensor<16x32xf32>
  %y = ten.map(%x, %csb) : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.subf %a, %b : f32
    ten.yield %s : f32
  }
  func.return %y : tensor<16x32xf32>
}
"""

# An expensive elementwise producer broadcast over an outer axis: recomputed per row.
BROADCAST_EXPENSIVE = """
func.func @forward(%v: tensor<32xf32>, %x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %f = ten.map(%v) : tensor<32xf32> -> tensor<32xf32> {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    %t = math.tanh %e : f32
    %s = math.sqrt %t : f32
    %l = math.log %s : f32
    %m = arith.mulf %l, %e : f32
    ten.yield %m : f32
  }
  %fb = ten.index_map %f (d0, d1) -> (d1) : tensor<32xf32> -> tensor<64x32xf32>
  %y = ten.map(%x, %fb) : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    ten.yield %s : f32
  }
  func.return %y : tensor<64x32xf32>
}
"""

# An expensive map of a weight read inside a matmul's K loop: fused, it would rerun once per
# output row in a compute-bound kernel.
WEIGHT_PROLOGUE = """
func.func @forward(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %f = ten.map(%w) : tensor<64x64xf32> -> tensor<64x64xf32> {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    %t = math.tanh %e : f32
    %s = math.sqrt %t : f32
    %l = math.log %s : f32
    %m = arith.mulf %l, %e : f32
    ten.yield %m : f32
  }
  %x_bc = ten.index_map %x (d0, d1, d2) -> (d0, d1) : tensor<64x64xf32> -> tensor<64x64x64xf32>
  %f_bc = ten.index_map %f (d0, d1, d2) -> (d1, d2) : tensor<64x64xf32> -> tensor<64x64x64xf32>
  %p = ten.map(%x_bc, %f_bc) : tensor<64x64x64xf32>, tensor<64x64x64xf32> -> tensor<64x64x64xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    ten.yield %m : f32
  }
  %y = ten.reduce add %p dims [1] : tensor<64x64x64xf32> -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}
"""


# An outer difference of row sums (the shape of an attention mask built from sequence ids)
# read by two kernels: it expands 32 bytes into 256 and reads only a reduction's result,
# so each reader gets its own copy while the sum stays one kernel.
SHARED_EXPANSION = """
func.func @forward(%x: tensor<8x16xf32>, %a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %s = ten.reduce add %x dims [1] : tensor<8x16xf32> -> tensor<8xf32>
  %si = ten.index_map %s (d0, d1) -> (d0) : tensor<8xf32> -> tensor<8x8xf32>
  %sj = ten.index_map %s (d0, d1) -> (d1) : tensor<8xf32> -> tensor<8x8xf32>
  %m = ten.map(%si, %sj) : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> {
  ^bb0(%p: f32, %q: f32):
    %v = arith.subf %p, %q : f32
    ten.yield %v : f32
  }
  %y1 = ten.map(%m, %a) : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> {
  ^bb0(%p: f32, %q: f32):
    %v = arith.mulf %p, %q : f32
    ten.yield %v : f32
  }
  %y2 = ten.map(%m, %b) : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32> {
  ^bb0(%p: f32, %q: f32):
    %v = arith.addf %p, %q : f32
    ten.yield %v : f32
  }
  func.return %y1, %y2 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""


def _outer_difference(x):
    s = x.sum(1)
    return s[:, None] - s[None, :]


# exp(sum(x)) read by two kernels: copying it would compute the reduction twice.
SHARED_REDUCTION = """
func.func @forward(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = ten.reduce add %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  %n = ten.map(%s) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32):
    %v = math.exp %a : f32
    ten.yield %v : f32
  }
  %r1 = ten.map(%n) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32):
    %v = arith.addf %a, %a : f32
    ten.yield %v : f32
  }
  %r2 = ten.map(%n) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%a: f32):
    %v = arith.mulf %a, %a : f32
    ten.yield %v : f32
  }
  func.return %r1, %r2 : tensor<4xf32>, tensor<4xf32>
}
"""


def _f(x):
    e = np.exp(x)
    return np.log(np.sqrt(np.tanh(e))) * e


CASES = {
    "rmsnorm": (RMSNORM, [(2, 8, 64), (64,)], lambda x, w: [rmsnorm_ref(x, w)]),
    "softmax": (SOFTMAX, [(1, 2, 8, 64)], lambda x: [softmax_ref(x)]),
    "matmul": (MATMUL, [(16, 64), (64,), (64, 16)], lambda *a: [matmul_ref(*a)]),
    "broadcast": (BROADCAST, [(8, 32), (32,), (8,)], lambda x, r, c: [(x + r) * c[:, None]]),
    "transpose": (TRANSPOSE, [(8, 16), (16, 8)], lambda x, z: [np.exp(x).T * z]),
    "elementwise": (ELEMENTWISE, [(4, 8, 16), (4, 8, 16)], elementwise_ref),
    "reshape": (RESHAPE, [(4, 6), (12,)], lambda x, y: [reshape_ref(x, y)]),
    "multi_reduce": (MULTI_REDUCE, [(3, 1, 5, 7)], lambda x: [x.sum((0, 1, 3)) / 21]),
    "matmul_transposed": (
        MATMUL_TRANSPOSED,
        [(8, 16), (16, 12), (8, 10)],
        lambda a, b, w: [(a @ b).T @ w],
    ),
    "column_sum": (COLUMN_SUM, [(16, 32)], lambda x: [x - x.sum(0)]),
    "broadcast_expensive": (BROADCAST_EXPENSIVE, [(32,), (64, 32)], lambda v, x: [x + _f(v)]),
    "weight_prologue": (WEIGHT_PROLOGUE, [(64, 64), (64, 64)], lambda x, w: [x @ _f(w)]),
    "shared_expansion": (
        SHARED_EXPANSION,
        [(8, 16), (8, 8), (8, 8)],
        lambda x, a, b: [_outer_difference(x) * a, _outer_difference(x) + b],
    ),
    "shared_reduction": (
        SHARED_REDUCTION,
        [(4, 8)],
        lambda x: [2 * np.exp(x.sum(1)), np.exp(x.sum(1)) ** 2],
    ),
}


# --- helpers -------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def lifted(text: str) -> ModuleOp:
    module = parse(text)
    LiftToLoop().apply(make_context(), module)
    module.verify()
    return module


def fused(text: str, options: Fuse | None = None) -> tuple[ModuleOp, list[str]]:
    module = lifted(text)
    refused = fuse_module(module, options)
    module.verify()
    return module, refused


def kernels(module: ModuleOp) -> list[KernelOp]:
    return [op for op in module.walk() if isinstance(op, KernelOp)]


def inputs_for(shapes, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def check(module: ModuleOp, args, expected) -> None:
    got = run_forward(module, args)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=1e-5)


def no_loop_level_ops(module: ModuleOp) -> bool:
    return not any(op.name.startswith("ten.") and op.name != "ten.constant" for op in module.walk())


# --- meaning is preserved ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_lift_preserves_meaning(name: str) -> None:
    text, shapes, ref = CASES[name]
    args = inputs_for(shapes)
    module = lifted(text)
    assert no_loop_level_ops(module)
    check(module, args, ref(*args))
    check(parse(text), args, ref(*args))  # the tensor-level interpreter agrees too


@pytest.mark.parametrize("name", list(CASES))
def test_fuse_preserves_meaning(name: str) -> None:
    text, shapes, ref = CASES[name]
    args = inputs_for(shapes, seed=1)
    module, _ = fused(text)
    check(module, args, ref(*args))


@pytest.mark.parametrize("name", list(CASES))
def test_fuse_is_idempotent(name: str) -> None:
    module, refused = fused(CASES[name][0])
    once = str(module)
    assert fuse_module(module) == refused
    assert str(module) == once


def test_unbounded_fusion_still_correct() -> None:
    """With the guard off everything substitutes; the result is slow but still right."""
    off = Fuse(
        max_recompute=1e9,
        max_read_growth=1e9,
        max_reduce_recompute=1e9,
        copy_shared=True,
        matmul_alone=False,
        nest_reductions=True,
    )
    for name in ("matmul_transposed", "column_sum", "weight_prologue", "shared_reduction"):
        text, shapes, ref = CASES[name]
        module, refused = fused(text, off)
        assert refused == [], name
        assert all(not isinstance(v.owner, KernelOp) for k in kernels(module) for v in k.inputs)
        args = inputs_for(shapes, seed=2)
        check(module, args, ref(*args))


# --- the shape of fused code ---------------------------------------------------------------


def _only_function_args_in(module: ModuleOp) -> None:
    """One kernel, reading function arguments only: no intermediate buffers."""
    (kernel,) = kernels(module)
    assert all(not isinstance(v.owner, KernelOp) for v in kernel.inputs)


def _loops(op) -> list[tuple[int, bool]]:
    """(extent, is_reduce) of the loops directly in ``op``'s body, in order."""
    return [(o.extent, o.is_reduce) for o in op.body.block.ops if isinstance(o, ForOp)]


def test_rmsnorm_is_one_kernel() -> None:
    module, refused = fused(RMSNORM)
    assert refused == []
    _only_function_args_in(module)
    (kernel,) = kernels(module)
    (row,) = [o for o in kernel.body.block.ops if isinstance(o, ForOp)]
    assert _loops(kernel) == [(2, False)]
    (inner,) = [o for o in row.body.block.ops if isinstance(o, ForOp)]
    assert _loops(inner) == [(64, True), (64, False)]  # sum of squares, then normalise
    between = [o.name for o in inner.body.block.ops if not isinstance(o, ForOp)]
    assert between == ["arith.mulf", "arith.addf", "math.rsqrt"]  # once per row
    text = str(module)
    assert text.count("math.rsqrt") == 1 and text.count("reduce(add)") == 1
    covers = kernel.attributes["covers"]
    assert {c.data for c in covers.data} == {"sq", "ss", "r", "rb", "n", "wb", "rms_norm"}


def test_softmax_is_one_kernel() -> None:
    module, refused = fused(SOFTMAX)
    assert refused == []
    _only_function_args_in(module)
    text = str(module)
    assert text.count("reduce(max)") == 1  # the twice-substituted max reduce is merged
    assert text.count("reduce(add)") == 1
    (kernel,) = kernels(module)
    rows = kernel.body.block.first_op
    assert isinstance(rows, ForOp)
    (inner,) = [o for o in rows.body.block.ops if isinstance(o, ForOp)]
    assert _loops(inner) == [(64, True), (64, True), (64, False)]


def test_matmul_prologue_and_epilogue() -> None:
    module, refused = fused(MATMUL)
    assert refused == []
    _only_function_args_in(module)
    (kernel,) = kernels(module)
    m = next(o for o in kernel.body.block.ops if isinstance(o, ForOp))
    (n,) = [o for o in m.body.block.ops if isinstance(o, ForOp)]
    (k,) = [o for o in n.body.block.ops if isinstance(o, ForOp)]
    assert (m.extent, n.extent, k.extent, k.is_reduce) == (16, 16, 64, True)
    body = [o.name for o in k.body.block.ops]
    assert body.count("loop.load") == 3 and "arith.addf" in body  # prologue in the reduce
    after = [o.name for o in n.body.block.ops]
    assert after == ["loop.for", "arith.maximumf", "loop.store"]  # epilogue after it


def test_kept_producer_still_returned() -> None:
    module, refused = fused(ELEMENTWISE)
    assert refused == []
    ks = kernels(module)
    assert len(ks) == 2  # tanh stays (returned), and is recomputed inside the consumer
    assert all(not isinstance(v.owner, KernelOp) for k in ks for v in k.inputs)


def test_transpose_folds_into_index() -> None:
    module, _ = fused(TRANSPOSE)
    (kernel,) = kernels(module)
    assert "loop.load %x_b[%a1, %a0]" in str(module)
    assert len(kernel.inputs) == 2


def test_reshape_and_slice_fold_into_index() -> None:
    module, _ = fused(RESHAPE)
    (kernel,) = kernels(module)
    text = str(module)
    assert "(%a0 + 12) floordiv 6, (%a0 + 12) mod 6]" in text
    assert "arith.constant 2.000000e+00" in text  # the splat became a scalar
    assert "ten.constant dense<[1.0" in text or "ten.constant dense<[1.000000e+00" in text


# --- the guard -----------------------------------------------------------------------------


def test_refused_matmul_through_transpose() -> None:
    """Refused before substituting: a matmul beside another reduction (``pair_refusal``);
    with that refusal off, by the fused kernel: the inner matmul's reductions would rerun
    per column."""
    module, refused = fused(MATMUL_TRANSPOSED, Fuse(matmul_alone=False))
    assert refused == ["@k_mm2: @k_mm1 not fused: its reductions would run 10x as often (limit 1x)"]
    module, refused = fused(MATMUL_TRANSPOSED)
    assert refused == [
        "@k_mm2: @k_mm1 not fused: a matmul and another reduction in one kernel: a matmul is "
        "tiled and split best alone (the gated MLP fused was 0.26-0.64x cuBLAS on the H200)"
    ]
    names = [k.sym_name.data for k in kernels(module)]
    assert names == ["k_mm1", "k_mm2"]
    mm2 = kernels(module)[1]
    assert "loop.load %mm1_b[%a2, %a0]" in str(module)  # the transpose is in the index
    assert "fusion.refused" in mm2.attributes


def test_refused_reduction_consumed_per_row() -> None:
    module, refused = fused(COLUMN_SUM)
    assert refused == ["@k_y: @k_cs not fused: its reductions would run 16x as often (limit 1x)"]
    assert len(kernels(module)) == 2


def test_refused_recompute() -> None:
    """An expensive map of a weight would rerun per output row inside a matmul, a
    compute-bound kernel."""
    module, refused = fused(WEIGHT_PROLOGUE)
    assert refused == [
        "@k_y: @k_f not fused: its arithmetic would be recomputed 5.57x "
        "(limit 2x) in a compute-bound kernel (32.0 ops/byte, limit 8)"
    ]
    assert [k.sym_name.data for k in kernels(module)] == ["k_f", "k_y"]


def test_recompute_is_free_while_memory_bound() -> None:
    """The same kind of map broadcast over the rows of an elementwise kernel reruns per row
    too, but the kernel stays memory-bound (0.7 ops per byte), so it fuses; with the
    intensity bound at 0 it is refused."""
    small_is_free = Fuse(launch_ops=0)
    module, refused = fused(BROADCAST_EXPENSIVE, small_is_free)
    assert refused == [] and len(kernels(module)) == 1
    module, refused = fused(BROADCAST_EXPENSIVE, Fuse(launch_ops=0, max_intensity=0))
    assert refused == [
        "@k_y: @k_f not fused: its arithmetic would be recomputed 5.57x "
        "(limit 2x) in a compute-bound kernel (0.7 ops/byte, limit 0)"
    ]
    # A kernel under launch_ops ops costs a launch whatever it recomputes.
    module, refused = fused(BROADCAST_EXPENSIVE, Fuse(max_intensity=0))
    assert refused == [] and len(kernels(module)) == 1


def test_refused_shared_reduction() -> None:
    module, refused = fused(SHARED_REDUCTION)
    why = "@k_n not fused: it has other users, and copying it would compute its reduction twice"
    assert refused == [f"@k_r1: {why}", f"@k_r2: {why}"]
    assert [k.sym_name.data for k in kernels(module)] == ["k_n", "k_r1", "k_r2"]


def test_shared_expansion_is_copied() -> None:
    """A cheap producer that expands a reduction's result is copied into each reader."""
    module, refused = fused(SHARED_EXPANSION)
    why = "@k_s not fused: it has other users, and copying it would compute its reduction twice"
    assert refused == [f"@k_y1: {why}", f"@k_y2: {why}"]
    names = [k.sym_name.data for k in kernels(module)]
    assert names == ["k_s", "k_y1", "k_y2"]
    assert str(module).count("arith.subf") == 2


def test_fusion_cost_reports_the_ratio() -> None:
    module = lifted(MATMUL)
    ks = {k.sym_name.data: k for k in kernels(module)}
    producer, consumer = ks["k_add"], ks["k_add_bc"]
    candidate = substitute(consumer, producer)
    decision = fusion_cost(producer, consumer, candidate)
    assert decision.ok and "recompute 1.00x" in decision.reason
    strict = fusion_cost(producer, consumer, candidate, Fuse(max_read_growth=0.1))
    assert not strict.ok and "limit 0.1x" in strict.reason
    candidate.erase()


def test_refusals_print_and_reparse() -> None:
    module, _ = fused(MATMUL_TRANSPOSED)
    again = parse(str(module))
    assert str(again) == str(module)


# --- the interpreter -----------------------------------------------------------------------


def test_interpreter_poisons_unwritten_outputs() -> None:
    module = parse("""
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = loop.kernel @k ins(%x_b = %x : tensor<4xf32>) outs(%y_b : tensor<4xf32>) {
        loop.for %a0 = 0 to 2 {
          %v = loop.load %x_b[%a0] : memref<4xf32>
          loop.store %v, %y_b[%a0] : memref<4xf32>
        }
      }
      func.return %y : tensor<4xf32>
    }
    """)
    (y,) = run_forward(module, [np.arange(4, dtype=np.float32)])
    assert y[:2].tolist() == [0, 1] and np.isnan(y[2:]).all()


def test_interpreter_refuses_read_after_write() -> None:
    module = parse("""
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = loop.kernel @k ins(%x_b = %x : tensor<4xf32>) outs(%y_b : tensor<4xf32>) {
        loop.for %a0 = 0 to 4 {
          %v = loop.load %x_b[%a0] : memref<4xf32>
          loop.store %v, %y_b[%a0] : memref<4xf32>
          %w = loop.load %y_b[%a0] : memref<4xf32>
        }
      }
      func.return %y : tensor<4xf32>
    }
    """)
    with pytest.raises(InterpretationError, match="loads and stores the same buffer"):
        run_forward(module, [np.zeros(4, np.float32)])


def test_interpreter_reduce_of_invariant_contribution() -> None:
    """A contribution that does not vary with the iv is added once per iteration."""
    module = parse("""
    func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
      %y = loop.kernel @k ins(%x_b = %x : tensor<3xf32>) outs(%y_b : tensor<3xf32>) {
        loop.for %a0 = 0 to 3 {
          %v = loop.load %x_b[%a0] : memref<3xf32>
          %s = loop.for %a1 = 0 to 5 reduce(add) -> f32 {
            loop.yield %v : f32
          }
          loop.store %s, %y_b[%a0] : memref<3xf32>
        }
      }
      func.return %y : tensor<3xf32>
    }
    """)
    (y,) = run_forward(module, [np.array([1, 2, 3], np.float32)])
    assert y.tolist() == [5, 10, 15]


def test_interpreter_is_fast_enough() -> None:
    import time

    text, shapes, ref = CASES["softmax"]
    module, _ = fused(text)
    args = inputs_for(shapes)
    start = time.perf_counter()
    run_forward(module, args)
    assert time.perf_counter() - start < 0.5


# --- random programs -----------------------------------------------------------------------


class RandomProgram:
    """A random ten-level program: maps, reduces and views (broadcast, transpose, flatten,
    slice) over a few small inputs, with some intermediates also returned."""

    UNARY = ("math.tanh", "arith.negf", "square")
    BINARY = ("arith.addf", "arith.subf", "arith.mulf", "arith.maximumf")

    def __init__(self, rng) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.values: list[tuple[str, tuple[int, ...]]] = []
        self.inputs = [(f"in{i}", self._shape()) for i in range(rng.randint(1, 2))]
        self.values += self.inputs
        for _ in range(rng.randint(2, 7)):
            self._step()

    def _shape(self) -> tuple[int, ...]:
        return tuple(self.rng.randint(1, 5) for _ in range(self.rng.randint(1, 3)))

    @staticmethod
    def _type(shape: tuple[int, ...]) -> str:
        return "tensor<" + "".join(f"{n}x" for n in shape) + "f32>"

    def _add(self, shape: tuple[int, ...], text: str) -> str:
        name = f"v{len(self.values)}"
        self.lines.append(f"  %{name} = {text}")
        self.values.append((name, shape))
        return name

    def _view(self, src: str, src_shape, shape, exprs: list[str]) -> str:
        dims = ", ".join(f"d{i}" for i in range(len(shape)))
        text = (
            f"ten.index_map %{src} ({dims}) -> ({', '.join(exprs)}) : "
            f"{self._type(src_shape)} -> {self._type(shape)}"
        )
        return self._add(shape, text)

    def _map(self, operands: list[str], shape, body: list[str]) -> str:
        t = self._type(shape)
        args = ", ".join(f"%s{i}: f32" for i in range(len(operands)))
        text = (
            f"ten.map({', '.join('%' + o for o in operands)}) : "
            f"{', '.join([t] * len(operands))} -> {t} {{\n  ^bb0({args}):\n"
            + "".join(f"    {line}\n" for line in body)
            + "  }"
        )
        return self._add(shape, text)

    def _fit(self, name: str, shape, target) -> str | None:
        """``name`` broadcast into ``target`` (its axes matched in order), or None."""
        if shape == target:
            return name
        exprs, t = [], 0
        for n in shape:
            while t < len(target) and target[t] != n and n != 1:
                t += 1
            if n == 1:
                exprs.append("0")
                continue
            if t == len(target):
                return None
            exprs.append(f"d{t}")
            t += 1
        return self._view(name, shape, target, exprs)

    def _step(self) -> None:
        rng = self.rng
        name, shape = rng.choice(self.values)
        kind = rng.choice(
            ["unary", "binary", "binary", "reduce", "transpose", "broadcast", "flatten", "slice"]
        )
        if kind == "binary":
            other, other_shape = rng.choice(self.values)
            fitted = self._fit(other, other_shape, shape)
            if fitted is not None:
                op = rng.choice(self.BINARY)
                self._map(
                    [name, fitted], shape, [f"%r = {op} %s0, %s1 : f32", "ten.yield %r : f32"]
                )
                return
            kind = "unary"
        if kind == "reduce" and shape:
            dims = sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
            kept = tuple(n for i, n in enumerate(shape) if i not in dims)
            k = rng.choice(["add", "max"])
            self._add(
                kept,
                f"ten.reduce {k} %{name} dims [{', '.join(map(str, dims))}] : "
                f"{self._type(shape)} -> {self._type(kept)}",
            )
        elif kind == "transpose" and len(shape) >= 2:
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            out = tuple(shape[p] for p in perm)
            exprs = [f"d{perm.index(i)}" for i in range(len(shape))]
            self._view(name, shape, out, exprs)
        elif kind == "broadcast" and len(shape) < 4:
            at = rng.randint(0, len(shape))
            out = shape[:at] + (rng.randint(1, 4),) + shape[at:]
            self._view(name, shape, out, [f"d{i if i < at else i + 1}" for i in range(len(shape))])
        elif kind == "flatten" and len(shape) >= 2:
            at = rng.randint(0, len(shape) - 2)
            b = shape[at + 1]
            out = shape[:at] + (shape[at] * b,) + shape[at + 2 :]
            exprs = [f"d{i}" for i in range(at)] + [f"d{at} floordiv {b}", f"d{at} mod {b}"]
            exprs += [f"d{i - 1}" for i in range(at + 2, len(shape))]
            self._view(name, shape, out, exprs)
        elif kind == "slice" and shape and max(shape) > 1:
            axis = max(range(len(shape)), key=lambda i: shape[i])
            size = rng.randint(1, shape[axis] - 1)
            off = rng.randint(0, shape[axis] - size)
            out = shape[:axis] + (size,) + shape[axis + 1 :]
            exprs = [f"d{i} + {off}" if i == axis else f"d{i}" for i in range(len(shape))]
            self._view(name, shape, out, exprs)
        else:
            op = rng.choice(self.UNARY)
            body = (
                ["%r = arith.mulf %s0, %s0 : f32"] if op == "square" else [f"%r = {op} %s0 : f32"]
            )
            self._map([name], shape, [*body, "ten.yield %r : f32"])

    def text(self) -> str:
        results = [self.values[-1]]
        extra = self.rng.choice(self.values[len(self.inputs) :])
        if extra is not results[0]:
            results.append(extra)
        args = ", ".join(f"%{n}: {self._type(s)}" for n, s in self.inputs)
        types = ", ".join(self._type(s) for _, s in results)
        ret = ", ".join(f"%{n}" for n, _ in results)
        return (
            f"func.func @forward({args}) -> ({types}) {{\n"
            + "\n".join(self.lines)
            + f"\n  func.return {ret} : {types}\n}}\n"
        )


@pytest.mark.parametrize(
    "view",
    [
        "(d0, d1) -> (d1) : tensor<1xf32> -> tensor<2x1xf32>",
        "(d0, d1) -> (d0) : tensor<1xf32> -> tensor<1x3xf32>",
    ],
)
def test_a_sum_over_a_broadcast_axis_counts_it(view: str) -> None:
    """The tensor interpreter's einsum shortcut for a summed product of two views (found by
    hypothesis, seed 1): an axis both views broadcast holds copies, so a sum over it counts
    each copy (2x x^2, not x^2) and a kept one stays (no einsum error); the lifted loops agree."""
    shape = view.rsplit("tensor<", 1)[1].rstrip(">")
    kept = shape.split("x")[1]  # the product is (summed, kept)
    text = f"""
func.func @forward(%in0: tensor<1xf32>) -> tensor<{kept}xf32> {{
  %v5 = ten.index_map %in0 {view}
  %v6 = ten.map(%v5, %v5) : tensor<{shape}>, tensor<{shape}> -> tensor<{shape}> {{
  ^bb0(%s0: f32, %s1: f32):
    %r = arith.mulf %s0, %s1 : f32
    ten.yield %r : f32
  }}
  %v7 = ten.reduce add %v6 dims [0] : tensor<{shape}> -> tensor<{kept}xf32>
  func.return %v7 : tensor<{kept}xf32>
}}"""
    x = np.array([0.5], np.float32)
    want = np.full(int(kept), int(shape.split("x")[0]) * 0.25, np.float32)
    (got,) = run_forward(parse(text), [x])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    (loops,) = run_forward(lifted(text), [x])
    np.testing.assert_allclose(loops, want, rtol=1e-6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_random_programs_keep_their_meaning(rng) -> None:
    program = RandomProgram(rng)
    text = program.text()
    args = [
        np.random.default_rng(0).standard_normal(s).astype(np.float32) for _, s in program.inputs
    ]
    expected = run_forward(parse(text), args)
    lift_only = lifted(text)
    for got, want in zip(run_forward(lift_only, args), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=text)
    module, _ = fused(text)
    for got, want in zip(run_forward(module, args), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=text)
    once = str(module)
    fuse_module(module)
    assert str(module) == once, text
    afresh, _ = fused(text, Fuse(memoise=False))
    assert str(afresh) == once, text
    unbounded, _ = fused(
        text,
        Fuse(
            max_recompute=1e9,
            max_read_growth=1e9,
            max_reduce_recompute=1e9,
            copy_shared=True,
            nest_reductions=True,
        ),
    )
    # With the guard off, no kernel reads another kernel's result any more.
    assert all(not isinstance(v.owner, KernelOp) for k in kernels(unbounded) for v in k.inputs)
    for got, want in zip(run_forward(unbounded, args), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=text)


# --- decoder layers of the real models -----------------------------------------------------


def _lowered_model(name: str, **kwargs) -> ModuleOp:
    """A model captured on the meta device, lowered to the tensor level and lifted."""
    pytest.importorskip("transformers")
    from deplodock.frontends.export import import_program
    from deplodock.frontends.models import capture_model
    from deplodock.pipeline import lower

    captured = capture_model(name, device="meta", **kwargs)
    module = import_program(captured.program).module
    lower(module, to="tensor")
    LiftToLoop().apply(make_context(), module)
    return module


@pytest.mark.parametrize("name", ["tinyllama", "qwen2.5-7b"])
def test_decoder_layer_has_no_elementwise_kernel(name: str) -> None:
    """Every elementwise op of a decoder layer (seq 128) lands in a kernel that does real
    work: the kernels that reduce are the norms, the projections (with their bias and
    residual epilogues; up with silu(gate) and the product: gate is a matmul of its own,
    as ``matmul_alone`` keeps two K loops apart), attention (``softmax-sum``: one walk
    over the keys with the scores and the mask inside, for TinyLlama's head dim of 64 and
    Qwen's 128 alike: 128 value columns are one walk where the lanes will share them,
    ``value_columns(rows=)``) and the cumsum of the sequence ids; the two that do not are
    RoPE of q and of k, each with its cos/sin computed inside."""
    module = _lowered_model(name, seq=128, part="layer")
    assert fuse_module(module) == refusals_of(module)
    ks = kernels(module)
    assert len(ks) == 13, [k.sym_name.data for k in ks]
    elementwise = [
        k for k in ks if not any(op.is_reduce for op in k.walk() if isinstance(op, ForOp))
    ]
    assert len(elementwise) == 2
    for k in elementwise:
        text = str(k)
        assert "math.cos" in text and "math.sin" in text  # RoPE, the tables inside
    assert sum(1 for k in ks if "math.exp" in str(k)) == 1  # silu(gate) * up
    assert sum(1 for k in ks if "online_max" in str(k)) == 1  # attention's walk
    masked = [k for k in ks if "arith.cmpi sle" in str(k) and "0xff800000" in str(k)]
    assert len(masked) == 1  # the causal mask is computed in the walk's kernel


def refusals_of(module: ModuleOp) -> list[str]:
    from deplodock.passes.loop.fuse import refusals

    return refusals(module)


def _with_locations(module) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module)
    return out.getvalue()


def test_memoised_fusion_equals_fusing_each_layer() -> None:
    """Fusing a two-layer TinyLlama with the memo (each pair of kernels whose structure
    was met before is answered by replaying the answer) gives the very program that
    fusing every pair afresh gives, names included; and the second layer is replayed."""
    from deplodock.passes.loop.fuse import FusionMemo

    once = _lowered_model("tinyllama", layers=2, seq=16)
    text = str(once)
    each = once.clone()  # the same program: names and locations are cloned too
    assert str(each) == text and _with_locations(each) == _with_locations(once)
    memo = FusionMemo()
    assert fuse_module(once, memo=memo) == fuse_module(each, Fuse(memoise=False))
    assert str(once) == str(each)
    # locations too: a replayed kernel's ops carry its own layer's torch ops
    assert _with_locations(once) == _with_locations(each)
    assert memo.replayed > memo.computed  # the second layer (and repeats within one)
    # Replaying a parsed program too, whose value names carry per-layer suffixes: it
    # prints as the program it was parsed from, so fused it must print as ``each`` does.
    parsed = parse(text)
    assert str(parsed) == text
    memo = FusionMemo()
    fuse_module(parsed, memo=memo)
    assert str(parsed) == str(each)
    assert memo.replayed > memo.computed
