"""The CUDA backend: NVRTC compiles generated CUDA C++ to cubins, the driver API runs them.

``compile_cuda`` needs no GPU (only the NVRTC and CUDA header wheels), so code generation
and its resource report (registers, shared memory, spills) can be checked anywhere;
``LoadedModule`` / ``KernelFunction`` need a GPU and raise NoGpuError without one.
"""

# Loaded on first use (PEP 562): importing a submodule (``cache``, ``program_key``) must
# not import the driver, which imports torch.
_FROM = {
    "CudaDriverError": "driver",
    "KernelFunction": "driver",
    "LoadedModule": "driver",
    "NoGpuError": "driver",
    "current_arch": "driver",
    "gpu_available": "driver",
    "CompiledModule": "nvrtc",
    "KernelResources": "nvrtc",
    "NvrtcError": "nvrtc",
    "compile_cuda": "nvrtc",
    "cuda_include_dir": "nvrtc",
    "nvrtc_version": "nvrtc",
    "parse_ptxas_resources": "nvrtc",
}


def __getattr__(name: str):
    if name in _FROM:
        import importlib

        return getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
