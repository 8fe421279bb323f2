"""A model captured once per distinct layer (``frontends/layers.py``): the program stitched
from a two-layer export is the one torch.export gives for the whole stack (graph, names,
signature, metadata, module call graph), it imports to the same IR with the same source
locations, lowers to byte-identical CUDA, and runs to the model's logits; a model whose
layers differ, and a program that is not a layer stack, are exported whole."""

from __future__ import annotations

import pytest
import torch

from deplodock.frontends.capture import export_module
from deplodock.frontends.export import import_program
from deplodock.frontends.layers import NotStitchable, relayer, stitch_layers
from deplodock.frontends.models import capture_model

transformers = pytest.importorskip("transformers")


def _same_program(a: torch.export.ExportedProgram, b: torch.export.ExportedProgram) -> None:
    assert a.graph_module.code == b.graph_module.code
    assert str(a.graph) == str(b.graph)
    assert str(a.graph_signature) == str(b.graph_signature)
    assert [e.fqn for e in a.module_call_graph] == [e.fqn for e in b.module_call_graph]
    assert a.state_dict.keys() == b.state_dict.keys()
    assert a.constants.keys() == b.constants.keys()
    for key in a.constants:
        torch.testing.assert_close(a.constants[key], b.constants[key], rtol=0, atol=0)
    for x, y in zip(a.graph.nodes, b.graph.nodes, strict=True):
        assert x.meta.keys() == y.meta.keys(), x.name
        for key in x.meta:
            if key in ("val", "tensor_meta"):
                assert str(x.meta[key]) == str(y.meta[key]), (x.name, key)
            else:
                assert repr(x.meta[key]) == repr(y.meta[key]), (x.name, key)


@pytest.mark.parametrize(
    ("family", "layers", "extra"),
    [
        ("llama", 3, {}),
        ("llama", 5, {}),
        ("qwen2", 4, {}),
        ("qwen2", 3, {"tie_word_embeddings": True}),
    ],
)
def test_stitched_program_is_the_whole_export(
    tiny_decoder, family: str, layers: int, extra: dict
) -> None:
    config = tiny_decoder(family, layers, **extra)
    stitched = capture_model(config, seq=8)
    assert stitched.note == f"{layers} layers stitched from a two-layer export"
    whole = capture_model(config, seq=8, stitch=False)
    assert whole.note == ""
    _same_program(stitched.program, whole.program)
    # the layers really are there: every layer's q_proj, in order
    targets = [s.target for s in stitched.program.graph_signature.input_specs]
    q = [t for t in targets if t and t.endswith("q_proj.weight")]
    assert q == [f"lm.model.layers.{i}.self_attn.q_proj.weight" for i in range(layers)]
    # and it runs to the model's logits with the model's weights
    ids = stitched.example_inputs[0]
    got = stitched.program.module()(ids)
    want = stitched.module(ids)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_stitched_model_imports_and_lowers_to_the_same_cuda(tiny_decoder) -> None:
    """The IR with its source locations, and the CUDA, are byte-identical."""
    import io

    from xdsl.printer import Printer

    from deplodock.backends.cuda.emit import emit_cuda
    from deplodock.pipeline import lower

    config = tiny_decoder("llama", 3)
    texts = []
    for stitch in (True, False):
        captured = capture_model(config, seq=8, device="meta", stitch=stitch)
        module = import_program(captured.program).module
        buffer = io.StringIO()
        Printer(stream=buffer, print_debuginfo=True).print_op(module)
        lower(module, to="kernel")
        texts.append((buffer.getvalue(), emit_cuda(module)))
    assert "layers.2.self_attn" in texts[0][0]  # locations name the stitched layer
    assert texts[0] == texts[1]


def test_the_capture_table_says_where_its_time_goes(tiny_decoder) -> None:
    """``capture_model``'s stages, in order: the model's module imported apart from
    building the model (on the H200's host the import is most of a first build), the
    two-layer model, its export, the stitch."""
    from deplodock.stages import Stages

    stages = Stages()
    capture_model(tiny_decoder("llama", 3), seq=8, device="meta", stages=stages)
    assert [name for name, _, _ in stages.rows] == [
        "import the model's module",
        "build the model",
        "build the two-layer model",
        "capture (torch.export)",
        "stitch the layers",
    ]


def test_unlike_layers_are_exported_whole(tiny_decoder) -> None:
    """Qwen2 with a sliding window from layer 2 on: layer 2 differs from layer 1."""
    window = {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 2}
    config = tiny_decoder("qwen2", 4, **window)
    captured = capture_model(config, seq=8)
    assert captured.note.startswith("every layer exported: layer 2 differs from layer 1")
    whole = capture_model(config, seq=8, stitch=False)
    _same_program(captured.program, whole.program)


def test_a_program_that_is_not_a_layer_stack_is_refused() -> None:
    class Plain(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    program = export_module(Plain(), (torch.randn(3),), "plain")
    with pytest.raises(NotStitchable, match="differ in length"):
        stitch_layers(program, 4, {})


def test_relayer_moves_only_the_layer_segment() -> None:
    assert relayer("lm.model.layers.1.mlp.layers_1", 7) == "lm.model.layers.7.mlp.layers_1"
    assert relayer("L__self__lm.model.layers.1", 12) == "L__self__lm.model.layers.12"
    assert relayer("lm.model.norm", 3) == "lm.model.norm"


def test_the_api_captures_a_known_stack_once_per_layer(tiny_decoder, monkeypatch) -> None:
    """``deplodock.compile``'s capture of a transformers Llama: two layers traced (the
    module's own list swapped for its first two, then back), the rest stitched."""
    from deplodock.api import capture
    from deplodock.frontends import capture as export

    config = tiny_decoder("llama", 4, use_cache=False)
    lm = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, 8))
    traced = []

    def counting_export(module, inputs, name, **options):
        traced.append(len(lm.model.layers))
        return export_module(module, inputs, name, **options)

    monkeypatch.setattr(export, "export_module", counting_export)
    _, program = capture(lm, ids)
    assert traced == [2] and len(lm.model.layers) == 4  # traced with two, given back
    _same_program(program, export_module(lm, (ids,), "lm"))


def test_other_stacks_are_exported_whole() -> None:
    """A stack of code not known to run its layers alike (here torch.nn's own layers)."""
    from deplodock.frontends.layers import export_layers_once

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(4))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    assert export_layers_once(Stack(), (torch.randn(2, 4),), "stack", export_module) is None
