"""``tile.share``: values computed in registers, read by other threads of the block through
shared memory (what an attention walk's probabilities need when the keys are dealt to
lanes for the scores and the head dim for P V).

A kernel in the walk's shape (two warps: 8 rows of 8 lanes): per chunk of 16 keys, thread
(ty, tx) computes the weights of keys tx and tx + 8 of row ty, shares them, then sums its
column tx of the chunk's values weighted by every key's weight of row 7 - ty (another
warp's); the chunks add up. Checked by the tile interpreter against numpy, then through
materialize by the kernel interpreter and its race checker (the barriers the lowering puts
around the stores are needed: removing either is a race), and compiled by NVRTC. The
interpreter refuses an element written twice or read unwritten, and the verifier an index
that leaves the array or a share under a branch.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects import kernel, make_context, tile
from deplodock.dialects.interpreters.kernel import SharedMemoryRace
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.interpreters.tile import SimtError
from deplodock.passes import get_pass

WALK = """
builtin.module {
  func.func @forward(%x: tensor<3x2x8x16xf32>, %v: tensor<3x2x16x8xf32>) -> tensor<3x8x8xf32> {
    %o = tile.kernel @k_share axes(%ty : 8 = thread, %tx : 8 = thread, %b : 3 = block)
        ins(%xb = %x : tensor<3x2x8x16xf32>, %vb = %v : tensor<3x2x16x8xf32>)
        outs(%ob : tensor<3x8x8xf32>) {
      %acc = loop.for %c = 0 to 2 reduce(add) -> (f32) {
        %x0 = loop.load %xb[%b, %c, %ty, %tx] : memref<3x2x8x16xf32>
        %x1 = loop.load %xb[%b, %c, %ty, %tx + 8] : memref<3x2x8x16xf32>
        %p0 = math.exp %x0 : f32
        %p1 = math.exp %x1 : f32
        %p = tile.share %p0 [%tx, %ty], %p1 [%tx + 8, %ty] : f32 -> memref<16x8xf32>
        %s = loop.for %k = 0 to 16 reduce(add) -> (f32) {
          %pk = loop.load %p[%k, 7 - %ty] : memref<16x8xf32>
          %vk = loop.load %vb[%b, %c, %k, %tx] : memref<3x2x16x8xf32>
          %m = arith.mulf %pk, %vk : f32
          loop.yield %m : f32
        }
        loop.yield %s : f32
      }
      loop.store %acc, %ob[%b, %ty, %tx] : memref<3x8x8xf32>
    }
    func.return %o : tensor<3x8x8xf32>
  }
}
"""


def _parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((3, 2, 8, 16)).astype(np.float32),
        rng.standard_normal((3, 2, 16, 8)).astype(np.float32),
    ]


def _want(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    weights = np.exp(x.astype(np.float64))[:, :, ::-1]  # row r reads row 7 - r's weights
    return np.einsum("bcrk,bckd->brd", weights, v.astype(np.float64))


def _materialized():
    ctx = make_context()
    module = Parser(ctx, WALK).parse_module()
    get_pass("materialize")().apply(ctx, module)
    module.verify()
    return module


def test_share_round_trips() -> None:
    module = _parse(WALK)
    (share,) = [o for o in module.walk() if isinstance(o, tile.ShareOp)]
    assert "tile.share %p0 [%tx, %ty], %p1 [%tx + 8, %ty] : f32 -> memref<16x8xf32>" in str(module)
    assert str(_parse(str(module))) == str(module)
    assert share.value_map(1).eval([3, 2], []) == (11, 2)


def test_tile_interpreter_reads_what_the_block_shared() -> None:
    x, v = _inputs()
    (out,) = run_forward(_parse(WALK), [x, v])
    assert np.abs(out - _want(x, v)).max() <= 1e-5 * np.abs(_want(x, v)).max()


def test_materialize_puts_the_stores_between_barriers() -> None:
    module = _materialized()
    text = str(module)
    assert "tile.share" not in text
    (shared,) = [o for o in module.walk() if isinstance(o, kernel.SharedOp)]
    assert shared.result.type.get_shape() == (16, 8)
    stores = [
        o for o in module.walk() if isinstance(o, kernel.StoreOp) and o.buffer is shared.result
    ]
    assert len(stores) == 2
    first = stores[0]
    assert isinstance(first.prev_op, kernel.BarrierOp)  # the previous chunk's reads are done
    assert isinstance(stores[1].next_op, kernel.BarrierOp)  # every weight written
    x, v = _inputs()
    (out,) = run_forward(module, [x, v])  # the kernel interpreter, race checker on
    assert np.abs(out - _want(x, v)).max() <= 1e-5 * np.abs(_want(x, v)).max()


@pytest.mark.parametrize("which", ["before", "after"])
def test_race_checker_needs_both_barriers(which: str) -> None:
    module = _materialized()
    (shared,) = [o for o in module.walk() if isinstance(o, kernel.SharedOp)]
    stores = [
        o for o in module.walk() if isinstance(o, kernel.StoreOp) and o.buffer is shared.result
    ]
    barrier = stores[0].prev_op if which == "before" else stores[-1].next_op
    assert isinstance(barrier, kernel.BarrierOp)
    barrier.detach()
    barrier.erase()
    with pytest.raises(SharedMemoryRace):
        run_forward(module, _inputs())


def test_an_element_written_twice_is_an_error() -> None:
    text = WALK.replace("%p1 [%tx + 8, %ty]", "%p1 [%tx, %ty]")
    with pytest.raises(SimtError, match="more than one thread"):
        run_forward(_parse(text), _inputs())


def test_an_element_read_unwritten_is_an_error() -> None:
    text = WALK.replace(
        "%p = tile.share %p0 [%tx, %ty], %p1 [%tx + 8, %ty] : f32 -> memref<16x8xf32>",
        "%p = tile.share %p0 [%tx, %ty] : f32 -> memref<16x8xf32>",
    )
    with pytest.raises(SimtError, match="no thread of its block wrote"):
        run_forward(_parse(text), _inputs())


def test_verifier_refuses_an_index_outside_the_array() -> None:
    text = WALK.replace("%p1 [%tx + 8, %ty]", "%p1 [%tx + 9, %ty]")
    with pytest.raises(VerifyException, match="outside the buffer's extent 16"):
        _parse(text)


def test_verifier_refuses_a_share_not_every_thread_reaches() -> None:
    text = WALK.replace(
        "%p = tile.share %p0 [%tx, %ty], %p1 [%tx + 8, %ty] : f32 -> memref<16x8xf32>",
        "%p = tile.share %p0 [%tx, %ty], %p1 [%tx + 8, %ty] : f32 -> memref<16x8xf32>",
    ).replace(
        "loop.for %c = 0 to 2 reduce(add) -> (f32) {",
        "tile.strided_for %c = %tx to 2 step 8 reduce(add) -> f32 {",
        1,
    )
    with pytest.raises(VerifyException, match="every thread of the block must reach it"):
        _parse(text)


def test_materialized_share_compiles_with_nvrtc() -> None:
    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.backends.cuda.nvrtc import compile_cuda

    source = emit_cuda(_materialized())
    assert "__syncthreads()" in source
    compiled = compile_cuda(source)
    assert compiled.resources
