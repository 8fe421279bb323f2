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
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects import tile
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.pipeline import PassStep, Verifier, lower


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
    with pytest.raises(VerifyException, match="extent 0 must be positive"):
        lower(
            module,
            to="kernel",
            options={"tileify": BrokenTileify()},
            observer=lambda step: seen.append(step.name),
        )
    assert seen == []  # raised right after tileify, before any later pass ran


def test_only_new_ops_are_verified_again() -> None:
    module = _loop_module()
    verifier = Verifier()
    verifier.after_pass(module)
    verified = set(map(id, verifier.seen))
    assert verified  # every top-level op of @forward, once
    verifier.after_pass(module)  # nothing changed: nothing new to verify
    assert set(map(id, verifier.seen)) == verified
    steps: list[PassStep] = []
    lower(module, to="tile", observer=steps.append)
    assert [s.name for s in steps][0] == "tileify"
