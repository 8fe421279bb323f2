"""SSA scope: every use of a value sits where its definition is visible.

xDSL's verifier checks each op's own rules but not dominance, so IR that uses a value
outside the region that defines it (a ``loop.load`` moved above the ``loop.for`` whose
index it reads) or before its definition (two lines swapped) parsed, verified and reached
the emitter and the interpreters, which then failed without saying where. The project's
blocks are single blocks of structured regions, where dominance is simple: a value defined
in block B (an argument of B, or a result of an op of B) is visible to the ops after its
definition in B and to everything nested in them.

``check_block`` checks the values one block defines; the project's region ops call it on
their bodies from ``verify_``, and ``check_scopes`` runs it over every block of a module
(function bodies too), which the drivers do after parsing.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException


def _spelled(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of ``block`` that is ``op`` or holds it; None when ``op`` is outside it."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def check_block(block: Block) -> None:
    """Raise a ``VerifyException`` naming the user and the value for the first use of a
    value defined in ``block`` that its definition does not reach."""
    position = {op: i for i, op in enumerate(block.ops)}
    owner = block.parent_op()
    where = f"'{owner.name}'" if owner is not None else "the top level"
    for arg in block.args:
        for use in arg.uses:
            if _ancestor_in(block, use.operation) is None:
                raise VerifyException(
                    f"'{use.operation.name}' uses {_spelled(arg)}, an argument of the body "
                    f"of {where}, outside that body"
                )
    for op in block.ops:
        for result in op.results:
            for use in result.uses:
                user = _ancestor_in(block, use.operation)
                if user is None:
                    raise VerifyException(
                        f"'{use.operation.name}' uses {_spelled(result)} (defined by "
                        f"'{op.name}' in the body of {where}) outside that body"
                    )
                if position[user] <= position[op]:
                    raise VerifyException(
                        f"'{use.operation.name}' uses {_spelled(result)} before "
                        f"'{op.name}' defines it"
                    )


def check_scopes(root: Operation) -> None:
    """``check_block`` on every single-block region under ``root`` (a module, say), and no
    operand left undefined (xDSL's parser leaves a value an isolated region uses before
    the enclosing block defines it as a placeholder). Run before the ops' verifiers: a
    value used by its own definition sends the index-range analysis round in circles."""
    from xdsl.parser.core import ForwardDeclaredValue

    for op in root.walk():
        for operand in op.operands:
            if isinstance(operand, ForwardDeclaredValue):
                raise VerifyException(
                    f"'{op.name}' uses {_spelled(operand)}, which is not defined where it "
                    "is visible"
                )
        for region in op.regions:
            if len(region.blocks) == 1:
                check_block(region.blocks[0])
