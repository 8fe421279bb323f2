"""Run a kernel-level program on the GPU: one launch per kernel, on torch's memory.

``CompiledProgram(module)`` emits CUDA for every ``kernel.kernel`` of ``@forward`` and
compiles it for the target (this needs no GPU: the cubin and the resource report exist
after construction). The executor around it:

- **a plan, computed once** (``plan_program``, pure Python over the kernel-level
  ``@forward``, so it is tested without a GPU): the steps in order, and for every
  intermediate tensor its lifetime (the step that writes it to the last that reads it)
  and a byte offset in one arena, laid out greedily by size so tensors whose lifetimes
  do not overlap share memory. Results that ``@forward`` returns are not in the arena:
  each call allocates them, and the caller keeps them.
- **inputs checked** before anything runs (``check_inputs``): count, shape, dtype,
  contiguity, one CUDA device; an ``InputError`` names the argument. A non-contiguous input
  is an error rather than a silent copy (see ``check_inputs`` for why).
- **launches on the caller's current torch stream**; the arena is taken from torch's
  caching allocator on that stream per call, so reuse is stream-ordered like any torch op.
- **poison** (``poison=True``, the default for tests and ``deplodock run``): every
  kernel's outputs are filled with NaN (integers: -1) right before it runs, so an element
  no thread writes shows in the comparison even where the arena reuses memory.
- **tensor maps** (TMA kernels, sm_90): a step whose kernel copies boxes of its inputs
  with TMA (``Step.tensor_maps``) gets one encoded tensor map per box after its buffers
  (``tensor_maps.py``: ``cuTensorMapEncodeTiled`` over the input's address, shape and
  strides), kept per address, so a graph's replays and repeated calls on the same
  memory encode nothing.
- **one CUDA graph** (``program.capture(*inputs, static=...)`` → ``GraphedProgram``):
  the whole program recorded once and replayed; non-static inputs are copied into static
  buffers per call, static ones (weights) are bound by address and must stay the same
  tensors.

Running needs the plan, the compiled kernels and the arguments' specs, never the IR: a
program read back from the program cache (``program_cache.py``) is
``CompiledProgram.restore(plan, compiled, inputs, kernel_names)``, with no module. Its
``module``, ``func`` and ``kernels`` raise ``IRNotKept``; ``source`` is the CUDA of its
distinct compile units (what NVRTC compiled), not the whole program's.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import torch

from deplodock.backends.cuda.cache import KernelCache
from deplodock.backends.cuda.driver import LoadedKernels, NoGpuError, current_arch, gpu_available
from deplodock.backends.cuda.nvrtc import CompiledKernels, KernelResources, compile_kernels
from deplodock.backends.cuda.tensor_maps import (
    TensorMapCache,
    TensorMapSpec,
    kernel_tensor_maps,
    tensor_map_arguments,
)
from deplodock.target import target_for

if TYPE_CHECKING:  # the IR side (xDSL, the dialects, the emitter) loads only to compile: a
    # program restored from the program cache runs without it
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from deplodock.backends.cuda.emit import RenamedCopies
    from deplodock.dialects import kernel
    from deplodock.dialects.signature import GraphInput


def forward_func(module: ModuleOp, entry: str = "forward") -> func.FuncOp:
    from xdsl.dialects import func

    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            return op
    raise ValueError(f"the module has no func.func @{entry}")


MAX_CACHED_TENSOR_MAPS = 4096
"""Encoded tensor maps a program keeps (by address); past this the cache starts over, so
eager calls on ever new tensors do not grow it without bound."""


class IRNotKept(RuntimeError):
    """The program was read back from the program cache, which keeps no IR."""


def binary_arch(arch: str) -> str:
    """The architecture to compile a program whose schedule was planned for ``arch`` to:
    the GPU's own when one is present and newer (a program planned for sm_80 runs on an
    H200 as sm_90 code: it uses only what sm_80 has, and an sm_80 cubin would not load),
    else ``arch`` (no GPU: compile only; the same GPU; an arch-specific ``sm_90a``)."""
    if not gpu_available() or arch.endswith("a"):
        return arch
    device = current_arch()
    newer = target_for(device).sm > target_for(arch).sm
    return device if newer else arch


class DeferredCopies(Protocol):
    """A kernel-level module missing kernels that copy others under moved names, made on
    ``complete`` (a decoder stack's interior layers: ``deplodock.restack.Stacked``):
    ``copies`` maps each copy to (its template, how many layers on), ``rename(text,
    times)`` moves names, ``unmade()`` names the copies not in the module, ``listing()``
    lists the whole program, ``renamed_copies()`` says how the emitter may rename them
    (``emit.DeferredStack``, what the emitter reads, is a part of this)."""

    done: bool
    copies: Mapping[str, tuple[str, int]]

    def rename(self, text: str, times: int) -> str: ...
    def unmade(self) -> list[str]: ...
    def listing(self) -> Listing: ...
    def complete(self) -> None: ...
    def renamed_copies(self) -> RenamedCopies | None: ...


class CompiledProgram:
    """A kernel-level program compiled kernel by kernel, callable on CUDA tensors."""

    def __init__(
        self,
        module: ModuleOp,
        arch: str = "sm_90",
        compiled: CompiledKernels | None = None,
        *,
        cache: KernelCache | bool | None = None,
        jobs: int | None = None,
        stacked: DeferredCopies | None = None,
    ):
        """Compiles every kernel as a unit of its own (``nvrtc.compile_kernels``): kernels
        identical up to names compile once, units already in the disk cache are read back
        (``cache``: None for the environment's, False for none), the rest compile on
        ``jobs`` threads. ``compiled``: the kernels when the caller already compiled them.
        ``source`` is the whole program's CUDA, as one file (for reading). On a GPU newer
        than ``arch`` the binary is the GPU's (``binary_arch``).

        ``stacked``: ``module`` is a decoder stack whose interior copies are not made yet
        (``DeferredCopies``): the plan lists them from their template, each runs its
        template's unit (``emit.shared_units``; else they are made and emitted), and they
        are made when the IR is asked for (``module``, ``func``, ``kernels``, ``source``)."""
        from deplodock.backends.cuda.emit import RenamedCopies, emit_kernel_sources, shared_units

        self._module_op: ModuleOp | None = module
        self._func: func.FuncOp | None = forward_func(module)
        self._kernels: list[kernel.KernelOp] | None = None
        self._stacked = stacked if stacked is not None and not stacked.done else None
        self._loaded: LoadedKernels | None = None
        if compiled is not None:
            self.compiled: CompiledKernels = compiled
            return
        sources = emit_kernel_sources(module)
        aliases = None
        if self._stacked is not None:
            copies = RenamedCopies(self._stacked.copies, self._stacked.rename)
            aliases = shared_units(sources, copies, self._stacked.unmade())
            if aliases is None:  # not shown alike: made and emitted
                self._complete()
                sources = emit_kernel_sources(module)
        self.compiled = compile_kernels(
            sources,
            arch=binary_arch(arch),
            cache=cache,
            jobs=jobs,
            aliases=aliases,
            order=self.kernel_names if aliases else (),
        )

    def _complete(self) -> None:
        """Make a stack's interior copies (``stacked``), once."""
        if self._stacked is not None:
            self._stacked.complete()
            self._stacked = None

    @classmethod
    def restore(
        cls,
        plan: ExecutionPlan,
        compiled: CompiledKernels,
        inputs: Sequence[GraphInput],
        kernel_names: Sequence[str],
    ) -> CompiledProgram:
        """A program from what running it needs (as the program cache keeps it), with no
        IR: ``module``, ``func`` and ``kernels`` raise ``IRNotKept``."""
        self = cls.__new__(cls)
        self._module_op = self._func = self._kernels = self._stacked = None
        self.compiled = compiled
        self._loaded = None
        # The cached properties' values, given rather than computed from the IR.
        self.__dict__.update(plan=plan, inputs=list(inputs), kernel_names=tuple(kernel_names))
        return self

    @property
    def from_cache(self) -> bool:
        """True for a program restored without IR (``restore``)."""
        return self._module_op is None

    def _ir(self, what: str):
        self._complete()
        if what == "kernels" and self._kernels is None and self._func is not None:
            from deplodock.dialects import kernel

            self._kernels = [op for op in self._func.body.walk() if isinstance(op, kernel.KernelOp)]
        value = {"module": self._module_op, "func": self._func, "kernels": self._kernels}[what]
        if value is None:
            raise IRNotKept(
                f"this program came from the program cache, which keeps no IR (no {what}): "
                "only the plan, the kernels' cubins and the arguments' specs; compile with "
                "the cache off (DEPLODOCK_CACHE=0, deplodock run --no-cache) for the IR"
            )
        return value

    @property
    def module(self) -> ModuleOp:
        """The kernel-level module (``IRNotKept`` for a program from the cache)."""
        return self._ir("module")

    @property
    def func(self) -> func.FuncOp:
        """Its ``@forward`` (``IRNotKept`` for a program from the cache)."""
        return self._ir("func")

    @property
    def kernels(self) -> list[kernel.KernelOp]:
        """Its ``kernel.kernel`` ops in program order (``IRNotKept`` for a program from
        the cache; ``kernel_names`` and ``plan.steps`` hold what running needs)."""
        return self._ir("kernels")

    @functools.cached_property
    def kernel_names(self) -> tuple[str, ...]:
        """The kernels' names, in program order."""
        return tuple(op.name for op in self._listing.ops if op.launch is not None)

    @functools.cached_property
    def _listing(self) -> Listing:
        """``@forward`` as the plan reads it (a stack's copies listed from their template)."""
        return self._stacked.listing() if self._stacked is not None else listing(self.func)

    @functools.cached_property
    def inputs(self) -> list[GraphInput]:
        """Each argument of @forward: name, kind (input, param, buffer, constant), the
        module's target, shape and dtype (``frontends.export.graph_inputs``)."""
        from deplodock.dialects.signature import graph_inputs

        # the plan has named them; a stack's arguments are all there before its copies
        fn = self._func if self._func is not None else self.func
        return graph_inputs(fn, self.plan.arg_names)

    @functools.cached_property
    def source(self) -> str:
        """The whole program's CUDA as one file, for reading (emitted on first use: the
        compile itself works kernel by kernel). A program from the cache has no IR to
        emit: its source is each distinct compile unit's, as NVRTC compiled it."""
        if self._module_op is None:
            return "\n".join(
                f"// unit {unit.symbol}: kernels {', '.join(unit.kernels)}\n" + unit.compiled.source
                for unit in self.compiled.units
            )
        from deplodock.backends.cuda.emit import emit_cuda

        if self._stacked is not None:  # a stack's copies renamed, not made (``emit_cuda``)
            return emit_cuda(self._module_op, self._stacked)
        return emit_cuda(self.module)

    @property
    def resources(self) -> dict[str, KernelResources]:
        """ptxas's report per kernel name (kernels sharing a unit share its numbers)."""
        return self.compiled.resources

    def _module(self) -> LoadedKernels:
        if not gpu_available():
            raise NoGpuError("no CUDA GPU is available on this machine: compiled, not run")
        if self._loaded is None:
            self._loaded = LoadedKernels(self.compiled)
        return self._loaded

    # ------------------------------------------------------------------ execution

    @functools.cached_property
    def plan(self) -> ExecutionPlan:
        """The buffer plan of @forward (computed once, from the kernel order)."""
        return plan_program(self._listing)

    def __call__(self, *inputs: torch.Tensor, poison: bool = True) -> list[torch.Tensor]:
        """Run @forward on CUDA tensors, on the caller's current stream; returns its
        results as fresh tensors (the caller owns them).

        Inputs are checked first (count, shape, dtype, device, contiguity: an
        ``InputError`` naming the argument). Intermediates live in one arena laid out by
        ``plan`` (allocated per call from torch's caching allocator, so reusing it is
        ordered on the stream). ``poison=True`` fills every kernel's outputs with NaN
        (integers: -1) right before the kernel runs, so an element no thread writes shows
        in a comparison; ``poison=False`` (timing, production) skips the fills."""
        plan = self.plan
        args = check_inputs(plan, inputs)
        device = _device_of(args)
        loaded = self._module()
        arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device)
        outputs = {i: _empty(plan.values[i], device) for i in plan.output_ids}
        self._run_into(loaded, args, arena, outputs, poison)
        return [outputs[i] if i in outputs else args[i] for i in plan.returns]

    def capture(
        self, *inputs: torch.Tensor, static: Sequence[bool] | None = None, poison: bool = False
    ) -> GraphedProgram:
        """@forward captured once as one CUDA graph, replayed by calling the result; see
        ``GraphedProgram``. ``static[i]`` marks argument i as bound by address (weights:
        a later call must pass the very same tensor); the others are copied into static
        buffers on every call. Default: every argument is copied."""
        return GraphedProgram(self, inputs, static=static, poison=poison)

    def _functions(self, loaded) -> list:
        """The launchable kernel of every step, looked up once per loaded module."""
        cached = getattr(self, "_launchers", None)
        if cached is None or cached[0] is not loaded:
            cached = (loaded, [loaded.function(step.kernel) for step in self.plan.steps])
            self._launchers = cached
        return cached[1]

    def _run_into(
        self,
        loaded,
        args: Sequence[torch.Tensor],
        arena: torch.Tensor,
        outputs: dict[int, torch.Tensor],
        poison: bool,
    ) -> None:
        """Launch every step on the current stream: arguments from ``args``, results
        into ``outputs`` (value id → tensor) or at their offset in ``arena``."""
        plan = self.plan
        functions = self._functions(loaded)
        stream = torch.cuda.current_stream(arena.device)
        base = arena.data_ptr()
        pointers: list[object] = [None] * len(plan.values)
        for i, tensor in enumerate(args):
            pointers[i] = tensor
        for i, tensor in outputs.items():
            pointers[i] = tensor
        for info in plan.values:
            if info.offset is not None:
                pointers[info.id] = ctypes.c_void_p(base + info.offset)
        for step, function in zip(plan.steps, functions, strict=True):
            if poison:
                for i in step.outputs:
                    _poison(_view(plan.values[i], arena, outputs))
            launch_args = [pointers[i] for i in step.inputs + step.outputs]
            if step.tensor_maps:
                launch_args += self._tensor_map_args(step, pointers)
            function.launch(
                step.grid, step.block, launch_args, shared_bytes=step.shared_bytes, stream=stream
            )

    def _tensor_map_args(self, step: Step, pointers: Sequence[object]) -> list:
        """The step's tensor maps over its inputs as they lie now (encoded once per
        address: the arena's and a captured graph's buffers stay put)."""
        cache = self.__dict__.get("_tensor_map_cache")
        if cache is None or len(cache) > MAX_CACHED_TENSOR_MAPS:
            cache = self.__dict__["_tensor_map_cache"] = TensorMapCache()
        described = []
        for i in step.inputs:
            info, pointer = self.plan.values[i], pointers[i]
            address = pointer.data_ptr() if isinstance(pointer, torch.Tensor) else pointer.value
            dtype = dtype_text(info.dtype)
            described.append((address, info.shape, dtype, info.dtype.itemsize))
        return tensor_map_arguments(step.tensor_maps, described, cache)


class GraphedProgram:
    """A CompiledProgram captured as one CUDA graph (``program.capture(*inputs)``).

    Capture runs the program once eagerly (kernel lookups and module loading happen
    outside the capture), then records every launch into one ``torch.cuda.CUDAGraph``
    that reads static buffers and writes a static arena and static outputs. A call
    checks its inputs like the program does, copies the non-static ones into their
    buffers, checks that the static ones are the captured tensors (same data pointer:
    weights are bound by address, never copied), replays on the current stream and
    returns clones of the outputs (a later replay overwrites the static ones).
    """

    def __init__(
        self,
        program: CompiledProgram,
        inputs: Sequence[torch.Tensor],
        static: Sequence[bool] | None = None,
        poison: bool = False,
    ):
        plan = program.plan
        args = check_inputs(plan, inputs)
        if static is None:
            static = [False] * len(args)
        if len(static) != len(args):
            raise ValueError(f"static: {len(static)} flags for {len(args)} arguments")
        self.program = program
        self.static = tuple(bool(s) for s in static)
        device = _device_of(args)
        loaded = program._module()
        self.args = [a if s else a.clone() for a, s in zip(args, self.static, strict=True)]
        self.arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device)
        self.outputs = {i: _empty(plan.values[i], device) for i in plan.output_ids}
        # Warm up outside the capture (loads the module, looks the kernels up).
        program._run_into(loaded, self.args, self.arena, self.outputs, poison)
        torch.cuda.synchronize(device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            program._run_into(loaded, self.args, self.arena, self.outputs, poison)
        torch.cuda.synchronize(device)

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        plan = self.program.plan
        args = check_inputs(plan, inputs)
        for k, (given, held, static) in enumerate(zip(args, self.args, self.static, strict=True)):
            if static:
                if given.data_ptr() != held.data_ptr():
                    raise InputError(
                        f"argument {plan.arg_names[k]} was captured as static (bound by "
                        "address) but a different tensor was given: capture again"
                    )
            elif given.data_ptr() != held.data_ptr():
                held.copy_(given)
        self.graph.replay()
        return [
            self.outputs[i].clone() if i in self.outputs else self.args[i].clone()
            for i in plan.returns
        ]


# ------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class ValueInfo:
    """One tensor of @forward: an argument, an intermediate or a returned result."""

    id: int  # arguments first (0…n-1), then each op's results in program order
    name: str  # the printed SSA name
    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    kind: str  # "arg" | "intermediate" | "output" (returned: allocated per call)
    first: int  # the step that writes it (-1 for arguments)
    last: int  # the last step that reads it (== first when nothing reads it)
    offset: int | None = None  # byte offset in the arena (intermediates only)


@dataclass(frozen=True)
class Step:
    """One kernel launch: which values it reads and writes, and the tensor maps it takes
    after them (TMA: one per input box, encoded at launch from the input's address)."""

    kernel: str
    grid: tuple[int, ...] | None  # None above the kernel level (planning only)
    block: tuple[int, ...] | None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    tensor_maps: tuple[TensorMapSpec, ...] = ()
    shared_bytes: int = 0  # dynamic shared memory the launch asks for (past 48 KB)


@dataclass(frozen=True)
class ExecutionPlan:
    """How @forward runs: its steps in order and where every intermediate lives.

    Intermediates share one arena: two of them may overlap in memory only when their
    lifetimes (from the step that writes one to the last step that reads it) are
    disjoint. A kernel's outputs never overlap its inputs, since both are live at that
    step. Returned values are allocated per call (the caller keeps them)."""

    arg_names: tuple[str, ...]
    values: tuple[ValueInfo, ...]
    steps: tuple[Step, ...]
    returns: tuple[int, ...]
    arena_bytes: int

    @property
    def num_args(self) -> int:
        return len(self.arg_names)

    @property
    def output_ids(self) -> tuple[int, ...]:
        return tuple(v.id for v in self.values if v.kind == "output")

    @property
    def intermediates(self) -> tuple[ValueInfo, ...]:
        return tuple(v for v in self.values if v.kind == "intermediate")

    @property
    def unshared_bytes(self) -> int:
        """What the intermediates would take with a buffer each (no reuse)."""
        return sum(_aligned(v.nbytes) for v in self.intermediates)

    def peak_live_bytes(self) -> int:
        """The most intermediate bytes live at one step: no layout can use less."""
        return max(
            (
                sum(_aligned(v.nbytes) for v in self.intermediates if v.first <= s <= v.last)
                for s in range(len(self.steps))
            ),
            default=0,
        )


ARENA_ALIGNMENT = 256
"""Every intermediate starts at a multiple of this many bytes in the arena (≥ the 16 the
kernels' vector accesses need; 256 as cudaMalloc gives)."""


def _aligned(n: int) -> int:
    return -(-n // ARENA_ALIGNMENT) * ARENA_ALIGNMENT


@dataclass(frozen=True)
class Listed:
    """One op of ``@forward`` as its plan reads it: its name (a kernel's symbol, else the
    op's), the ids of the values it reads, the printed name and type of each result, and
    a kernel's launch (grid, block, tensor maps, dynamic shared bytes; None for an op
    above the kernel level)."""

    name: str
    operands: tuple[int, ...]
    results: tuple[tuple[str, object], ...]
    launch: tuple | None = None


@dataclass(frozen=True)
class Listing:
    """``@forward`` as its plan reads it, without its kernels' bodies: each argument's
    printed name and type, each op (``Listed``; value ids count the arguments, then each
    op's results in order), the ids returned. ``listing`` reads it from IR; a decoder
    stack whose interior copies are not made yet (``deplodock.restack``) lists them from
    their template."""

    args: tuple[tuple[str, object], ...]
    ops: tuple[Listed, ...]
    returns: tuple[int, ...]


def listed_as(op: Operation) -> tuple[str, tuple | None]:
    """An op's name and launch as ``Listed`` holds them: a kernel's symbol and (grid,
    block, tensor maps, dynamic shared bytes); another op's symbol or op name, and None."""
    from deplodock.dialects import kernel

    if isinstance(op, kernel.KernelOp):
        launch = (
            op.grid_shape,
            op.block_shape,
            tuple(kernel_tensor_maps(op)),
            op.dynamic_shared_bytes(),
        )
        return op.sym_name.data, launch
    return getattr(getattr(op, "sym_name", None), "data", op.name), None


def listing(fn: func.FuncOp) -> Listing:
    """``fn`` (a ``@forward`` whose body is ops on tensors and a ``func.return``) listed."""
    from xdsl.dialects import func

    from deplodock.dialects.torch import printed_names

    names = printed_names(fn.body.blocks)
    block = fn.body.block
    ids = {a: k for k, a in enumerate(block.args)}
    ops: list[Listed] = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            return Listing(
                tuple((names[a], a.type) for a in block.args),
                tuple(ops),
                tuple(ids[v] for v in op.arguments),
            )
        operands = tuple(ids[v] for v in op.operands)
        for r in op.results:
            ids[r] = len(ids)
        name, launch = listed_as(op)
        ops.append(Listed(name, operands, tuple((names[r], r.type) for r in op.results), launch))
    raise ValueError(f"@{fn.sym_name.data} has no func.return")


def plan_program(fn: func.FuncOp | Listing) -> ExecutionPlan:
    """The execution plan of ``fn`` (a ``@forward``: kernels at the kernel level; any level
    plans, only the kernel level runs), or of its ``Listing``. Pure Python: no GPU, no
    torch allocation."""
    from xdsl.dialects.builtin import TensorType

    from deplodock.dialects.signature import torch_dtype

    listed = fn if isinstance(fn, Listing) else listing(fn)
    shapes: list[tuple[tuple[int, ...], torch.dtype, str]] = []

    def add(name: str, type_) -> int:
        if not isinstance(type_, TensorType):
            raise ValueError(f"%{name} is not a tensor ({type_})")
        shapes.append((tuple(type_.get_shape()), torch_dtype(type_.element_type), name))
        return len(shapes) - 1

    for name, type_ in listed.args:
        add(name, type_)
    num_args = len(shapes)
    steps: list[Step] = []
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, op in enumerate(listed.ops):
        for i in op.operands:
            last[i] = index
        outs = tuple(add(name, type_) for name, type_ in op.results)
        for i in outs:
            first[i] = last[i] = index
        grid, block, maps, shared = op.launch or (None, None, (), 0)
        steps.append(Step(op.name, grid, block, op.operands, outs, maps, shared))
    returns = listed.returns
    returned = set(returns)
    values: list[ValueInfo] = []
    for i, (shape, dtype, name) in enumerate(shapes):
        nbytes = math.prod(shape) * dtype.itemsize
        if i < num_args:
            kind, lo, hi = "arg", -1, last.get(i, -1)
        else:
            kind = "output" if i in returned else "intermediate"
            lo, hi = first[i], last[i]
        values.append(ValueInfo(i, name, shape, dtype, nbytes, kind, lo, hi))
    offsets, arena = _assign_offsets([v for v in values if v.kind == "intermediate"])
    values = [replace(v, offset=offsets[v.id]) if v.id in offsets else v for v in values]
    return ExecutionPlan(
        tuple(name for name, _ in listed.args),
        tuple(values),
        tuple(steps),
        returns,
        arena,
    )


def _assign_offsets(buffers: Sequence[ValueInfo]) -> tuple[dict[int, int], int]:
    """Offsets in one arena for buffers with lifetimes [first, last]: greedy by size
    (largest first, each at the lowest-addressed gap that fits among the buffers
    already placed whose lifetimes overlap its own; TFLite's "greedy by size").
    Returns (value id → offset, arena bytes)."""
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    offsets: dict[int, int] = {}
    arena = 0
    for b in sorted(buffers, key=lambda b: (-b.nbytes, b.first, b.id)):
        size = _aligned(b.nbytes)
        busy = sorted(
            (start, end) for start, end, lo, hi in placed if lo <= b.last and b.first <= hi
        )
        offset = 0
        for start, end in busy:
            if start - offset >= size:
                break
            offset = max(offset, end)
        offsets[b.id] = offset
        placed.append((offset, offset + size, b.first, b.last))
        arena = max(arena, offset + size)
    return offsets, arena


# ------------------------------------------------------------------ input checking


class InputError(ValueError):
    """An argument that does not fit the compiled program (says which and why)."""


VECTOR_ALIGNMENT = 16
"""Kernels' vector accesses (``vector_access``) assume every buffer starts 16-byte aligned."""


def check_inputs(plan: ExecutionPlan, inputs: Sequence[object]) -> list[torch.Tensor]:
    """``inputs`` checked against the program's arguments, in order: each a tensor of
    the compiled shape and dtype, contiguous, on one CUDA device (checked in that order).

    A non-contiguous tensor is an error, not a silent copy: the kernels index dense
    row-major memory, a copy costs a full read and write of the tensor on every call
    (and inside a captured graph, on every replay), and the caller is the one who knows
    whether it is worth it (``x.contiguous()``). A contiguous tensor whose data starts
    off the 16-byte alignment the vector accesses need (a view into the middle of a
    buffer) is the one case copied here: nothing the caller can do about it is cheaper,
    and the copy is exact."""
    if len(inputs) != plan.num_args:
        raise InputError(
            f"@forward takes {plan.num_args} tensors ({', '.join(plan.arg_names)}), "
            f"got {len(inputs)}"
        )
    device: torch.device | None = None
    checked: list[torch.Tensor] = []
    for k, tensor in enumerate(inputs):
        info = plan.values[k]
        if not fits(tensor, info.shape, info.dtype):  # the message only for a misfit
            check_tensor(f"argument {k} (%{info.name})", tensor, info.shape, info.dtype)
        if device is None:
            device = tensor.device
        elif tensor.device != device:
            raise InputError(
                f"argument {k} (%{info.name}) is on {tensor.device}, the other arguments "
                f"on {device}"
            )
        if tensor.data_ptr() % VECTOR_ALIGNMENT:
            tensor = tensor.clone()  # see the docstring: exact, and nothing cheaper exists
        checked.append(tensor)
    return checked


def check_tensor(
    what: str, tensor: object, shape: tuple[int, ...], dtype: torch.dtype
) -> torch.Tensor:
    """``tensor`` if it is a tensor of ``shape`` and ``dtype``, contiguous, on a CUDA
    device (checked in that order), else an ``InputError`` about ``what``."""
    if fits(tensor, shape, dtype):
        return tensor
    # the messages are built only on failure: a call checks every argument, every time
    if not isinstance(tensor, torch.Tensor):
        want = f"{_shape_text(shape)} {dtype_text(dtype)}"
        raise InputError(f"{what}: expected a tensor {want}, got {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(shape) or tensor.dtype != dtype:
        want = f"{_shape_text(shape)} {dtype_text(dtype)}"
        got = f"{_shape_text(tuple(tensor.shape))} {dtype_text(tensor.dtype)}"
        which = "shape" if tuple(tensor.shape) != tuple(shape) else "dtype"
        raise InputError(f"{what}: expected {which} {want}, got {got}")
    if not tensor.is_contiguous():
        raise InputError(
            f"{what} is not contiguous (strides {tuple(tensor.stride())} for shape "
            f"{tuple(tensor.shape)}): the kernels read dense row-major memory; pass "
            ".contiguous() (a copy)"
        )
    if tensor.device.type != "cuda":
        raise InputError(
            f"{what} is on {tensor.device}: compiled programs run on CUDA tensors "
            "(move it with .cuda())"
        )
    return tensor


def fits(tensor: object, shape: tuple[int, ...], dtype: torch.dtype) -> bool:
    """Whether ``check_tensor`` passes ``tensor``, tested without building a message
    (a caller that formats ``what`` per argument tests this first)."""
    return (
        isinstance(tensor, torch.Tensor)
        and tensor.dtype == dtype
        and tensor.shape == shape
        and tensor.is_cuda
        and tensor.is_contiguous()
    )


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def dtype_text(dtype: torch.dtype) -> str:
    """``torch.float32`` as ``float32``: how messages and the program cache name a dtype."""
    return str(dtype).removeprefix("torch.")


def _device_of(args: Sequence[torch.Tensor]) -> torch.device:
    if args:
        return args[0].device
    return torch.device("cuda", torch.cuda.current_device())


def _empty(info: ValueInfo, device: torch.device) -> torch.Tensor:
    return torch.empty(info.shape, dtype=info.dtype, device=device)


def _view(info: ValueInfo, arena: torch.Tensor, outputs: dict[int, torch.Tensor]):
    if info.offset is None:
        return outputs[info.id]
    return arena[info.offset : info.offset + info.nbytes].view(info.dtype).view(info.shape)


def _poison(tensor: torch.Tensor) -> None:
    """NaN for floating point, -1 for integers: a value no correct kernel leaves."""
    tensor.fill_(float("nan") if tensor.dtype.is_floating_point else -1)
