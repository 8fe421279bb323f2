"""A decoder stack captured once per distinct layer: export two layers, stitch the rest.

torch.export traces every decoder layer of a model although they are alike: for TinyLlama
(22 layers) it is most of the capture (5.8 s of 6.5 s on the 2-core CPU machine, two
layers take 0.7 s). ``stitch_layers`` builds the export of an ``N``-layer model from the
export of the same model with two layers, exactly as torch.export would give it: the same
nodes in the same order under the same names, the same graph signature (parameters by
their fully qualified names), the same metadata (module paths, source lines, fake values)
and the same module call graph. ``test/test_layer_capture.py`` compares the two, node for
node and down to the generated CUDA, on tiny Llama and Qwen2 models.

How. In the two-layer program, a node belongs to layer ``i`` when its innermost module
path (``nn_module_stack``) lies under ``layers.<i>``, a parameter when its target does;
the rest is the prologue (embedding, positions, mask, rotary tables) and the epilogue
(the last norm, the lm_head). Layer 1 is the template: the copy for layer ``i`` maps the
template's reads of layer 1 to its own nodes, of layer 0 (the previous layer) to layer
``i - 1``'s, of layer 1's parameters to layer ``i``'s, and of the prologue to the
prologue; the epilogue then reads the last layer. Names follow torch.fx's namer, which
numbers each base name in the order nodes are made (``linear``, ``linear_1``, ...): a
node of the template named ``b_n`` is ``b_{n + (i - 1) k}`` in layer ``i`` and an
epilogue node ``b_{n + (N - 2) k}``, where ``k`` is how often one layer makes ``b``.

When. Only where the two layers are provably the same function of (prologue, previous
layer, own parameters): layer 0 and layer 1 must match node for node (op, constant
arguments, the reads above, the naming offsets), and the caller checks that every layer
of the full model is the same module (class, attention type, parameter shapes). Anything
else (a node between the layers, a layer split in two, a ``get_attr``, a module call
signature) raises ``NotStitchable`` with the reason, and the caller exports the whole
model instead.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, TensorArgument

from deplodock.frontends.capture import program_fingerprint

if TYPE_CHECKING:  # the IR side (imported where a stack is lowered): a warm compile, a
    # program cache hit, never loads it
    from deplodock.restack import Restack


LAYER = re.compile(r"(?:^|\.)layers\.(\d+)(?=\.|$)")
"""A module path or parameter name inside decoder layer ``<i>``."""

_NUMBERED = re.compile(r"^(.*)_(\d+)$")  # torch.fx's reading of a name: base_number


class NotStitchable(Exception):
    """The two-layer program does not split into prologue, two alike layers, epilogue."""


def layer_index(path: str | None) -> int | None:
    """The decoder layer a module path or parameter target lies in, or None."""
    match = LAYER.search(path or "")
    return int(match.group(1)) if match else None


def relayer(text: str, layer: int) -> str:
    """``text`` with its (first) ``layers.<i>`` segment naming ``layer`` instead."""
    match = LAYER.search(text)
    if match is None:
        return text
    return f"{text[: match.start(1)]}{layer}{text[match.end(1) :]}"


def _split_name(name: str) -> tuple[str, int]:
    match = _NUMBERED.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, 0)


def _numbered(base: str, number: int) -> str:
    return f"{base}_{number}" if number else base


def _shift(name: str, counts: Counter[str], times: int) -> str:
    """``name`` moved ``times`` layers on: its number plus ``times`` x the layer's count
    of its base."""
    base, number = _split_name(name)
    return _numbered(base, number + times * counts[base]) if counts[base] else name


def _node_layer(node: torch.fx.Node, targets: Mapping[str, str | None]) -> int | None:
    if node.op == "placeholder":
        return layer_index(targets.get(node.name))
    return _stack_layer(node)


def _stack_layer(node: torch.fx.Node) -> int | None:
    """The layer of the innermost entry of ``node``'s ``nn_module_stack`` that lies in
    one, or None (in dynamo's graph a function transformers wraps as a module,
    ``apply_rotary_pos_emb``, is the innermost entry, inside its layer's attention)."""
    stack = node.meta.get("nn_module_stack") or {}
    for path in reversed(list(stack.values())):
        at = layer_index(path[0] if isinstance(path, tuple | list) else None)
        if at is not None:
            return at
    return None


class _Split:
    """The two-layer program's nodes: prologue, layer 0, layer 1, epilogue (each in
    graph order), placeholders of each layer, and how layer 0 reads its input."""

    def __init__(self, ep: ExportedProgram):
        graph = ep.graph
        self.targets = {s.arg.name: s.target for s in ep.graph_signature.input_specs}
        self.params: dict[int, list[torch.fx.Node]] = {0: [], 1: []}
        self.layer: dict[int, list[torch.fx.Node]] = {0: [], 1: []}
        self.before: list[torch.fx.Node] = []  # prologue (with other placeholders)
        self.after: list[torch.fx.Node] = []  # epilogue (with the output)
        phase = 0  # 0: prologue, 1: layer 0, 2: layer 1, 3: epilogue
        for node in graph.nodes:
            if node.op not in ("placeholder", "call_function", "output"):
                raise NotStitchable(f"a {node.op} node ({node.name})")
            where = _node_layer(node, self.targets)
            if where not in (None, 0, 1):
                raise NotStitchable(f"{node.name} lies in layer {where} of a two-layer model")
            if node.op == "placeholder":
                (self.params[where] if where is not None else self.before).append(node)
                continue
            if node.op == "output":
                self.after.append(node)
                continue
            if where is None:
                if phase in (1, 2):
                    phase = 3 if phase == 2 else -1
                if phase == -1:
                    raise NotStitchable(f"{node.name} runs between the layers")
                (self.before if phase == 0 else self.after).append(node)
            elif where == 0 and phase in (0, 1):
                phase = 1
                self.layer[0].append(node)
            elif where == 1 and phase in (1, 2):
                phase = 2
                self.layer[1].append(node)
            else:
                raise NotStitchable(f"{node.name} (layer {where}) is out of the layers' order")
        if not self.layer[0] or len(self.layer[0]) != len(self.layer[1]):
            raise NotStitchable("the two layers differ in length")
        self.index = {n: (k, j) for k in (0, 1) for j, n in enumerate(self.layer[k])}
        self.param_index = {n: (k, j) for k in (0, 1) for j, n in enumerate(self.params[k])}
        self.counts = Counter(_split_name(n.name)[0] for n in self.layer[1])
        self.fn_counts: Counter[str] = Counter()  # torch_fn's counter: calls a layer makes
        self.entry: dict[int, torch.fx.Node] = {}  # layer 1 reads layer 0's node j ~ this
        self._check_alike()
        for node in self.after:  # the epilogue reads the last layer only
            for arg in node.all_input_nodes:
                if arg in self.param_index or self.index.get(arg, (1,))[0] == 0:
                    raise NotStitchable(f"{node.name}, after the layers, reads {arg.name}")

    def _check_alike(self) -> None:
        """Layer 0 and layer 1 compute the same function of their inputs, under names
        one layer apart."""
        p0, p1 = self.params[0], self.params[1]
        if len(p0) != len(p1) or any(
            relayer(self.targets[a.name], 1) != self.targets[b.name]
            for a, b in zip(p0, p1, strict=True)
        ):
            raise NotStitchable("the layers' parameters differ")
        for a, b in zip(self.layer[0], self.layer[1], strict=True):
            if (a.op, a.target) != (b.op, b.target):
                raise NotStitchable(f"{a.name} and {b.name} are different ops")
            if _shift(a.name, self.counts, 1) != b.name:
                raise NotStitchable(f"{b.name} is not named one layer after {a.name}")
            self._count_calls(a, b)
            self._check_args(a.args, b.args, a.name)
            self._check_args(a.kwargs, b.kwargs, a.name)

    def _count_calls(self, a: torch.fx.Node, b: torch.fx.Node) -> None:
        """``torch_fn`` numbers the torch calls of a name (a node or not: ``contiguous``
        on a contiguous tensor makes none), so a layer's count is read off its two
        copies, and must be one per name."""
        if "torch_fn" not in a.meta or "torch_fn" not in b.meta:
            return
        (base, first), (other, second) = (_split_name(n.meta["torch_fn"][0]) for n in (a, b))
        if base != other or self.fn_counts.setdefault(base, second - first) != second - first:
            raise NotStitchable(f"{b.name}: torch_fn {b.meta['torch_fn'][0]} is not periodic")

    def _check_args(self, a: Any, b: Any, where: str) -> None:
        if isinstance(b, torch.fx.Node):
            if not isinstance(a, torch.fx.Node):
                raise NotStitchable(f"{where}: an argument differs")
            kind, j = self.index.get(b, self.param_index.get(b, (None, None)))
            if kind == 0 and b in self.param_index:
                raise NotStitchable(f"{where}: layer 1 reads layer 0's parameter {b.name}")
            if kind == 1:  # layer 1's own node or parameter
                mine = self.layer[0] if b in self.index else self.params[0]
                ok = a is mine[j]
            elif kind == 0 and b in self.index:  # layer 1 reads layer 0: its input
                ok = a not in self.index and a not in self.param_index
                ok = ok and self.entry.setdefault(j, a) is a
            else:  # the prologue, read alike
                ok = a is b
            if not ok:
                raise NotStitchable(f"{where}: reads {a.name} where layer 1 reads {b.name}")
        elif isinstance(b, list | tuple):
            if not isinstance(a, list | tuple) or len(a) != len(b):
                raise NotStitchable(f"{where}: an argument differs")
            for x, y in zip(a, b, strict=True):
                self._check_args(x, y, where)
        elif isinstance(b, dict):
            if not isinstance(a, dict) or a.keys() != b.keys():
                raise NotStitchable(f"{where}: an argument differs")
            for key in b:
                self._check_args(a[key], b[key], where)
        elif type(a) is not type(b) or a != b:
            raise NotStitchable(f"{where}: a constant argument differs ({a!r}, {b!r})")


def stitch_layers(
    ep: ExportedProgram, layers: int, state_dict: Mapping[str, torch.Tensor]
) -> ExportedProgram:
    """The export of the ``layers``-layer model whose two-layer export is ``ep``;
    ``state_dict`` holds the full model's parameters and persistent buffers (on any
    device, meta too: deplodock reads them from the module, not from here)."""
    if layers < 2:
        raise NotStitchable("fewer than two layers")
    split = _Split(ep)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}  # the prologue's and other placeholders
    copies: dict[int, list[torch.fx.Node]] = {}  # layer -> its nodes, by template index
    params: dict[int, list[torch.fx.Node]] = {}  # layer -> its parameters, in order
    spec_of = {s.arg.name: s for s in ep.graph_signature.input_specs}
    input_specs = []

    def place(node: torch.fx.Node, name: str, target: str | None) -> torch.fx.Node:
        new = graph.placeholder(name)
        if new.name != name:
            raise NotStitchable(f"placeholder {name} would be named {new.name}")
        new.meta = node.meta
        spec = spec_of[node.name]
        input_specs.append(replace(spec, arg=TensorArgument(name=name), target=target))
        return new

    def read(node: torch.fx.Node, layer: int, own: int) -> torch.fx.Node:
        """The node a copy in ``layer`` of a node of template layer ``own`` reads for the
        two-layer program's ``node`` (the epilogue reads as layer ``layers - 1`` of 1)."""
        if node in split.index:
            kind, j = split.index[node]
            return copies[layer - own + kind][j]
        if node in split.param_index:
            kind, j = split.param_index[node]
            return params[layer - own + kind][j]
        return env[node]

    def copy(node: torch.fx.Node, name: str, meta: dict, layer: int, own: int) -> torch.fx.Node:
        args = torch.fx.map_arg(node.args, lambda a: read(a, layer, own))
        kwargs = torch.fx.map_arg(node.kwargs, lambda a: read(a, layer, own))
        new = graph.create_node(node.op, node.target, args, kwargs, name=name)
        if new.name != name:
            raise NotStitchable(f"{name} would be named {new.name}")
        new.meta = meta
        return new

    # Placeholders in the full export's order: the layers' parameters where layer 0's
    # and layer 1's stand, every later layer's after layer 1's.
    template = split.params[1]
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        if node not in split.param_index:
            env[node] = place(node, node.name, split.targets.get(node.name))
            continue
        kind, j = split.param_index[node]
        if kind == 0:
            params.setdefault(0, []).append(place(node, node.name, split.targets[node.name]))
        elif j == len(template) - 1:
            for layer in range(1, layers):
                params[layer] = []
                for p in template:
                    target = split.targets[p.name]
                    spelled = target.replace(".", "_")
                    if not p.name.endswith(spelled):
                        raise NotStitchable(f"{p.name} is not named after {target}")
                    moved = relayer(target, layer)
                    name = p.name.removesuffix(spelled) + moved.replace(".", "_")
                    params[layer].append(place(p, name, moved))

    for node in split.before:
        if node.op != "placeholder":
            env[node] = copy(node, node.name, node.meta, 0, 0)
    for layer in range(layers):  # each list grows as its nodes read earlier ones
        copies[layer] = []
        for node in split.layer[min(layer, 1)]:
            times = max(layer - 1, 0)
            name = _shift(node.name, split.counts, times)
            meta = _moved_meta(node.meta, layer, times, split)
            copies[layer].append(copy(node, name, meta, layer, min(layer, 1)))
    times = layers - 2
    new_output: Any = None
    for node in split.after:
        if node.op == "output":
            new_output = torch.fx.map_arg(node.args[0], lambda a: read(a, layers - 1, 1))
            graph.output(new_output)
        else:
            meta = _moved_meta(node.meta, None, times, split)
            env[node] = copy(node, _shift(node.name, split.counts, times), meta, layers - 1, 1)
    outputs = list(new_output) if isinstance(new_output, list | tuple) else [new_output]
    output_specs = [
        replace(spec, arg=TensorArgument(name=out.name))
        if isinstance(spec.arg, TensorArgument)
        else spec
        for spec, out in zip(ep.graph_signature.output_specs, outputs, strict=True)
    ]
    module = torch.fx.GraphModule(ep.graph_module, graph)
    signature = ExportGraphSignature(input_specs=input_specs, output_specs=output_specs)
    state = {
        s.target: state_dict[s.target]
        for s in input_specs
        if s.kind.name == "PARAMETER" or (s.kind.name == "BUFFER" and s.persistent)
    }
    stitched = ExportedProgram(
        root=module,
        graph=module.graph,
        graph_signature=signature,
        state_dict=state,
        range_constraints=ep.range_constraints,
        module_call_graph=_call_graph(ep, layers),
        example_inputs=ep.example_inputs,
        constants=ep.constants,
        verifiers=ep.verifiers,
    )
    _STACKS[stitched] = LayerStack(ep, layers, state_dict)
    return stitched


def _moved_meta(meta: dict[str, Any], layer: int | None, times: int, split: _Split) -> dict:
    """A copy of a node's metadata ``times`` layers on: its module paths in ``layer``
    (None: left), its ``torch_fn`` counter moved; the rest (fake value, source) shared."""
    if times == 0:
        return meta
    out = dict(meta)
    stack = meta.get("nn_module_stack")
    if stack and layer is not None:
        out["nn_module_stack"] = {
            relayer(key, layer): (relayer(value[0], layer), *value[1:])
            for key, value in stack.items()
        }
    if "torch_fn" in meta:
        name, *rest = meta["torch_fn"]
        out["torch_fn"] = (_shift(name, split.fn_counts, times), *rest)
    return out


def _call_graph(ep: ExportedProgram, layers: int) -> list:
    """The module call graph with layer 1's entries repeated for every later layer."""
    entries = list(ep.module_call_graph)
    ones = [k for k, e in enumerate(entries) if layer_index(e.fqn) == 1]
    if not ones:
        return entries
    if any(entries[k].signature is not None for k in ones) or ones != list(
        range(ones[0], ones[-1] + 1)
    ):
        raise NotStitchable("layer 1's module calls carry signatures or are not together")
    ones_entries = [entries[k] for k in ones]
    later = [
        replace(e, fqn=relayer(e.fqn, layer)) for layer in range(2, layers) for e in ones_entries
    ]
    return entries[: ones[-1] + 1] + later + entries[ones[-1] + 1 :]


def unlike_layer(stack: torch.nn.ModuleList) -> int | None:
    """The first layer (from 2) unlike layer 1: another class, parameter or buffer shape,
    or plain setting (attention type, sliding window, ...; its index aside), or None."""

    def signature(layer: torch.nn.Module) -> list:
        out = []
        for path, module in layer.named_modules():
            settings = {
                k: v
                for k, v in vars(module).items()
                if not k.startswith("_") and k != "layer_idx"
                if v is None or isinstance(v, bool | int | float | str)
            }
            out.append((path, type(module), sorted(settings.items())))
        for path, tensor in [*layer.named_parameters(), *layer.named_buffers()]:
            out.append((path, tuple(tensor.shape), tensor.dtype))
        return out

    first = signature(stack[1])
    return next((k for k in range(2, len(stack)) if signature(stack[k]) != first), None)


STITCHED_CODE = ("transformers.models.llama.", "transformers.models.qwen2.")
"""The decoder stacks whose code is known to run every layer alike and read only the
last layer's output (``test/test_layer_capture.py`` checks them against the whole
export): other code could count its layers or keep every layer's output, which a
two-layer trace cannot see, so its modules are exported whole."""


def export_layers_once(
    module: torch.nn.Module, inputs: tuple, name: str, export: Callable
) -> ExportedProgram | None:
    """``export(module, inputs, name)`` for a module holding a known decoder stack
    (``STITCHED_CODE``) of three or more alike layers: traced with its first two layers
    only (``export_stack``), and stitched; else None (the caller exports it all)."""
    stack = export_stack(module, inputs, name, export)
    return stack.stitched() if stack is not None else None


def export_stack(
    module: torch.nn.Module, inputs: tuple, name: str, export: Callable
) -> LayerStack | None:
    """The ``LayerStack`` of a module holding a known decoder stack (``STITCHED_CODE``) of
    three or more alike layers, its first two layers traced by ``export`` (swapped in,
    then back), not yet stitched; else None (nothing traced)."""
    found = [
        (path, stack)
        for path, stack in module.named_modules()
        if isinstance(stack, torch.nn.ModuleList)
        and path.rsplit(".", 1)[-1] == "layers"
        and len(stack) >= 3
        and type(stack[0]).__module__.startswith(STITCHED_CODE)
    ]
    if len(found) != 1 or unlike_layer(found[0][1]) is not None:
        return None
    path, stack = found[0]
    parent = module.get_submodule(path.rpartition(".")[0])
    state = module.state_dict(keep_vars=True)
    try:
        parent.layers = torch.nn.ModuleList(list(stack)[:2])
        two = export(module, inputs, name)
    finally:
        parent.layers = stack
    return LayerStack(two, len(stack), state)


def template_of(program: ExportedProgram) -> tuple[ExportedProgram, Restack] | None:
    """For a program ``stitch_layers`` made of more than ``TEMPLATE_LAYERS`` layers: the
    template to lower instead (the same stack with four layers) and the ``Restack`` that
    makes the whole program of it once lowered (``deplodock.restack``); else None."""
    from deplodock.restack import TEMPLATE_LAYERS, LayerNaming, Restack

    stack = _STACKS.get(program)
    if stack is None or stack.layers <= TEMPLATE_LAYERS:
        return None
    template = stack.program(TEMPLATE_LAYERS)
    layer_of, counts = node_layers(template)
    return template, Restack(LayerNaming(layer_of, counts, TEMPLATE_LAYERS), stack.layers)


@dataclass(frozen=True)
class LayerStack:
    """A stitched program's two-layer export, to stitch at another depth: ``program(4)``
    is the template ``deplodock.restack`` lowers for the whole stack."""

    two: ExportedProgram
    layers: int
    state: Mapping[str, torch.Tensor]

    def program(self, layers: int) -> ExportedProgram:
        return stitch_layers(self.two, layers, self.state)

    def stitched(self) -> ExportedProgram | None:
        """The whole stack's program, or None where the two layers cannot be stitched."""
        try:
            return self.program(self.layers)
        except NotStitchable:
            return None

    def fingerprint(self) -> list:
        """JSON that determines the stitched program's ``program_fingerprint`` (what the
        program cache keys on), computed without stitching: the two-layer program's
        fingerprint, the number of layers, and each node's layer (from its module path,
        which the fingerprint leaves out but ``stitch_layers`` reads). ``stitch_layers``
        builds the graph from these alone (names, targets, arguments and values copied
        from the two layers), so equal fingerprints stitch to equal programs."""
        targets = {s.arg.name: s.target for s in self.two.graph_signature.input_specs}
        layers = [_node_layer(node, targets) for node in self.two.graph.nodes]
        return [program_fingerprint(self.two), self.layers, layers]


_STACKS: weakref.WeakKeyDictionary[ExportedProgram, LayerStack] = weakref.WeakKeyDictionary()
"""Each stitched program's two-layer export, for ``template_of``."""


def node_layers(ep: ExportedProgram) -> tuple[dict[str, int | None], Counter[str]]:
    """(each computed node's layer: None in the prologue, the number of layers in the
    epilogue; how many nodes of each base name layer 1 makes) of a stitched program, the
    names ``deplodock.restack`` moves from layer to layer."""
    targets = {s.arg.name: s.target for s in ep.graph_signature.input_specs}
    layer_of: dict[str, int | None] = {}
    last = -1
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        where = _node_layer(node, targets)
        if where is not None:
            last = max(last, where)
        layer_of[node.name] = where if where is not None or last < 0 else last + 1
    counts = Counter(_split_name(n)[0] for n, at in layer_of.items() if at == 1)
    return layer_of, counts


# ------------------------------------------------- dynamo's graph of a stack, cut


def graph_template(
    gm: torch.fx.GraphModule, example_inputs: list, export: Callable
) -> tuple[ExportedProgram, Restack] | None:
    """For the graph TorchDynamo hands a backend (one flat graph, every parameter an
    input) of a decoder stack of more than ``TEMPLATE_LAYERS`` alike layers: the same
    graph cut to four layers (layers 0, 1, 2 and the last; ``_cut``), exported by
    ``export(module, inputs)``, and the ``Restack`` that makes the whole program of it
    once lowered, as ``template_of`` gives for a stitched program; else None (nothing
    exported). The torch.compile backend thus lowers a stack once per distinct layer, as
    ``deplodock.compile`` does. The restacked module takes the inputs the whole graph's
    export would take, in its order (``Restack.arg_names``): torch.export names a
    graph module's inputs after its placeholders (once its ``forward`` is generated) and
    specialises the numbers among them, so they are ``gm``'s tensor placeholders; the
    whole graph is never exported (``test_torch_backend.py`` checks the program against
    the whole export's, name for name and down to the CUDA)."""
    from deplodock.restack import TEMPLATE_LAYERS, LayerNaming, Restack

    cut = _cut(gm)
    if cut is None:
        return None
    small, kept, layers = cut
    template = export(small, *[example_inputs[k] for k in kept])
    layer_of, counts = node_layers(template)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = tuple(
        n.name
        for n, value in zip(placeholders, example_inputs, strict=True)
        if isinstance(value, torch.Tensor)
    )
    return template, Restack(LayerNaming(layer_of, counts, TEMPLATE_LAYERS), layers, names)


_GRAPH_INPUT_LAYER = re.compile(r"(?<=layers_modules_)\d+(?=_)")
"""The layer index in dynamo's name of a layer's parameter
(``l_self_modules_model_modules_layers_modules_5_modules_mlp_...``)."""


def _cut(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[int], int] | None:
    """(``gm`` with its interior layers 3 .. N-2 dropped, layer N-1 reading layer 2 and
    named layer 3, the positions of the inputs it keeps, N), or None where ``gm`` is not
    a stack of more than ``TEMPLATE_LAYERS`` layers that are provably alike: in order
    (prologue, layer 0, .., layer N-1, epilogue, nothing between layers), layers 1 .. N-1
    the same ops on the same kinds of values, each reading only itself, the layer before
    and the prologue (by position: ``_layer_signature``), the epilogue reading only the
    last layer."""
    from deplodock.restack import TEMPLATE_LAYERS

    nodes = list(gm.graph.nodes)
    layer = {n: _stack_layer(n) for n in nodes}  # placeholders too: dynamo records them
    known = [at for at in layer.values() if at is not None]
    layers = max(known, default=-1) + 1
    if layers <= TEMPLATE_LAYERS:
        return None
    calls: dict[int, list[torch.fx.Node]] = {k: [] for k in range(layers)}
    params: dict[int, list[torch.fx.Node]] = {k: [] for k in range(layers)}
    seen = -1  # the last layer met; after it, a node of no layer is the epilogue
    for node in nodes:
        at = layer[node]
        if node.op == "placeholder":
            if at is not None:
                params[at].append(node)
            continue
        if node.op not in ("call_function", "call_method", "output"):
            return None
        if at is None:
            if 0 <= seen < layers - 1:
                return None  # between layers
            continue
        if at not in (seen, seen + 1):
            return None
        seen = at
        calls[at].append(node)
    index = {n: ("call", k, j) for k in calls for j, n in enumerate(calls[k])}
    index.update({n: ("param", k, j) for k in params for j, n in enumerate(params[k])})
    signatures = [_layer_signature(calls[k], params[k], k, index) for k in range(layers)]
    if any(s != signatures[1] for s in signatures[2:]):
        return None
    last = layers - 1
    for node in nodes:  # the epilogue reads no layer but the last
        if layer[node] is None and any(
            index.get(a, ("", last))[1] != last for a in node.all_input_nodes
        ):
            return None
    alias = {  # layer N-2's nodes and parameters, read by layer N-1: layer 2's instead
        n: (calls if kind == "call" else params)[2][j]
        for n, (kind, k, j) in index.items()
        if k == last - 1
    }
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    kept: list[int] = []
    position = 0
    for node in nodes:
        at = layer[node]
        if node.op == "placeholder":
            position += 1
        if at is not None and 3 <= at < last:
            continue
        if node.op == "placeholder":
            kept.append(position - 1)
        copy = graph.node_copy(node, lambda a: env[alias.get(a, a)])
        if at == last:
            copy.meta = _relayered(copy.meta, TEMPLATE_LAYERS - 1)
            if node.op == "placeholder":
                copy.target = _GRAPH_INPUT_LAYER.sub(str(TEMPLATE_LAYERS - 1), node.name)
                copy._rename(copy.target)
        env[node] = copy
    return torch.fx.GraphModule(gm, graph), kept, layers


def _relayered(meta: dict[str, Any], layer: int) -> dict[str, Any]:
    """A copy of a node's metadata with its module paths in ``layer``."""
    out = dict(meta)
    stack = meta.get("nn_module_stack")
    if stack:
        out["nn_module_stack"] = {
            key: (relayer(value[0], layer), *value[1:]) for key, value in stack.items()
        }
    return out


def _layer_signature(
    calls: list[torch.fx.Node], params: list[torch.fx.Node], layer: int, index: Mapping
) -> list:
    """What layer ``layer`` computes, comparable across layers: its parameters' values,
    then each op, its arguments spelled by position (a node of this layer or the one
    before: kind, distance, place; of the prologue: its name) and its value."""
    from deplodock.frontends.capture import _spelled_value

    def where(node: torch.fx.Node) -> object:
        if node in index:
            kind, k, j = index[node]
            return (kind, layer - k, j)
        return ("outer", node.name)

    out: list = [_spelled_value(p.meta.get("example_value", p.meta.get("val"))) for p in params]
    for node in calls:
        value = node.meta.get("example_value", node.meta.get("val"))
        args = torch.fx.node.map_arg((node.args, node.kwargs), where)
        out.append((node.op, node.target, repr(args), _spelled_value(value)))
    return out
