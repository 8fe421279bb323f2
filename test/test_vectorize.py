"""``vector V`` loops: their meaning in both SIMT interpreters, the pass's decision, and
which accesses ``vector_access`` proves 16-byte wide (the emitter's rule)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects import kernel, make_context, tile
from deplodock.dialects.access import vector_access
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.frontends.expression import capture_expression
from deplodock.pipeline import lower


def _parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def _owner_map(level: str, threads: int, size: int, vector: int) -> str:
    """Each element records the thread that wrote it, through a (vector) strided loop."""
    if level == "kernel":
        return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{
  %y = kernel.kernel @k grid(1, 1, 1) block({threads}, 1, 1)
      ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<{size}xf32>) {{
    %t = kernel.thread_id x
    kernel.for %a = %t to {size} step {threads} vector {vector} {{
      %i = arith.index_cast %t : index to i32
      %f = arith.sitofp %i : i32 to f32
      kernel.store %f, %yb[%a] : memref<{size}xf32>
    }}
  }}
  func.return %y : tensor<{size}xf32>
}}"""
    return f"""
func.func @forward(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{
  %y = tile.kernel @k axes(%t : {threads} = thread)
      ins(%xb = %x : tensor<{size}xf32>) outs(%yb : tensor<{size}xf32>) {{
    tile.strided_for %a = %t to {size} step {threads} vector {vector} {{
      %i = arith.index_cast %t : index to i32
      %f = arith.sitofp %i : i32 to f32
      loop.store %f, %yb[%a] : memref<{size}xf32>
    }}
  }}
  func.return %y : tensor<{size}xf32>
}}"""


@pytest.mark.parametrize("level", ["tile", "kernel"])
@pytest.mark.parametrize("size", [64, 72])  # 72: 18 groups, threads 0 and 1 take two
def test_vector_loop_gives_each_thread_consecutive_groups(level: str, size: int) -> None:
    threads, vector = 16, 4
    x = np.zeros(size, np.float32)
    (y,) = run_forward(_parse(_owner_map(level, threads, size, vector)), [x])
    expected = (np.arange(size) // vector) % threads
    np.testing.assert_array_equal(y, expected.astype(np.float32))


def test_vector_must_divide_the_bound() -> None:
    with pytest.raises(VerifyException, match="vector 4 does not divide the upper bound 66"):
        _parse(_owner_map("kernel", 16, 66, 4))
    with pytest.raises(VerifyException, match="vector 3 is not a supported width"):
        _parse(_owner_map("tile", 16, 66, 3))


@pytest.mark.parametrize(
    ("index", "wide"),
    [
        ("%b, %a", True),
        ("%b, (%a + 32) mod 64", True),  # RoPE's rotate-half: a group stays together
        ("%b, (%a + 2) mod 64", False),  # a group would start off a 16-byte boundary
        ("%b, %a floordiv 2", False),
        ("%a, %b", False),  # transposed: a row apart per element
        ("%b * 0, %a", True),
        ("%b floordiv 3, %a", True),  # any row: rows are 64 floats, a multiple of 4
    ],
)
def test_vector_access_rule(index: str, wide: bool) -> None:
    module = _parse(f"""
func.func @forward(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {{
  %y = kernel.kernel @k grid(64, 1, 1) block(16, 1, 1)
      ins(%xb = %x : tensor<64x64xf32>) outs(%yb : tensor<64x64xf32>) {{
    %t = kernel.thread_id x
    %b = kernel.block_id x
    kernel.for %a = %t to 64 step 16 {{
      %v = kernel.load %xb[{index}] : memref<64x64xf32>
      kernel.store %v, %yb[%b, %a] : memref<64x64xf32>
    }}
  }}
  func.return %y : tensor<64x64xf32>
}}""")
    (loop,) = [op for op in module.walk() if isinstance(op, kernel.ForOp)]
    (load,) = [op for op in loop.walk() if isinstance(op, kernel.LoadOp)]
    assert vector_access(load, loop, 4) is wide


def test_memory_bound_seeds_are_vectorised() -> None:
    """RMSNorm's and softmax's row loops all take float4 steps; the kernels still match
    the reference in the pass-by-pass checks (test_simt_interpreters)."""
    for expr in (
        "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))",
        "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))",
    ):
        module = import_program(capture_expression(expr).program).module
        lower(module, to="tile")
        loops = [op for op in module.walk() if isinstance(op, tile.StridedForOp)]
        assert loops and all(op.vector is not None and op.vector.data == 4 for op in loops)


# --- a register tile's rows stored sixteen bytes at a time (emit.packed_stores) ----------


def _kernel_module(expr: str) -> ModuleOp:
    module = import_program(capture_expression(expr).program).module
    lower(module, to="kernel")
    return module


def _output_stores(module: ModuleOp):
    """The kernel, its top block's stores to its output, and its outputs."""
    (op,) = [k for k in module.walk() if isinstance(k, kernel.KernelOp)]
    outputs = set(op.body.block.args[len(op.inputs) :])
    stores = [o for o in op.body.block.ops if isinstance(o, kernel.StoreOp) and o.buffer in outputs]
    return op, stores, outputs


def test_register_tile_rows_are_stored_sixteen_bytes_at_a_time() -> None:
    """A matmul whose output is most of its traffic (K = 16: 8192 x 8192 floats written,
    1 MB read) is planned ``stores = 4`` and stores each thread's 8 x 8 tile as 16 float4
    stores, none scalar, and NVRTC accepts it; rows that edge tiles guard, planned the
    same, stay scalar; a compute-bound product is planned ``stores = 1`` and stays scalar
    though its rows would pack."""
    from deplodock.backends.cuda.emit import emit_cuda, packed_stores
    from deplodock.backends.cuda.nvrtc import compile_cuda

    module = _kernel_module("torch.mm(torch.randn(8192,16), torch.randn(16,8192))")
    op, stores, outputs = _output_stores(module)
    assert tile.schedule_of(op).stores.data == 4
    runs = packed_stores(op.body.block, outputs)
    assert len(stores) == 64 and len(runs) == 16
    assert sorted(s for run in runs.values() for s in map(stores.index, run)) == list(range(64))
    source = emit_cuda(module)
    assert source.count("make_float4(") == 16
    assert not [line for line in source.splitlines() if line.strip().startswith("mm_b[")]
    compile_cuda(source, arch="sm_90")
    for expr, planned, packed in (
        ("torch.mm(torch.randn(2048,16), torch.randn(16,2048))", 4, True),
        ("torch.mm(torch.randn(2039,16), torch.randn(16,2048))", 4, True),  # rows guarded
        ("torch.mm(torch.randn(1024,1024), torch.randn(1024,1024))", 1, False),  # compute
    ):
        module = _kernel_module(expr)
        source = emit_cuda(module)
        schedules = [tile.schedule_of(k) for k in module.walk() if isinstance(k, kernel.KernelOp)]
        assert schedules[0].stores.data == planned, expr
        assert ("make_float4(" in source) == packed, expr
        compile_cuda(source, arch="sm_90")
        if "2039" in expr:  # an edge tile's rows: each row of four under its row's guard
            lines = [line.strip() for line in source.splitlines() if "mm_b[" in line]
            assert lines and all(
                re.fullmatch(
                    r"if \(\((a0_r\d+)\) < 2039\) \*reinterpret_cast<float4\*>"
                    r"\(&mm_b\[\1 \* 2048 \+ a1_c[04]\]\) = make_float4\(.*\);",
                    line,
                )
                for line in lines
            ), lines[:3]
    # the compute-bound product's rows would pack: only its plan keeps them scalar
    op = next(k for k in module.walk() if isinstance(k, kernel.KernelOp))
    outputs = set(op.body.block.args[len(op.inputs) :])
    assert packed_stores(op.body.block, outputs)


def test_guarded_stores_pack_only_under_one_guard() -> None:
    """An edge tile's columns (2048x16 @ 16x2039): a thread's first four columns are in
    bounds and pack; the next four each test their own column against 2039, so some may
    be written and some not: they stay scalar, each under its guard."""
    from deplodock.backends.cuda.emit import emit_cuda, packed_stores

    module = _kernel_module("torch.mm(torch.randn(2048,16), torch.randn(16,2039))")
    # the product (k_mm_align1 copies the 16 x 2039 operand into rows padded to 2040)
    (op,) = [
        k for k in module.walk() if isinstance(k, kernel.KernelOp) and k.sym_name.data == "k_mm"
    ]
    outputs = set(op.body.block.args[len(op.inputs) :])
    stores = [o for o in op.walk() if isinstance(o, kernel.StoreOp) and o.buffer in outputs]
    block = stores[0].parent_block()
    runs = packed_stores(block, outputs)
    packed = [s for run in runs.values() for s in run]
    guarded = [o for o in block.ops if o in stores and o.guarded_dims()]
    assert runs and guarded and not set(packed) & set(guarded)
    source = emit_cuda(module)
    assert re.search(r"^ *if \(\(a1_c4\) < 2039\) mm_b\[a0_r0 \* 2039 \+ a1_c4\] = ", source, re.M)


def test_only_a_product_bound_by_its_output_stores_four_at_a_time() -> None:
    """``stores_for``: 4 where the output is at least what the product reads and moving
    it takes longer than the arithmetic at the target's rates (K = 16 over 8192 x 8192);
    1 for a compute-bound product (a 3072 cube, a decoder's projection), one that reads
    as much as it writes (a tall-skinny product, K = 64), and a K split (partial sums)."""
    from deplodock.passes.tile.schedule.matmul import MatmulProblem, MatmulTile, stores_for
    from deplodock.target import target_for

    target, tile8 = target_for("sm_90"), MatmulTile(8, 8, 16, 16)

    def stores(m: int, n: int, k: int, splits: int = 1, tile_=tile8) -> int:
        return stores_for(MatmulProblem(m, n, k, 1, False, True), tile_, splits, target)

    assert stores(8192, 8192, 16) == 4
    assert stores(8192, 8192, 16, splits=2) == 1
    assert stores(8192, 8190, 16, tile_=MatmulTile(8, 6, 16, 16)) == 1  # rows of 6
    assert stores(3072, 3072, 3072) == 1
    assert stores(512, 2048, 2048) == 1
    assert stores(1048576, 64, 64) == 1


def test_a_run_of_stores_is_not_moved_past_what_could_see_it() -> None:
    """The run's first stores are written at its last: so a load of the output between
    them, or a store of one of its elements again, keeps them scalar where they are (the
    load would read the element before it is written; the second store would be
    overwritten by the first)."""
    from deplodock.backends.cuda.emit import packed_stores

    def first_run_after(change) -> dict:
        module = _kernel_module("torch.mm(torch.randn(8192,16), torch.randn(16,8192))")
        op, stores, outputs = _output_stores(module)
        change(op.body.block, stores)
        return {
            stores.index(s)
            for run in packed_stores(op.body.block, outputs).values()
            for s in run
            if s in stores[:4]
        }

    def nothing(block, stores) -> None:
        pass

    def load_between(block, stores) -> None:
        first = stores[0]
        load = kernel.LoadOp(first.buffer, first.map.data, list(first.indices))
        block.insert_op_after(load, stores[1])

    def store_again(block, stores) -> None:
        block.insert_op_after(stores[0].clone(), stores[2])

    assert first_run_after(nothing) == {0, 1, 2, 3}
    assert first_run_after(load_between) == set()
    assert first_run_after(store_again) == set()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, k, n",
    [(8192, 16, 8192), (2048, 16, 2048), (2039, 16, 2048), (2048, 16, 2039), (1000, 48, 1000)],
)
def test_matmuls_with_packed_stores_match_torch(m: int, k: int, n: int) -> None:
    """Each matmul's output equals torch's to 1e-5 of its largest element on the GPU:
    products bound by their output (``stores = 4``), their register tiles' rows stored as
    float4 (``emit.packed_stores``) where they pack: whole tiles, rows guarded by edge
    tiles (scalar), rows 2039 floats apart (every fourth row's runs aligned)."""
    import torch

    import deplodock
    from deplodock.backends.cuda.driver import gpu_available

    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    got = deplodock.compile(torch.mm, a, b)(a, b)
    want = torch.mm(a, b)
    assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()


def test_the_schedule_says_its_stores_and_checks_them() -> None:
    """``stores`` prints only when not 1, reads back, and must be 1 or 4 dividing the
    tile's columns (the verifier names the rule)."""
    from xdsl.dialects.builtin import ArrayAttr

    four = tile.ScheduleAttr.make(8, 8, threads_m=8, threads_n=16, k_chunk=8, stores=4)
    assert "stores = 4" in str(four) and "stores" not in str(four.replace(stores=1))
    parsed = Parser(make_context(), f"[{four}]").parse_attribute()
    assert isinstance(parsed, ArrayAttr) and parsed.data[0] == four
    for bad in (dict(stores=3), dict(stores=4, tn=6)):
        with pytest.raises(VerifyException, match="stores is 1 or 4"):
            fields = {"tm": 8, "tn": 8, **bad}
            tile.ScheduleAttr.make(fields.pop("tm"), fields.pop("tn"), **fields).verify()
