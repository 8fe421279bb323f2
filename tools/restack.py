"""A decoder stack lowered once: lower four layers, copy an interior one for the rest.

A model's decoder layers are lowered alike: fusion and the tile passes decide from a
kernel and its neighbours, and an interior layer's neighbours are alike in every layer.
So a program of ``N`` alike layers (``frontends/layers.py`` stitches its export) is
lowered as the same program with four layers (layer 0 after the prologue, two interior
layers, the last layer before the epilogue), and ``restack`` then makes the ``N``-layer
module from it: interior layer 1's kernels copied under each later interior layer's
names, the last layer and the epilogue renamed as the ``N``-layer program names them.
``test/test_restack.py`` compares the result with lowering every layer: the same module,
names, locations and CUDA, byte for byte.

Names. Everything the lowering names (kernels ``k_linear_14``, ``linear_14_parts``, the
``covers`` and ``fusion.refused`` notes, locations, parameters ``p_..._layers_2_...``,
module paths ``model.layers.2.mlp``) comes from the export's node names and module paths,
which ``stitch_layers`` numbers by arithmetic: a node of layer ``i`` named ``b_n`` is
``b_{n + k}`` in layer ``i + 1``, ``k`` how often a layer makes ``b``. ``LayerNaming``
holds that arithmetic for one program; ``relabel(text, t)`` moves every node name and
layer index in a string ``t`` layers on (names of the prologue, and names without a
number, which passes also use as bare words (``linear_b``), stay).

Proof before use. The copy of layer 1 moved one layer on must be layer 2 as lowered:
the same ops, attributes, names, locations and wiring; anything else (a layer split
across others, a name the arithmetic does not move, a kernel that reads another layer's
parameters) raises ``NotRestackable``, and the caller lowers every layer instead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, ParametrizedAttribute, SSAValue

from deplodock.dialects import kernel, loop, tile
from deplodock.dialects.clone import clone_op

if TYPE_CHECKING:
    from deplodock.backends.cuda.emit import RenamedCopies
    from deplodock.backends.cuda.runtime import Listing

KERNELS = (loop.KernelOp, tile.KernelOp, kernel.KernelOp)
TEMPLATE_LAYERS = 4
"""Layers lowered for a stack: the first, two interior ones (the second checks the
first's copy), the last."""

_WORD = re.compile(r"[A-Za-z0-9_]+")
_DOTTED_LAYER = re.compile(r"(?<![A-Za-z0-9_])(layers\.)(\d+)(?=\.|$|[^A-Za-z0-9_])")
_ARG_LAYER = re.compile(r"(?:^|_)layers_(?:modules_)?(\d+)(?:_|$)")
_NUMBERED = re.compile(r"^(.*)_(\d+)$")
_LONGEST = 8  # parts of the longest node name tried (scaled_dot_product_attention_12: 5)


class NotRestackable(Exception):
    """The lowered template does not repeat its interior layer under moved names."""


@dataclass(frozen=True)
class LayerNaming:
    """The names of a stitched program of ``layers`` layers: each node's layer (None:
    the prologue; ``layers``: the epilogue) and how many nodes of each base name one
    layer makes."""

    layer_of: Mapping[str, int | None]
    counts: Mapping[str, int]
    layers: int
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def names_in(self, text: str) -> list[str]:
        """The node names in ``text`` (a kernel's symbol), in order."""
        found = []
        for word in _WORD.findall(text):
            parts = word.split("_")
            start = 0
            while start < len(parts):
                name, start = self._longest(parts, start)
                if name is not None:
                    found.append(name)
        return found

    def layer_of_text(self, text: str) -> int | None:
        """The layer of the first node name in ``text`` that lies in a layer, or None."""
        layers = [self.layer_of[n] for n in self.names_in(text)]
        return next((at for at in layers if at is not None), None)

    def with_names(self, layer_of: Mapping[str, int], counts: Mapping[str, int]) -> LayerNaming:
        """This naming and more names that move alike (``counts`` of their bases a layer)."""
        return LayerNaming({**self.layer_of, **layer_of}, {**self.counts, **counts}, self.layers)

    def _longest(self, parts: list[str], start: int) -> tuple[str | None, int]:
        for stop in range(min(len(parts), start + _LONGEST), start, -1):
            name = "_".join(parts[start:stop])
            if name in self.layer_of:
                return name, stop
        return None, start + 1

    def _moved(self, name: str, times: int) -> str:
        base, number = _split(name)
        if self.layer_of[name] is None or number == 0 or not self.counts.get(base):
            return name
        return f"{base}_{number + times * self.counts[base]}"

    def relabel(self, text: str, times: int) -> str:
        """``text`` with each node name and layer index moved ``times`` layers on."""
        if times == 0:
            return text
        key = (text, times)
        done = self._cache.get(key)
        if done is None:
            done = _DOTTED_LAYER.sub(lambda m: f"{m[1]}{int(m[2]) + times}", text)
            done = _WORD.sub(lambda m: self._word(m.group(0), times), done)
            self._cache[key] = done
        return done

    def _word(self, word: str, times: int) -> str:
        parts = word.split("_")
        out: list[str] = []
        start = 0
        while start < len(parts):
            if parts[start] == "layers":  # p_model_layers_2_..., dynamo's layers_modules_2_...
                skip = 2 if parts[start + 1 : start + 2] == ["modules"] else 1
                if start + skip < len(parts) and parts[start + skip].isdigit():
                    out += parts[start : start + skip] + [str(int(parts[start + skip]) + times)]
                    start += skip + 1
                    continue
            name, stop = self._longest(parts, start)
            out.append(self._moved(name, times) if name is not None else parts[start])
            start = stop
        return "_".join(out)


class _Mover:
    """Attributes, locations and name hints moved ``times`` layers on (each distinct
    attribute once)."""

    def __init__(self, naming: LayerNaming, times: int):
        self.naming = naming
        self.times = times
        self.seen: dict[int, Attribute] = {}

    def text(self, text: str | None) -> str | None:
        return text if text is None else self.naming.relabel(text, self.times)

    def attribute(self, attribute: Attribute) -> Attribute:
        done = self.seen.get(id(attribute))
        if done is not None:
            return done
        if isinstance(attribute, StringAttr):
            moved = self.naming.relabel(attribute.data, self.times)
            done = attribute if moved == attribute.data else StringAttr(moved)
        elif isinstance(attribute, ArrayAttr):
            items = [self.attribute(a) for a in attribute.data]
            same = all(a is b for a, b in zip(items, attribute.data, strict=True))
            done = attribute if same else ArrayAttr(items)
        elif isinstance(attribute, DictionaryAttr):
            items = {k: self.attribute(v) for k, v in attribute.data.items()}
            same = all(items[k] is v for k, v in attribute.data.items())
            done = attribute if same else DictionaryAttr(items)
        elif isinstance(attribute, ParametrizedAttribute):
            params = [self.attribute(p) for p in attribute.parameters]
            same = all(a is b for a, b in zip(params, attribute.parameters, strict=True))
            done = attribute if same else type(attribute).new(params)
        else:
            done = attribute
        self.seen[id(attribute)] = done
        return done

    def parts(self, op: Operation) -> tuple[dict, dict, Attribute]:
        return (
            {k: self.attribute(v) for k, v in op.properties.items()},
            {k: self.attribute(v) for k, v in op.attributes.items()},
            self.attribute(op.location),
        )

    def in_place(self, op: Operation) -> None:
        """``op`` and everything inside it renamed (operands left to the caller)."""
        for inner in op.walk():
            properties, attributes, location = self.parts(inner)
            inner.properties.update(properties)
            inner.attributes.update(attributes)
            inner.location = location
            for r in inner.results:
                r.name_hint = self.text(r.name_hint)
            for region in inner.regions:
                for block in region.blocks:
                    for a in block.args:
                        a.name_hint = self.text(a.name_hint)


def _symbol(op: Operation) -> str:
    return op.properties["sym_name"].data  # type: ignore[attr-defined]


class _Stack:
    """The template's one function: its kernels by layer, its arguments by layer."""

    def __init__(self, module: ModuleOp, naming: LayerNaming):
        functions = list(module.ops)
        if len(functions) != 1 or not isinstance(functions[0], func.FuncOp):
            raise NotRestackable("the module is not one function")
        self.function = functions[0]
        self.naming = naming
        ops = list(self.function.body.block.ops)
        if not ops or not isinstance(ops[-1], func.ReturnOp):
            raise NotRestackable("the function does not end in a return")
        for op in ops[:-1]:
            if not isinstance(op, KERNELS):
                raise NotRestackable(f"a {op.name} beside the kernels")
        self.ops = ops
        # each parameter's layer, by the argument (later renames do not change it)
        self.arg_layer = {a: _arg_layer(a) for a in self.function.args}
        self.layer_by_op: dict[Operation, int | None] = {}
        made: dict[str, int] = {}  # kernels a pass named, by the layer they read
        for op in ops[:-1]:
            names = naming.names_in(_symbol(op))
            at = next((naming.layer_of[n] for n in names if naming.layer_of[n] is not None), None)
            if not names:
                at, name = self._reads(op), _made_name(_symbol(op))
                if at is not None and name is not None:
                    made[name] = at
            self.layer_by_op[op] = at
        self.layer_by_op[ops[-1]] = None
        self.layer = list(self.layer_by_op.values())
        if made:  # numbered by the pass as fx numbers nodes: one more a layer
            counts = Counter(_split(n)[0] for n, at in made.items() if at == 1)
            self.naming = naming = naming.with_names(made, counts)
        self.blocks = {k: self._block(k) for k in (1, 2)}
        one, two = self.blocks[1], self.blocks[2]
        if two[0] != one[1]:
            raise NotRestackable("layer 2's kernels do not follow layer 1's")
        if any(k is not None and k < 2 for k in self.layer[two[1] :]):
            raise NotRestackable("an earlier layer's kernel runs after layer 2")
        self.by_symbol = {_symbol(op): op for op in ops[:-1]}

    def _reads(self, op: Operation) -> int | None:
        """The last layer whose kernels or parameters ``op`` reads, or None."""
        layers = [
            self.arg_layer.get(v) if isinstance(v, BlockArgument) else self.layer_by_op.get(v.op)
            for v in op.operands
        ]
        return max((at for at in layers if at is not None), default=None)

    def _block(self, layer: int) -> tuple[int, int]:
        where = [k for k, at in enumerate(self.layer) if at == layer]
        if not where or where != list(range(where[0], where[-1] + 1)):
            raise NotRestackable(f"layer {layer}'s kernels are not together")
        return where[0], where[-1] + 1


def _split(name: str) -> tuple[str, int]:
    match = _NUMBERED.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, 0)


def _made_name(symbol: str) -> str | None:
    """The name a pass gave a kernel it made (``k_scores_2_chunks``: ``scores_2``): the
    symbol's words from after ``k`` to its first number, or None."""
    parts = symbol.split("_")
    if parts[0] != "k" or len(parts) < 2:
        return None
    for end in range(2, len(parts)):
        if parts[end].isdigit():
            return "_".join(parts[1 : end + 1])
    return None


Ref = SSAValue | tuple[int, int]
"""An operand in a stack whose copies are not made yet: a value of the IR, or (copy,
result index) of the ``index``-th copy ``Stacked`` will make."""


def _copy(
    ops: list[Operation],
    mover: _Mover,
    by_symbol: dict[str, Operation],
    args: dict[str, SSAValue],
) -> list[Operation]:
    """Copies of ``ops`` moved ``mover.times`` layers on; an operand another kernel or an
    argument computes is looked up by its moved name (``by_symbol``, ``args``; each copy
    enters ``by_symbol`` as it is made)."""
    copies = []
    for op in ops:
        mapper = {v: _moved_value(v, mover, by_symbol, args) for v in op.operands}
        copy = clone_op(op, mapper, mover.text, mover.text, mover.parts)
        by_symbol[_symbol(copy)] = copy
        copies.append(copy)
    return copies


def _moved_value(
    value: SSAValue,
    mover: _Mover,
    by_symbol: Mapping[str, Operation | int],
    args: dict[str, SSAValue],
) -> Ref:
    """The value that ``value`` is ``mover.times`` layers on, found by its moved name: an
    argument, a kernel's result, or (an int in ``by_symbol``) a copy's that is not made."""
    if isinstance(value, BlockArgument):
        name = mover.text(value.name_hint) or ""
        if name not in args:
            raise NotRestackable(f"no argument {name} for the moved layer")
        return args[name]
    assert isinstance(value, OpResult)
    name = mover.text(_symbol(value.op)) or ""
    if name not in by_symbol:
        raise NotRestackable(f"no kernel @{name} for the moved layer")
    found = by_symbol[name]
    return (found, value.index) if isinstance(found, int) else found.results[value.index]


def _check_alike(copy: list[Operation], real: list[Operation]) -> None:
    """``copy`` (layer 1 moved one layer on) is ``real`` (layer 2): ops, attributes,
    properties, types, wiring, names and locations."""
    if len(copy) != len(real):
        raise NotRestackable("layers 1 and 2 have different kernels")
    context: dict = {}
    for a, b in zip(copy, real, strict=True):
        if not a.is_structurally_equivalent(b, context):
            raise NotRestackable(f"@{_symbol(a)} moved from layer 1 is not layer 2's @{_symbol(b)}")
        for x, y in zip(a.walk(), b.walk(), strict=True):
            if x.location != y.location or [r.name_hint for r in x.results] != [
                r.name_hint for r in y.results
            ]:
                raise NotRestackable(f"@{_symbol(b)}: a name or location is not moved alike")
            for rx, ry in zip(x.regions, y.regions, strict=True):
                for bx, by in zip(rx.blocks, ry.blocks, strict=True):
                    if [v.name_hint for v in bx.args] != [v.name_hint for v in by.args]:
                        raise NotRestackable(f"@{_symbol(b)}: a name is not moved alike")


def restack(module: ModuleOp, naming: LayerNaming, layers: int) -> None:
    """``module``, the lowered program of ``naming.layers`` (4) layers, made in place the
    lowered program of ``layers`` layers (``layers`` >= 4). Raises ``NotRestackable``
    before changing anything where layer 1's kernels moved one layer on are not layer
    2's; should a later copy read an argument or a kernel its layer lacks (which the
    check rules out), it raises mid-way and the caller lowers the whole program."""
    stacked(module, naming, layers).complete()


def stacked(module: ModuleOp, naming: LayerNaming, layers: int) -> Stacked:
    """``restack`` but for the copies of the interior layer, which the result makes when
    ``complete`` is called (its ``listing`` and ``copies`` tell what they will be, for a
    compile that needs no more: ``backends.cuda.runtime.CompiledProgram``). Until then
    ``module`` holds every argument of the whole stack and its last layer and epilogue
    renamed, which still read layer 2."""
    if naming.layers != TEMPLATE_LAYERS or layers < TEMPLATE_LAYERS:
        raise NotRestackable(f"{naming.layers} template layers for {layers}")
    stack = _Stack(module, naming)
    naming = stack.naming  # with the names passes gave kernels
    function = stack.function
    one = stack.ops[slice(*stack.blocks[1])]
    two = stack.ops[slice(*stack.blocks[2])]
    args = {a.name_hint or "": a for a in function.args}
    if len(args) != len(function.args):
        raise NotRestackable("two arguments share a name")
    trial = _copy(one, _Mover(naming, 1), dict(stack.by_symbol), args)
    try:
        _check_alike(trial, two)
    finally:
        for op in trial:
            op.erase(safe_erase=False)
    anchor = stack.ops[stack.blocks[2][1]]
    copies = {_symbol(b): (_symbol(a), 1) for a, b in zip(one, two, strict=True)}
    extra = layers - TEMPLATE_LAYERS
    if extra == 0:
        return Stacked(module, naming, anchor, copies)
    # the arguments of layers 3 .. layers - 2 after layer 2's; layer 3's renamed
    block = function.body.block
    arg_attrs = list(function.arg_attrs.data) if function.arg_attrs else None
    arg_layers = list(stack.arg_layer.values())
    ones = [k for k, at in enumerate(arg_layers) if at == 1]
    twos = [k for k, at in enumerate(arg_layers) if at == 2]
    if not ones or len(ones) != len(twos):
        raise NotRestackable("layers 1 and 2 have different parameters")
    last_two = twos[-1]
    at = last_two + 1
    for layer in range(3, layers - 1):
        mover = _Mover(naming, layer - 1)
        for k in ones:
            new = block.insert_arg(function.args[k].type, at)
            new.name_hint = mover.text(function.args[k].name_hint)
            if arg_attrs is not None:
                arg_attrs.insert(at, mover.attribute(arg_attrs[k]))
            args[new.name_hint or ""] = new
            at += 1
    last = _Mover(naming, extra)
    for k, arg in enumerate(block.args):
        if stack.arg_layer.get(arg) == TEMPLATE_LAYERS - 1:
            arg.name_hint = last.text(arg.name_hint)
            args[arg.name_hint or ""] = arg
            if arg_attrs is not None:
                arg_attrs[k] = last.attribute(arg_attrs[k])
    if arg_attrs is not None:
        function.arg_attrs = ArrayAttr(arg_attrs)
    function.function_type = FunctionType.from_lists(
        [a.type for a in block.args], list(function.function_type.outputs.data)
    )
    # the copies of layer 1 for layers 3 .. layers - 2, after layer 2, by the values they
    # will read (a copy's number stands for it in ``by_symbol``)
    result = Stacked(module, naming, anchor, copies)
    by_symbol: dict[str, Operation | int] = dict(stack.by_symbol)
    for layer in range(3, layers - 1):
        mover = _Mover(naming, layer - 1)
        for template in one:
            operands = [_moved_value(v, mover, by_symbol, args) for v in template.operands]
            by_symbol[mover.text(_symbol(template)) or ""] = len(result.pending)
            result.pending.append((template, mover, operands))
            copies[mover.text(_symbol(template)) or ""] = (_symbol(template), layer - 1)
    # what runs after layer 2 (the last layer, the epilogue) renamed as the last layer's
    # now; what it read before layer 2 ended (layer 2, parameters) it reads once the
    # copies are made, where that moved to
    suffix = stack.ops[stack.blocks[2][1] :]
    stays = set(suffix)
    for op in suffix:
        result.rewired[op] = [
            v if _stays(v, stays, stack) else _moved_value(v, last, by_symbol, args)
            for v in op.operands
        ]
        if not isinstance(op, func.ReturnOp):
            last.in_place(op)
            by_symbol[_symbol(op)] = op
    return result


@dataclass
class Stacked:
    """A restacked module whose interior copies are still to be made (``stacked``):
    ``pending`` holds each copy as (its template in layer 1, the mover that names it,
    its operands), ``rewired`` each op after layer 2 with the operands it will read,
    ``copies`` every copy's template and how many layers on it is (layer 2's kernels
    included, which are real), for the emitter."""

    module: ModuleOp
    naming: LayerNaming
    anchor: Operation
    copies: dict[str, tuple[str, int]]
    pending: list[tuple[Operation, _Mover, list[Ref]]] = field(default_factory=list)
    rewired: dict[Operation, list[Ref]] = field(default_factory=dict)
    done: bool = False

    def rename(self, text: str, times: int) -> str:
        return self.naming.relabel(text, times)

    def unmade(self) -> list[str]:
        """The copies not made yet, by name."""
        return [] if self.done else [m.text(_symbol(t)) or "" for t, m, _ in self.pending]

    def complete(self) -> None:
        """Make the copies and let the last layer read them: ``module`` is then what
        ``restack`` makes (idempotent)."""
        if self.done:
            return
        self.done = True
        renamed = self.renamed_copies()
        made: list[Operation] = []

        def value(ref: Ref) -> SSAValue:
            return made[ref[0]].results[ref[1]] if isinstance(ref, tuple) else ref

        block = self.anchor.parent_block()
        assert block is not None
        for template, mover, operands in self.pending:
            mapper = {v: value(r) for v, r in zip(template.operands, operands, strict=True)}
            copy = clone_op(template, mapper, mover.text, mover.text, mover.parts)
            block.insert_op_before(copy, self.anchor)
            made.append(copy)
        for op, operands in self.rewired.items():
            op.operands = [value(r) for r in operands]
        if renamed is not None:
            from deplodock.backends.cuda.emit import emit_copies_renamed

            emit_copies_renamed(self.module, renamed)

    def renamed_copies(self) -> RenamedCopies | None:
        """The copies as the emitter renames them from their templates' text, or None
        where some are not kernels (then every kernel is emitted from its IR)."""
        if not self.pending or not all(
            isinstance(op, kernel.KernelOp) for op, _, _ in self.pending
        ):
            return None
        from deplodock.backends.cuda.emit import RenamedCopies

        return RenamedCopies(self.copies, self.naming.relabel)

    def listing(self) -> Listing:
        """The whole stack's ``@forward`` as its plan reads it (``runtime.Listing``), the
        copies listed from their templates: the same as ``listing`` of the completed
        module, which ``test_restack`` checks."""
        from deplodock.backends.cuda.runtime import Listed, Listing, listed_as
        from deplodock.dialects.torch import PrintedNames

        if self.done:
            from deplodock.backends.cuda.runtime import listing

            return listing(_function(self.module))
        function = _function(self.module)
        namer = PrintedNames()
        ids: dict[SSAValue, int] = {}
        args = []
        for a in function.args:
            ids[a] = len(ids)
            args.append((namer.name(a.name_hint), a.type))
        made: list[tuple[int, ...]] = []  # each copy's result ids

        def id_of(ref: Ref) -> int:
            return made[ref[0]][ref[1]] if isinstance(ref, tuple) else ids[ref]

        templates: dict[Operation, tuple] = {}  # template -> (hints, launch)
        ops: list[Listed] = []
        count = len(ids)

        def listed(name, operands, results, hints, launch) -> Listed:
            nonlocal count
            # the printer names the results, then the values nested in the op
            names = [namer.name(h) for h in hints][: len(results)]
            out = tuple((n, r.type) for n, r in zip(names, results, strict=True))
            count += len(results)
            return Listed(name, tuple(id_of(r) for r in operands), out, launch)

        for op in function.body.block.ops:
            if op is self.anchor:
                for template, mover, operands in self.pending:
                    if template not in templates:
                        hints = [r.name_hint for o in template.walk() for r in o.results]
                        templates[template] = (hints, listed_as(template)[1])
                    hints, launch = templates[template]
                    first = count
                    ops.append(
                        listed(
                            mover.text(_symbol(template)),
                            operands,
                            template.results,
                            [mover.text(h) for h in hints],
                            launch,
                        )
                    )
                    made.append(tuple(range(first, count)))
            operands = self.rewired.get(op, list(op.operands))
            if isinstance(op, func.ReturnOp):
                return Listing(tuple(args), tuple(ops), tuple(id_of(r) for r in operands))
            hints = [r.name_hint for o in op.walk() for r in o.results]
            for r in op.results:
                ids[r] = count + r.index
            name, launch = listed_as(op)
            ops.append(listed(name, operands, op.results, hints, launch))
        raise NotRestackable("the function does not end in a return")


def _function(module: ModuleOp) -> func.FuncOp:
    (function,) = module.ops
    assert isinstance(function, func.FuncOp)
    return function


def _stays(value: SSAValue, suffix: set[Operation], stack: _Stack) -> bool:
    """Whether an operand of the last layer or the epilogue is read unmoved: a kernel of
    its own (renamed in place), of the prologue, or an argument no layer before the last
    owns."""
    if isinstance(value, BlockArgument):
        return stack.arg_layer[value] in (None, TEMPLATE_LAYERS - 1)
    assert isinstance(value, OpResult)
    return value.op in suffix or stack.layer_by_op[value.op] is None


def _arg_layer(arg: BlockArgument) -> int | None:
    """The layer whose parameter an argument is (``p_model_layers_2_mlp_...``, or in
    dynamo's graph ``l_self_modules_model_modules_layers_modules_2_...``), or None."""
    match = _ARG_LAYER.search(arg.name_hint or "")
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Restack:
    """``restack`` to ``layers`` layers, as a step to run on the lowered template;
    ``arg_names``: the whole program's inputs, which the restacked function must take
    in this order (a template cut from dynamo's graph, ``frontends.layers.graph_template``:
    its inputs are not numbered by layer as an export's parameters are), else
    ``NotRestackable``."""

    naming: LayerNaming
    layers: int
    arg_names: tuple[str, ...] = ()

    def __call__(self, module: ModuleOp) -> None:
        self.stacked(module).complete()

    def stacked(self, module: ModuleOp) -> Stacked:
        """``stacked``: the whole stack but for the interior copies, made on ``complete``."""
        result = stacked(module, self.naming, self.layers)
        if self.arg_names:
            got = tuple(a.name_hint for a in _function(module).args)
            if got != self.arg_names:
                raise NotRestackable("the restacked function's inputs are not the program's")
        return result
