"""Lowering each distinct kernel once (``deplodock.lower_memo``) gives the very module that
lowering every kernel gives: printed text, debug info (locations) and CUDA alike."""

from __future__ import annotations

import io

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from deplodock import lower_memo, pipeline
from deplodock.backends.cuda.emit import emit_cuda
from deplodock.boundary import PassRefusal
from deplodock.dialects import make_context, tile
from deplodock.passes import get_pass
from deplodock.pipeline import lower


def _debuginfo(module: ModuleOp) -> str:
    buffer = io.StringIO()
    Printer(stream=buffer, print_debuginfo=True).print_op(module)
    return buffer.getvalue()


@pytest.fixture
def memo_calls(monkeypatch) -> list[tuple[bool, lower_memo.MemoStats]]:
    """Each call of the memo from ``lower``: whether it lowered the module, and its stats."""
    calls: list[tuple[bool, lower_memo.MemoStats]] = []
    real = lower_memo.lower_each_kernel_once

    def spy(module, apply, stats=None):
        stats = lower_memo.MemoStats()
        done = real(module, apply, stats)
        calls.append((done, stats))
        return done

    monkeypatch.setattr(pipeline, "lower_each_kernel_once", spy)
    return calls


def test_memoised_lowering_equals_lowering_each_kernel(memo_calls) -> None:
    """A two-layer TinyLlama at seq 32 (its projections split K: a kernel becomes partial
    sums and a combine) lowered from the loop level to the kernel level with the memo
    prints what lowering every kernel prints, with and without debug info, and its CUDA
    is the same; the second layer's kernels are copies."""
    pytest.importorskip("transformers")
    from deplodock.frontends.export import import_program
    from deplodock.frontends.models import capture_model

    captured = capture_model("tinyllama", device="meta", layers=2, seq=32)
    once = lower(import_program(captured.program).module, to="loop")
    each = once.clone()  # the same locations (a parsed module would have none)
    memo_calls.clear()
    lower(once, to="kernel")
    lower(each, to="kernel", memo=False)
    ((done, stats),) = memo_calls
    assert done and stats.kernels - stats.classes >= 12  # layer 2: copies of layer 1
    assert str(once) == str(each)
    assert _debuginfo(once) == _debuginfo(each)
    assert "_chunks" in str(once)  # a split kernel was copied, names derived and all
    assert "loc(unknown)" in _debuginfo(once) and "layers.1" in _debuginfo(once)
    assert emit_cuda(once) == emit_cuda(each)


PROGRAM = """
func.func @forward(%x: tensor<1x32x64xf32>, %w: tensor<64xf32>, %z: tensor<1x16x64xf32>)
    -> (tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x16x64xf32>) {
  %y = loop.kernel @k_norm ins(%x_b = %x : tensor<1x32x64xf32>, %w_b = %w : tensor<64xf32>)
      outs(%y_b : tensor<1x32x64xf32>) attributes {covers = ["rms_norm"]} {
    %inv = arith.constant 1.562500e-02 : f32
    loop.for %a0 = 0 to 32 {
      %ss = loop.for %a1 = 0 to 64 reduce(add) -> f32 {
        %v = loop.load %x_b[0, %a0, %a1] : memref<1x32x64xf32>
        %q = arith.mulf %v, %v : f32
        loop.yield %q : f32
      }
      %m = arith.mulf %ss, %inv : f32
      %r = math.rsqrt %m : f32
      loop.for %a2 = 0 to 64 {
        %v2 = loop.load %x_b[0, %a0, %a2] : memref<1x32x64xf32>
        %wv = loop.load %w_b[%a2] : memref<64xf32>
        %t = arith.mulf %v2, %r : f32
        %o = arith.mulf %t, %wv : f32
        loop.store %o, %y_b[0, %a0, %a2] : memref<1x32x64xf32>
      }
    }
  }
  %y2 = loop.kernel @k_norm_again ins(%y_b = %y : tensor<1x32x64xf32>, %w_b = %w : tensor<64xf32>)
      outs(%y2_b : tensor<1x32x64xf32>) attributes {covers = ["rms_norm_1"]} {
    %inv = arith.constant 1.562500e-02 : f32
    loop.for %a0 = 0 to 32 {
      %sum = loop.for %a1 = 0 to 64 reduce(add) -> f32 {
        %v = loop.load %y_b[0, %a0, %a1] : memref<1x32x64xf32>
        %q = arith.mulf %v, %v : f32
        loop.yield %q : f32
      }
      %m = arith.mulf %sum, %inv : f32
      %r = math.rsqrt %m : f32
      loop.for %a2 = 0 to 64 {
        %v2 = loop.load %y_b[0, %a0, %a2] : memref<1x32x64xf32>
        %wv = loop.load %w_b[%a2] : memref<64xf32>
        %t = arith.mulf %v2, %r : f32
        %o = arith.mulf %t, %wv : f32
        loop.store %o, %y2_b[0, %a0, %a2] : memref<1x32x64xf32>
      }
    }
  }
  %u = loop.kernel @k_norm_short ins(%z_b = %z : tensor<1x16x64xf32>, %w_b = %w : tensor<64xf32>)
      outs(%u_b : tensor<1x16x64xf32>) attributes {covers = ["rms_norm_2"]} {
    %inv = arith.constant 1.562500e-02 : f32
    loop.for %a0 = 0 to 16 {
      %ss = loop.for %a1 = 0 to 64 reduce(add) -> f32 {
        %v = loop.load %z_b[0, %a0, %a1] : memref<1x16x64xf32>
        %q = arith.mulf %v, %v : f32
        loop.yield %q : f32
      }
      %m = arith.mulf %ss, %inv : f32
      %r = math.rsqrt %m : f32
      loop.for %a2 = 0 to 64 {
        %v2 = loop.load %z_b[0, %a0, %a2] : memref<1x16x64xf32>
        %wv = loop.load %w_b[%a2] : memref<64xf32>
        %t = arith.mulf %v2, %r : f32
        %o = arith.mulf %t, %wv : f32
        loop.store %o, %u_b[0, %a0, %a2] : memref<1x16x64xf32>
      }
    }
  }
  func.return %y, %y2, %u : tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x16x64xf32>
}
"""


def _parse(text: str = PROGRAM) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def test_kernels_that_differ_in_a_shape_are_two_classes(memo_calls) -> None:
    """Two norms over 32 rows (other names, other values) are one class, the norm over 16
    rows another; each keeps its own names and ``covers``, and the CUDA is the same as
    lowering each kernel's."""
    once, each = _parse(), _parse()
    lower(once, to="kernel")
    lower(each, to="kernel", memo=False)
    ((done, stats),) = memo_calls
    assert done and (stats.kernels, stats.classes) == (3, 2)
    assert str(once) == str(each)
    text = str(once)
    for name, covers in (("k_norm", "rms_norm"), ("k_norm_again", "rms_norm_1")):
        assert f"@{name} " in text and f'covers = ["{covers}"]' in text
    assert "%sum" in text  # k_norm_again's own value names
    assert emit_cuda(once) == emit_cuda(each)


def test_tile_level_kernels_are_memoised_too(memo_calls) -> None:
    """``compile_fitting``'s way: tileify the whole module, then the rest of the passes
    (``apply_passes``) from the tile level: one class per shape again, the same module."""
    once, each = _parse(), _parse()
    for module in (once, each):
        get_pass("tileify")().apply(make_context(), module)
    assert any(isinstance(op, tile.KernelOp) for op in once.walk())
    rest = pipeline.passes_between("loop", "kernel")[1:]
    pipeline.apply_passes(once, rest, make_context())
    pipeline.apply_passes(each, rest, make_context(), memo=False)
    assert [(done, s.classes) for done, s in memo_calls] == [(True, 2)]
    assert str(once) == str(each)


def test_memo_off_by_environment(memo_calls, monkeypatch) -> None:
    monkeypatch.setenv(lower_memo.ENV, "0")
    lower(_parse(), to="kernel")
    assert memo_calls == []


class _Refuses(ModulePass):
    """A pass that fails on the first kernel it meets, naming it."""

    name = "mark-unroll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernel = next(k for k in op.walk() if isinstance(k, tile.KernelOp))
        raise DiagnosticException(f"@{kernel.sym_name.data} refused")


def test_a_failing_pass_names_the_real_kernel(memo_calls) -> None:
    """A pass that fails on the scratch module (whose names are tokens) makes ``lower``
    lower the module kernel by kernel, so the error names the real kernel."""
    with pytest.raises(PassRefusal) as raised:  # a diagnostic of the pass: the user's
        lower(_parse(), to="kernel", options={"mark-unroll": _Refuses()})
    assert raised.value.pass_name == "mark-unroll"
    assert isinstance(raised.value.cause, DiagnosticException)
    assert str(raised.value) == "@k_norm refused"
    assert [done for done, _ in memo_calls] == [False]
