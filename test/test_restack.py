"""A decoder stack lowered once (``deplodock.restack``): the four-layer template lowered
and restacked is the whole stack lowered, byte for byte (IR with locations, CUDA), at the
loop, tile and kernel levels; the copies' CUDA is their template's renamed, checked on
layer 2; a template whose layers do not repeat is refused with the module untouched; and
the CLI, ``deplodock run``'s compile and ``deplodock.compile`` take this path."""

from __future__ import annotations

import io

import pytest
from xdsl.dialects.builtin import ArrayAttr
from xdsl.printer import Printer

from deplodock.backends.cuda import emit
from deplodock.frontends.export import import_program
from deplodock.frontends.layers import template_of
from deplodock.frontends.models import capture_model
from deplodock.pipeline import lower
from deplodock.restack import NotRestackable, restack

pytest.importorskip("transformers")


def _text(module) -> str:
    buffer = io.StringIO()
    Printer(stream=buffer, print_debuginfo=True).print_op(module)
    return buffer.getvalue()


def _both(config, to: str, seq: int = 8):
    """(the template lowered to ``to`` and restacked, the whole program lowered)."""
    captured = capture_model(config, seq=seq, device="meta")
    program, restacker = template_of(captured.program)
    template = import_program(program).module
    lower(template, to=to)
    restacker(template)
    whole = import_program(captured.program).module
    lower(whole, to=to)
    return template, whole


@pytest.mark.parametrize(
    ("family", "layers", "to"),
    [("llama", 6, "kernel"), ("qwen2", 5, "kernel"), ("llama", 5, "loop"), ("qwen2", 7, "tile")],
)
def test_restacked_template_is_the_whole_lowering(tiny_decoder, family, layers, to) -> None:
    restacked, whole = _both(tiny_decoder(family, layers), to)
    text = _text(restacked)
    assert f"layers.{layers - 1}.mlp" in text and f"layers.{layers - 2}.self_attn" in text
    assert text == _text(whole)
    if to == "kernel":
        assert emit.emit_cuda(restacked) == emit.emit_cuda(whole)


def test_kernels_a_pass_named_move_like_nodes(tiny_decoder) -> None:
    """A head dim of 128 at 32 tokens keeps attention's scores a kernel of their own,
    named by the decomposition, not after a node: ``k_scores_<i>`` in layer ``i``."""
    wide = {"hidden_size": 256, "num_attention_heads": 2, "num_key_value_heads": 1}
    restacked, whole = _both(tiny_decoder("qwen2", 6, head_dim=128, **wide), "kernel", seq=32)
    text = _text(restacked)
    assert "@k_scores_5" in text and "@k_scores_4" in text
    assert text == _text(whole)
    assert emit.emit_cuda(restacked) == emit.emit_cuda(whole)


def test_copies_are_emitted_by_renaming(tiny_decoder, monkeypatch) -> None:
    """Only the template's kernels (and layer 2's, the check) are walked; the rest are
    their template's CUDA renamed, the same text walking them gives."""
    restacked, whole = _both(tiny_decoder("llama", 7), "kernel")
    walked = []
    real_emit = emit._KernelEmitter.emit

    def counting(self):
        walked.append(self.op.sym_name.data if hasattr(self, "op") else None)
        return real_emit(self)

    monkeypatch.setattr(emit._KernelEmitter, "emit", counting)
    text = emit.emit_cuda(restacked)
    kernels = len(list(op for op in restacked.walk() if isinstance(op, emit.kernel.KernelOp)))
    per_layer = len(emit._COPIES[restacked].of) // 4  # layers 2..5 are copies of layer 1
    assert len(walked) == kernels - 3 * per_layer
    assert text == emit.emit_cuda(whole)


def test_a_copy_that_does_not_rename_alike_is_walked(tiny_decoder) -> None:
    """Where layer 2's CUDA is not layer 1's renamed, every kernel is walked."""
    restacked, whole = _both(tiny_decoder("llama", 6), "kernel")
    copies = emit._COPIES[restacked]
    emit.emit_copies_renamed(restacked, emit.RenamedCopies(copies.of, lambda text, times: text))
    assert emit.emit_cuda(restacked) == emit.emit_cuda(whole)


def test_layers_that_do_not_repeat_are_refused(tiny_decoder) -> None:
    """A layer-2 kernel changed after lowering: layer 1 moved on is not layer 2, the
    module is left as it was."""
    captured = capture_model(tiny_decoder("llama", 6), seq=8, device="meta")
    program, restacker = template_of(captured.program)
    module = import_program(program).module
    lower(module, to="kernel")
    kernels = [op for op in module.walk() if isinstance(op, emit.kernel.KernelOp)]
    naming = restacker.naming
    second = next(op for op in kernels if naming.layer_of_text(op.sym_name.data) == 2)
    second.attributes["covers"] = ArrayAttr([])
    before = _text(module)
    with pytest.raises(NotRestackable, match="is not layer 2's"):
        restack(module, restacker.naming, restacker.layers)
    assert _text(module) == before


def test_shallow_stacks_have_no_template(tiny_decoder) -> None:
    """Four layers or fewer are lowered whole (the template would be the program)."""
    assert template_of(capture_model(tiny_decoder("llama", 4), seq=8).program) is None


def test_the_cli_compiles_a_stack_once(tiny_decoder, tmp_path, monkeypatch) -> None:
    """``deplodock compile DIR --ir cuda`` lowers four layers and restacks (the output
    the same as ``--stats``, which lowers every layer to count them)."""
    from deplodock import cli
    from deplodock import restack as restack_module

    tiny_decoder("qwen2", 6).save_pretrained(tmp_path / "model")
    calls = []
    real = restack_module.restack
    monkeypatch.setattr(restack_module, "restack", lambda *a: calls.append(a[2]) or real(*a))
    once, every = tmp_path / "once.cu", tmp_path / "every.cu"
    args = [str(tmp_path / "model"), "--seq", "8", "--ir", "cuda", "--no-cache", "-q"]
    assert cli.main(["compile", *args, "-o", str(once)]) == 0
    assert calls == [6]
    assert cli.main(["compile", *args, "--stats", "-o", str(every)]) == 0
    assert calls == [6]
    assert once.read_text() == every.read_text()


def test_compile_layers_once_restacks(tiny_decoder, monkeypatch) -> None:
    """``deplodock.compile``'s and ``run``'s compile: the template lowered, restacked,
    compiled with NVRTC to the same kernels as the whole program."""
    from deplodock import restack as restack_module
    from deplodock.api import compile_layers_once
    from deplodock.pipeline import compile_program

    captured = capture_model(tiny_decoder("llama", 5), seq=8, device="meta")
    calls = []
    real = restack_module.restack
    monkeypatch.setattr(restack_module, "restack", lambda *a: calls.append(a[2]) or real(*a))
    once = compile_layers_once(captured.program, "sm_90", cache=False)
    assert calls == [5]
    whole = compile_program(import_program(captured.program).module, "sm_90", cache=False)
    assert once.kernel_names == whole.kernel_names
    assert once.source == whole.source
