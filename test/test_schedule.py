"""The tile schedule end to end: loop kernels → tileify → cooperative-reduce →
blockify-launch → materialize → CUDA C.

For the seed kernels (RMSNorm, softmax, relu(matmul)) and a few more shapes (an
elementwise map that splits its innermost axis, one that needs a guard, reductions to a
column and to a scalar, a forced cooperative matmul) and for hand-scheduled tile kernels
whose combines the passes do not produce (half-warp rows, multi-warp groups, a combine
inside a loop) we check that the module verifies after every pass, that each
pass is idempotent and its printed IR reads back, that the schedule and the launch shape
are the expected ones, and that the CUDA compiles with NVRTC for sm_90 without spills.
On a GPU (``gpu`` marker) each kernel also runs on random inputs against numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from deplodock.backends.cuda.emit import emit_cuda
from deplodock.dialects import kernel, make_context, tile
from deplodock.passes import get_pass
from deplodock.pipeline import PASSES_TO

SCHEDULE = (*PASSES_TO["tile"], *PASSES_TO["kernel"])  # as the pipeline runs them


# --- the loop kernels ---------------------------------------------------------------------


def rms_norm_ir(rows: int = 32, width: int = 2048) -> str:
    return f"""
func.func @forward(%x: tensor<1x{rows}x{width}xf32>, %p_weight: tensor<{width}xf32>)
    -> tensor<1x{rows}x{width}xf32> {{
  %y = loop.kernel @k_rms_norm
      ins(%xb = %x : tensor<1x{rows}x{width}xf32>, %wb = %p_weight : tensor<{width}xf32>)
      outs(%yb : tensor<1x{rows}x{width}xf32>) {{
    %n = arith.constant {1.0 / width:.10e} : f32
    %eps = arith.constant 1.0e-06 : f32
    loop.for %a0 = 0 to {rows} {{
      %ss = loop.for %a1 = 0 to {width} reduce(add) -> f32 {{
        %v = loop.load %xb[0, %a0, %a1] : memref<1x{rows}x{width}xf32>
        %q = arith.mulf %v, %v : f32
        loop.yield %q : f32
      }}
      %m = arith.mulf %ss, %n : f32
      %s = arith.addf %m, %eps : f32
      %r = math.rsqrt %s : f32
      loop.for %a2 = 0 to {width} {{
        %v2 = loop.load %xb[0, %a0, %a2] : memref<1x{rows}x{width}xf32>
        %w = loop.load %wb[%a2] : memref<{width}xf32>
        %h = arith.mulf %v2, %r : f32
        %o = arith.mulf %h, %w : f32
        loop.store %o, %yb[0, %a0, %a2] : memref<1x{rows}x{width}xf32>
      }}
    }}
  }}
  func.return %y : tensor<1x{rows}x{width}xf32>
}}
"""


def softmax_ir(heads: int = 28, rows: int = 2048, width: int = 2048) -> str:
    shape = f"1x{heads}x{rows}x{width}xf32"
    return f"""
func.func @forward(%x: tensor<{shape}>) -> tensor<{shape}> {{
  %y = loop.kernel @k_softmax ins(%xb = %x : tensor<{shape}>) outs(%yb : tensor<{shape}>) {{
    loop.for %a0 = 0 to 1 {{
      loop.for %a1 = 0 to {heads} {{
        loop.for %a2 = 0 to {rows} {{
          %mx = loop.for %a3 = 0 to {width} reduce(max) -> f32 {{
            %v = loop.load %xb[%a0, %a1, %a2, %a3] : memref<{shape}>
            loop.yield %v : f32
          }}
          %sum = loop.for %a4 = 0 to {width} reduce(add) -> f32 {{
            %v1 = loop.load %xb[%a0, %a1, %a2, %a4] : memref<{shape}>
            %d1 = arith.subf %v1, %mx : f32
            %e1 = math.exp %d1 : f32
            loop.yield %e1 : f32
          }}
          %one = arith.constant 1.0 : f32
          %inv = arith.divf %one, %sum : f32
          loop.for %a5 = 0 to {width} {{
            %v2 = loop.load %xb[%a0, %a1, %a2, %a5] : memref<{shape}>
            %d2 = arith.subf %v2, %mx : f32
            %e2 = math.exp %d2 : f32
            %o = arith.mulf %e2, %inv : f32
            loop.store %o, %yb[%a0, %a1, %a2, %a5] : memref<{shape}>
          }}
        }}
      }}
    }}
  }}
  func.return %y : tensor<{shape}>
}}
"""


def matmul_relu_ir(m: int = 16, k: int = 64, n: int = 16) -> str:
    return f"""
func.func @forward(%x: tensor<{m}x{k}xf32>, %bias: tensor<{k}xf32>, %w: tensor<{k}x{n}xf32>)
    -> tensor<{m}x{n}xf32> {{
  %y = loop.kernel @k_relu
      ins(%xb = %x : tensor<{m}x{k}xf32>, %bb = %bias : tensor<{k}xf32>,
          %wb = %w : tensor<{k}x{n}xf32>)
      outs(%yb : tensor<{m}x{n}xf32>) {{
    loop.for %a0 = 0 to {m} {{
      loop.for %a1 = 0 to {n} {{
        %acc = loop.for %a2 = 0 to {k} reduce(add) -> f32 {{
          %b = loop.load %bb[%a2] : memref<{k}xf32>
          %xv = loop.load %xb[%a0, %a2] : memref<{m}x{k}xf32>
          %wv = loop.load %wb[%a2, %a1] : memref<{k}x{n}xf32>
          %s = arith.addf %xv, %b : f32
          %p = arith.mulf %s, %wv : f32
          loop.yield %p : f32
        }}
        %zero = arith.constant 0.0 : f32
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %yb[%a0, %a1] : memref<{m}x{n}xf32>
      }}
    }}
  }}
  func.return %y : tensor<{m}x{n}xf32>
}}
"""


def silu_ir(rows: int = 128, width: int = 5632) -> str:
    shape = f"1x{rows}x{width}xf32"
    return f"""
func.func @forward(%x: tensor<{shape}>) -> tensor<{shape}> {{
  %y = loop.kernel @k_silu ins(%xb = %x : tensor<{shape}>) outs(%yb : tensor<{shape}>) {{
    loop.for %a0 = 0 to 1 {{
      loop.for %a1 = 0 to {rows} {{
        loop.for %a2 = 0 to {width} {{
          %v = loop.load %xb[%a0, %a1, %a2] : memref<{shape}>
          %n = arith.negf %v : f32
          %e = math.exp %n : f32
          %one = arith.constant 1.0 : f32
          %d = arith.addf %e, %one : f32
          %o = arith.divf %v, %d : f32
          loop.store %o, %yb[%a0, %a1, %a2] : memref<{shape}>
        }}
      }}
    }}
  }}
  func.return %y : tensor<{shape}>
}}
"""


def tanh_ir(rows: int = 7, width: int = 1000) -> str:
    return f"""
func.func @forward(%x: tensor<{rows}x{width}xf32>) -> tensor<{rows}x{width}xf32> {{
  %y = loop.kernel @k_tanh ins(%xb = %x : tensor<{rows}x{width}xf32>)
      outs(%yb : tensor<{rows}x{width}xf32>) {{
    loop.for %a0 = 0 to {rows} {{
      loop.for %a1 = 0 to {width} {{
        %v = loop.load %xb[%a0, %a1] : memref<{rows}x{width}xf32>
        %o = math.tanh %v : f32
        loop.store %o, %yb[%a0, %a1] : memref<{rows}x{width}xf32>
      }}
    }}
  }}
  func.return %y : tensor<{rows}x{width}xf32>
}}
"""


def moments_ir(rows: int = 4, width: int = 64) -> str:
    return f"""
func.func @forward(%x: tensor<{rows}x{width}xf32>) -> (tensor<{rows}xf32>, tensor<{rows}xf32>) {{
  %m, %q = loop.kernel @k_moments ins(%xb = %x : tensor<{rows}x{width}xf32>)
      outs(%mb : tensor<{rows}xf32>, %qb : tensor<{rows}xf32>) {{
    loop.for %a0 = 0 to {rows} {{
      %s, %mx = loop.for %a1 = 0 to {width} reduce(add, max) -> (f32, f32) {{
        %v = loop.load %xb[%a0, %a1] : memref<{rows}x{width}xf32>
        loop.yield %v, %v : f32, f32
      }}
      %n = arith.constant {1.0 / width:.10e} : f32
      %mean = arith.mulf %s, %n : f32
      loop.store %mean, %mb[%a0] : memref<{rows}xf32>
      loop.store %mx, %qb[%a0] : memref<{rows}xf32>
    }}
  }}
  func.return %m, %q : tensor<{rows}xf32>, tensor<{rows}xf32>
}}
"""


def sum_ir(size: int = 100000) -> str:
    return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<f32> {{
  %y = loop.kernel @k_sum ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<f32>) {{
    %s = loop.for %a0 = 0 to {size} reduce(add) -> f32 {{
      %v = loop.load %xb[%a0] : memref<{size}xf32>
      loop.yield %v : f32
    }}
    loop.store %s, %yb[] : memref<f32>
  }}
  func.return %y : tensor<f32>
}}
"""


# Hand-scheduled tile kernels: the combine shapes the passes above do not produce.


def half_warp_ir() -> str:
    """16 threads to a row, 4 rows to a block: shuffles only, within half-warps."""
    return """
func.func @forward(%x: tensor<32x64xf32>) -> tensor<32xf32> {
  %y = tile.kernel @k_half_warp axes(%b : 8 = block, %r : 4 = thread, %t : 16 = thread)
      ins(%xb = %x : tensor<32x64xf32>) outs(%yb : tensor<32xf32>) {
    %p = tile.strided_for %k = %t to 64 step 16 reduce(max) -> f32 {
      %v = loop.load %xb[%b * 4 + %r, %k] : memref<32x64xf32>
      loop.yield %v : f32
    }
    %m = tile.combine max %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %m, %yb[%b * 4 + %r] : memref<32xf32>
    }
  }
  func.return %y : tensor<32xf32>
}
"""


def groups_ir() -> str:
    """96 threads (3 warps) to a row, 2 rows to a block: a tree within each group."""
    return """
func.func @forward(%x: tensor<6x384xf32>) -> tensor<6xf32> {
  %y = tile.kernel @k_groups axes(%b : 3 = block, %r : 2 = thread, %t : 96 = thread)
      ins(%xb = %x : tensor<6x384xf32>) outs(%yb : tensor<6xf32>) {
    %p = tile.strided_for %k = %t to 384 step 96 reduce(add) -> f32 {
      %v = loop.load %xb[%b * 2 + %r, %k] : memref<6x384xf32>
      loop.yield %v : f32
    }
    %s = tile.combine add %p across %t : f32
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      loop.store %s, %yb[%b * 2 + %r] : memref<6xf32>
    }
  }
  func.return %y : tensor<6xf32>
}
"""


def combine_in_loop_ir() -> str:
    """A combine per iteration of a block-uniform loop: the shared slots are reused."""
    return """
func.func @forward(%x: tensor<4x256xf32>) -> tensor<4xf32> {
  %y = tile.kernel @k_in_loop axes(%t : 64 = thread)
      ins(%xb = %x : tensor<4x256xf32>) outs(%yb : tensor<4xf32>) {
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    loop.for %i = 0 to 4 {
      %p = tile.strided_for %k = %t to 256 step 64 reduce(add) -> f32 {
        %v = loop.load %xb[%i, %k] : memref<4x256xf32>
        loop.yield %v : f32
      }
      %s = tile.combine add %p across %t : f32
      scf.if %first {
        loop.store %s, %yb[%i] : memref<4xf32>
      }
    }
  }
  func.return %y : tensor<4xf32>
}
"""


# --- expectations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    ir: str
    axes: list[tuple[int, str]]  # the tile kernel's axes as materialize sees them
    grid: int
    block: int
    combines: int = 0
    shared_floats: int = 0
    reference: object = None  # inputs -> outputs (numpy), for the GPU run
    inputs: list[tuple[int, ...]] = field(default_factory=list)
    # The shapes here are small stand-ins for model-sized ones, so their inputs are staged
    # as a model's (too big for L2) would be: min_source_bytes=0.
    passes: tuple[tuple[str, dict], ...] = tuple(
        (name, {"min_source_bytes": 0} if name == "stage-inputs" else {}) for name in SCHEDULE
    )


def _rms_ref(x, w):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6) * w,)


def _softmax_ref(x):
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True),)


CASES = {
    "rms_norm": Case(
        rms_norm_ir(),
        axes=[(256, "thread"), (32, "block")],
        grid=32,
        block=256,
        combines=1,
        shared_floats=8 + 2048,  # the combine's slots, the staged row
        reference=_rms_ref,
        inputs=[(1, 32, 2048), (2048,)],
    ),
    "softmax": Case(
        softmax_ir(),
        # 128 threads a row (two chained combines), two rows to a block; a block's rows
        # are not one slab, so nothing is staged
        axes=[(2, "thread"), (128, "thread"), (1, "block"), (28, "block"), (1024, "block")],
        grid=28672,
        block=256,
        combines=2,
        shared_floats=16,  # two combines' slots
    ),
    "softmax_small": Case(
        softmax_ir(3, 5, 1000),
        axes=[(32, "thread"), (1, "block"), (3, "block"), (5, "block")],  # 5 rows: no pairs
        grid=15,
        block=32,
        combines=2,
        shared_floats=1000,  # the staged row; one warp combines with shuffles alone
        reference=_softmax_ref,
        inputs=[(1, 3, 5, 1000)],
    ),
    "matmul_relu": Case(
        matmul_relu_ir(),
        axes=[(16, "thread"), (16, "thread")],
        grid=1,
        block=256,
        reference=lambda x, b, w: (np.maximum((x.astype(np.float64) + b) @ w, 0),),
        inputs=[(16, 64), (64,), (64, 16)],
    ),
    "silu": Case(
        silu_ir(),
        # vectorize groups the 5632 columns in fours: 1408 groups, 6 blocks of 256 threads
        axes=[(1, "block"), (128, "block"), (6, "block"), (256, "thread")],
        grid=768,
        block=256,
        reference=lambda x: (x / (1 + np.exp(-x.astype(np.float64))),),
        inputs=[(1, 128, 5632)],
    ),
    "tanh_guarded": Case(
        tanh_ir(),
        axes=[(7, "block"), (4, "block"), (256, "thread")],
        grid=28,
        block=256,
        reference=lambda x: (np.tanh(x.astype(np.float64)),),
        inputs=[(7, 1000)],
        # scalar, so 1000 columns need a guard (grouped in fours they would fit 250 threads)
        passes=tuple(
            (
                n,
                {"widths": (1,)}
                if n == "vectorize"
                else {"min_source_bytes": 0}
                if n == "stage-inputs"
                else {},
            )
            for n in SCHEDULE
        ),
    ),
    "moments": Case(
        moments_ir(),
        # one warp per row (shuffles, no shared memory), the four rows in one block
        axes=[(4, "thread"), (32, "thread")],
        grid=1,
        block=128,
        combines=2,
        reference=lambda x: (x.astype(np.float64).mean(-1), x.max(-1)),
        inputs=[(4, 64)],
    ),
    "sum": Case(
        sum_ir(),
        axes=[(256, "thread")],
        grid=1,
        block=256,
        combines=1,
        shared_floats=8,
        reference=lambda x: (np.array(x.astype(np.float64).sum()),),
        inputs=[(100000,)],
        # one block, as the reduce-only schedule under test (chunk-reduce would split it)
        passes=tuple(
            (
                n,
                {"chunks": 1}
                if n == "chunk-reduce"
                else {"min_source_bytes": 0}
                if n == "stage-inputs"
                else {},
            )
            for n in SCHEDULE
        ),
    ),
    "matmul_forced": Case(
        matmul_relu_ir(),
        axes=[(16, "thread"), (16, "thread"), (16, "block")],  # 16 rows to a block
        grid=16,
        block=256,
        combines=1,
        reference=lambda x, b, w: (np.maximum((x.astype(np.float64) + b) @ w, 0),),
        inputs=[(16, 64), (64,), (64, 16)],
        passes=(
            ("tileify", {}),
            ("cooperative-reduce", {"threads": 16, "force": True}),
            ("blockify-launch", {}),
            ("materialize", {}),
        ),
    ),
    "half_warp": Case(
        half_warp_ir(),
        axes=[(8, "block"), (4, "thread"), (16, "thread")],
        grid=8,
        block=64,
        combines=1,
        reference=lambda x: (x.max(-1),),
        inputs=[(32, 64)],
        passes=(("materialize", {}),),
    ),
    "groups": Case(
        groups_ir(),
        axes=[(3, "block"), (2, "thread"), (96, "thread")],
        grid=3,
        block=192,
        combines=1,
        shared_floats=6,
        reference=lambda x: (x.astype(np.float64).sum(-1),),
        inputs=[(6, 384)],
        passes=(("materialize", {}),),
    ),
    "combine_in_loop": Case(
        combine_in_loop_ir(),
        axes=[(64, "thread")],
        grid=1,
        block=64,
        combines=1,
        shared_floats=2,
        reference=lambda x: (x.astype(np.float64).sum(-1),),
        inputs=[(4, 256)],
        passes=(("materialize", {}),),
    ),
}


# --- helpers ----------------------------------------------------------------------------------


def _print(module: ModuleOp) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _parse(ctx: Context, text: str) -> ModuleOp:
    return Parser(ctx, text).parse_module()


@dataclass
class Lowered:
    stages: dict[str, str]  # "input" and each pass name -> the printed module after it
    module: ModuleOp
    cuda: str

    @property
    def scheduled(self) -> str:
        """The last tile-level form: what materialize reads."""
        names = list(self.stages)
        return self.stages[names[names.index("materialize") - 1]]


_LOWERED: dict[str, Lowered] = {}


def lower(name: str) -> Lowered:
    """Run the case's passes, verifying after every one (cached per case)."""
    if name not in _LOWERED:
        ctx = make_context()
        module = _parse(ctx, CASES[name].ir)
        module.verify()
        stages = {"input": _print(module)}
        for pass_name, options in CASES[name].passes:
            get_pass(pass_name)(**options).apply(ctx, module)
            module.verify()
            stages[pass_name] = _print(module)
        _LOWERED[name] = Lowered(stages, module, emit_cuda(module))
    return _LOWERED[name]


def _one(module: ModuleOp, kind: type):
    ops = [op for op in module.walk() if isinstance(op, kind)]
    assert len(ops) == 1, ops
    return ops[0]


# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_and_launch_shape(name: str) -> None:
    case, lowered = CASES[name], lower(name)
    ctx = make_context()
    tiled = _one(_parse(ctx, lowered.scheduled), tile.KernelOp)
    assert [(extent, binding) for _, extent, binding in tiled.axes] == case.axes
    combines = [op for op in tiled.walk() if isinstance(op, tile.CombineOp)]
    assert len(combines) == case.combines
    kern = _one(lowered.module, kernel.KernelOp)
    assert kern.grid_shape == (case.grid, 1, 1)
    assert kern.block_shape == (case.block, 1, 1)
    arrays = [op.size_bytes() for op in kern.walk() if isinstance(op, kernel.SharedOp)]
    assert sum(arrays) == 4 * case.shared_floats
    assert kern.shared_bytes() >= sum(arrays)  # with 16-byte alignment; NVRTC's figure below


@pytest.mark.parametrize(
    ("name", "pass_name", "options"),
    [(name, p, o) for name, case in CASES.items() for p, o in case.passes],
)
def test_pass_is_idempotent_and_reads_back(name: str, pass_name: str, options: dict) -> None:
    text = lower(name).stages[pass_name]
    ctx = make_context()
    module = _parse(ctx, text)
    module.verify()
    assert _print(module) == text
    get_pass(pass_name)(**options).apply(ctx, module)
    module.verify()
    assert _print(module) == text


def test_rms_norm_matches_the_article() -> None:
    """The seed's Tile IR shape: strided reduce, combine, strided normalise."""
    tiled = lower("rms_norm").stages["blockify-launch"]
    assert "axes(%t : 256 = thread, %a0 : 32 = block)" in tiled
    assert "tile.strided_for %a1 = %t to 2048 step 256 vector 4 reduce(add) -> f32" in tiled
    assert "%ss = tile.combine add %ss_part across %t : f32" in tiled
    assert "tile.strided_for %a2 = %t to 2048 step 256 vector 4 {" in tiled
    cuda = lower("rms_norm").cuda
    assert 'extern "C" __global__ void __launch_bounds__(256) k_rms_norm(' in cuda
    assert "__shfl_xor_sync(0xffffffff, ss_part, 16)" in cuda
    assert "__shared__ __align__(16) float ss_smem[8];" in cuda
    assert "__shared__ __align__(16) float xb_smem[2048];" in cuda  # read twice, staged once
    # Both reads of the staged row are float4 reads, and so are the fill and the output.
    assert cuda.count("*reinterpret_cast<const float4*>(&xb_smem[") == 2
    assert "*reinterpret_cast<const float4*>(&xb[" in cuda
    assert "*reinterpret_cast<float4*>(&yb[" in cuda
    assert cuda.count("__syncthreads();") == 2  # the staging fill's, the combine's


def test_matmul_keeps_its_k_loop_per_thread() -> None:
    tiled = lower("matmul_relu").stages["cooperative-reduce"]
    assert "tile.strided_for" not in tiled and "tile.combine" not in tiled
    assert "loop.for %a2 = 0 to 64 reduce(add) -> f32" in tiled
    assert "maximumf(acc, 0.0f)" in lower("matmul_relu").cuda


def test_guard_only_without_cooperation() -> None:
    guarded = lower("tanh_guarded").stages["blockify-launch"]
    assert "scf.if %in_range" in guarded
    for name, case in CASES.items():
        if case.combines:
            assert "scf.if %in_range" not in lower(name).scheduled


def _compile_cuda():
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    return compile_cuda


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_compiles_for_sm90_without_spills(name: str) -> None:
    compile_cuda = _compile_cuda()
    compiled = compile_cuda(lower(name).cuda, arch="sm_90")
    kern = _one(lower(name).module, kernel.KernelOp)
    resources = compiled.resources[kern.sym_name.data]
    assert resources.spill_stores == 0 and resources.spill_loads == 0, resources
    assert resources.shared_bytes == kern.shared_bytes()


# --- on the GPU ----------------------------------------------------------------------------------


def _gpu_available() -> bool:
    try:
        from deplodock.backends.cuda.driver import gpu_available
    except Exception:
        return False
    return gpu_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.reference is not None])
def test_kernel_matches_numpy_on_gpu(name: str) -> None:
    import torch

    from deplodock.backends.cuda.driver import LoadedModule
    from deplodock.backends.cuda.nvrtc import compile_cuda

    case, lowered = CASES[name], lower(name)
    kern = _one(lowered.module, kernel.KernelOp)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(shape).astype(np.float32) for shape in case.inputs]
    expected = case.reference(*inputs)  # type: ignore[operator]
    device = [torch.from_numpy(a).cuda() for a in inputs]
    outputs = [
        torch.full(tuple(r.type.get_shape()), float("nan"), device="cuda") for r in kern.results
    ]
    function = LoadedModule(compile_cuda(lowered.cuda)).function(kern.sym_name.data)
    function.launch(kern.grid_shape, kern.block_shape, [*device, *outputs])
    torch.cuda.synchronize()
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=2e-5, atol=2e-5)
    assert math.isfinite(float(outputs[0].float().sum()))


def test_stage_inputs_says_why_a_reread_input_stays_in_global_memory() -> None:
    """``unstaged``: the notes ``-v`` prints for stage-inputs. RMSNorm's row is read twice;
    a 256 KB input stays in L2 (not staged, and said so), one past the budget is declined
    (said so), a staged one and the weight, read once, get no note."""
    from pathlib import Path

    from deplodock.passes.tile.stage_inputs import StageInputs, unstaged

    text = (Path(__file__).parent / "filecheck/passes/stage-inputs/rms_norm.mlir").read_text()

    def notes(**options) -> list[str]:
        module = Parser(make_context(), text).parse_module()
        pass_ = StageInputs(**options)
        pass_.apply(make_context(), module)
        return unstaged(module, pass_)

    (l2,) = notes()
    assert l2.startswith("k_rms_norm: x is read at 2 places a block, not staged: its 256 KB")
    assert "stay in L2 between the reads (an input under 25 MB is not staged" in l2
    (budget,) = notes(min_source_bytes=0, max_bytes=4096, large=False)
    assert budget.endswith("8 KB, would take the kernel's slabs past 4 KB")
    # the large-slab rule takes the kernel's one slab past the budget (up to the target's)
    assert notes(min_source_bytes=0, max_bytes=4096) == []
    assert notes(min_source_bytes=0) == []
