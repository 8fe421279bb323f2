"""The CUDA backend: NVRTC compilation (runs anywhere) and kernel launches (GPU only)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from deplodock.backends.cuda import (
    KernelResources,
    LoadedModule,
    NoGpuError,
    NvrtcError,
    compile_cuda,
    current_arch,
    gpu_available,
    nvrtc_version,
    parse_ptxas_resources,
)

VECTOR_ADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""

# Reverses each block of 256 elements through static shared memory (1024 bytes).
BLOCK_REVERSE = r"""
extern "C" __global__ void block_reverse(const float* in, float* out) {
    __shared__ float tile[256];
    int base = blockIdx.x * 256;
    tile[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = tile[255 - threadIdx.x];
}
"""

BROKEN = """extern "C" __global__ void broken(float* x) {
    int i = threadIdx.x;
    x[i] = not_declared_anywhere * 2.0f;
}
"""


def needs_gpu(test):
    """Mark a test `gpu` and skip it on machines without a usable CUDA GPU."""
    skip = pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
    return pytest.mark.gpu(skip(test))


# --- compilation: no GPU needed ------------------------------------------------------------


def test_nvrtc_version_is_13():
    major, _minor = nvrtc_version()
    assert major >= 13


def test_compile_gives_cubin_and_resources():
    compiled = compile_cuda(BLOCK_REVERSE + VECTOR_ADD)
    assert compiled.arch == "sm_90"
    assert compiled.cubin[:4] == b"\x7fELF"
    assert set(compiled.resources) == {"block_reverse", "vector_add"}
    reverse = compiled.resources["block_reverse"]
    assert reverse.registers > 0
    assert reverse.shared_bytes == 256 * 4
    assert not reverse.spills
    assert compiled.resources["vector_add"].shared_bytes == 0
    assert "ptxas" in compiled.log


def test_recompiling_keeps_the_resource_report():
    # NVRTC 12.9+ serves repeats from the driver's compute cache, with an empty log,
    # unless compiled with --no-cache (this only bites where a driver is installed).
    first, second = compile_cuda(VECTOR_ADD), compile_cuda(VECTOR_ADD)
    assert first.resources == second.resources != {}


def test_cuda_headers_are_on_the_include_path():
    source = r"""
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    extern "C" __global__ void half_scale(__half* x) {
        x[threadIdx.x] = __hmul(x[threadIdx.x], __float2half(2.0f));
    }
    """
    assert compile_cuda(source).resources["half_scale"].registers > 0


def test_spills_are_reported():
    # 64 live floats in 32 registers cannot fit: ptxas must spill.
    source = r"""
    extern "C" __global__ void spilly(const float* __restrict__ x, float* __restrict__ y) {
        float r[64];
        #pragma unroll
        for (int i = 0; i < 64; i++) r[i] = x[i * blockDim.x + threadIdx.x];
        float s = 0.0f;
        #pragma unroll
        for (int j = 0; j < 64; j++) {
            #pragma unroll
            for (int i = 0; i < 64; i++) s += r[i] * r[(i + j) % 64];
        }
        y[threadIdx.x] = s;
    }
    """
    resources = compile_cuda(source, options=["--maxrregcount=32"]).resources["spilly"]
    assert resources.registers <= 32
    assert resources.spills
    assert resources.spill_stores > 0 and resources.spill_loads > 0


def test_mangled_kernel_names_are_kept():
    source = "template <int N> __global__ void scale(float* x) { x[threadIdx.x] *= N; }\n"
    source += "template __global__ void scale<3>(float*);\n"
    assert list(compile_cuda(source).resources) == ["_Z5scaleILi3EEvPf"]


def test_parse_ptxas_resources_older_format():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, 8 bytes smem, 368 bytes cmem[0]
ptxas info    : Function properties for helper
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
    assert parse_ptxas_resources(log) == {
        "k": KernelResources("k", 32, 8, spill_stores=8, spill_loads=12, local_bytes=16)
    }


def test_compile_error_quotes_the_line_and_keeps_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))  # failed sources: its failed/
    with pytest.raises(NvrtcError) as info:
        compile_cuda(BROKEN, name="broken.cu")
    error = info.value
    message = str(error)
    assert "broken.cu(3): error" in message  # the NVRTC log
    assert "not_declared_anywhere" in error.log
    assert ">     3 |     x[i] = not_declared_anywhere * 2.0f;" in message  # the quoted line
    assert "      2 |     int i = threadIdx.x;" in message  # with context
    assert error.source_path is not None and error.source_path.name.startswith("broken-")
    assert error.source_path.read_text() == BROKEN
    assert str(error.source_path) in message
    assert error.source_path.parent == tmp_path / "failed"
    assert "not_declared_anywhere" in error.source_path.with_suffix(".log").read_text()
    compile_error_again = pytest.raises(NvrtcError)
    with compile_error_again:
        compile_cuda(BROKEN, name="broken.cu")
    assert len(list((tmp_path / "failed").iterdir())) == 2  # one source, one log: kept once


def test_bad_option_raises_nvrtc_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLODOCK_CACHE_DIR", str(tmp_path))
    with pytest.raises(NvrtcError, match="--no-such-option"):
        compile_cuda(VECTOR_ADD, options=["--no-such-option"])


def test_virtual_arch_is_rejected():
    with pytest.raises(ValueError, match="real architecture"):
        compile_cuda(VECTOR_ADD, arch="compute_90")


def test_gpu_available_never_raises():
    assert isinstance(gpu_available(), bool)


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_loading_without_gpu_raises_no_gpu_error():
    with pytest.raises(NoGpuError, match="no CUDA GPU is available on this machine"):
        LoadedModule(compile_cuda(VECTOR_ADD))


# --- launches: GPU only ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arch() -> str:
    return current_arch()


@needs_gpu
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_vector_add_matches_torch(n, arch):
    module = LoadedModule(compile_cuda(VECTOR_ADD, arch=arch))
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    out = torch.full_like(a, float("nan"))
    module.function("vector_add").launch(((n + 255) // 256, 1, 1), (256, 1, 1), [a, b, out, n])
    torch.testing.assert_close(out, a + b)


@needs_gpu
def test_static_shared_memory_kernel_matches_torch(arch):
    module = LoadedModule(compile_cuda(BLOCK_REVERSE, arch=arch))
    kernel = module.function("block_reverse")
    assert kernel.resources is not None and kernel.resources.shared_bytes == 1024
    blocks = 37
    x = torch.randn(blocks * 256, device="cuda")
    out = torch.empty_like(x)
    kernel.launch((blocks, 1, 1), (256, 1, 1), [x, out])
    torch.testing.assert_close(out, x.view(blocks, 256).flip(1).reshape(-1))


@needs_gpu
def test_large_dynamic_shared_memory(arch):
    # 64 KiB of dynamic shared memory needs the opt-in attribute (above 48 KiB).
    source = r"""
    extern "C" __global__ void stage(const float* in, float* out, int per_thread) {
        extern __shared__ float buffer[];
        for (int k = 0; k < per_thread; k++)
            buffer[k * blockDim.x + threadIdx.x] = in[k * blockDim.x + threadIdx.x];
        __syncthreads();
        int last = per_thread * blockDim.x - 1;
        for (int k = 0; k < per_thread; k++)
            out[k * blockDim.x + threadIdx.x] = buffer[last - (k * blockDim.x + threadIdx.x)];
    }
    """
    module = LoadedModule(compile_cuda(source, arch=arch))
    threads, per_thread = 256, 64  # 16384 floats = 64 KiB
    x = torch.randn(threads * per_thread, device="cuda")
    out = torch.empty_like(x)
    module.function("stage").launch(
        (1, 1, 1), (threads, 1, 1), [x, out, per_thread], shared_bytes=x.numel() * 4
    )
    torch.testing.assert_close(out, x.flip(0))


@needs_gpu
def test_scalar_widths_and_streams(arch):
    source = r"""
    extern "C" __global__ void affine(double* out, long long offset, double scale,
                                      float bias, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = scale * (double)(offset + i) + (double)bias;
    }
    """
    kernel = LoadedModule(compile_cuda(source, arch=arch)).function("affine")
    n = 4096
    offset = 3 * 2**33  # does not fit 32 bits
    expected = 0.5 * (offset + torch.arange(n, dtype=torch.float64, device="cuda")) + 1.25
    args = [np.int64(offset), np.float64(0.5), 1.25, ctypes.c_int(n)]
    side = torch.cuda.Stream()
    # On a torch Stream, on a raw stream handle, and on the current stream by default.
    for stream in (side, side.cuda_stream, None):
        out = torch.zeros(n, dtype=torch.float64, device="cuda")
        side.wait_stream(torch.cuda.current_stream())  # the zero fill comes first
        kernel.launch((n // 256, 1, 1), (256, 1, 1), [out, *args], stream=stream)
        torch.cuda.current_stream().wait_stream(side)
        torch.testing.assert_close(out, expected)


@needs_gpu
def test_launch_argument_errors(arch):
    kernel = LoadedModule(compile_cuda(VECTOR_ADD, arch=arch)).function("vector_add")
    a = torch.ones(4, device="cuda")
    with pytest.raises(TypeError, match="CUDA tensors"):
        kernel.launch((1, 1, 1), (4, 1, 1), [a, torch.ones(4), a, 4])
    with pytest.raises(OverflowError, match="np.int64"):
        kernel.launch((1, 1, 1), (4, 1, 1), [a, a, a, 2**40])
    with pytest.raises(ValueError, match="three positive ints"):
        kernel.launch((1, 1), (4, 1, 1), [a, a, a, 4])
    if kernel._param_sizes is not None:  # the driver reports parameter sizes (CUDA 12.4+)
        with pytest.raises(TypeError, match="takes 4 parameters, got 3"):
            kernel.launch((1, 1, 1), (4, 1, 1), [a, a, a])
        with pytest.raises(TypeError, match="np.int64"):
            kernel.launch((1, 1, 1), (4, 1, 1), [a, a, 4, 4])  # an int for a pointer


@needs_gpu
def test_unknown_kernel_name_lists_the_module_kernels(arch):
    module = LoadedModule(compile_cuda(VECTOR_ADD, arch=arch))
    with pytest.raises(RuntimeError, match="vector_add"):
        module.function("no_such_kernel")
