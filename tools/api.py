"""The Python API: ``deplodock.compile`` and ``deplodock.lower``.

    import deplodock, torch
    model = torch.nn.RMSNorm(2048).cuda()
    x = torch.randn(1, 32, 2048, device="cuda")
    fast = deplodock.compile(model, x)            # a callable with the module's semantics
    y = fast(x)                                    # == model(x)
    loop = deplodock.lower(model, x, to="loop")    # the xDSL module at the loop level

What is compiled is what ``torch.export`` captures of ``module_or_fn(*example_inputs)``
(``strict=False``, under ``torch.no_grad()``): static shapes and dtypes, the module in
the mode it is in (call ``.eval()`` for inference). A plain function is wrapped in a
module; the tensors it closes over become constants of the program. Everything the
frontend cannot express, and every op without a decomposition, is reported at once as
a ``UserInputError`` naming the ops and their source lines.

The callable:

- takes the user inputs only (the example inputs' shapes and dtypes, CUDA tensors;
  anything else is an ``InputError`` naming the argument, see
  ``deplodock.backends.cuda.runtime.check_inputs``; a non-contiguous tensor, a
  transposed view say, is copied to a contiguous one first, as the torch.compile
  backend does: the kernels read dense row-major memory, and the program's meaning
  does not depend on strides) and returns what the module returns
  (the same tuple / dataclass structure, through ``torch.export``'s output spec);
- binds parameters and buffers from the module itself, looked up by name at each call
  and passed by address: no copy, so ``module.cuda()``, ``load_state_dict`` or an
  optimizer step after compiling are seen by the next call;
- runs on the caller's current torch stream; outputs carry no autograd history
  (deplodock compiles inference);
- with ``graph=True`` captures the whole program as one CUDA graph on the first call
  and replays it afterwards. User inputs are copied into static buffers on each call
  (so any tensor of the right shape may be passed); parameters and buffers are bound by
  address at capture, and the graph is captured again when one of them is no longer the
  same memory (a ``module.to()``, a replaced buffer). Outputs are clones of the graph's
  static outputs, so a later call never overwrites a result already returned.

Options: ``arch`` (default: the current GPU's, else sm_90), ``graph`` (False),
``poison`` (False: NaN-fill every kernel's outputs before it runs, for tests), ``cache``
(True).

Compiles are cached on disk (``$DEPLODOCK_CACHE_DIR``, else ``~/.cache/deplodock``): the
kernel cache skips NVRTC for kernels compiled before, and the program cache
(``deplodock.backends.cuda.program_cache``) keeps the whole compiled program keyed by the
exported graph (every node, shape and dtype), the arch and the compiler's own sources, so
compiling the same program again is torch.export plus a file read: no lowering, no
NVRTC. torch.export still runs because what a Python callable computes is only known by
tracing it. ``cache=False`` or ``DEPLODOCK_CACHE=0`` turns both off.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from deplodock.errors import UserInputError
from deplodock.stages import Stages, stats_from_env, unrecorded

if TYPE_CHECKING:  # xDSL loads only to lower: a program cache hit never needs it
    from xdsl.dialects.builtin import ModuleOp

__all__ = ["Compiled", "capture", "compile", "compile_exported", "lower"]


class _Function(torch.nn.Module):
    """A plain function as a module (what torch.export captures).

    torch.export records a node's source only through frames named ``forward``, so the
    function's code is renamed ``forward`` (a copy; the user's function is untouched):
    an unsupported op is then reported at the user's own line, not at this wrapper's."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = _named_forward(fn)

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _named_forward(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of the Python function ``fn`` whose code is named ``forward``."""
    if not isinstance(fn, types.FunctionType):
        return fn
    renamed = types.FunctionType(
        fn.__code__.replace(co_name="forward"),
        fn.__globals__,
        fn.__name__,
        fn.__defaults__,
        fn.__closure__,
    )
    renamed.__kwdefaults__ = fn.__kwdefaults__
    return renamed


def _as_module(module_or_fn: Any) -> torch.nn.Module:
    if isinstance(module_or_fn, torch.nn.Module):
        return module_or_fn
    if callable(module_or_fn):
        return _Function(module_or_fn)
    raise TypeError(f"expected an nn.Module or a function, not {type(module_or_fn).__name__}")


# A Python number passed to the program arrives as a 0-d tensor of torch's type for it
# (a float in the default dtype, as torch promotes a float scalar with a tensor).
_NUMBER_DTYPES: dict[type, torch.dtype] = {bool: torch.bool, int: torch.int64}


def _number_dtype(value: bool | int | float) -> torch.dtype:
    return _NUMBER_DTYPES.get(type(value), torch.get_default_dtype())


def numbers_as_tensors(inputs: tuple, device: torch.device | None = None) -> tuple:
    """``inputs`` with every Python number (bool, int, float) a 0-d tensor on ``device``."""

    def tensor(leaf: Any) -> Any:
        if isinstance(leaf, bool | int | float) and not isinstance(leaf, torch.Tensor):
            return torch.tensor(leaf, dtype=_number_dtype(leaf), device=device)
        return leaf

    return tuple(pytree.tree_map(tensor, list(inputs)))


def capture(module_or_fn: Any, *example_inputs: Any) -> tuple[torch.nn.Module, Any]:
    """(the module, its ``torch.export.ExportedProgram``) of ``module_or_fn(*inputs)``
    (see ``capture_numbers``)."""
    module, program, _ = capture_numbers(module_or_fn, *example_inputs)
    return module, program


def capture_numbers(
    module_or_fn: Any, *example_inputs: Any, keep=None
) -> tuple[torch.nn.Module, Any, bool]:
    """(the module, its ``torch.export.ExportedProgram``, whether its Python numbers were
    captured as constants) of ``module_or_fn(*inputs)``, decomposed but for ``keep``
    (default: the ops the compiler lowers itself; ``capture.export_module``).

    Python numbers among the inputs (a model scaling by a float it is called with) are
    program inputs like the tensors: each is captured as a 0-d tensor (``float``: the
    default dtype, ``int``: int64, ``bool``), so calling again with another value runs
    the same kernels. Code that needs a real Python number (a ``range(n)``, an op taking
    only a number) cannot take a tensor: such a number is captured as the constant it is,
    and ``Compiled`` compiles again when called with another value."""
    from deplodock.frontends.capture import export_module

    module, name, numbers = _user_module(module_or_fn, example_inputs)
    if not numbers:
        # a known decoder stack is traced with two layers and stitched (frontends.layers)
        inputs = tuple(example_inputs)
        stack = _stack(module, inputs, name, keep)
        program = stack.stitched() if stack is not None else None
        return module, program or export_module(module, inputs, name, keep), False
    try:
        program = export_module(module, numbers_as_tensors(example_inputs), name, keep)
    except UserInputError:
        program = None
    if program is not None and not any(
        node.target is torch.ops.aten._local_scalar_dense.default for node in program.graph.nodes
    ):
        return module, program, False
    # The code turned the tensor back into a number (.item(), an op taking only a
    # number): capture the numbers as the constants they are.
    return module, export_module(module, tuple(example_inputs), name, keep), True


def _user_module(module_or_fn: Any, example_inputs: tuple) -> tuple[torch.nn.Module, str, bool]:
    """(the module to export, its name, whether Python numbers are among the inputs);
    an input that is neither a tensor nor a number is a ``UserInputError``."""
    module = _as_module(module_or_fn)
    leaves = pytree.tree_leaves(example_inputs)
    for k, leaf in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor | bool | int | float):
            raise UserInputError(
                f"example input {k} is a {type(leaf).__name__}: deplodock compiles "
                "functions of tensors and numbers (bind other values with functools.partial)"
            )
    name = getattr(module_or_fn, "__name__", type(module).__name__)
    return module, name, any(isinstance(leaf, bool | int | float) for leaf in leaves)


def _stack(module: torch.nn.Module, inputs: tuple, name: str, keep=None):
    """``frontends.layers.export_stack`` with ``torch.export`` (decomposing all but
    ``keep``, as ``capture.export_module``): the two-layer trace of a known decoder stack,
    or None."""
    from deplodock.frontends.capture import export_module
    from deplodock.frontends.layers import export_stack

    return export_stack(module, inputs, name, lambda *args: export_module(*args, keep=keep))


def _lowered_targets(arch: str) -> frozenset[str]:
    """``frontends.capture.lowered_targets()``, from the output cache where this compiler
    stored it before: the registry of decompositions is the passes, and importing them
    (with xDSL) was a third of a warm compile's time (the trace and a program cache read
    need neither). The key is ``program_key``'s (every deplodock source file, torch's,
    xDSL's and NVRTC's versions), so an edit to any decomposition reads it afresh."""
    from deplodock.backends.cuda.program_key import default_output_cache, program_key
    from deplodock.frontends.capture import lowered_targets

    store = default_output_cache()
    key = program_key(["lowered targets"], arch) if store is not None else None
    text = store.get(key) if key is not None else None
    if text is not None:
        return frozenset(text.split())
    targets = lowered_targets()
    if key is not None:
        store.put(key, " ".join(sorted(targets)))
    return targets


def _import(program) -> ModuleOp:
    from deplodock.frontends.export import import_program

    return import_program(program).module


def lower(module_or_fn: Any, *example_inputs: Any, to: str = "loop") -> ModuleOp | str:
    """The program of ``module_or_fn(*example_inputs)`` lowered to level ``to`` (torch,
    tensor, loop, tile, kernel) as an xDSL ``ModuleOp``; ``to="cuda"`` gives the CUDA C
    source (a string)."""
    from deplodock.pipeline import LEVELS
    from deplodock.pipeline import lower as lower_module

    if to not in LEVELS:
        raise ValueError(f"unknown level {to!r} (known: {', '.join(LEVELS)})")
    _, program = capture(module_or_fn, *example_inputs)
    module = _import(program)
    if to == "cuda":
        from deplodock.backends.cuda.emit import emit_cuda

        return emit_cuda(lower_module(module, to="kernel"))
    return lower_module(module, to=to)


def _default_arch() -> str:
    from deplodock.backends.cuda.driver import current_arch, gpu_available

    return current_arch() if gpu_available() else "sm_90"


def compile(  # noqa: A001 (deplodock.compile, like torch.compile)
    module_or_fn: Any,
    *example_inputs: Any,
    arch: str | None = None,
    graph: bool = False,
    poison: bool = False,
    cache: bool = True,
) -> Compiled:
    """``module_or_fn`` compiled for ``example_inputs``' shapes and dtypes: a callable on
    CUDA tensors with the module's semantics (see the module docstring). Compiling needs
    no GPU (NVRTC); calling does. ``cache=False``: neither the program cache nor the
    kernel cache is read or written. Python's garbage collector runs rarely meanwhile
    (``boundary.collect_rarely``): the trace and the IR are many small objects that live
    until it returns."""
    from deplodock.boundary import collect_rarely

    with collect_rarely():
        return _compile(module_or_fn, example_inputs, arch, graph, poison, cache)


def _compile(module_or_fn, example_inputs, arch, graph, poison, cache) -> Compiled:
    from deplodock.target import target_for

    if arch is not None:
        target_for(arch)  # an unknown arch is an error before any work
    arch = arch or _default_arch()
    options = {"graph": graph, "poison": poison}
    title = getattr(module_or_fn, "__name__", type(module_or_fn).__name__)
    stages = stats_from_env(f"deplodock.compile({title})")
    keep = _lowered_targets(arch) if cache else None  # what the captures below keep whole
    if cache:
        module, name, numbers = _user_module(module_or_fn, example_inputs)
        stack = None
        if not numbers:
            with stages.step("two-layer trace"):
                stack = _stack(module, tuple(example_inputs), name, keep)
        if stack is not None:
            found = _compile_stack(stack, arch, stages)
            if found is not None:
                stages.print()
                program, compiled = found
                if program is None:  # from the program cache: the stack was never stitched
                    two = stack.two
                    return Compiled(
                        module,
                        None,
                        compiled,
                        constants=dict(two.constants),
                        out_spec=two.call_spec.out_spec,
                        **options,
                    )
                return Compiled(module, program, compiled, **options)
    with stages.step("capture (torch.export)"):
        module, program, specialized = capture_numbers(module_or_fn, *example_inputs, keep=keep)
    compiled = compile_exported(program, arch=arch, cache=cache, stages=stages)
    stages.print()
    result = Compiled(module, program, compiled, **options)
    if specialized:  # numbers baked in: another value compiles again
        result.specialized = _Specialized(
            _numbers(example_inputs),
            lambda *inputs: compile(
                module_or_fn, *inputs, arch=arch, graph=graph, poison=poison, cache=cache
            ),
        )
    return result


def _compile_stack(stack, arch: str, stages: Stages):
    """(the stitched program or None, its ``CompiledProgram``) of a decoder stack's
    two-layer trace: from the program cache under the stack's own key
    (``LayerStack.fingerprint``: no stitching, no import; a program cache hit is then the
    two-layer trace and a file read), else stitched and compiled (``compile_exported``)
    and stored under that key too; None where the layers cannot be stitched."""
    from deplodock.backends.cuda.program_cache import ProgramEntry, default_program_cache
    from deplodock.backends.cuda.program_key import program_key

    store = default_program_cache()
    with stages.step("program cache lookup"):
        key = program_key(["stack", stack.fingerprint()], arch) if store is not None else None
        entry = store.get(key) if key is not None else None
        if entry is not None:
            return None, entry.program()
    with stages.step("stitch the layers"):
        program = stack.stitched()
    if program is None:
        return None
    compiled = compile_exported(program, arch=arch, stages=stages)
    if key is not None:
        store.put(key, ProgramEntry.of(compiled))
    return program, compiled


def _numbers(inputs: tuple) -> tuple:
    """The Python numbers among ``inputs``, in order."""
    return tuple(
        leaf
        for leaf in pytree.tree_leaves(inputs)
        if isinstance(leaf, bool | int | float) and not isinstance(leaf, torch.Tensor)
    )


class _Specialized:
    """The numbers a program was compiled for, and its compilations for other values."""

    def __init__(self, numbers: tuple, recompile: Callable[..., Compiled]):
        self.numbers = numbers
        self.recompile = recompile
        self.others: dict[tuple, Compiled] = {}

    def for_inputs(self, inputs: tuple) -> Compiled | None:
        """None when ``inputs`` carry the numbers compiled for; else the program for
        theirs (compiled on first use)."""
        numbers = _numbers(inputs)
        if numbers == self.numbers:
            return None
        key = tuple((type(n), n) for n in numbers)
        if key not in self.others:
            self.others[key] = self.recompile(*inputs)
        return self.others[key]


def cached_exported(program, arch: str = "sm_90"):
    """The ``CompiledProgram`` of an ExportedProgram from the program cache, or None (a
    miss, or the cache turned off)."""
    from deplodock.backends.cuda.program_cache import default_program_cache

    store = default_program_cache()
    entry = store.get(_exported_key(program, arch)) if store is not None else None
    return entry.program() if entry is not None else None


def _exported_key(program, arch: str) -> str:
    from deplodock.backends.cuda.program_key import program_key
    from deplodock.frontends.capture import program_fingerprint

    return program_key(["exported", program_fingerprint(program)], arch)


def compile_exported(
    program,
    arch: str = "sm_90",
    cache: bool = True,
    imported=None,
    restack=None,
    stages: Stages | None = None,
):
    """The ``CompiledProgram`` of an ExportedProgram: from the program cache when this
    graph was compiled for ``arch`` by this compiler before (no lowering, no NVRTC),
    else lowered and compiled (from ``imported``, its import at any level, where the
    caller has it; with ``restack``, ``imported`` is the import of a stack's template,
    as in ``compile_layers_once``), then stored. ``stages`` times each step
    (``deplodock.stages``)."""
    from deplodock.backends.cuda.program_cache import ProgramEntry, default_program_cache

    stages = stages or unrecorded()
    store = default_program_cache() if cache else None
    key = None
    if store is not None:
        with stages.step("program cache lookup"):
            key = _exported_key(program, arch)
            entry = store.get(key)
            if entry is not None:
                return entry.program()
    compiled = compile_layers_once(
        program, arch, None if cache else False, imported, restack, stages=stages
    )
    if store is not None:
        with stages.step("program cache store"):
            store.put(key, ProgramEntry.of(compiled))
    return compiled


def compile_layers_once(
    program, arch: str, cache=None, imported=None, restack=None, stages: Stages | None = None
):
    """``compile_program`` of an ExportedProgram (or of ``imported``, its import, lowered
    to any level; ``restack`` where that is a stack's template): a stitched decoder stack
    lowered as its four-layer template and restacked (``frontends.layers.template_of``),
    else, or where its layers do not lower alike, the whole program (``program`` None:
    the caller has only the template, and ``NotRestackable`` reaches it); collecting
    garbage rarely (``boundary.collect_rarely``)."""
    from deplodock.boundary import collect_rarely

    with collect_rarely():
        return _compile_layers_once(program, arch, cache, imported, restack, stages)


def _compile_layers_once(program, arch, cache, imported, restack, stages):
    from deplodock.frontends.layers import template_of
    from deplodock.pipeline import compile_program
    from deplodock.restack import NotRestackable

    stages = stages or unrecorded()
    if imported is None:
        with stages.step("import (torch dialect)"):
            found = template_of(program)
            imported, restack = (_import(found[0]), found[1]) if found else (_import(program), None)
    try:
        with stages.step("lower to kernel, NVRTC"):
            return compile_program(imported, arch=arch, cache=cache, restack=restack)
    except NotRestackable:
        if program is None:  # the caller has only the template: it lowers the whole
            raise
        with stages.step("lower every layer, NVRTC"):
            return compile_program(_import(program), arch=arch, cache=cache)


def _device_of(inputs: Any) -> torch.device | None:
    """The device of the first tensor among ``inputs``; with none (a program of numbers
    only, a window function say) the current CUDA device, where there is one."""
    for leaf in _leaves(inputs):
        if isinstance(leaf, torch.Tensor):
            return leaf.device
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return None


def _flat(inputs: Any) -> bool:
    """Whether ``inputs`` is a tuple or list of tensors only (its own pytree leaves)."""
    return isinstance(inputs, tuple | list) and all(isinstance(x, torch.Tensor) for x in inputs)


def _leaves(inputs: Any) -> list:
    """``inputs``' pytree leaves; a flat sequence of tensors as it is, without the walk
    (a call's common case: the walk costs microseconds)."""
    return list(inputs) if _flat(inputs) else pytree.tree_leaves(inputs)


def _dense(leaf: Any) -> Any:
    if isinstance(leaf, torch.Tensor) and not leaf.is_contiguous():
        return leaf.contiguous()
    return leaf


class Compiled:
    """A compiled program bound to its module: call it with the user inputs."""

    def __init__(
        self,
        module: torch.nn.Module,
        program,
        compiled,
        graph=False,
        poison=False,
        *,
        constants: dict[str, torch.Tensor] | None = None,
        out_spec: pytree.TreeSpec | None = None,
    ):
        """``program``: the ExportedProgram, which gives the lifted constants and the
        output structure; or None (a program from the program cache) with ``constants``
        given, and ``out_spec`` (None: a call returns the list of outputs)."""
        self.module = module
        self.exported = program  # torch.export.ExportedProgram, or None
        self.program = compiled  # deplodock.backends.cuda.runtime.CompiledProgram
        self.graph = graph
        self.poison = poison
        self.constants = dict(program.constants) if program is not None else dict(constants or {})
        self.out_spec = program.call_spec.out_spec if program is not None else out_spec
        self.inputs = compiled.inputs  # kind and target of each argument
        self.num_user_inputs = sum(spec.kind == "input" for spec in self.inputs)
        self._constants: dict[tuple[str, torch.device], torch.Tensor] = {}
        self._graphed = None  # (static data pointers, GraphedProgram)
        self.specialized: _Specialized | None = None  # numbers captured as constants

    def arguments(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        """The program's arguments for these user inputs: the inputs themselves, the
        module's parameters and buffers (the very tensors, no copy) and the program's
        lifted constants (moved to the inputs' device once)."""
        users = _leaves(inputs)
        if len(users) != self.num_user_inputs:
            raise TypeError(f"expected {self.num_user_inputs} input tensors, got {len(users)}")
        device = _device_of(users)
        it = iter(users)
        args: list[torch.Tensor] = []
        for spec in self.inputs:
            if spec.kind == "input":
                args.append(next(it))
            elif spec.kind in ("param", "buffer"):
                tensor = (
                    self.module.get_parameter(spec.target)
                    if spec.kind == "param"
                    else self.module.get_buffer(spec.target)
                )
                if device is not None and tensor.device != device:
                    from deplodock.backends.cuda.runtime import InputError

                    raise InputError(
                        f"the module's {'parameter' if spec.kind == 'param' else 'buffer'} "
                        f"{spec.target} is on {tensor.device}, the inputs on {device}: move "
                        "the module (module.to(device))"
                    )
                args.append(tensor)
            else:
                args.append(self._constant(spec.target, device))
        return args

    def _constant(self, target: str, device: torch.device | None) -> torch.Tensor:
        tensor = self.constants[target]
        if device is None or tensor.device == device:
            return tensor
        key = (target, device)
        if key not in self._constants:
            self._constants[key] = tensor.to(device).contiguous()
        return self._constants[key]

    def check(self, *inputs: torch.Tensor) -> None:
        """The user inputs checked (an ``InputError`` naming the input), before the
        module's own tensors are."""
        from deplodock.backends.cuda.runtime import check_tensor, fits

        users = _leaves(inputs)
        if len(users) != self.num_user_inputs:
            raise TypeError(f"expected {self.num_user_inputs} input tensors, got {len(users)}")
        specs = [spec for spec in self.inputs if spec.kind == "input"]
        for k, (spec, tensor) in enumerate(zip(specs, users, strict=True)):
            if not fits(tensor, spec.shape, spec.dtype):
                check_tensor(f"input {k} (%{spec.name})", tensor, spec.shape, spec.dtype)

    def __call__(self, *inputs: Any) -> Any:
        if self.specialized is None and _flat(inputs):
            # the common call, tensors only: no pytree walks (each costs microseconds)
            inputs = tuple(_dense(x) for x in inputs)
        else:
            if self.specialized is not None:
                other = self.specialized.for_inputs(inputs)
                if other is not None:
                    return other(*inputs)
                # the numbers were compiled in; the tensors stay, in order (a None is a
                # leaf of torch 2.11's pytree and no leaf of 2.13's: dropped either way)
                leaves = pytree.tree_leaves(list(inputs))
                inputs = tuple(
                    v for v in leaves if v is not None and not isinstance(v, bool | int | float)
                )
            else:
                inputs = numbers_as_tensors(inputs, _device_of(inputs))
            inputs = tuple(pytree.tree_map(_dense, list(inputs)))
        self.check(*inputs)
        args = self.arguments(*inputs)
        with torch.no_grad():
            if self.graph:
                outputs = self._replay(args)
            else:
                outputs = self.program(*args, poison=self.poison)
        if self.out_spec is None:
            return outputs
        return pytree.tree_unflatten(outputs, self.out_spec)

    def _replay(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        static = [spec.kind != "input" for spec in self.inputs]
        pointers = tuple(a.data_ptr() for a, s in zip(args, static, strict=True) if s)
        if self._graphed is None or self._graphed[0] != pointers:
            self._graphed = (pointers, self.program.capture(*args, static=static))
        return self._graphed[1](*args)

    def __repr__(self) -> str:
        kernels = len(self.program.kernel_names)
        return f"<deplodock.Compiled {type(self.module).__name__}: {kernels} kernels>"
