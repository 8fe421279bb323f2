"""Capturing a PyTorch program: ``torch.export`` to Core ATen, and the fingerprint the
program cache keys it on.

This half of the frontend never loads xDSL or the passes: a warm ``deplodock.compile``
is a capture, a key and a file read (``frontends/export.py`` imports the captured program
into the ``torch`` dialect, the cold path). ``export_module`` is the capture every
frontend uses; ``to_core_aten`` decomposes what the compiler does not lower itself with
PyTorch's own tables; ``program_fingerprint`` and ``graph_fingerprint`` are what
``import_program`` would import, as JSON.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence

import torch

from deplodock.errors import UserInputError


def target_name(op: torch._ops.OpOverload) -> str:
    """`add.Tensor` for aten ops; other namespaces keep theirs (`prims.x.default`)."""
    name = str(op)  # "aten.add.Tensor"
    return name.removeprefix("aten.")


_TORCH_OWN_DEPRECATION = r"`isinstance\(treespec, LeafSpec\)` is deprecated"


def export_module(
    module: torch.nn.Module, inputs: tuple, name: str, keep: Collection[str] | None = None
) -> torch.export.ExportedProgram:
    """``torch.export.export(module, inputs, strict=False)`` under ``torch.no_grad()``,
    then ``to_core_aten`` keeping ``keep`` (default: ``lowered_targets()``): the capture
    every frontend uses; a failure is a ``UserInputError`` naming ``name`` with the first
    paragraph of torch's message."""
    try:
        with torch.no_grad():
            ep = torch.export.export(module, inputs, strict=False)
            return to_core_aten(ep, lowered_targets() if keep is None else keep)
    except Exception as e:
        message = str(e).strip().split("\n\n", 1)[0][:400]
        raise UserInputError(
            f"torch.export could not capture {name}: {type(e).__name__}: {message}"
        ) from None


def to_core_aten(
    ep: torch.export.ExportedProgram, keep: Collection[str]
) -> torch.export.ExportedProgram:
    """``ep`` with every ATen op outside ``keep`` decomposed by PyTorch's own tables
    (``torch.export.default_decompositions()``, the Core ATen decompositions Inductor
    starts from), the ops in ``keep`` left whole.

    ``keep`` is what the compiler lowers itself (``deplodock.passes.torch.decompose.
    supported_targets``): its fused forms (sdpa, rms_norm, softmax, linear, silu) stay
    whole, and so does every op it already knows, so a program made only of those is
    returned as it is, not re-traced (its IR, and its kernels, are what they were)."""

    def foreign(node: torch.fx.Node) -> bool:
        target = node.target
        return (
            node.op == "call_function"
            and isinstance(target, torch._ops.OpOverload)
            and bool(target._schema.returns)
            and target_name(target) not in keep
        )

    if not any(foreign(node) for node in ep.graph.nodes):
        return ep
    with _cia_ops_cached(_natural_cia(frozenset(keep))) as left_out:
        table = dict(_default_decompositions())
        for op in [op for op in table if target_name(op) in keep or op in left_out]:
            del table[op]
        with warnings.catch_warnings():
            # torch 2.13's run_decompositions deep-copies its own tree specs through a
            # deprecated isinstance check: a FutureWarning about torch's code, per capture
            warnings.filterwarnings("ignore", _TORCH_OWN_DEPRECATION, FutureWarning)
            return ep.run_decompositions(table)


# ``run_decompositions`` collects every CompositeImplicitAutograd op of every ``torch.ops``
# namespace (materializing the C++ ones) on each call, twice, and the default table does
# it again: 0.35 of the 0.46 s that decomposing a two-op program took on the 2-core CPU
# machine, paid by every capture (OpInfo's 702 entries, every test and model). Both are
# the same until an op is registered, so they are kept, keyed by the number of registered
# operators, and the collection is swapped in only while ``to_core_aten`` runs.
#
# It then overrides the CompositeImplicitAutograd kernel of every one of those ~525 ops
# for the retrace and restores them after, twice per call: 0.12 of the 0.24 s a warm
# capture of a five-op program took. For 508 of them (``_natural_cia``, 464 in ATen) the
# default table's entry is the op's own CompositeImplicitAutograd kernel, so the override
# changes nothing: they are left out of both the table and the collection and decompose
# as they would anyway. The program is the same (``test_export_cache.py``; and
# ``docs/bench/cpu-2026-12-06-s27/decomposition_same.py`` compares it with torch's own
# ``run_decompositions`` on every OpInfo entry that decomposes).
_CIA_MODULES = ("torch._export.utils", "torch.export.exported_program", "torch.export.decomp_utils")
_cached: dict[object, tuple[int, object]] = {}


def _operator_count() -> int:
    names = getattr(torch._C, "_dispatch_get_all_op_names", None)
    return len(names()) if names is not None else -1


def _keyed(name, make):
    """``make()``, computed again only when an operator was registered since."""
    count = _operator_count()
    hit = _cached.get(name)
    if hit is None or hit[0] != count or count < 0:
        hit = _cached[name] = (count, make())
    return hit[1]


def _natural_cia(keep: frozenset[str] = frozenset()) -> frozenset:
    """The CompositeImplicitAutograd ops outside ``keep`` that ``torch.export.
    default_decompositions()`` maps to their own CompositeImplicitAutograd kernel
    (``_own_kernel``): for them torch's override changes nothing. Read from the table
    itself, so whatever a torch version keeps or decomposes in Python stays overridden as
    torch does it."""

    def make() -> frozenset:
        return frozenset(
            op
            for op, entry in _default_decompositions().items()
            if _own_kernel(op, entry) and target_name(op) not in keep
        )

    return _keyed(("natural", keep), make)


def _own_kernel(op, entry) -> bool:
    """Whether a table entry is ``torch._export.utils._get_decomp_for_cia(op)``: the op's
    Python CompositeImplicitAutograd kernel, or the call of its C++ one."""
    if getattr(entry, "keywords", None) is not None:  # functools.partial(..., kernel=op)
        return (
            entry.keywords.get("kernel") is op
            and getattr(entry.func, "__name__", "") == "_special_op_to_decompose_cia"
        )
    kernels = getattr(op, "py_kernels", {})
    own = kernels.get(torch._C.DispatchKey.CompositeImplicitAutograd)
    return own is not None and entry is own


def _default_decompositions() -> dict:
    """``torch.export.default_decompositions()``, materialized (a plain dict: copy it)."""
    return _keyed("table", lambda: dict(torch.export.default_decompositions().items()))


class _cia_ops_cached:
    """While active, torch's ``_collect_all_valid_cia_ops`` answers from ``_keyed`` (a
    fresh set each call: callers may change it) less the ops of ``left_out``, read once
    on entering (no operator is registered while torch decomposes); the originals are
    restored after. Entering gives the ops actually left out (for the caller
    to leave out of the table too): none where a torch version has no such function, and
    then nothing is swapped."""

    def __init__(self, left_out: Collection = ()) -> None:
        self.left_out = frozenset(left_out)

    def __enter__(self) -> frozenset:
        import importlib

        self.swapped = []
        modules = [importlib.import_module(m) for m in _CIA_MODULES]
        original = getattr(modules[0], "_collect_all_valid_cia_ops", None)
        if original is None:
            return frozenset()

        ops = set(_keyed("cia", original)) - self.left_out

        def collect():
            return set(ops)

        for module in modules:
            if getattr(module, "_collect_all_valid_cia_ops", None) is original:
                self.swapped.append(module)
                module._collect_all_valid_cia_ops = collect
        self.original = original
        return self.left_out

    def __exit__(self, *exc) -> None:
        for module in self.swapped:
            module._collect_all_valid_cia_ops = self.original


def lowered_targets() -> frozenset[str]:
    """The ATen overloads the torch → tensor decompositions lower themselves."""
    from deplodock.passes.torch.decompose import supported_targets

    return frozenset(supported_targets())


# ------------------------------------------------------------ the cache key


def program_fingerprint(ep: torch.export.ExportedProgram) -> list:
    """JSON that determines what `import_program(ep)` imports, up to locations: every
    input spec (kind, placeholder, target), every output spec, and every graph node (op,
    name, target, arguments, and its value's shape and dtype). The program cache keys
    `deplodock.compile` on it. Node names are in it because SSA names become kernel
    names; locations (source lines, module paths) are not, since they only annotate the
    IR. A value it cannot spell exactly is written with its type and repr (an object at
    an address then never matches: a miss, not a wrong hit)."""
    signature = ep.graph_signature
    return [
        [[s.kind.name, s.arg.name, s.target] for s in signature.input_specs],
        [[s.kind.name, getattr(s.arg, "name", None), s.target] for s in signature.output_specs],
        [
            [
                node.op,
                node.name,
                _spelled(node.target),
                _spelled(node.args),
                _spelled(node.kwargs),
                _spelled_value(node.meta.get("val")),
            ]
            for node in ep.graph.nodes
        ],
    ]


def graph_fingerprint(gm: torch.fx.GraphModule, example_inputs: Sequence[object]) -> list | None:
    """JSON that determines what ``torch.export`` gives for TorchDynamo's graph ``gm``
    called with ``example_inputs`` (the torch.compile backend's cache key, computed
    without exporting): every node (op, name, target, arguments, its example value's
    shape and dtype), each input's shape, dtype, strides and whether it requires grad,
    and the grad mode. A value the graph computes from its arguments (a
    ``torch.tensor(2.0)`` call, lifted as a constant) is determined by them. None for a
    graph that reads its module's attributes (``get_attr``, ``call_module``: values and
    code the key cannot see), so that graph is always exported."""
    nodes = []
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "call_module"):
            return None
        nodes.append(
            [
                node.op,
                node.name,
                _spelled(node.target),
                _spelled(node.args),
                _spelled(node.kwargs),
                _spelled_value(node.meta.get("example_value")),
            ]
        )
    inputs = [
        [_spelled_value(t), list(t.stride()), t.requires_grad]
        if isinstance(t, torch.Tensor)
        else _spelled(t)
        for t in example_inputs
    ]
    return [inputs, torch.is_grad_enabled(), nodes]


def _spelled(value: object) -> object:
    """`value` (a node's target or argument) as JSON, exactly."""
    if isinstance(value, torch.fx.Node):
        return ["node", value.name]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return ["float", repr(value)]  # exact, and nan/inf too
    if isinstance(value, list | tuple):
        return [type(value).__name__, [_spelled(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[_spelled(k), _spelled(v)] for k, v in value.items()]]
    if isinstance(value, torch.dtype | torch.device | torch.layout | torch.memory_format):
        return [type(value).__name__, str(value)]
    if isinstance(value, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return ["op", str(value)]
    if callable(value) and hasattr(value, "__qualname__"):
        return ["callable", f"{getattr(value, '__module__', '')}.{value.__qualname__}"]
    return [type(value).__qualname__, repr(value)]


def _spelled_value(val: object) -> object:
    """A node's example value as JSON: shape and dtype of each tensor in it."""
    if isinstance(val, torch.Tensor):
        return ["tensor", [str(d) for d in val.shape], str(val.dtype)]
    if isinstance(val, list | tuple):
        return [_spelled_value(v) for v in val]
    if val is None or isinstance(val, bool | int | float | str):
        return _spelled(val)
    return [type(val).__qualname__, str(val)]
