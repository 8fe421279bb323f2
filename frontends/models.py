"""Whole Hugging Face Llama and Qwen2 models, offline, as exported programs.

    capture_model("tinyllama", layers=1, seq=128)              # the CausalLM: ids → logits
    capture_model("Qwen/Qwen2.5-7B", part="layer", seq=32)     # its first decoder layer
    capture_model("/path/to/model-dir", device="meta")          # a local config.json

Users point deplodock at the models they run, so the models are the real transformers
classes (`LlamaForCausalLM`, `Qwen2ForCausalLM`) built from a config, never a
re-implementation. No hub access happens at any point: the configs of the two reference
models ship here as plain dicts (the fields of their published config.json), a hub id
maps to one of them, and a local directory supplies its own config.json (and its
*.safetensors weights, loaded when the model is built on the CPU).

Decisions:

- **fp32, SDPA, no cache.** Every model is built in float32 (what the compiler lowers
  today, whatever dtype the checkpoint was saved in), with `attn_implementation="sdpa"`
  (so attention reaches the graph as one `scaled_dot_product_attention`) and
  `use_cache=False` (one full-sequence forward: the prefill).
- **Capture is `torch.export.export(strict=False)`** at its default (pre-dispatch ATen)
  level, with no `run_decompositions`: linear, scaled_dot_product_attention and silu stay
  whole for the compiler's own decompositions. (`torch.fx.symbolic_trace` fails on
  current transformers.)
- **The meta device for big models.** torch.export traces on fake tensors, so a model
  built under `torch.device("meta")` exports exactly like one with weights; parameters
  become function arguments in the IR, so compiling needs no weight data at all. The CLI
  compiles on meta; numerics (tests, `deplodock run`) build on the CPU.
- **`part="layer"`** is the first decoder layer as the model runs it: the same rotary
  module computes (cos, sin) from `arange(seq)` and the same transformers mask function
  builds the attention mask from the same arguments the model's forward passes, so the
  captured layer holds the same SDPA form (an explicit boolean mask under export) as the
  full model. The layer never touches the embedding or the lm_head, so they are built
  with a vocabulary of one: a Qwen2.5-7B layer then costs 0.9 GB of weights, not 5.3.

transformers is an optional extra (`pip install 'deplodock[models]'`); the name table
works without it, and building a model without it is a `UserInputError` saying so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from deplodock.errors import UserInputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

__all__ = [
    "BUILTIN_CONFIGS",
    "CapturedModel",
    "ModelSpec",
    "build_model",
    "capture_model",
    "known_models",
    "model_program",
    "program_identity",
    "require_transformers",
    "resolve",
]

from deplodock.frontends.model_specs import (  # noqa: E402 (the light half, re-exported)
    _FAMILIES,
    _VOCAB_TENSORS,
    BUILTIN_CONFIGS,
    PARTS,
    ModelSpec,
    _built_size,
    _config_fields,
    _layers_text,
    _spec,
    known_models,
    program_identity,
    require_transformers,
    resolve,
)

# ----------------------------------------------------------------------- build


def _config(spec: ModelSpec, layers: int | None, vocab: int | None = None):
    """The transformers config object of `spec`, with deplodock's overrides applied."""
    fields = _config_fields(spec, layers, vocab)
    config_class = getattr(require_transformers(), _FAMILIES[fields["model_type"]][0])
    return config_class.from_dict(fields)


def _model_class(model_type: str) -> type:
    """The transformers class of a causal LM of ``model_type``; its first use imports the
    family's modeling module, much of transformers with it (3 s on the H200's host)."""
    return getattr(require_transformers(), _FAMILIES[model_type][1])


def _build(
    spec: ModelSpec, config, device: str, seed: int, skip: frozenset[str] = frozenset()
) -> torch.nn.Module:
    """The causal LM of `config` on `device`, random weights drawn under `seed` (or the
    checkpoint's, but for the tensors named in `skip`). On "cuda" transformers' own
    initialisation runs on the GPU (a 7B model's random weights in seconds, not a minute
    of CPU), drawn from the GPU's generator: other values than the CPU's, as reproducible."""
    if device not in ("cpu", "meta", "cuda"):
        raise UserInputError(f"device must be 'cpu', 'meta' or 'cuda', not '{device}'")
    model_class = _model_class(config.model_type)
    gpus = [torch.cuda.current_device()] if device == "cuda" else []
    with torch.random.fork_rng(devices=gpus), torch.device(device):
        torch.manual_seed(seed)
        model = model_class(config)
    if spec.weights and device != "meta":
        _load_safetensors(model, spec.weights, skip)
    return model.eval()


def _load_safetensors(model: torch.nn.Module, files: Sequence[Path], skip: frozenset[str]) -> None:
    """Copy a local checkpoint's tensors into `model` (cast to its dtype). Tensors of
    layers beyond `--layers` and those in `skip` are left out; a parameter the checkpoint
    lacks is an error, except the lm_head of a model that ties it to the embedding."""
    from safetensors.torch import load_file

    state = {k: v for k, v in model.state_dict().items() if k not in skip}
    seen: set[str] = set()
    with torch.no_grad():
        for file in files:
            for key, tensor in load_file(str(file)).items():
                if key in state:
                    state[key].copy_(tensor)
                    seen.add(key)
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    buffers = {name for name, _ in model.named_buffers()}
    missing = sorted(set(state) - seen - tied - buffers)
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise UserInputError(f"the checkpoint lacks {len(missing)} tensors: {shown}")


def build_model(
    name: str | os.PathLike[str] | ModelSpec | Any,
    layers: int | None = None,
    device: str = "cpu",
    seed: int = 0,
) -> torch.nn.Module:
    """The transformers causal LM for `name` (a model name, hub id, local directory, a
    resolved ModelSpec or a transformers config), keeping its first `layers` decoder
    layers, in eval mode.

    On "meta" nothing is allocated (and no checkpoint is read)."""
    spec = _spec(name)
    return _build(spec, _config(spec, layers), device, seed)


# ---------------------------------------------------------------------- capture


class CausalLMLogits(torch.nn.Module):
    """The causal LM's forward as a program: input_ids (1, seq) → logits only."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=input_ids, use_cache=False).logits


class FirstDecoderLayer(torch.nn.Module):
    """The model's first decoder layer, fed what the model's own forward feeds it.

    Mirrors `LlamaModel.forward` / `Qwen2Model.forward` with no cache: position ids
    `arange(seq)`, the mask from transformers' mask function for the layer's attention
    type called with the model's arguments, and (cos, sin) from the model's rotary
    module."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.config = lm.config
        self.rotary_emb = lm.model.rotary_emb
        self.layer = lm.model.layers[0]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        seq = hidden_states.shape[1]
        position_ids = torch.arange(seq, device=hidden_states.device).unsqueeze(0)
        mask = _attention_mask(self.config, self.layer, hidden_states, position_ids)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        out = self.layer(
            hidden_states,
            attention_mask=mask,
            position_embeddings=position_embeddings,
            position_ids=position_ids,
        )
        return out[0] if isinstance(out, tuple) else out  # transformers < 5 returns a tuple


def _attention_mask(config, layer, embeds: torch.Tensor, position_ids: torch.Tensor):
    """The mask the model builds for `layer` (None where transformers skips it)."""
    from transformers import masking_utils

    kind = getattr(layer, "attention_type", "full_attention")
    make = (
        masking_utils.create_sliding_window_causal_mask
        if kind == "sliding_attention"
        else masking_utils.create_causal_mask
    )
    # The argument names moved between transformers releases (input_embeds →
    # inputs_embeds, past_key_values → cache, cache_position dropped): pass each under
    # the name this release uses.
    # Computed only where asked for, so the graph holds no dead ops.
    values = {
        "config": lambda: config,
        "inputs_embeds": lambda: embeds,
        "input_embeds": lambda: embeds,
        "attention_mask": lambda: None,
        "cache": lambda: None,
        "past_key_values": lambda: None,
        "cache_position": lambda: position_ids[0],
        "position_ids": lambda: position_ids,
    }
    accepted = inspect.signature(make).parameters
    return make(**{k: v() for k, v in values.items() if k in accepted})


@dataclass
class CapturedModel:
    """A captured model, ready for `import_program(program)`."""

    module: torch.nn.Module  # forward(*example_inputs) is what `program` computes
    example_inputs: tuple[torch.Tensor, ...]
    program: torch.export.ExportedProgram | None  # None: built, not exported (model_program)
    name: str
    note: str = ""  # how it was captured, for -v (stitched or why not)
    restack: Callable[[ModuleOp], None] | None = None  # template lowered -> whole stack

    @property
    def source(self) -> str:
        """What was captured, for people (`tinyllama-1.1b, 1 layer, seq 128`)."""
        return self.name

    def arguments(
        self, func: FuncOp, inputs: Sequence[torch.Tensor] | None = None
    ) -> list[torch.Tensor]:
        """The arguments of `func` (the imported program, at any level) in order, as
        `graph_inputs` names them: the user inputs (`inputs`, else the example ones),
        parameters and buffers of `module` by target, lifted constants of `program`."""
        from deplodock.frontends.export import graph_inputs

        users = iter(self.example_inputs if inputs is None else inputs)
        args: list[torch.Tensor] = []
        for spec in graph_inputs(func):
            if spec.kind == "input":
                args.append(next(users))
            elif spec.kind == "param":
                args.append(self.module.get_parameter(spec.target).detach())
            elif spec.kind == "buffer":
                args.append(self.module.get_buffer(spec.target))
            else:
                args.append(self.program.constants[spec.target])
        return args


def capture_model(
    name: str | os.PathLike[str] | ModelSpec | Any,
    *,
    layers: int | None = None,
    seq: int = 128,
    part: str = "model",
    device: str = "cpu",
    seed: int = 0,
    stitch: bool = True,
    module_device: str | None = None,
    stages: Any = None,
) -> CapturedModel:
    """Export a model (`part="model"`: input_ids → logits) or its first decoder layer
    (`part="layer"`: hidden states → hidden states) at sequence length `seq`.

    A model of three layers or more whose layers are alike is exported with two layers
    and stitched (`frontends.layers`: the same program, in a fraction of the time);
    `stitch=False` exports every layer. `module_device` builds the returned module
    elsewhere than the capture runs (`deplodock run` compiles from a capture on the CPU,
    then builds the model's weights: "meta" here skips building them twice). `stages`:
    a recorder (``deplodock.stages.Stages``) that times building the model apart from
    the capture."""
    from deplodock.frontends.capture import export_module

    step = stages.step if stages is not None else lambda name: contextlib.nullcontext()
    if stages is not None:  # where a first build's time goes: the import, apart
        with step("import the model's module"):
            _model_class(_config_fields(_spec(name), None)["model_type"])
    with step("build the model"):
        built = model_program(
            name, layers=layers, seq=seq, part=part, device=module_device or device, seed=seed
        )
    if stitch and part == "model":
        built.program = _stitched(name, built, seq, device, seed, step)
    if built.program is None:
        if module_device not in (None, device):  # the whole model, where it is captured
            with step("build the model to capture"):
                built = model_program(
                    name, layers=layers, seq=seq, part=part, device=device, seed=seed
                )
        with step("capture (torch.export)"):
            built.program = export_module(built.module, built.example_inputs, built.name)
    return built


def _weights_not_drawn():
    """transformers' ``no_init_weights`` (parameters left as allocated), or nothing where
    this release has none."""
    for where in ("transformers.initialization", "transformers.modeling_utils"):
        try:
            return importlib.import_module(where).no_init_weights()
        except (ImportError, AttributeError):
            continue
    return contextlib.nullcontext()


STITCH_FROM = 3
"""Fewest layers a model is stitched at (two layers are exported anyway)."""


def _stitched(
    name: Any, built: CapturedModel, seq: int, device: str, seed: int, step: Callable
) -> torch.export.ExportedProgram | None:
    """The export of `built`'s model stitched from a two-layer export on `device`, or
    None (fewer than `STITCH_FROM` layers, layers not alike, or a program
    `stitch_layers` cannot split: `built.note` says why)."""
    from deplodock.frontends.capture import export_module
    from deplodock.frontends.layers import NotStitchable, stitch_layers, unlike_layer

    stack = built.module.lm.model.layers
    if len(stack) < STITCH_FROM:
        return None
    different = unlike_layer(stack)
    if different is not None:
        built.note = f"every layer exported: layer {different} differs from layer 1"
        return None
    # Traced only: its weights' values never reach the graph, so none are drawn or read
    # (a model tying its embedding keeps transformers' init, which ties it).
    spec = dataclasses.replace(_spec(name), weights=())
    tied = bool(getattr(built.module.lm.config, "tie_word_embeddings", False))
    with (
        step("build the two-layer model"),
        contextlib.nullcontext() if tied else _weights_not_drawn(),
    ):
        two = model_program(spec, layers=2, seq=seq, part="model", device=device, seed=seed)
    with step("capture (torch.export)"):
        program = export_module(two.module, two.example_inputs, two.name)
    try:
        with step("stitch the layers"):
            stitched = stitch_layers(program, len(stack), built.module.state_dict(keep_vars=True))
    except NotStitchable as e:
        built.note = f"every layer exported: {e}"
        return None
    built.note = f"{len(stack)} layers stitched from a two-layer export"
    return stitched


def model_program(
    name: str | os.PathLike[str] | ModelSpec | Any,
    *,
    layers: int | None = None,
    seq: int = 128,
    part: str = "model",
    device: str = "cpu",
    seed: int = 0,
) -> CapturedModel:
    """What `capture_model` exports, built but not exported (`program` is None): the
    module and its example inputs, for a program that came from the program cache."""
    if part not in PARTS:
        raise UserInputError(f"part must be one of {', '.join(PARTS)}, not '{part}'")
    spec = _spec(name)
    config = _config(spec, *_built_size(part, layers))
    # A layer is built with a vocabulary of one: a checkpoint's vocabulary tensors don't fit.
    skip = _VOCAB_TENSORS if part == "layer" else frozenset()
    limit = int(getattr(config, "max_position_embeddings", seq) or seq)
    if not 1 <= seq <= limit:
        raise UserInputError(f"{spec.name} takes 1…{limit} positions; --seq {seq} is out of range")
    lm = _build(spec, config, device, seed, skip)
    gen = torch.Generator().manual_seed(seed)
    if part == "model":
        module: torch.nn.Module = CausalLMLogits(lm)
        example = torch.randint(0, config.vocab_size, (1, seq), generator=gen)
    else:
        module = FirstDecoderLayer(lm)
        example = torch.randn(1, seq, config.hidden_size, generator=gen)
    inputs = (example.to(device),)
    count = "1 layer" if part == "layer" else _layers_text(config.num_hidden_layers)
    what = f"{spec.name}, {'first decoder layer' if part == 'layer' else count}, seq {seq}"
    return CapturedModel(module.eval(), inputs, None, what)
