"""The light half of ``frontends/models.py``: the models deplodock knows by name, their
configs, and what decides a model's program (``program_identity``, the program cache's
key), with no import of torch or transformers: a warm ``deplodock compile MODEL`` or
``deplodock run MODEL`` computes its key before either is loaded. ``models.py`` builds
and captures the models and re-exports all of this."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deplodock.errors import UserInputError

# ------------------------------------------------------------------ the configs

BUILTIN_CONFIGS: dict[str, dict[str, Any]] = {
    # TinyLlama/TinyLlama-1.1B-Chat-v1.0, config.json
    "tinyllama-1.1b": {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 22,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 64,
        "vocab_size": 32000,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": False,
    },
    # Qwen/Qwen2.5-7B, config.json (Qwen2's q/k/v projections always carry a bias)
    "qwen2.5-7b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 152064,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "hidden_act": "silu",
        "initializer_range": 0.02,
        "use_sliding_window": False,
        "sliding_window": 131072,
        "max_window_layers": 28,
        "bos_token_id": 151643,
        "eos_token_id": 151643,
        "tie_word_embeddings": False,
    },
}

# Every name a user may type (compared lower-cased) → a built-in config.
_ALIASES: dict[str, str] = {
    "tinyllama": "tinyllama-1.1b",
    "tinyllama-1.1b": "tinyllama-1.1b",
    "tinyllama/tinyllama-1.1b-chat-v1.0": "tinyllama-1.1b",
    "qwen2.5-7b": "qwen2.5-7b",
    "qwen/qwen2.5-7b": "qwen2.5-7b",
}

# Hub ids as the hub spells them (the table itself is lower-case).
_HUB_SPELLING = {
    "tinyllama/tinyllama-1.1b-chat-v1.0": "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
    "qwen/qwen2.5-7b": "Qwen/Qwen2.5-7B",
}


# What every model is built with, whatever its config says (see the module docstring).
_OVERRIDES: dict[str, Any] = {
    "attn_implementation": "sdpa",
    "torch_dtype": "float32",
    "use_cache": False,
}

# model_type → the transformers classes (config, causal LM) of that family.
_FAMILIES: dict[str, tuple[str, str]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
}

PARTS = ("model", "layer")

# The tensors sized by the vocabulary, which the decoder layers never read.
_VOCAB_TENSORS = frozenset({"model.embed_tokens.weight", "lm_head.weight"})


def known_models() -> list[str]:
    """The names a user can give, one line per model: canonical name, then aliases."""
    lines = []
    for name in BUILTIN_CONFIGS:
        others = [a for a, n in _ALIASES.items() if n == name and a != name]
        spelled = [_HUB_SPELLING.get(a, a) for a in others]
        lines.append(f"{name} ({', '.join(spelled)})" if spelled else name)
    return lines


# ---------------------------------------------------------------- name → config


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: its name, its config.json as a dict, and where weights live."""

    name: str  # canonical name, or the directory's name
    config: dict[str, Any]
    weights: tuple[Path, ...] = ()  # *.safetensors of a local directory


def resolve(spec: str | os.PathLike[str]) -> ModelSpec:
    """A built-in name or hub id (case-insensitive), or a local directory with config.json."""
    text = os.fspath(spec)
    builtin = _ALIASES.get(text.lower())
    if builtin is not None:
        return ModelSpec(builtin, copy.deepcopy(BUILTIN_CONFIGS[builtin]))
    path = Path(text).expanduser()
    if path.is_dir():
        return _local(path)
    listing = "\n".join(f"  {line}" for line in known_models())
    raise UserInputError(
        f"unknown model '{text}'; deplodock works offline and knows:\n{listing}\n"
        "or give a local directory holding a config.json (and *.safetensors)"
    )


def _local(path: Path) -> ModelSpec:
    config_file = path / "config.json"
    try:
        config = json.loads(config_file.read_text())
    except OSError:
        raise UserInputError(f"{path} is a directory without a readable config.json") from None
    except json.JSONDecodeError as e:
        raise UserInputError(f"{config_file}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    return ModelSpec(path.resolve().name, config, tuple(sorted(path.glob("*.safetensors"))))


# ----------------------------------------------------------------------- build


def require_transformers():
    """The transformers module, or a UserInputError saying how to install it (it is an
    optional extra: compiling expressions and .mlir files does not need it)."""
    try:
        import transformers
    except ImportError:
        raise UserInputError("models need transformers: pip install 'deplodock[models]'") from None
    return transformers


def _config_fields(
    spec: ModelSpec, layers: int | None, vocab: int | None = None, check: bool = True
) -> dict[str, Any]:
    """The fields the config of `spec` is built from: its config.json with deplodock's
    overrides, `layers` and `vocab` applied (`check`: unsupported families and layer
    counts are a UserInputError). Needs no transformers."""
    fields = {**copy.deepcopy(spec.config), **_OVERRIDES}
    model_type = fields.get("model_type")
    if check and model_type not in _FAMILIES:
        known = ", ".join(sorted(_FAMILIES))
        raise UserInputError(
            f"{spec.name}: model_type '{model_type}' is not supported (supported: {known})"
        )
    if layers is not None:
        total = int(fields.get("num_hidden_layers", 0))
        if check and not 1 <= layers <= total:
            raise UserInputError(f"{spec.name} has {total} layers; --layers must be 1…{total}")
        fields["num_hidden_layers"] = layers
        if isinstance(fields.get("layer_types"), list):
            fields["layer_types"] = fields["layer_types"][:layers]
    if vocab is not None:
        fields["vocab_size"] = vocab
        for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
            fields[key] = None
    return fields


def _spec(name: str | os.PathLike[str] | ModelSpec | Any) -> ModelSpec:
    if isinstance(name, ModelSpec):
        return name
    if isinstance(name, str | os.PathLike):
        return resolve(name)
    if hasattr(name, "to_dict"):  # a transformers config object
        return ModelSpec(getattr(name, "model_type", "model"), name.to_dict())
    raise TypeError(f"a model name, directory or transformers config, not {type(name)}")


def _built_size(part: str, layers: int | None) -> tuple[int | None, int | None]:
    """(layers, vocabulary) a part is built with: one layer and a vocabulary of one for
    the first decoder layer (the program cache's key must say the same: one place)."""
    return (1, 1) if part == "layer" else (layers, None)


def program_identity(
    name: str | os.PathLike[str] | ModelSpec | Any,
    *,
    layers: int | None = None,
    seq: int = 128,
    part: str = "model",
    device: str = "cpu",
) -> dict[str, Any]:
    """What decides the program `capture_model` exports, as JSON, without importing
    transformers or building anything (the program cache's key for `deplodock run MODEL`):
    the model's name, the config fields it is built from, the transformers version (the
    model classes are its code), `seq`, `part` and the device (lifted constants captured
    on the meta device hold no data). The weights and `seed` only decide values, which
    are arguments of the program. Nothing is checked here: a wrong layer count or family
    gives a key that is never stored, and the capture then reports it."""
    from importlib.metadata import PackageNotFoundError, version

    spec = _spec(name)
    fields = _config_fields(spec, *_built_size(part, layers), check=False)
    try:
        transformers_version = version("transformers")
    except PackageNotFoundError:
        transformers_version = None
    return {
        "model": spec.name,
        "config": fields,
        "transformers": transformers_version,
        "layers": layers,
        "seq": seq,
        "part": part,
        "device": device,
    }


def _layers_text(n: int) -> str:
    return f"{n} layer{'s' if n != 1 else ''}"
