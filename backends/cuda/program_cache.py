"""The program cache: whole compiled programs on disk, so a warm compile skips the compiler.

The kernel cache (``cache.py``) skips only NVRTC. Everything before it still ran on every
compile: for TinyLlama at seq 128 on 2 cores, torch.export (~4 s), the lowering to the
loop level (~7 s) and the tile passes over 465 kernels (~9 s), for a warm compile of 25 s.
This cache keeps a compiled program by what it was compiled from, so a warm compile is a
key, a file read and a few thousand small objects.

**Value: what running needs, not the IR.** A ``ProgramEntry`` holds the execution plan
(``runtime.ExecutionPlan``: the steps with their launch shapes and tensor maps (the TMA
boxes a kernel takes after its buffers: ``tensor_maps.TensorMapSpec``), every tensor's shape,
dtype and arena offset), the compiled kernels (``nvrtc.CompiledKernels``: per distinct
compile unit its source, cubin, NVRTC log and the kernels that run it; the ptxas report
per kernel is parsed back from the logs), the arguments' specs (``graph_inputs``: name,
kind, target, shape, dtype), the kernel names in order, optionally the program's lifted
constants (``torch.save``, read back with ``weights_only=True``: for a caller that keeps
no ExportedProgram, ``deplodock run MODEL``) and a little JSON ``info`` (what was compiled,
for messages). It holds no IR: parsing TinyLlama's kernel-level IR back takes about 8 s,
as long as lowering to it. So a program from the cache
(``runtime.CompiledProgram.restore``) has no module; ``module``, ``func`` and ``kernels``
say so (``IRNotKept``), and ``source`` is its units' CUDA.

**Key.** ``program_key(identity, arch)`` (``program_key.py``, which loads no torch):
sha256 of ``PROGRAM_CACHE_FORMAT``, the compiler's own sources (``compiler_hash``:
every .py file of the deplodock package, hashed once per process, so editing a pass
invalidates every entry), the torch and xDSL
versions, the NVRTC version and full option list (they name the CUDA headers), the arch,
and ``identity``: JSON that the frontend says determines the program.

- ``deplodock run MODEL``: ``frontends.models.program_identity``: the model's name, its
  config as it is built (config.json with deplodock's overrides and ``--layers`` applied),
  the transformers version, ``--seq``, ``--part`` and the capture device (lifted constants
  captured on the meta device hold no data). All known before transformers is imported,
  so a hit skips the import, the build on the meta device, torch.export and the lowering.
- ``deplodock.compile``: ``frontends.capture.program_fingerprint`` of the ExportedProgram
  (every node's op, name, target, arguments, shape and dtype, and the graph signature).
  The export itself still runs: a Python callable's graph depends on its code, closures
  and globals, which no key short of tracing sees. The lowering and NVRTC are skipped.
  The torch.compile backend (``torch_backend.py``) keys its graphs the same way.
- ``deplodock compile`` and ``deplo-opt`` (``program_key.OutputCache``, ``<root>/outputs/``):
  the printed IR or CUDA, keyed by the model's identity (as for ``run``, on the meta
  device), the expression's text or the .mlir file's path and bytes, with ``--ir``,
  ``--debuginfo`` and ``-p`` (deplo-opt: every option but the output's).

What the key does not see: a compiler monkeypatched at run time, and the CUDA driver that
later loads the cubins (it is the same as for the kernel cache).

**File.** ``<root>/programs/<key[:2]>/<key>.prog`` under the kernel cache's root
(``cache.default_cache_dir``: ``$DEPLODOCK_CACHE_DIR``, ...), off with
``DEPLODOCK_CACHE=0`` like it: a header (magic, format, JSON length, blob length, sha256 of
key + body), the JSON, then the blobs (cubins, constants). A file whose header, hash or
JSON does not check out reads as a miss (warned): the program is compiled again and the
entry rewritten; a bad entry never raises. Writes are atomic (``cache.atomic_write``): a
reader sees no file or a whole one, and two processes storing one program both succeed.
TinyLlama's entry is about 0.5 MB; there is no eviction (delete the directory).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .cache import DiskCache, cache_enabled, default_cache_dir
from .nvrtc import (
    CompiledKernels,
    CompiledModule,
    KernelResources,
    KernelUnit,
    parse_ptxas_resources,
)
from .program_key import PROGRAM_CACHE_FORMAT, compiler_hash, program_key
from .runtime import CompiledProgram, ExecutionPlan, Step, ValueInfo, dtype_text
from .tensor_maps import TensorMapSpec

__all__ = [
    "PROGRAM_CACHE_FORMAT",
    "ProgramCache",
    "ProgramEntry",
    "compiler_hash",
    "default_program_cache",
    "program_key",
]

_MAGIC = b"DPDKPROG"
# magic, format, JSON length, blob length, sha256(key + JSON + blobs)
_HEADER = struct.Struct("<8sIQQ32s")

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- the value


@dataclass(frozen=True)
class ProgramEntry:
    """What running a compiled program needs (see the module docstring)."""

    plan: ExecutionPlan
    kernels: CompiledKernels
    inputs: tuple[Any, ...]  # frontends.export.GraphInput per argument
    kernel_names: tuple[str, ...]
    constants: dict[str, torch.Tensor] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  # JSON: what was compiled

    @classmethod
    def of(
        cls,
        program: CompiledProgram,
        constants: Mapping[str, torch.Tensor] | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> ProgramEntry:
        """The entry of a compiled ``program`` (one compiled from IR or one restored)."""
        return cls(
            program.plan,
            program.compiled,
            tuple(program.inputs),
            tuple(program.kernel_names),
            dict(constants or {}),
            dict(info or {}),
        )

    def program(self) -> CompiledProgram:
        """The program, ready to run (no IR: see ``CompiledProgram.restore``)."""
        return CompiledProgram.restore(self.plan, self.kernels, self.inputs, self.kernel_names)


class ProgramCache(DiskCache):
    """Compiled programs on disk under ``root`` (see the module docstring for the layout)."""

    FOLDER, SUFFIX, LABEL = "programs", ".prog", "deplodock program cache"

    def _encode(self, key: str, entry: ProgramEntry) -> bytes:
        return _encode(key, entry)

    def _decode(self, key: str, data: bytes) -> ProgramEntry | None:
        return _decode(key, data)


def default_program_cache() -> ProgramCache | None:
    """The program cache the environment asks for (the kernel cache's root and switch),
    or None when caching is turned off (``DEPLODOCK_CACHE=0``)."""
    return ProgramCache(default_cache_dir()) if cache_enabled() else None


# ------------------------------------------------------------------------ the file format


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {name}")
    return dtype


def _encode(key: str, entry: ProgramEntry) -> bytes:
    blobs = io.BytesIO()

    def blob(data: bytes) -> list[int]:
        start = blobs.tell()
        blobs.write(data)
        return [start, len(data)]

    plan = entry.plan
    units = [
        {
            "key": unit.key,
            "symbol": unit.symbol,
            "source": unit.compiled.source,
            "log": unit.compiled.log,
            "kernels": list(unit.kernels),
            "cubin": blob(unit.compiled.cubin),
        }
        for unit in entry.kernels.units
    ]
    constants = None
    if entry.constants:
        saved = io.BytesIO()
        torch.save({k: v.detach() for k, v in entry.constants.items()}, saved)
        constants = blob(saved.getvalue())
    meta = {
        "arch": entry.kernels.arch,
        "plan": {
            "arg_names": list(plan.arg_names),
            "values": [
                [v.id, v.name, list(v.shape), dtype_text(v.dtype), v.nbytes, v.kind]
                + [v.first, v.last, v.offset]
                for v in plan.values
            ],
            "steps": [
                [s.kernel, _list(s.grid), _list(s.block), list(s.inputs), list(s.outputs)]
                + [[m.to_json() for m in s.tensor_maps], s.shared_bytes]
                for s in plan.steps
            ],
            "returns": list(plan.returns),
            "arena_bytes": plan.arena_bytes,
        },
        "units": units,
        "inputs": [
            [i.name, i.kind, i.target, list(i.shape), dtype_text(i.dtype)] for i in entry.inputs
        ],
        "kernel_names": list(entry.kernel_names),
        "constants": constants,
        "info": entry.info,
    }
    text = json.dumps(meta, ensure_ascii=False).encode()
    body = text + blobs.getvalue()
    digest = hashlib.sha256(key.encode() + body).digest()
    return (
        _HEADER.pack(_MAGIC, PROGRAM_CACHE_FORMAT, len(text), len(body) - len(text), digest) + body
    )


def _list(shape: Sequence[int] | None) -> list[int] | None:
    return None if shape is None else list(shape)


def _tuple(shape: Sequence[int] | None) -> tuple[int, ...] | None:
    return None if shape is None else tuple(int(n) for n in shape)


def _decode(key: str, data: bytes) -> ProgramEntry | None:
    """The entry in a file's bytes, or None if its header or hash is off (a JSON that
    checks out but does not fit raises; the caller reads both as a miss)."""
    from deplodock.dialects.signature import GraphInput

    if len(data) < _HEADER.size:
        return None
    magic, version, meta_len, blob_len, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != PROGRAM_CACHE_FORMAT:
        return None
    if _HEADER.size + meta_len + blob_len != len(data):
        return None
    body = memoryview(data)[_HEADER.size :]
    if hashlib.sha256(key.encode() + body).digest() != digest:
        return None
    meta = json.loads(bytes(body[:meta_len]))
    blobs = body[meta_len:]

    def blob(where: Sequence[int]) -> bytes:
        start, length = where
        if not 0 <= start <= start + length <= len(blobs):
            raise ValueError("a blob outside the file")
        return bytes(blobs[start : start + length])

    p = meta["plan"]
    plan = ExecutionPlan(
        tuple(p["arg_names"]),
        tuple(
            ValueInfo(id_, name, tuple(shape), _dtype(dtype), nbytes, kind, first, last, offset)
            for id_, name, shape, dtype, nbytes, kind, first, last, offset in p["values"]
        ),
        tuple(
            Step(
                kernel,
                _tuple(grid),
                _tuple(block),
                tuple(ins),
                tuple(outs),
                tuple(TensorMapSpec.from_json(m) for m in maps),
                int(shared),
            )
            for kernel, grid, block, ins, outs, maps, shared in p["steps"]
        ),
        tuple(p["returns"]),
        int(p["arena_bytes"]),
    )
    arch = meta["arch"]
    units: list[KernelUnit] = []
    unit_of: dict[str, KernelUnit] = {}
    resources: dict[str, KernelResources] = {}
    for u in meta["units"]:
        compiled = CompiledModule(
            source=u["source"],
            arch=arch,
            cubin=blob(u["cubin"]),
            log=u["log"],
            resources=parse_ptxas_resources(u["log"]),
        )
        unit = KernelUnit(u["key"], u["symbol"], compiled, tuple(u["kernels"]), cached=True)
        units.append(unit)
        report = compiled.resources.get(unit.symbol)  # as nvrtc.compile_kernels names them
        for name in unit.kernels:
            unit_of[name] = unit
            if report is not None:
                resources[name] = replace(report, name=name)
    kernels = CompiledKernels(arch, tuple(units), unit_of, resources)
    inputs = tuple(
        GraphInput(name, kind, target, tuple(shape), _dtype(dtype))
        for name, kind, target, shape, dtype in meta["inputs"]
    )
    constants: dict[str, torch.Tensor] = {}
    if meta["constants"] is not None:
        loaded = torch.load(io.BytesIO(blob(meta["constants"])), weights_only=True)
        if not isinstance(loaded, dict) or not all(
            isinstance(v, torch.Tensor) for v in loaded.values()
        ):
            raise ValueError("constants are not a dict of tensors")
        constants = loaded
    names = tuple(meta["kernel_names"])
    if any(step.grid is not None and step.kernel not in unit_of for step in plan.steps):
        raise ValueError("a step runs a kernel no unit holds")
    return ProgramEntry(plan, kernels, inputs, names, constants, dict(meta["info"]))
