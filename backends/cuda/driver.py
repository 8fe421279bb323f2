"""Load cubins into torch's CUDA context and launch their kernels (CUDA driver API).

Modules are loaded into the *primary* context of the device, which is the context the
CUDA runtime (and so torch) uses: our kernels then read and write torch tensors directly
and run on torch's streams, in order with torch's own kernels.

A program compiled kernel by kernel (``nvrtc.compile_kernels``) is one module per unit:
``LoadedKernels`` loads them all and finds each kernel under its unit's symbol (kernels
that compiled to the same unit share one function).

Importing this module needs no GPU and no driver: everything that does goes through
``_require_gpu()``, which raises NoGpuError with the reason.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from cuda.bindings import driver as _cu

from deplodock.target import TARGETS, Target, register_target

from .nvrtc import CompiledKernels, CompiledModule, KernelResources

__all__ = [
    "CudaDriverError",
    "KernelFunction",
    "LoadedKernels",
    "LoadedModule",
    "NoGpuError",
    "current_arch",
    "gpu_available",
]

# Above this much dynamic shared memory a kernel must opt in (cuFuncSetAttribute).
_DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024

# Arguments passed through as they are: the caller chose the exact C type.
_CTYPES = (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)

LaunchArg = torch.Tensor | int | float | np.generic | ctypes._SimpleCData


class NoGpuError(RuntimeError):
    """The operation needs a CUDA GPU and this machine has none usable."""


class CudaDriverError(RuntimeError):
    """A CUDA driver API call failed; the message names the call and the CUresult."""

    def __init__(self, message: str, result: object = None):
        super().__init__(message)
        self.result = result


PROGRAMMATIC_MIN_MAJOR = 9
"""Programmatic dependent launch needs sm_90 or later (Hopper's ``griddepcontrol``)."""


PROGRAMMATIC_DEFAULT = "1"
"""On unless ``DEPLODOCK_PDL=0``: with the implicit trigger (the grid behind launches once
every block has exited) it was faster on each of the six programs measured: 0.2-0.8% on
three decoder layers and whole TinyLlama at S=128 (1.008x twice), 2% on an attention, 23%
on a 2.5 us rmsnorm (session 38, H100 host);
triggered first in every kernel it had been 5-10% slower (session 34)."""


_PDL_REFUSED = ("CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_INVALID_VALUE")
"""What a driver without programmatic stream serialization answers ``cuLaunchKernelEx``
with; the launch is then made plainly (a real invalid value fails again there, named)."""


class ProgrammaticLaunchWarning(UserWarning):
    """This driver refused a programmatic dependent launch: kernels launch plainly."""


_pdl_refusal_told = False  # the warning is given once a process


def programmatic_launch_enabled() -> bool:
    """True when ``DEPLODOCK_PDL`` says on (``1``, ``on``, ``true``, ``yes``; default
    ``PROGRAMMATIC_DEFAULT``); read at each launch, so a process can compare both ways."""
    value = os.environ.get("DEPLODOCK_PDL", PROGRAMMATIC_DEFAULT).strip().lower()
    return value in {"1", "on", "true", "yes"}


def gpu_available() -> bool:
    """True only when torch sees a CUDA device and the driver API works. Never raises."""
    return _no_gpu_reason() is None


def current_arch(device: int | None = None) -> str:
    """The real architecture of a device, e.g. ``"sm_90"``, as ``compile_cuda`` wants it.
    One ``deplodock.target`` has no entry for (a newer GPU) is described from the
    device itself and registered (``device_target``), so the passes can plan for it."""
    _require_gpu()
    major, minor = torch.cuda.get_device_capability(device)
    arch = f"sm_{major}{minor}"
    if arch not in TARGETS:
        register_target(device_target(device))
    return arch


def device_target(device: int | None = None) -> Target:
    """A ``Target`` from what the device reports: its SM count and the shared memory a
    block may opt in to; the rates of the newest described target (not measured)."""
    _require_gpu()
    props = torch.cuda.get_device_properties(device)
    major, minor = props.major, props.minor
    known = max(TARGETS.values(), key=lambda t: (t.sm, t.measured))
    shared = getattr(props, "shared_memory_per_block_optin", 0) or known.shared_bytes
    return dataclasses.replace(
        known,
        arch=f"sm_{major}{minor}",
        part=props.name,
        sm_count=props.multi_processor_count,
        shared_bytes=shared,
        measured=False,
    )


class LoadedModule:
    """A cubin loaded into the primary context of a device (torch's current one by default).

    The module is unloaded when this object is garbage collected (or on ``close()``);
    each KernelFunction holds a reference, so the module lives as long as its functions.
    """

    def __init__(self, compiled: CompiledModule, device: int | torch.device | None = None):
        _require_gpu()
        torch.cuda.init()
        self.compiled = compiled
        self.device = torch.cuda.current_device() if device is None else _device_index(device)
        self._context = _primary_context(self.device)
        self._functions: dict[str, KernelFunction] = {}
        self._handle = None
        with _current(self._context):
            result = _cu.cuModuleLoadData(compiled.cubin)
        if result[0] != _cu.CUresult.CUDA_SUCCESS:
            major, minor = torch.cuda.get_device_capability(self.device)
            raise CudaDriverError(
                f"cuModuleLoadData failed: {_describe(result[0])} (module compiled for "
                f"{compiled.arch}, device {self.device} is sm_{major}{minor})",
                result[0],
            )
        self._handle = result[1]

    @functools.cached_property
    def waits_for_the_grid_ahead(self) -> bool:
        """Launch this module's kernels with programmatic dependent launch: on sm_90 or
        later, compiled for it, from a source whose kernels wait for the grid ahead before
        touching memory (the emitter's ``griddepcontrol.wait``; a kernel without it could
        read what the grid ahead has not written yet). Found once per module."""
        major, _ = torch.cuda.get_device_capability(self.device)
        arch = int("".join(c for c in self.compiled.arch if c.isdigit()) or 0)
        return (
            major >= PROGRAMMATIC_MIN_MAJOR
            and arch >= 10 * PROGRAMMATIC_MIN_MAJOR
            and "griddepcontrol.wait" in self.compiled.source
        )

    def function(self, name: str, symbol: str | None = None) -> KernelFunction:
        """The kernel ``name`` (unmangled for ``extern "C"`` kernels, else the mangled name).

        ``symbol``: its name in the cubin, when that is another (a kernel compiled once for
        several identical ones); ``name`` then only labels the function in messages.
        """
        if name not in self._functions:
            if self._handle is None:
                raise CudaDriverError("the module was closed")
            symbol = symbol or name
            with _current(self._context):
                result = _cu.cuModuleGetFunction(self._handle, symbol.encode())
            if result[0] != _cu.CUresult.CUDA_SUCCESS:
                known = ", ".join(sorted(self.compiled.resources)) or "unknown"
                raise CudaDriverError(
                    f"cuModuleGetFunction({symbol!r}) failed: {_describe(result[0])} "
                    f"(kernels in the module: {known})",
                    result[0],
                )
            self._functions[name] = KernelFunction(self, name, result[1], symbol)
        return self._functions[name]

    def close(self) -> None:
        """Unload the module now (work already queued keeps running, as with cupy/numba)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with _current(self._context):
                _call(_cu.cuModuleUnload, handle)

    def __del__(self) -> None:
        if sys.is_finalizing():  # the driver may already be torn down
            return
        try:
            self.close()
        except Exception:  # never raise from a finalizer
            pass


class LoadedKernels:
    """A program's kernels, compiled one unit each (``CompiledKernels``), loaded onto a device.

    Every unit's module is loaded up front (not at a kernel's first launch, which may fall
    inside a CUDA graph capture); ``function(name)`` is the program's kernel ``name``,
    looked up in its unit's module under the symbol the unit was compiled with.
    """

    def __init__(self, compiled: CompiledKernels, device: int | torch.device | None = None):
        self.compiled = compiled
        self.modules = {unit.key: LoadedModule(unit.compiled, device) for unit in compiled.units}
        self.device = next(iter(self.modules.values())).device if self.modules else None

    def function(self, name: str) -> KernelFunction:
        unit = self.compiled.unit_of.get(name)
        if unit is None:
            known = ", ".join(sorted(self.compiled.unit_of)) or "none"
            raise CudaDriverError(f"no kernel {name!r} in the program (kernels: {known})")
        return self.modules[unit.key].function(name, unit.symbol)

    def close(self) -> None:
        for module in self.modules.values():
            module.close()


class KernelFunction:
    """One kernel of a LoadedModule, launchable on torch tensors and scalars."""

    def __init__(self, module: LoadedModule, name: str, handle: object, symbol: str | None = None):
        self.name = name  # as messages call it
        self.symbol = symbol or name  # as the cubin calls it
        self.module = module  # keeps the module loaded while this function lives
        self._handle = handle
        self._dynamic_shared_limit = _DEFAULT_DYNAMIC_SHARED_LIMIT
        self._configs: dict[tuple, object] = {}  # cuLaunchKernelEx's configs, per shape
        self._programmatic = module.waits_for_the_grid_ahead
        with _current(module._context):
            self._param_sizes = _param_sizes(handle)

    @property
    def resources(self) -> KernelResources | None:
        """ptxas's report for this kernel (registers, static shared memory, spills)."""
        report = self.module.compiled.resources.get(self.symbol)
        return dataclasses.replace(report, name=self.name) if report is not None else None

    def launch(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: Sequence[LaunchArg],
        shared_bytes: int = 0,
        stream: torch.cuda.Stream | int | None = None,
    ) -> None:
        """Launch asynchronously on ``stream`` (default: torch's current stream).

        Arguments become kernel parameters as follows:

        - a CUDA tensor: its ``data_ptr()``, a 64-bit device pointer (strides and dtype
          are the kernel's business; the tensor must be on the module's device);
        - a Python ``int``: a C ``int`` (32-bit, signed); a Python ``float``: a C ``float``;
          a Python ``bool``: a C ``bool``;
        - a numpy scalar (``np.int64(n)``, ``np.float64(x)``, ``np.float16(x)``, ...): its
          exact bytes, to choose another width or type;
        - a ctypes instance (``ctypes.c_size_t(n)``, a ``ctypes.Structure``): as is.

        When the driver can report the kernel's parameter sizes (CUDA 12.4+), the number
        and sizes of the arguments are checked against them, so a Python ``int`` for a
        64-bit parameter is an error instead of a silently garbled value.
        """
        grid, block = _dim3("grid", grid), _dim3("block", block)
        holders = [self._pack(i, arg) for i, arg in enumerate(args)]
        self._check_signature(holders, args)
        # cuLaunchKernel's kernelParams: an array of pointers, one to each argument's bytes.
        # The driver copies the values during the call, so the holders may die after it.
        pointers = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
        if stream is None:
            stream = torch.cuda.current_stream(self.module.device)
        handle = int(getattr(stream, "cuda_stream", stream))
        with _current(self.module._context):
            if shared_bytes > self._dynamic_shared_limit:
                _call(
                    _cu.cuFuncSetAttribute,
                    self._handle,
                    _cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes,
                    what=f"cuFuncSetAttribute({self.name}, max dynamic shared = {shared_bytes})",
                )
                self._dynamic_shared_limit = shared_bytes
            params = ctypes.addressof(pointers) if holders else 0

            def what() -> str:  # formatted only for an error's message
                return (
                    f"cuLaunchKernel({self.name}, grid={grid}, block={block}, "
                    f"shared_bytes={shared_bytes})"
                )

            if self._programmatic and programmatic_launch_enabled():
                config = self._config(grid, block, shared_bytes, handle)
                try:
                    _call(
                        _cu.cuLaunchKernelEx,
                        config,
                        self._handle,
                        params,
                        0,
                        what=lambda: what() + " (PDL)",
                    )
                    return
                except CudaDriverError as error:
                    if getattr(error.result, "name", None) not in _PDL_REFUSED:
                        raise
                    self._programmatic = False  # this function launches plainly from now on
                    _tell_pdl_refused(error)
            _call(
                _cu.cuLaunchKernel,
                self._handle,
                *grid,
                *block,
                shared_bytes,
                _cu.CUstream(handle),
                params,
                0,
                what=what,
            )

    def _config(
        self, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, stream: int
    ) -> object:
        """The launch's ``CUlaunchConfig`` with programmatic stream serialization allowed:
        the kernel may launch before the one ahead of it on the stream has signalled its
        completion, once every block of that one has exited, and waits for it to finish,
        its writes visible, before its first access to memory (``griddepcontrol.wait``, the
        emitter's first statement on sm_90)."""
        key = (grid, block, shared, stream)
        config = self._configs.get(key)
        if config is None:
            attribute = _cu.CUlaunchAttribute()
            attribute.id = (
                _cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            )
            attribute.value.programmaticStreamSerializationAllowed = 1
            config = _cu.CUlaunchConfig()
            config.gridDimX, config.gridDimY, config.gridDimZ = grid
            config.blockDimX, config.blockDimY, config.blockDimZ = block
            config.sharedMemBytes = shared
            config.hStream = _cu.CUstream(stream)
            config.attrs = [attribute]
            config.numAttrs = 1
            self._configs[key] = config
        return config

    def _pack(self, index: int, arg: object) -> ctypes._CData:
        """The C value of one argument, in memory the driver can copy from."""
        if isinstance(arg, torch.Tensor):
            if not arg.is_cuda:
                raise TypeError(
                    f"{self.name}: argument {index} is a tensor on {arg.device}; "
                    "kernels take CUDA tensors"
                )
            if arg.device.index != self.module.device:
                raise ValueError(
                    f"{self.name}: argument {index} is on {arg.device} but the module "
                    f"is loaded on cuda:{self.module.device}"
                )
            return ctypes.c_void_p(arg.data_ptr())
        if isinstance(arg, _CTYPES):
            return arg
        if isinstance(arg, np.generic):
            return ctypes.create_string_buffer(arg.tobytes(), arg.nbytes)
        if isinstance(arg, bool):
            return ctypes.c_bool(arg)
        if isinstance(arg, int):
            if not -(2**31) <= arg < 2**31:
                raise OverflowError(
                    f"{self.name}: argument {index} = {arg} does not fit a C int; "
                    "pass np.int64(...) for a 64-bit parameter"
                )
            return ctypes.c_int(arg)
        if isinstance(arg, float):
            return ctypes.c_float(arg)
        raise TypeError(
            f"{self.name}: argument {index} has unsupported type {type(arg).__name__}; "
            "pass a CUDA tensor, int, float, numpy scalar or ctypes value"
        )

    def _check_signature(self, holders: list[ctypes._CData], args: Sequence[object]) -> None:
        sizes = self._param_sizes
        if sizes is None:
            return
        if len(holders) != len(sizes):
            raise TypeError(
                f"{self.name} takes {len(sizes)} parameters, got {len(holders)} arguments"
            )
        for index, (holder, size) in enumerate(zip(holders, sizes, strict=True)):
            if ctypes.sizeof(holder) != size:
                arg = args[index]
                hint = ""
                if isinstance(arg, int) and size == 8:
                    hint = " (a Python int is a 32-bit C int: pass np.int64(...))"
                elif isinstance(arg, float) and size == 8:
                    hint = " (a Python float is a C float: pass np.float64(...))"
                raise TypeError(
                    f"{self.name}: argument {index} ({type(arg).__name__}) is "
                    f"{ctypes.sizeof(holder)} bytes but the parameter is {size} bytes{hint}"
                )


# --- helpers -----------------------------------------------------------------------------


def _tell_pdl_refused(error: CudaDriverError) -> None:
    """Warn, the first time in this process, that the driver refused a programmatic launch."""
    global _pdl_refusal_told
    if not _pdl_refusal_told:
        _pdl_refusal_told = True
        warnings.warn(
            f"{error}; kernels launch without programmatic dependent launch "
            "(DEPLODOCK_PDL=0 skips the attempt)",
            ProgrammaticLaunchWarning,
            stacklevel=3,
        )


@functools.cache
def _no_gpu_reason() -> str | None:
    """Why no GPU can be used, or None if one can. Cached: the answer does not change."""
    try:
        if not torch.cuda.is_available():
            return (
                f"torch.cuda.is_available() is False (torch {torch.__version__}, "
                f"CUDA {torch.version.cuda or 'none'})"
            )
        (err,) = _cu.cuInit(0)
        if err != _cu.CUresult.CUDA_SUCCESS:
            return f"cuInit failed: {_describe(err)}"
        err, count = _cu.cuDeviceGetCount()
        if err != _cu.CUresult.CUDA_SUCCESS or count == 0:
            return "the CUDA driver reports no device"
    except Exception as exc:  # e.g. libcuda.so missing: no GPU, not a crash
        return f"the CUDA driver could not be used ({type(exc).__name__}: {exc})"
    return None


def _require_gpu() -> None:
    reason = _no_gpu_reason()
    if reason is not None:
        raise NoGpuError(f"no CUDA GPU is available on this machine: {reason}")


def _describe(err: object) -> str:
    """``CUDA_ERROR_X: description`` for a CUresult."""
    try:
        name = _cu.cuGetErrorName(err)[1].decode()
        text = _cu.cuGetErrorString(err)[1].decode()
        return f"{name}: {text}"
    except Exception:  # a description is only for the message
        return str(err)


def _call(fn, *args, what: str | Callable[[], str] | None = None):
    """Call a driver function, raise CudaDriverError naming it on failure, return its
    outputs. ``what`` names the call in the message (a callable: formatted only then)."""
    err, *outputs = fn(*args)
    if err != _cu.CUresult.CUDA_SUCCESS:
        named = what() if callable(what) else what
        raise CudaDriverError(f"{named or fn.__name__} failed: {_describe(err)}", err)
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


@functools.cache
def _primary_context(device: int) -> object:
    """The primary context of ``device``: the one the CUDA runtime, hence torch, uses.

    Retained once per device and never released, as torch keeps it alive anyway.
    """
    _call(_cu.cuInit, 0)
    return _call(_cu.cuDevicePrimaryCtxRetain, _call(_cu.cuDeviceGet, device))


@contextmanager
def _current(context: object) -> Iterator[None]:
    """Make ``context`` current on this thread for the block, then restore the previous one.

    Usually torch has already made it current (one cheap query); restoring matters
    because the runtime derives torch's current device from the current context.
    """
    if int(_call(_cu.cuCtxGetCurrent)) == int(context):
        yield
        return
    _call(_cu.cuCtxPushCurrent, context)
    try:
        yield
    finally:
        _call(_cu.cuCtxPopCurrent)


def _param_sizes(handle: object) -> list[int] | None:
    """The byte size of each kernel parameter, or None when the driver cannot tell."""
    get_info = getattr(_cu, "cuFuncGetParamInfo", None)  # CUDA 12.4+
    if get_info is None:
        return None
    sizes: list[int] = []
    while True:
        err, _offset, size = get_info(handle, len(sizes))
        if err == _cu.CUresult.CUDA_ERROR_INVALID_VALUE:  # past the last parameter
            return sizes
        if err != _cu.CUresult.CUDA_SUCCESS:
            return None
        sizes.append(int(size))


def _dim3(what: str, dims: Sequence[int]) -> tuple[int, int, int]:
    values = tuple(int(d) for d in dims)
    if len(values) != 3 or min(values) < 1:
        raise ValueError(f"{what} must be three positive ints, got {tuple(dims)}")
    return values  # type: ignore[return-value]


def _device_index(device: int | torch.device) -> int:
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"modules load on CUDA devices, not {device}")
    return device.index if device.index is not None else torch.cuda.current_device()
