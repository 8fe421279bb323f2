"""Lowering each distinct kernel once: the loop → kernel passes, memoised by structure.

The tile passes and ``materialize`` rewrite each kernel on its own: a kernel body is
isolated from above, every decision they take reads the kernel alone (its axes, loads,
loops, attributes), never its neighbours, who uses its results or where its operands come
from, and a kernel they split (``split-matmul-k``, ``chunk-reduce``) becomes a few ops in
its place (partial sums, then the kernel that combines them). A decoder's layers repeat the
same kernels under other names: TinyLlama's 22 layers at seq 128 are 311 loop kernels (465
once split) of 16 kinds; lowering them went from about 14 s to 3.5 s on a 2-core machine
(about half of that is now copying the lowered ops and verifying the whole module).
So ``lower_each_kernel_once`` partitions a function's kernels by ``structure`` (the fusion
memo's key: the body without names, shapes, dtypes, ops, maps, properties and attributes;
see ``passes/loop/fuse.py``) together with what else a pass could see (the kernel's own
attributes but the informational ``covers`` and ``fusion.refused``, which of its operands
are one value, the shape of its names), lowers one representative of each class through
the passes in a scratch module, and replaces every kernel by a copy of its class's lowered
ops, operands and results rewired, under the kernel's own names and locations (in the
scratch module a representative's operands are function arguments, which no pass tells
from other kernels' results). The result is the module lowering every kernel would give,
text and debug info alike (``test/test_lower_memo.py`` compares them on a two-layer
TinyLlama).

Names. A pass names what it makes from what it rewrites: ``k_linear_5_chunks``,
``linear_5_parts`` (the kernel's name without ``k_``), ``x_smem`` (a buffer ``x_b``
without ``_b``), ``acc_r0c1``. So the representative is lowered under tokens instead of
its names: each name (the kernel's, its results', every block argument's and value's) is
replaced by a token unique to its slot, ``qMEMO<n>q``, keeping the affixes the passes
strip (``k_`` in front, ``_b`` at the end; which names have them is part of the key), and
each op's location by a token location. A copy for a kernel replaces each token, wherever
it sits in a derived name, by that kernel's name in the same slot, and each token location
by its location. A lowering that leaves a token anywhere else (an attribute, a merged
location) or rebuilds an informational attribute is not replayed: the module is lowered
kernel by kernel instead, as it is when a pass fails (so errors name the real kernels).

``lower()`` uses it when the passes left to run are all per-kernel ones and nothing
observes them pass by pass (``-v``/``-vv`` print each pass's diff of the real module);
``DEPLODOCK_LOWER_MEMO=0`` (or ``lower(..., memo=False)``) turns it off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, Region, SSAValue

from deplodock.dialects import loop, tile
from deplodock.dialects.clone import INFORMATIONAL, clone_op, structure

ENV = "DEPLODOCK_LOWER_MEMO"

_MARK = "qMEMO"  # a name's token: qMEMO<n>q
_TOKEN = re.compile(r"qMEMO(\d+)q")
_LOC_MARK = "qLOC"  # a location's token: NameLoc("qLOC<n>q")
_LOC_TOKEN = re.compile(r"qLOC(\d+)q")
_HEAD, _TAIL = "k_", "_b"  # affixes passes strip from names (removeprefix/removesuffix)

KERNELS = (loop.KernelOp, tile.KernelOp)


def memo_enabled() -> bool:
    """Whether the environment leaves the memo on (``DEPLODOCK_LOWER_MEMO=0``: off)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


# --- what one kernel is: its key, and its names and locations by slot ----------------------


def _slots(kernel: Operation) -> tuple[list[str | None], list[Attribute]]:
    """The kernel's names (its symbol, its results', then each op's results and block
    arguments in walk order) and its ops' locations (walk order), by slot: two kernels of
    one structure have the same slots."""
    names: list[str | None] = [kernel.properties["sym_name"].data]  # type: ignore[attr-defined]
    names.extend(r.name_hint for r in kernel.results)
    locations: list[Attribute] = []
    for op in kernel.walk():
        locations.append(op.location)
        if op is not kernel:
            names.extend(r.name_hint for r in op.results)
        for region in op.regions:
            for block in region.blocks:
                names.extend(a.name_hint for a in block.args)
    return names, locations


def _split(name: str | None) -> tuple[str, str, str] | None:
    """(head, core, tail) of a name whose core a token can stand for, else None."""
    if name is None:
        return None
    head = _HEAD if name.startswith(_HEAD) else ""
    tail = _TAIL if name.endswith(_TAIL) and len(name) > len(head) + len(_TAIL) else ""
    core = name[len(head) : len(name) - len(tail)]
    return (head, core, tail) if core else None


def _name_shape(names: list[str | None]) -> tuple:
    """Which affixes each name has (a name with nothing but affixes, or none, as itself)."""
    shape = []
    for name in names:
        parts = _split(name)
        shape.append((parts[0], parts[2]) if parts else ("=", name))
    return tuple(shape)


@dataclass
class _Kernel:
    op: Operation
    key: tuple
    names: list[str | None]
    locations: list[Attribute]


def _describe(kernel: Operation) -> _Kernel:
    shape, _ = structure(kernel)
    names, locations = _slots(kernel)
    first: dict[SSAValue, int] = {}
    aliasing = tuple(first.setdefault(v, i) for i, v in enumerate(kernel.operands))
    attributes = tuple(
        sorted((k, v) for k, v in kernel.attributes.items() if k not in INFORMATIONAL)
    )
    informational = tuple(sorted(k for k in kernel.attributes if k in INFORMATIONAL))
    key = (shape, aliasing, attributes, informational, _name_shape(names))
    return _Kernel(kernel, key, names, locations)


# --- one class: its representative under tokens, lowered in a scratch function -------------


@dataclass
class _Class:
    representative: _Kernel
    base: int
    """The first token number of its slots (numbers are unique across the scratch module)."""
    function: func.FuncOp | None = None
    members: list[_Kernel] = field(default_factory=list)


def _tokenised(cls: _Class, index: int) -> func.FuncOp:
    """A function holding a copy of the class's representative with every name and
    location replaced by its slot's token, its operands the function's arguments."""
    rep = cls.representative
    kernel = rep.op
    types = [v.type for v in kernel.operands]
    block = Block(arg_types=types)
    copy = kernel.clone()
    copy.operands = block.args
    token_names = []
    for slot, name in enumerate(rep.names):
        parts = _split(name)
        token_names.append(
            f"{parts[0]}{_MARK}{cls.base + slot}q{parts[2]}" if parts is not None else name
        )
    names = iter(token_names)
    copy.properties["sym_name"] = StringAttr(next(names))  # type: ignore[arg-type]
    for r in copy.results:
        r.name_hint = next(names)
    slot = 0
    for op in copy.walk():
        op.location = NameLoc(StringAttr(f"{_LOC_MARK}{cls.base + slot}q"), NoneAttr())
        slot += 1
        if op is not copy:
            for r in op.results:
                r.name_hint = next(names)
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    a.name_hint = next(names)
    block.add_ops([copy, func.ReturnOp(*copy.results)])
    body = Region(block)
    function_type = FunctionType.from_lists(types, [r.type for r in copy.results])
    return func.FuncOp(f"memo_{index}", function_type, body)


def _mentions_token(attribute: Attribute, seen: dict[int, bool]) -> bool:
    """Whether a token sits anywhere inside ``attribute`` (a string, a parameter, ..)."""
    known = seen.get(id(attribute))
    if known is not None:
        return known
    if isinstance(attribute, StringAttr):
        found = _MARK in attribute.data or _LOC_MARK in attribute.data
    elif isinstance(attribute, ParametrizedAttribute):
        found = any(_mentions_token(p, seen) for p in attribute.parameters)
    elif isinstance(attribute, ArrayAttr):
        found = any(_mentions_token(p, seen) for p in attribute.data)
    elif isinstance(attribute, DictionaryAttr):
        found = any(
            _MARK in k or _LOC_MARK in k or _mentions_token(v, seen)
            for k, v in attribute.data.items()
        )
    else:
        found = False
    seen[id(attribute)] = found
    return found


def _replayable(cls: _Class) -> bool:
    """Whether the lowered ops can be copied for every member: tokens only in names, in
    ``sym_name`` and as whole locations; informational attributes passed on unchanged;
    no successors (a copy builds blocks in order)."""
    assert cls.function is not None
    original = cls.representative.op.attributes
    seen: dict[int, bool] = {}
    if not isinstance(cls.function.body.block.last_op, func.ReturnOp):
        return False
    for top in cls.function.body.block.ops:
        for key, value in top.attributes.items():
            if key in INFORMATIONAL and value is not original.get(key):
                return False
        for op in top.walk():
            if op.successors:
                return False
            for key, value in op.properties.items():
                if key != "sym_name" and _mentions_token(value, seen):
                    return False
            for key, value in op.attributes.items():
                if key not in INFORMATIONAL and _mentions_token(value, seen):
                    return False
            if _token_location(op.location) is None and _mentions_token(op.location, seen):
                return False
    return True


def _token_location(location: Attribute) -> int | None:
    """The number of a token location, else None."""
    if isinstance(location, NameLoc) and isinstance(location.location, NoneAttr):
        match = _LOC_TOKEN.fullmatch(location.desc.data)
        if match is not None:
            return int(match.group(1))
    return None


# --- a copy of the lowered ops for one member ----------------------------------------------


class _Copier:
    """Copies a class's lowered ops under one member's names, locations and attributes."""

    def __init__(self, cls: _Class, member: _Kernel):
        self.base = cls.base
        self.names = member.names
        self.locations = member.locations
        self.attributes = member.op.attributes
        self.mapper: dict[SSAValue, SSAValue] = {}

    def _core(self, match: re.Match) -> str:
        name = self.names[int(match.group(1)) - self.base]
        parts = _split(name)
        assert parts is not None
        return parts[1]

    def name(self, hint: str | None) -> str | None:
        if hint is None or _MARK not in hint:
            return hint
        return _TOKEN.sub(self._core, hint)

    def location(self, location: Attribute) -> Attribute:
        number = _token_location(location)
        return location if number is None else self.locations[number - self.base]

    def parts(self, op: Operation, top: bool) -> tuple[dict, dict, Attribute]:
        """The copy's properties (its symbol renamed), attributes (a top-level op's
        informational ones the member's own) and location (the member's)."""
        properties = dict(op.properties)
        sym = properties.get("sym_name")
        if isinstance(sym, StringAttr) and _MARK in sym.data:
            properties["sym_name"] = StringAttr(self.name(sym.data) or "")
        attributes = dict(op.attributes)
        if top:
            for key in INFORMATIONAL:
                if key in attributes:
                    attributes[key] = self.attributes[key]
        return properties, attributes, self.location(op.location)

    def op(self, op: Operation, top: bool = False) -> Operation:
        return clone_op(
            op, self.mapper, self.name, self.name, lambda o: self.parts(o, top and o is op)
        )


def _replace(cls: _Class, member: _Kernel) -> None:
    """``member`` replaced in its block by a copy of its class's lowered ops."""
    assert cls.function is not None
    copier = _Copier(cls, member)
    kernel = member.op
    for arg, operand in zip(cls.function.args, kernel.operands, strict=True):
        copier.mapper[arg] = operand
    block = kernel.parent_block()
    assert block is not None
    returned: Sequence[SSAValue] = ()
    for op in cls.function.body.block.ops:
        if isinstance(op, func.ReturnOp):
            returned = op.operands
            continue
        block.insert_op_before(copier.op(op, top=True), kernel)
    for old, new in zip(kernel.results, returned, strict=True):
        old.replace_all_uses_with(copier.mapper[new])
    kernel.detach()
    kernel.erase()


# --- one kernel alone, under its own names (the roofline guard's) -------------------------


def alone(kernel: Operation) -> ModuleOp:
    """A scratch module whose one function holds a copy of ``kernel``, under its own names
    and locations, its operands the function's arguments: the per-kernel passes lower it as
    they would lower the kernel in its module (the memo's premise)."""
    types = [v.type for v in kernel.operands]
    block = Block(arg_types=types)
    copy = kernel.clone()
    copy.operands = block.args
    block.add_ops([copy, func.ReturnOp(*copy.results)])
    function_type = FunctionType.from_lists(types, [r.type for r in copy.results])
    return ModuleOp([func.FuncOp("alone", function_type, Region(block))])


def replace_by(kernel: Operation, lowered: ModuleOp) -> None:
    """``kernel`` replaced in its block by a copy of the ops of ``lowered`` (an ``alone``
    module, lowered), operands and results rewired."""
    (function,) = lowered.ops
    assert isinstance(function, func.FuncOp)
    member = _Kernel(kernel, (), [], [])  # no tokens: names and locations are kept
    _replace(_Class(member, 0, function), member)


# --- the driver ----------------------------------------------------------------------------


def functions_of_kernels(module: ModuleOp) -> list[Operation] | None:
    """The module's kernels, when it is functions of kernels (and returns) only."""
    kernels: list[Operation] = []
    for function in module.ops:
        if not isinstance(function, func.FuncOp):
            return None
        for op in function.body.block.ops:
            if isinstance(op, KERNELS):
                kernels.append(op)
            elif not isinstance(op, func.ReturnOp):
                return None
    return kernels


@dataclass
class MemoStats:
    """What one ``lower_each_kernel_once`` call did (for tests and timing)."""

    kernels: int = 0
    classes: int = 0


def lower_each_kernel_once(
    module: ModuleOp, apply: Callable[[ModuleOp], None], stats: MemoStats | None = None
) -> bool:
    """Run ``apply`` (per-kernel passes, with their verification and progress) on one
    representative of each class of ``module``'s kernels in a scratch module, then give
    every kernel its class's lowered ops. Returns False, leaving ``module`` untouched, where
    that does not hold (other ops than kernels at the top, a pass that failed, a lowering
    that cannot be copied): the caller then applies the passes to ``module`` itself."""
    kernels = functions_of_kernels(module)
    if not kernels:
        return False
    classes: dict[tuple, _Class] = {}
    base = 0
    for op in kernels:
        kernel = _describe(op)
        cls = classes.get(kernel.key)
        if cls is None:
            cls = classes[kernel.key] = _Class(kernel, base)
            base += max(len(kernel.names), len(kernel.locations))
        cls.members.append(kernel)
    scratch = ModuleOp([])
    for index, cls in enumerate(classes.values()):
        cls.function = _tokenised(cls, index)
        scratch.body.block.add_op(cls.function)
    try:
        apply(scratch)
    except Exception:  # lowered kernel by kernel below, the error names the real kernels
        return False
    functions = [cls.function for cls in classes.values()]
    if list(scratch.ops) != functions or not all(_replayable(c) for c in classes.values()):
        return False  # a pass added something beside the kernels, or names leaked
    for cls in classes.values():
        for member in cls.members:
            _replace(cls, member)
    if stats is not None:
        stats.kernels, stats.classes = len(kernels), len(classes)
    return True
