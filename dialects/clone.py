"""One-walk copies of regions whose values are all defined before their uses (every
kernel body of the project): upstream ``Region.clone`` creates each op without operands
and sets them in a second walk, for IR that may use a value before defining it; one walk
does here, at about half the cost. Fusion's memo (``passes/loop/fuse.py``) and the
lowering memo (``tools/lower_memo.py``) copy kernels this way, each with its own renaming.

And what makes two kernels copies of each other: ``structure``, a kernel without its names,
the key of both memos and of the verifier's.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Block, Operation, Region, SSAValue

COVERS = "covers"
"""A kernel's attribute: the torch ops it computes (``fuse``, for ``--stats`` and ``-v``)."""
REFUSED = "fusion.refused"
"""A kernel's attribute: the fusions ``fuse`` refused it, and why (``-v``)."""
INFORMATIONAL = frozenset({COVERS, REFUSED})
"""Kernel attributes that name torch ops and other kernels and decide nothing: left out
of the memos' keys, and carried to each copy from its own kernel."""


def same(hint: str | None) -> str | None:
    return hint


def clone_op(
    op: Operation,
    mapper: dict[SSAValue, SSAValue],
    name: Callable[[str | None], str | None] = same,
    arg_name: Callable[[str | None], str | None] = same,
    parts: Callable[[Operation], tuple[dict, dict, object]] | None = None,
) -> Operation:
    """A copy of ``op`` and its regions. ``mapper`` maps old values to new ones and is
    filled as the copy goes (an operand not in it stays itself); ``name`` gives a
    result's new name hint from the old one, ``arg_name`` a block argument's; ``parts``
    gives the copy's (properties, attributes, location), by default the op's own."""
    properties, attributes, location = (
        parts(op) if parts else (dict(op.properties), dict(op.attributes), op.location)
    )
    copy = op.create(
        operands=[mapper.get(v, v) for v in op.operands],
        result_types=[r.type for r in op.results],
        properties=properties,
        attributes=attributes,
        regions=[clone_region(r, mapper, name, arg_name, parts) for r in op.regions],
    )
    copy.location = location
    for a, b in zip(op.results, copy.results, strict=True):
        b.name_hint = name(a.name_hint)
        mapper[a] = b
    return copy


def clone_region(
    region: Region,
    mapper: dict[SSAValue, SSAValue],
    name: Callable[[str | None], str | None] = same,
    arg_name: Callable[[str | None], str | None] = same,
    parts: Callable[[Operation], tuple[dict, dict, object]] | None = None,
) -> Region:
    """A copy of ``region`` (see ``clone_op``)."""
    blocks = []
    for block in region.blocks:
        new = Block(arg_types=[a.type for a in block.args])
        for a, b in zip(block.args, new.args, strict=True):
            b.name_hint = arg_name(a.name_hint)
            mapper[a] = b
        for op in block.ops:
            new.add_op(clone_op(op, mapper, name, arg_name, parts))
        blocks.append(new)
    return Region(blocks)


def structure(kernel: Operation) -> tuple[tuple, tuple[str | None, ...]]:
    """``kernel`` (a ``loop.kernel``, or any kernel op: a body region and a ``sym_name``)
    as a hashable tuple without names (values numbered in definition order; its op name
    and properties but not ``sym_name``; not its own attributes, such as ``covers`` or
    ``fusion.refused``; not locations), and the name hints of its inner values in the same
    order. The key of the fusion memo (``passes/loop/fuse.py``) and of the lowering memo
    (``deplodock.lower_memo``)."""
    top = kernel.regions[0].block
    ids: dict[SSAValue, int] = {}
    hints: list[str | None] = []
    for arg in top.args:
        ids[arg] = len(ids)

    def block(b: Block) -> tuple:
        for arg in b.args:
            ids[arg] = len(ids)
            hints.append(arg.name_hint)
        return (tuple(a.type for a in b.args), tuple(op_(o) for o in b.ops))

    def op_(o: Operation) -> tuple:
        operands = tuple(ids[v] for v in o.operands)
        for r in o.results:
            ids[r] = len(ids)
            hints.append(r.name_hint)
        return (
            o.name,
            operands,
            tuple(r.type for r in o.results),
            tuple(sorted(o.properties.items())),
            tuple(sorted(o.attributes.items())),
            tuple(tuple(block(b) for b in region.blocks) for region in o.regions),
        )

    properties = tuple(sorted((k, v) for k, v in kernel.properties.items() if k != "sym_name"))
    body = (
        kernel.name,
        properties,
        tuple(a.type for a in top.args),
        tuple(op_(o) for o in top.ops),
        kernel.result_types,
    )
    return body, tuple(hints)
