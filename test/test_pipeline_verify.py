"""``lower`` verifies after every pass what the pass made, and the whole module at the end,
each kernel body once per content (and not the memo's copies of verified ones).

A pass that rewrites a kernel replaces it, so verifying the ops not seen before catches bad
IR at the pass that made it (``pipeline.Verifier``), while a whole model's hundreds of
untouched kernels are not verified again after every pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from deplodock.boundary import PassError
from deplodock.dialects import loop, make_context, tile
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes import get_pass
from deplodock.pipeline import Verifier, lower, verify_module


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


def _with_twin() -> tuple[ModuleOp, Operation, Operation]:
    """A loop module with its kernel and an identical copy of it (unused)."""
    module = _loop_module()
    kernel = next(op for op in module.walk() if isinstance(op, loop.KernelOp))
    twin = kernel.clone()
    kernel.parent_block().insert_op_before(twin, kernel)
    return module, kernel, twin


def _bodies_verified(monkeypatch) -> list[Operation]:
    """The kernels whose bodies ``Region.verify`` is called on, as it happens."""
    seen: list[Operation] = []
    real = Region.verify

    def spy(region: Region) -> None:
        if isinstance(region.parent, loop.KernelOp):
            seen.append(region.parent)
        real(region)

    monkeypatch.setattr(Region, "verify", spy)
    return seen


def test_a_kernel_body_is_verified_once_per_content(monkeypatch) -> None:
    module, kernel, twin = _with_twin()
    seen = _bodies_verified(monkeypatch)
    verify_module(module)
    assert seen == [twin]  # the first of the two alike: the other's body is the same
    # a body changed in place is another content: verified, and its error raised
    loops = [op for op in twin.walk() if isinstance(op, loop.ForOp)]
    loops[1].properties["upper"] = IntAttr(65)  # reads x_b[%a0, 64]: out of bounds
    seen.clear()
    with pytest.raises(VerifyException, match="outside the buffer"):
        verify_module(module)
    assert seen == [twin]


def test_copies_the_memo_made_are_trusted(monkeypatch) -> None:
    """Kernels the lowering memo copied from a verified lowering keep their bodies
    unverified; a kernel made afterwards is verified."""
    module, kernel, twin = _with_twin()
    verifier = Verifier()
    verifier.trust(module)
    seen = _bodies_verified(monkeypatch)
    verifier.whole(module)
    assert seen == []
    third = kernel.clone()
    kernel.parent_block().insert_op_before(third, kernel)
    verifier.whole(module)
    assert seen == [third]
