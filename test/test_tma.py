"""TMA copies and mbarriers (issue 6, sm_90): the kernel interpreter's semantics on small
hand-written kernels (a correct pipelined copy passes; an early read, a wrong parity, a
missing or wrong expect_tx, a missing barrier before a refill and an init not yet visible
are each caught, naming the op and the rule)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from deplodock.backends.cuda import program_cache, tensor_maps
from deplodock.backends.cuda.emit import emit_cuda
from deplodock.backends.cuda.runtime import CompiledProgram
from deplodock.backends.cuda.tensor_maps import TensorMapSpec, encode_arguments
from deplodock.dialects import make_context
from deplodock.dialects.interpreters.kernel import (
    MBarrierDeadlock,
    MBarrierError,
    SharedMemoryRace,
)
from deplodock.dialects.interpreters.run import run_forward
from deplodock.target import TARGETS

# Column sums of x[128, 64]: chunk k (16 rows) lands in buffer k % 2 by one TMA copy,
# issued one chunk ahead by thread 0; every thread waits on the chunk's barrier with the
# phase's parity, reads its column, and a barrier frees the buffer before its refill.
PIPELINE = """
func.func @forward(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = kernel.kernel @k_tma grid(2, 1, 1) block(64, 1, 1) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    %t = kernel.thread_id x
    %smem = kernel.shared "x_smem" align 128 : memref<2x16x64xf32>
    %bar = kernel.mbarrier "x_bar" : memref<2xi64>
    %c0 = arith.constant 0 : index
    %lead = arith.cmpi eq, %t, %c0 : index
    scf.if %lead {
      kernel.mbarrier_init %bar[0], 1 : memref<2xi64>
      kernel.mbarrier_init %bar[1], 1 : memref<2xi64>
    }
    kernel.barrier
    scf.if %lead {
      kernel.mbarrier_arrive_expect_tx %bar[0], 4096 : memref<2xi64>
      kernel.tma_load %xb[0, 0] -> %smem[0, 0, 0] box [16, 64] barrier %bar[0] : memref<128x64xf32> -> memref<2x16x64xf32>, memref<2xi64>
    }
    %acc = kernel.for %ko = %c0 to 8 step 1 reduce(add) -> f32 {
      %buf = affine.apply affine_map<(d0) -> (d0 mod 2)> (%ko)
      %next = affine.apply affine_map<(d0) -> ((d0 + 1) mod 2)> (%ko)
      %knext = affine.apply affine_map<(d0) -> ((d0 + 1) mod 8)> (%ko)
      %parity = affine.apply affine_map<(d0) -> ((d0 floordiv 2) mod 2)> (%ko)
      %following = affine.apply affine_map<(d0) -> (d0 + 1)> (%ko)
      %c8 = arith.constant 8 : index
      %more = arith.cmpi ult, %following, %c8 : index
      scf.if %more {
        scf.if %lead {
          kernel.mbarrier_arrive_expect_tx %bar[%next], 4096 : memref<2xi64>
          kernel.tma_load %xb[%knext * 16, 0] -> %smem[%next, 0, 0] box [16, 64] barrier %bar[%next] : memref<128x64xf32> -> memref<2x16x64xf32>, memref<2xi64>
        }
      }
      kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>
      %s = kernel.for %r = %c0 to 16 step 1 reduce(add) -> f32 {
        %v = kernel.load %smem[%buf, %r, %t] : memref<2x16x64xf32>
        kernel.yield %v : f32
      }
      kernel.barrier
      kernel.yield %s : f32
    }
    kernel.store %acc, %yb[%t] : memref<64xf32>
  }
  func.return %y : tensor<64xf32>
}
"""  # noqa: E501

WAIT = "      kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>\n"
REFILL_BARRIER = "      kernel.barrier\n      kernel.yield %s"


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)


def _run(text: str) -> np.ndarray:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    (out,) = run_forward(module, [_x()])
    return out


def _planted(old: str, new: str) -> str:
    assert old in PIPELINE, old
    return PIPELINE.replace(old, new, 1)


def test_a_pipelined_tma_copy_is_correct() -> None:
    np.testing.assert_allclose(_run(PIPELINE), _x().sum(0), rtol=1e-5, atol=1e-5)


def test_only_one_thread_waits_and_a_barrier_passes_the_phase_on() -> None:
    """The waiting thread observes the phase; a kernel.barrier after its wait orders every
    other thread's reads after it (bar.sync is cumulative)."""
    text = _planted(
        WAIT,
        "      scf.if %lead {\n  " + WAIT + "      }\n      kernel.barrier\n",
    )
    np.testing.assert_allclose(_run(text), _x().sum(0), rtol=1e-5, atol=1e-5)


def test_a_read_before_the_wait_is_caught() -> None:
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        _run(_planted(WAIT, ""))


def test_a_thread_that_did_not_wait_is_caught() -> None:
    """Thread 0 alone waits, with no barrier after: the others read a box they have not
    seen land."""
    text = _planted(WAIT, "      scf.if %lead {\n  " + WAIT + "      }\n")
    with pytest.raises(SharedMemoryRace, match="has not waited for"):
        _run(text)


def test_a_wrong_parity_is_caught() -> None:
    """Waiting for the other parity returns at once (the phase before has completed): the
    chunk is still in flight when it is read."""
    text = _planted("(d0 floordiv 2) mod 2", "((d0 floordiv 2) + 1) mod 2")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        _run(text)


def test_a_missing_expect_tx_is_a_deadlock() -> None:
    """Without the arrival the phase never completes: the wait is reported, not hung."""
    text = _planted(
        "          kernel.mbarrier_arrive_expect_tx %bar[%next], 4096 : memref<2xi64>\n", ""
    )
    with pytest.raises(MBarrierDeadlock, match="1 arrival"):
        _run(text)


def test_too_few_expected_bytes_is_caught() -> None:
    """The phase could complete while half the box is still in flight."""
    text = _planted("%bar[%next], 4096", "%bar[%next], 2048")
    with pytest.raises(SharedMemoryRace, match="still in flight"):
        _run(text)


def test_too_many_expected_bytes_is_a_deadlock() -> None:
    text = _planted("%bar[%next], 4096", "%bar[%next], 8192")
    with pytest.raises(MBarrierDeadlock, match="expects 8192 bytes"):
        _run(text)


def test_a_missing_barrier_before_the_refill_is_caught() -> None:
    """The copy of chunk k + 2 is issued into the buffer other warps still read."""
    text = _planted(REFILL_BARRIER, "      kernel.yield %s")
    with pytest.raises(SharedMemoryRace, match="read it at"):
        _run(text)


def test_an_init_not_yet_visible_is_caught() -> None:
    text = _planted(
        "    kernel.barrier\n    scf.if %lead {\n      kernel.mbarrier_arrive",
        ("    scf.if %lead {\n      kernel.mbarrier_arrive"),
    )
    with pytest.raises(SharedMemoryRace, match="with no kernel.barrier between"):
        _run(text)


def test_an_uninitialised_barrier_is_caught() -> None:
    text = _planted("      kernel.mbarrier_init %bar[1], 1 : memref<2xi64>\n", "")
    # The verifier sees an init of the array; the interpreter, barrier 1 never initialised.
    with pytest.raises(MBarrierError, match="no kernel.mbarrier_init initialised"):
        _run(text)


# --- CUDA ------------------------------------------------------------------------------------


def _compile(source: str, arch: str = "sm_90"):
    try:
        from deplodock.backends.cuda.nvrtc import compile_cuda
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"the CUDA backend's NVRTC is not importable here: {error}")
    return compile_cuda(source, arch=arch)


def _no_spills(compiled, stack_bytes: int = 0) -> None:
    for name, resources in compiled.resources.items():
        assert resources.spill_stores == 0 and resources.spill_loads == 0, (name, resources)
        assert resources.local_bytes <= stack_bytes, (name, resources)


@pytest.mark.parametrize("arch", [a for a, t in TARGETS.items() if t.tma])
def test_the_pipeline_compiles_for_every_tma_target_without_spills(arch: str) -> None:
    """sm_90's TMA copies and mbarriers are in every later arch (sm_100, sm_120 too).
    sm_120's ptxas (NVRTC 13.5) keeps an 8-byte stack frame for the copy's
    ``.shared::cluster`` destination (no spill; a ``.shared::cta`` one, PTX 8.6, has none:
    the emitter keeps the form that ran on the H200)."""
    source = emit_cuda(Parser(make_context(), PIPELINE).parse_module())
    assert "const __grid_constant__ TmaDescriptor xb_tmap" in source
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile" in source
    assert "__shared__ __align__(128) float x_smem[2048];" in source
    _no_spills(_compile(source, arch), stack_bytes=8 if arch == "sm_120" else 0)


# --- the runtime: tensor maps in the plan, the program cache and the launch ------------------


def test_encode_arguments_are_innermost_first() -> None:
    spec = TensorMapSpec(0, (1, 16, 32), 128)
    args = encode_arguments(spec, 0x1000, (4, 128, 64), "float32", 4)
    assert args["tensorRank"] == 3
    assert args["globalDim"] == [64, 128, 4]
    assert args["globalStrides"] == [64 * 4, 128 * 64 * 4]  # of the outer dims, in bytes
    assert args["boxDim"] == [32, 16, 1]
    assert args["elementStrides"] == [1, 1, 1]
    assert args["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert args["tensorDataType"] == "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
    with pytest.raises(ValueError, match="16-byte aligned"):
        encode_arguments(spec, 0x1004, (4, 128, 64), "float32", 4)


def test_a_tensor_map_parameter_is_128_bytes_at_a_64_byte_address() -> None:
    param = tensor_maps._aligned_param()
    assert ctypes.sizeof(param) == 128 and ctypes.addressof(param) % 64 == 0


def _pipeline_program() -> CompiledProgram:
    module = Parser(make_context(), PIPELINE).parse_module()
    try:
        return CompiledProgram(module, cache=False)
    except Exception as error:  # the NVRTC wheel is missing on this machine
        pytest.skip(f"cannot compile here: {error}")


def test_the_plan_names_each_steps_tensor_maps() -> None:
    (step,) = _pipeline_program().plan.steps
    assert step.tensor_maps == (TensorMapSpec(0, (16, 64), 0),)


def test_the_program_cache_keeps_the_tensor_maps() -> None:
    program = _pipeline_program()
    entry = program_cache.ProgramEntry(program.plan, program.compiled, (), ("k_tma",))
    key = "cd" * 32
    restored = program_cache._decode(key, program_cache._encode(key, entry))
    assert restored is not None and restored.plan == program.plan
    assert restored.plan.steps[0].tensor_maps == program.plan.steps[0].tensor_maps


def test_a_launch_passes_encoded_maps_once_per_address(monkeypatch) -> None:
    """The runtime encodes each map from the input's address, shape and dtype, and
    encodes it again only for another address (a graph replays the captured bytes)."""
    calls = []

    def fake(spec, address, shape, dtype, itemsize):
        calls.append((spec, address, tuple(shape), dtype, itemsize))
        return tensor_maps._aligned_param()

    monkeypatch.setattr(tensor_maps, "encode", fake)
    program = _pipeline_program()
    (step,) = program.plan.steps
    x = torch.zeros(128, 64)
    arena = ctypes.c_void_p(0x10000)
    (first,) = program._tensor_map_args(step, [x, arena])
    (again,) = program._tensor_map_args(step, [x, arena])
    assert first is again and isinstance(first, tensor_maps.TensorMapParam)
    assert calls == [(step.tensor_maps[0], x.data_ptr(), (128, 64), "float32", 4)]
    y = torch.zeros(128, 64)
    program._tensor_map_args(step, [y, arena])
    assert len(calls) == 2 and calls[1][1] == y.data_ptr()


# --- the tile level ----------------------------------------------------------------------------

TILE_STAGE = """
func.func @forward(%x: tensor<128x64xf32>) -> tensor<64xf32> {
  %y = tile.kernel @k axes(%t : 64 = thread) ins(%xb = %x : tensor<128x64xf32>) outs(%yb : tensor<64xf32>) {
    loop.for %k = 0 to 8 {
      %w = tile.stage %xb[%k * 16, 0] STAGE
    }
  }
  func.return %y : tensor<64xf32>
}
"""  # noqa: E501


@pytest.mark.parametrize(
    ("stage", "rule"),
    [
        ("box [16, 64] pad 4 buffers 2 tma : memref<128x64xf32> -> memref<16x68xf32>", "no pad"),
        ("buffers 2 tma : memref<128x64xf32> -> memref<3x4xf32>", "not a multiple of 128"),
        ("tma : memref<128x64xf32> -> memref<16x64xf32>", "needs buffers 2"),
    ],
)
def test_the_verifier_refuses_a_padded_or_misaligned_tma_slab(stage: str, rule: str) -> None:
    module = Parser(make_context(), TILE_STAGE.replace("STAGE", stage)).parse_module()
    with pytest.raises(VerifyException, match=rule):
        module.verify()


def test_swizzle_128_moves_each_chunk_by_its_row() -> None:
    """SWIZZLE_128B: 16-byte chunk j of 128-byte row r lands at chunk j xor (r mod 8)."""
    from deplodock.dialects.interpreters.kernel import swizzled

    offsets = swizzled(np.arange(16 * 32), 4, 128).reshape(16, 32)
    np.testing.assert_array_equal(offsets[0], np.arange(32))  # row 0 stays
    assert offsets[1, 0] == 32 + 4 and offsets[1, 4] == 32  # chunks 0 and 1 swap
    assert offsets[7, 0] == 7 * 32 + 7 * 4 and offsets[8, 0] == 8 * 32  # repeats every 8
    assert sorted(offsets.ravel()) == list(range(16 * 32))  # a permutation
