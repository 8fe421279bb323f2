"""``lower`` verifies after every pass what the pass made, and the whole module at the end.

A pass that rewrites a kernel replaces it, so verifying the ops not seen before catches bad
IR at the pass that made it (``pipeline.Verifier``), while a whole model's hundreds of
untouched kernels are not verified again after every pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from deplodock.boundary import PassError
from deplodock.dialects import make_context, tile
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.pipeline import Verifier, lower


def _loop_module() -> ModuleOp:
    captured = capture_expression("torch.softmax(torch.randn(4, 64), -1) * 2.0")
    return lower(import_program(captured.program).module, to="loop")


@dataclass(frozen=True)
class BrokenTileify(ModulePass):
    """tileify, then one kernel replaced by a copy with an axis of extent 0."""

    name = "tileify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        get_pass("tileify")().apply(ctx, op)
        kernel = next(k for k in op.walk() if isinstance(k, tile.KernelOp))
        broken = kernel.clone()
        broken.properties["extents"] = ArrayAttr([IntAttr(0) for _ in kernel.extents.data])
        kernel.parent_block().insert_op_before(broken, kernel)
        kernel.results[0].replace_all_uses_with(broken.results[0])
        kernel.detach()
        kernel.erase()


def test_bad_ir_is_caught_at_the_pass_that_made_it() -> None:
    module = _loop_module()
    seen: list[str] = []
    with pytest.raises(PassError) as raised:
        lower(
            module,
            to="kernel",
            options={"tileify": BrokenTileify()},
            observer=lambda step: seen.append(step.name),
        )
    assert seen == []  # raised right after tileify, before any later pass ran
    assert raised.value.pass_name == "tileify"  # named: the pass that made the bad IR
    assert isinstance(raised.value.cause, VerifyException)
    assert "extent 0 must be positive" in str(raised.value.cause)


def test_only_new_ops_are_verified_again(monkeypatch) -> None:
    """After a pass, the top-level ops it made are verified; ops seen before are not."""
    module = _loop_module()
    verified: list[Operation] = []
    real_verify = Operation.verify

    def counting(op: Operation, *args, **kwargs):
        verified.append(op)
        return real_verify(op, *args, **kwargs)

    verifier = Verifier()
    monkeypatch.setattr(Operation, "verify", counting)
    verifier.after_pass(module)
    top = list(next(iter(module.ops)).body.block.ops)  # @forward's kernels and return
    assert [op for op in verified if op in top] == top
    verified.clear()
    verifier.after_pass(module)  # nothing changed: nothing verified again
    assert verified == []
    monkeypatch.undo()
    get_pass("tileify")().apply(make_context(), module)  # every kernel replaced
    monkeypatch.setattr(Operation, "verify", counting)
    verifier.after_pass(module)
    kernels = [op for op in verified if isinstance(op, tile.KernelOp)]
    assert kernels and all(k.parent_op() is not None for k in kernels)
    assert len(kernels) == len([o for o in module.walk() if isinstance(o, tile.KernelOp)])
