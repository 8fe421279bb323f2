"""Tensor maps for TMA copies (sm_90): which ones a kernel takes, and their bytes.

A ``kernel.tma_load`` copies a box of a global input that a *tensor map* describes: a
128-byte opaque descriptor (the tensor's address, sizes and strides, the box, the swizzle
mode) that the driver encodes (``cuTensorMapEncodeTiled``) and the kernel receives as a
``const __grid_constant__`` parameter, whose address the copy instruction takes.

* ``TensorMapSpec``: one map a kernel needs: which of its inputs, the box over every
  dimension of that input (leading dimensions of extent 1), the swizzle. Everything
  else (address, sizes, strides, element type) comes from the tensor at launch.
  ``kernel_tensor_maps(op)`` lists a kernel's maps in the order the emitter appends the
  parameters (after the buffers, by first use); the execution plan keeps them per step
  (``runtime.Step.tensor_maps``) and the program cache stores them with it.
* ``encode(spec, address, shape, dtype)``: the map as a ``TensorMapParam`` (ctypes, 128
  bytes, at a 64-byte aligned address, as the driver requires), ready to pass to
  ``KernelFunction.launch``. ``TensorMapCache`` keeps encoded maps by everything that
  goes into them, so a program run again on the same memory (a CUDA graph's capture,
  the plan's arena, weights bound by address) encodes each map once.

Importing this module needs no GPU and no driver: only ``encode`` calls the driver.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "TensorMapCache",
    "TensorMapParam",
    "TensorMapSpec",
    "encode",
    "kernel_tensor_maps",
    "tensor_map_arguments",
]

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 64


@dataclass(frozen=True)
class TensorMapSpec:
    """A tensor map a kernel takes: its ``input`` (position among the kernel's inputs),
    the ``box`` over all of the input's dimensions in its order, ``swizzle`` bytes (0:
    none)."""

    input: int
    box: tuple[int, ...]
    swizzle: int = 0

    def to_json(self) -> list:
        return [self.input, list(self.box), self.swizzle]

    @classmethod
    def from_json(cls, data: Sequence) -> TensorMapSpec:
        input_, box, swizzle = data
        return cls(int(input_), tuple(int(e) for e in box), int(swizzle))


def spec_of(op, kernel) -> TensorMapSpec:
    """The tensor map a ``kernel.tma_load`` ``op`` of ``kernel`` reads its source through."""
    source_rank = len(op.source.type.get_shape())
    box = op.box_shape
    full = (1,) * (source_rank - len(box)) + tuple(box)
    return TensorMapSpec(list(kernel.input_buffers).index(op.source), full, op.swizzle_bytes or 0)


def kernel_tensor_maps(op) -> list[TensorMapSpec]:
    """The tensor maps a ``kernel.kernel`` takes, in parameter order (first use)."""
    from deplodock.dialects import kernel

    specs: list[TensorMapSpec] = []
    for child in op.walk():
        if isinstance(child, kernel.TmaLoadOp):
            spec = spec_of(child, op)
            if spec not in specs:
                specs.append(spec)
    return specs


class TensorMapParam(ctypes.Structure):
    """The 128 bytes of an encoded tensor map, as a kernel parameter (passed by value)."""

    _fields_ = [("opaque", ctypes.c_uint64 * (TENSOR_MAP_BYTES // 8))]


def _aligned_param() -> TensorMapParam:
    """A zeroed ``TensorMapParam`` at a 64-byte aligned address (ctypes aligns a structure
    to 8 only: it is carved out of a larger buffer, which it keeps alive)."""
    raw = (ctypes.c_uint8 * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT))()
    offset = -ctypes.addressof(raw) % TENSOR_MAP_ALIGNMENT
    return TensorMapParam.from_buffer(raw, offset)


_DATA_TYPES = {
    "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "float64": "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
    "int32": "CU_TENSOR_MAP_DATA_TYPE_INT32",
    "int64": "CU_TENSOR_MAP_DATA_TYPE_INT64",
    "uint8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
}
_SWIZZLES = {
    0: "CU_TENSOR_MAP_SWIZZLE_NONE",
    32: "CU_TENSOR_MAP_SWIZZLE_32B",
    64: "CU_TENSOR_MAP_SWIZZLE_64B",
    128: "CU_TENSOR_MAP_SWIZZLE_128B",
}


def encode_arguments(
    spec: TensorMapSpec, address: int, shape: Sequence[int], dtype_name: str, itemsize: int
) -> dict:
    """The arguments of ``cuTensorMapEncodeTiled`` for ``spec`` over a dense row-major
    tensor of ``shape`` at ``address``: sizes and box innermost first, the strides of
    the outer dimensions in bytes. (Plain values: the driver's enums by name.)"""
    if len(shape) != len(spec.box):
        raise ValueError(f"a box of rank {len(spec.box)} over a tensor of shape {tuple(shape)}")
    if dtype_name not in _DATA_TYPES:
        raise ValueError(f"no TMA data type for {dtype_name}")
    if address % 16:
        raise ValueError(f"a TMA source must be 16-byte aligned, not at {address:#x}")
    dims = [int(n) for n in reversed(shape)]
    strides = [itemsize * math.prod(shape[k + 1 :]) for k in range(len(shape) - 1)][::-1]
    return {
        "tensorDataType": _DATA_TYPES[dtype_name],
        "tensorRank": len(shape),
        "globalAddress": int(address),
        "globalDim": dims,
        "globalStrides": strides,
        "boxDim": [int(e) for e in reversed(spec.box)],
        "elementStrides": [1] * len(shape),
        "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
        "swizzle": _SWIZZLES[spec.swizzle],
        "l2Promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        "oobFill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
    }


def encode(
    spec: TensorMapSpec, address: int, shape: Sequence[int], dtype_name: str, itemsize: int
) -> TensorMapParam:
    """The tensor map of ``spec`` over the tensor at ``address`` (``cuTensorMapEncodeTiled``,
    which needs the CUDA driver but no context), as a kernel parameter."""
    from cuda.bindings import driver as cu

    from .driver import CudaDriverError, _describe

    args = encode_arguments(spec, address, shape, dtype_name, itemsize)
    err, tensor_map = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, args["tensorDataType"]),
        args["tensorRank"],
        args["globalAddress"],
        [cu.cuuint64_t(n) for n in args["globalDim"]],
        [cu.cuuint64_t(n) for n in args["globalStrides"]],
        [cu.cuuint32_t(n) for n in args["boxDim"]],
        [cu.cuuint32_t(n) for n in args["elementStrides"]],
        getattr(cu.CUtensorMapInterleave, args["interleave"]),
        getattr(cu.CUtensorMapSwizzle, args["swizzle"]),
        getattr(cu.CUtensorMapL2promotion, args["l2Promotion"]),
        getattr(cu.CUtensorMapFloatOOBfill, args["oobFill"]),
    )
    if err != cu.CUresult.CUDA_SUCCESS:
        shown = {k: v for k, v in args.items() if k != "globalAddress"}
        raise CudaDriverError(
            f"cuTensorMapEncodeTiled failed: {_describe(err)} (at {address:#x}, {shown})", err
        )
    param = _aligned_param()
    ctypes.memmove(ctypes.addressof(param), int(tensor_map.getPtr()), TENSOR_MAP_BYTES)
    return param


class TensorMapCache:
    """Encoded tensor maps by (spec, address, shape, dtype): each encoded once."""

    def __init__(self, encoder=None):
        self._encode = encoder  # None: ``encode`` (looked up at each use)
        self._maps: dict[tuple, TensorMapParam] = {}

    def __len__(self) -> int:
        return len(self._maps)

    def get(
        self,
        spec: TensorMapSpec,
        address: int,
        shape: Sequence[int],
        dtype_name: str,
        itemsize: int,
    ) -> TensorMapParam:
        key = (spec, int(address), tuple(shape), dtype_name)
        found = self._maps.get(key)
        if found is None:
            encoder = self._encode or encode
            found = self._maps[key] = encoder(spec, address, shape, dtype_name, itemsize)
        return found


def tensor_map_arguments(
    specs: Sequence[TensorMapSpec],
    inputs: Sequence[tuple[int, Sequence[int], str, int]],
    cache: TensorMapCache,
) -> list[TensorMapParam]:
    """The tensor-map parameters of one launch: ``inputs`` gives each kernel input's
    (address, shape, dtype name, item size)."""
    return [cache.get(spec, *inputs[spec.input]) for spec in specs]
