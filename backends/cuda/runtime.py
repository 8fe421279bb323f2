"""Run a kernel-level program on the GPU: one NVRTC module, one launch per kernel.

``CompiledProgram(module)`` emits CUDA for every ``kernel.kernel`` of ``@forward`` and
compiles it for the target (this needs no GPU: the cubin and the resource report exist
after construction). Calling it walks ``@forward``: each kernel gets fresh output tensors
on the inputs' device (poisoned with NaN first, so an element no thread writes shows in the
comparison) and is launched on the current torch stream with its inputs and outputs as
arguments, in the order the emitter declares them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

from deplodock.backends.cuda.driver import LoadedModule, NoGpuError, gpu_available
from deplodock.backends.cuda.emit import emit_cuda
from deplodock.backends.cuda.nvrtc import CompiledModule, KernelResources, compile_cuda
from deplodock.dialects import kernel
from deplodock.frontends.export import torch_dtype


def forward_func(module: ModuleOp, entry: str = "forward") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            return op
    raise ValueError(f"the module has no func.func @{entry}")


class CompiledProgram:
    """A kernel-level program compiled to one cubin, callable on CUDA tensors."""

    def __init__(
        self, module: ModuleOp, arch: str = "sm_90", compiled: CompiledModule | None = None
    ):
        """``compiled``: the module's cubin when the caller already compiled it."""
        self.module = module
        self.func = forward_func(module)
        self.kernels = [op for op in self.func.body.walk() if isinstance(op, kernel.KernelOp)]
        self.source = emit_cuda(module)
        self.compiled: CompiledModule = compiled or compile_cuda(self.source, arch=arch)
        self._loaded: LoadedModule | None = None

    @property
    def resources(self) -> dict[str, KernelResources]:
        return self.compiled.resources

    def _module(self) -> LoadedModule:
        if not gpu_available():
            raise NoGpuError("no CUDA GPU is available on this machine: compiled, not run")
        if self._loaded is None:
            self._loaded = LoadedModule(self.compiled)
        return self._loaded

    def __call__(self, *inputs: torch.Tensor, poison: bool = True) -> list[torch.Tensor]:
        """Run @forward; ``poison=False`` skips the NaN fill of outputs (for timing)."""
        args = self.func.body.block.args
        if len(inputs) != len(args):
            raise ValueError(f"@forward takes {len(args)} tensors, got {len(inputs)}")
        loaded = self._module()
        values: dict[SSAValue, torch.Tensor] = {}
        for arg, tensor in zip(args, inputs, strict=True):
            values[arg] = _checked(arg, tensor)
        device = inputs[0].device if inputs else torch.device("cuda")
        for op in self.func.body.block.ops:
            if isinstance(op, kernel.KernelOp):
                outputs = [_output(r.type, device, poison) for r in op.results]
                launch_args: Sequence[torch.Tensor] = [values[v] for v in op.inputs] + outputs
                loaded.function(op.sym_name.data).launch(op.grid_shape, op.block_shape, launch_args)
                values.update(zip(op.results, outputs, strict=True))
            elif isinstance(op, func.ReturnOp):
                return [values[v] for v in op.arguments]
            else:
                raise NotImplementedError(
                    f"the runtime cannot execute {op.name} at the graph level; "
                    "lower the program to the kernel level first"
                )
        raise ValueError("@forward has no func.return")


VECTOR_ALIGNMENT = 16
"""Kernels' vector accesses (``vector_access``) assume every buffer starts 16-byte aligned."""


def _checked(arg: SSAValue, tensor: torch.Tensor) -> torch.Tensor:
    type_ = arg.type
    assert isinstance(type_, TensorType)
    shape = tuple(type_.get_shape())
    if tuple(tensor.shape) != shape or tensor.dtype != torch_dtype(type_.element_type):
        raise ValueError(
            f"argument %{arg.name_hint}: expected {shape} {torch_dtype(type_.element_type)}, "
            f"got {tuple(tensor.shape)} {tensor.dtype}"
        )
    if not tensor.is_cuda:
        raise ValueError(f"argument %{arg.name_hint} is on {tensor.device}, not a CUDA device")
    tensor = tensor.contiguous()
    if tensor.data_ptr() % VECTOR_ALIGNMENT:
        # A view into the middle of a buffer: vector loads assume aligned bases, so copy it.
        tensor = tensor.clone()
    return tensor


def _output(type_, device: torch.device, poison: bool) -> torch.Tensor:
    assert isinstance(type_, TensorType)
    dtype = torch_dtype(type_.element_type)
    shape = tuple(type_.get_shape())
    if not poison:
        return torch.empty(shape, dtype=dtype, device=device)
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full(shape, -1, dtype=dtype, device=device)
