"""A decoder stack lowered once (``deplodock.restack``): the four-layer template lowered
and restacked is the whole stack lowered, byte for byte (IR with locations, CUDA), at the
loop, tile and kernel levels; kernels a pass named move like nodes; the copies' CUDA is
their template's renamed, checked on layer 2; a template whose layers do not repeat is
refused with the module untouched; and the CLI, ``deplodock run``'s compile and
``deplodock.compile`` take this path."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from xdsl.dialects.builtin import ArrayAttr
from xdsl.printer import Printer

from deplodock.backends.cuda import emit
from deplodock.boundary import collect_rarely
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


def _both(config, to: str, seq: int = 8) -> SimpleNamespace:
    """The template lowered to ``to`` (``template``, a copy), restacked (``restacked``),
    and the whole program lowered (``whole``)."""
    with collect_rarely():
        captured = capture_model(config, seq=seq, device="meta")
        program, restacker = template_of(captured.program)
        restacked = import_program(program).module
        lower(restacked, to=to)
        template = restacked.clone()
        restacker(restacked)
        whole = import_program(captured.program).module
        lower(whole, to=to)
    return SimpleNamespace(
        template=template, restacked=restacked, whole=whole, restacker=restacker, config=config
    )


@pytest.fixture(scope="module")
def llama6(tiny_decoder) -> SimpleNamespace:
    """A six-layer Llama, lowered to the kernel level both ways."""
    return _both(tiny_decoder("llama", 6), "kernel")


def test_restacked_template_is_the_whole_lowering(llama6) -> None:
    text = _text(llama6.restacked)
    assert "layers.5.mlp" in text and "layers.4.self_attn" in text and "@k_linear_35" in text
    assert text == _text(llama6.whole)
    assert emit.emit_cuda(llama6.restacked) == emit.emit_cuda(llama6.whole)


@pytest.mark.parametrize(("family", "to"), [("llama", "loop"), ("qwen2", "tile")])
def test_restacked_at_the_loop_and_tile_levels(tiny_decoder, family: str, to: str) -> None:
    both = _both(tiny_decoder(family, 5), to)
    text = _text(both.restacked)
    assert "layers.4.mlp" in text and "layers.3.self_attn" in text
    assert text == _text(both.whole)


def test_kernels_a_pass_named_move_like_nodes(tiny_decoder) -> None:
    """A head dim of 128 at 32 tokens keeps attention's scores a kernel of their own,
    named by the decomposition, not after a node: ``k_scores_<i>`` in layer ``i``."""
    wide = {"hidden_size": 256, "num_attention_heads": 2, "num_key_value_heads": 1}
    both = _both(tiny_decoder("qwen2", 5, head_dim=128, **wide), "loop", seq=32)
    text = _text(both.restacked)
    assert "@k_scores_4" in text and "@k_scores_3" in text
    assert text == _text(both.whole)


def test_copies_are_emitted_by_renaming(llama6, monkeypatch) -> None:
    """Only the template's kernels (and layer 2's, the check) are walked; the others
    (layers 3 and 4) are their template's CUDA renamed, the text walking them gives."""
    walked = []
    real_emit = emit._KernelEmitter.emit

    def counting(self):
        walked.append(1)
        return real_emit(self)

    monkeypatch.setattr(emit._KernelEmitter, "emit", counting)
    text = emit.emit_cuda(llama6.restacked)
    kernels = [op for op in llama6.restacked.walk() if isinstance(op, emit.kernel.KernelOp)]
    per_layer = len(emit._COPIES[llama6.restacked].of) // 3  # layers 2, 3, 4 copy layer 1
    assert len(walked) == len(kernels) - 2 * per_layer
    monkeypatch.undo()
    assert text == emit.emit_cuda(llama6.whole)


def test_a_copy_that_does_not_rename_alike_is_walked(llama6) -> None:
    """Where layer 2's CUDA is not layer 1's renamed (here: a renaming that moves
    nothing), every kernel is walked and the CUDA stays right."""
    copies = emit._COPIES[llama6.restacked]
    module = llama6.restacked.clone()
    emit.emit_copies_renamed(module, emit.RenamedCopies(copies.of, lambda text, times: text))
    assert emit.emit_cuda(module) == emit.emit_cuda(llama6.whole)


def test_layers_that_do_not_repeat_are_refused(llama6) -> None:
    """A layer-2 kernel changed after lowering: layer 1 moved on is not layer 2, the
    module is left as it was."""
    module = llama6.template.clone()
    naming = llama6.restacker.naming
    kernels = [op for op in module.walk() if isinstance(op, emit.kernel.KernelOp)]
    second = next(op for op in kernels if naming.layer_of_text(op.sym_name.data) == 2)
    second.attributes["covers"] = ArrayAttr([])
    before = _text(module)
    with pytest.raises(NotRestackable, match="is not layer 2's"):
        restack(module, naming, 6)
    assert _text(module) == before


def test_shallow_stacks_have_no_template(tiny_decoder) -> None:
    """Four layers or fewer are lowered whole (the template would be the program)."""
    assert template_of(capture_model(tiny_decoder("llama", 4), seq=8).program) is None


def test_the_cli_compiles_a_stack_once(llama6, tmp_path, monkeypatch) -> None:
    """``deplodock compile DIR --ir cuda`` lowers four layers and restacks: the CUDA of
    lowering every layer."""
    from deplodock import cli
    from deplodock import restack as restack_module

    llama6.config.save_pretrained(tmp_path / "model")
    calls, made = [], []
    real = restack_module.stacked
    monkeypatch.setattr(restack_module, "stacked", lambda *a: calls.append(a[2]) or real(*a))
    complete = restack_module.Stacked.complete
    monkeypatch.setattr(
        restack_module.Stacked, "complete", lambda self: made.append(1) or complete(self)
    )
    out = tmp_path / "once.cu"
    args = [str(tmp_path / "model"), "--seq", "8", "--ir", "cuda", "--no-cache", "-q"]
    assert cli.main(["compile", *args, "-o", str(out)]) == 0
    assert calls == [6] and not made  # the CUDA text renames the copies: none is made
    assert out.read_text() == emit.emit_cuda(llama6.whole)
    assert cli.main(["compile", *args[:-2], "--ir", "kernel", "--no-cache", "-q"]) == 0
    assert made  # the IR needs them


def test_a_stacks_cuda_needs_no_copies_made(llama6, monkeypatch) -> None:
    """``emit_cuda(module, stacked)`` writes the unmade copies as their templates' text
    renamed, in the order the completed module holds them: the CUDA of lowering every
    layer, no copy made. Where renaming is not shown sound (a renaming that moves
    nothing) it makes the copies and walks every kernel: the same CUDA."""
    module = llama6.template.clone()
    stacked = llama6.restacker.stacked(module)
    unmade = stacked.unmade()
    assert unmade and emit.emit_cuda(module, stacked) == emit.emit_cuda(llama6.whole)
    assert not stacked.done and stacked.unmade() == unmade
    module = llama6.template.clone()
    stacked = llama6.restacker.stacked(module)
    monkeypatch.setattr(
        type(stacked),
        "renamed_copies",
        lambda self: emit.RenamedCopies(self.copies, lambda text, times: text),
    )
    assert emit.emit_cuda(module, stacked) == emit.emit_cuda(llama6.whole)
    assert stacked.done


def test_compile_layers_once_restacks(tiny_decoder, monkeypatch) -> None:
    """``deplodock.compile``'s and ``run``'s compile: the template lowered, restacked,
    compiled with NVRTC to the same kernels as the whole program: the same plan,
    arguments, compile units (each copy running its template's), resources and CUDA, with
    the interior copies made only when the IR is asked for."""
    from deplodock import restack as restack_module
    from deplodock.api import compile_layers_once
    from deplodock.pipeline import compile_program

    captured = capture_model(tiny_decoder("llama", 7), seq=8, device="meta")
    calls = []
    real = restack_module.stacked
    monkeypatch.setattr(restack_module, "stacked", lambda *a: calls.append(a[2]) or real(*a))
    once = compile_layers_once(captured.program, "sm_90", cache=False)
    assert calls == [7]
    assert once._stacked is not None  # planned and compiled without the copies
    whole = compile_program(import_program(captured.program).module, "sm_90", cache=False)
    assert once.kernel_names == whole.kernel_names
    assert once.plan == whole.plan
    assert once.inputs == whole.inputs
    assert [(u.symbol, u.kernels, u.compiled.cubin) for u in once.compiled.units] == [
        (u.symbol, u.kernels, u.compiled.cubin) for u in whole.compiled.units
    ]
    assert once.resources == whole.resources
    assert once._stacked is not None
    assert once.source == whole.source  # the copies' CUDA renamed: still none made
    assert once._stacked is not None
    assert _text(once.module) == _text(whole.module)  # the IR: the copies made now
    assert once._stacked is None


def test_the_deferred_copies_list_as_made(llama6) -> None:
    """A stack's listing before its copies are made (names, wiring, launches) is the
    listing of the module once they are, and making them gives ``restack``'s module."""
    from deplodock.backends.cuda.runtime import forward_func, listing

    module = llama6.template.clone()
    stacked = llama6.restacker.stacked(module)
    assert stacked.unmade() and len(stacked.pending) == len(stacked.unmade())
    before = stacked.listing()
    stacked.complete()
    assert before == listing(forward_func(module))
    assert _text(module) == _text(llama6.restacked)
