"""The CUDA backend: NVRTC compiles generated CUDA C++ to cubins, the driver API runs them.

``compile_cuda`` needs no GPU (only the NVRTC and CUDA header wheels), so code generation
and its resource report (registers, shared memory, spills) can be checked anywhere;
``LoadedModule`` / ``KernelFunction`` need a GPU and raise NoGpuError without one.
"""

from .driver import (
    CudaDriverError,
    KernelFunction,
    LoadedModule,
    NoGpuError,
    current_arch,
    gpu_available,
)
from .nvrtc import (
    CompiledModule,
    KernelResources,
    NvrtcError,
    compile_cuda,
    cuda_include_dir,
    nvrtc_version,
    parse_ptxas_resources,
)

__all__ = [
    "CompiledModule",
    "CudaDriverError",
    "KernelFunction",
    "KernelResources",
    "LoadedModule",
    "NoGpuError",
    "NvrtcError",
    "compile_cuda",
    "cuda_include_dir",
    "current_arch",
    "gpu_available",
    "nvrtc_version",
    "parse_ptxas_resources",
]
