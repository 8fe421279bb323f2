"""A synchronous slab filled through registers (``stage_fills.holds_fill``).

A slab a block fills once (a batch of small products' one K chunk, a norm's row) was
filled by a strided loop that stores each element to shared memory before loading the
next (its trip count depends on the thread, so the compiler unrolls it a few deep at
most): few loads in flight. ``materialize`` now fills a slab of 2-32 elements a thread
through a register array: every load issued, then every store. Here: the cost function's
bounds, the lowered order (each slab's global loads all before its first shared store),
and the held and the strided fills (``materialize{held_fill_elements=0}``) in the SIMT
interpreters with the race checker, every block, against numpy at irregular sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

from deplodock.dialects import kernel
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.passes.kernel.stage_fills import HELD_FILL_ELEMENTS
from deplodock.pipeline import lower, make_pass
from deplodock.reference import relative_error

RTOL = 1e-5


def _bmm_module(b: int, m: int, n: int, k: int, held: int):
    """``torch.bmm`` in bmm/small's 32 x 32 tile (4 x 4 in 8 x 8 threads, K one chunk),
    lowered to the kernel level with ``held`` as ``held_fill_elements``."""
    expr = f"torch.bmm(torch.randn({b},{m},{k}), torch.randn({b},{k},{n}))"
    module = import_program(capture_expression(expr).program).module
    options = {
        "register-tile": make_pass("register-tile", tm=4, tn=4, threads_m=8, threads_n=8, bk=k),
        "chunk-matmul-k": make_pass("chunk-matmul-k", bk=k),
        "materialize": make_pass("materialize", held_fill_elements=held),
    }
    return lower(module, to="kernel", options=options)


def _fills(module) -> dict[str, tuple[list[int], int]]:
    """Per register array: the program-order positions of the global loads stored into it,
    and of the first store into the shared array its elements go to."""
    order = {id(op): i for i, op in enumerate(module.walk())}
    out = {}
    for local in [o for o in module.walk() if isinstance(o, kernel.LocalOp)]:
        held = [u.operation for u in local.result.uses if isinstance(u.operation, kernel.StoreOp)]
        loads = [order[id(s.value.owner)] for s in held]
        name = local.sym_name.data.removesuffix("_regs")
        (shared,) = [
            o for o in module.walk() if isinstance(o, kernel.SharedOp) and o.sym_name.data == name
        ]
        stores = [
            u.operation for u in shared.result.uses if isinstance(u.operation, kernel.StoreOp)
        ]
        out[name] = (loads, min(order[id(s)] for s in stores))
    return out


def test_cost_function_bounds() -> None:
    from deplodock.passes.kernel.stage_fills import holds_fill

    class Stage:  # what holds_fill reads of a tile.stage
        def __init__(self, *shape: int):
            self.box_shape = shape

    assert not holds_fill(Stage(64), 64)  # one element a thread: nothing to gather
    assert holds_fill(Stage(33, 4), 64)  # 132 elements: 2 and a bit a thread
    assert holds_fill(Stage(32, 33), 64)  # bmm/small's x slab, 16.5 a thread
    assert holds_fill(Stage(HELD_FILL_ELEMENTS, 64), 64)
    assert not holds_fill(Stage(HELD_FILL_ELEMENTS * 64 + 1), 64)  # a register array too big
    assert not holds_fill(Stage(32, 33), 64, most=0)  # the option's off


@pytest.mark.parametrize(
    "dims",
    [(3, 32, 31, 33), (5, 29, 31, 37), (1, 32, 32, 13), (2, 31, 17, 64)],
    ids=lambda d: "x".join(map(str, d)),
)
def test_held_and_strided_fills_run_correct(dims: tuple[int, int, int, int]) -> None:
    b, m, n, k = dims
    rng = np.random.default_rng(sum(dims))
    x = rng.standard_normal((b, m, k)).astype(np.float32)
    w = rng.standard_normal((b, k, n)).astype(np.float32)
    want = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    held = _bmm_module(b, m, n, k, HELD_FILL_ELEMENTS)
    fills = _fills(held)
    assert sorted(fills) == ["x1_smem", "x_smem"]  # both operands through registers
    for name, (loads, first_store) in fills.items():
        assert loads and max(loads) < first_store, name  # every load before the first store
    strided = _bmm_module(b, m, n, k, 0)
    assert not _fills(strided)  # the option changes the program
    for module in (held, strided):
        (got,) = run_forward(module, [x, w])  # every block, the race checker on
        assert relative_error(np.asarray(got), want) <= RTOL
