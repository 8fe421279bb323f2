"""One-walk copies of regions whose values are all defined before their uses (every
kernel body of the project): upstream ``Region.clone`` creates each op without operands
and sets them in a second walk, for IR that may use a value before defining it; one walk
does here, at about half the cost. Fusion's memo (``passes/loop/fuse.py``) and the
lowering memo (``tools/lower_memo.py``) copy kernels this way, each with its own renaming.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Block, Operation, Region, SSAValue


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
