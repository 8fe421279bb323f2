"""scaled_dot_product_attention: decompose (and lift-to-loop + fuse) preserve meaning.

Each call is captured with torch.export, lowered to the ten dialect, run by the tensor
interpreter on fresh random inputs and compared with F.scaled_dot_product_attention in
eager fp32 (max|a-b| / max|b| <= 1e-5). The last tests export Hugging Face's
LlamaAttention and check that the SDPA calls it makes are the forms handled here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32, i1
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.pattern_rewriter import PatternRewriteWalker

from deplodock.dialects import make_context
from deplodock.dialects import tensor as ten
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.loop import KernelOp, LoadOp
from deplodock.dialects.torch import AtenOp
from deplodock.frontends.export import import_program, torch_dtype
from deplodock.passes import get_pass
from deplodock.passes.torch.decompose import Decompose, UnsupportedOpsError
from deplodock.passes.torch.decompositions.sdpa import ScaledDotProductAttention

TOLERANCE = 1e-5
TARGET = "scaled_dot_product_attention.default"


class Attention(nn.Module):
    """F.scaled_dot_product_attention with fixed keyword arguments."""

    def __init__(self, **kwargs: object):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kwargs)


def _bool_mask(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Random, with every row (last axis) keeping at least one key."""
    mask = torch.rand(shape, generator=gen) < 0.5
    first = torch.randint(0, shape[-1], shape[:-1], generator=gen)
    return mask.scatter(-1, first.unsqueeze(-1), True)


def _float_mask(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Random biases, a few -inf (never a whole row)."""
    return torch.randn(shape, generator=gen).masked_fill(~_bool_mask(shape, gen), -math.inf)


def _inputs(q, kv, v=None, mask=None, seed=0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    xs = [torch.randn(s, generator=gen) for s in (q, kv, v or kv)]
    if mask is not None:
        kind, shape = mask
        xs.append((_bool_mask if kind == "bool" else _float_mask)(shape, gen))
    return xs


def _lower(module: nn.Module, inputs: list[torch.Tensor]) -> ModuleOp:
    program = import_program(torch.export.export(module, tuple(inputs)))
    Decompose().apply(make_context(), program.module)
    program.module.verify()
    assert not any(isinstance(op, AtenOp) for op in program.module.walk())
    return program.module


def _error(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape and got.dtype == want.dtype
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def _check(module: nn.Module, shapes: dict, passes: tuple[str, ...] = ()) -> ModuleOp:
    lowered = _lower(module, _inputs(**shapes))
    ctx = make_context()
    for name in passes:
        get_pass(name)().apply(ctx, lowered)
        lowered.verify()
    inputs = _inputs(**shapes, seed=1)  # fresh values, not the ones it was captured with
    (got,) = run_forward(lowered, [x.numpy() for x in inputs])
    want = module(*inputs).numpy()
    assert not np.isnan(want).any()
    assert _error(got, want) <= TOLERANCE
    return lowered


CAUSAL = {"is_causal": True}
GQA = {"is_causal": True, "enable_gqa": True}
CASES: dict[str, tuple[dict, dict]] = {
    # is_causal, with and without grouped-query attention (Hq 4 over Hkv 2 or 1)
    "causal_gqa_4_2": (GQA, {"q": (1, 4, 8, 16), "kv": (1, 2, 8, 16)}),
    "causal_gqa_4_1_d64": (GQA, {"q": (2, 4, 8, 64), "kv": (2, 1, 8, 64)}),
    "causal_mha": (CAUSAL, {"q": (2, 4, 8, 16), "kv": (2, 4, 8, 16)}),
    "causal_sq_lt_sk": (CAUSAL, {"q": (1, 4, 5, 16), "kv": (1, 4, 9, 16)}),
    "causal_gqa_sq_lt_sk": (GQA, {"q": (1, 4, 3, 16), "kv": (1, 2, 8, 16)}),
    "causal_gqa_scale": ({**GQA, "scale": 0.3}, {"q": (1, 4, 8, 16), "kv": (1, 2, 8, 16)}),
    # explicit masks, broadcast to (B, H, Sq, Sk)
    "bool_mask": ({}, {"q": (2, 4, 8, 16), "kv": (2, 4, 8, 16), "mask": ("bool", (2, 1, 8, 8))}),
    "bool_mask_2d_d64_scale": (
        {"scale": 0.1}, {"q": (1, 4, 6, 64), "kv": (1, 4, 10, 64), "mask": ("bool", (6, 10))}
    ),
    "float_mask": ({}, {"q": (2, 4, 8, 16), "kv": (2, 4, 8, 16), "mask": ("float", (2, 4, 8, 8))}),
    "float_mask_broadcast_d64": (
        {}, {"q": (1, 4, 8, 64), "kv": (1, 4, 8, 64), "mask": ("float", (1, 1, 8, 8))}
    ),
    # no mask; a value width other than the key's; three axes
    "plain_value_dim": ({}, {"q": (1, 2, 4, 16), "kv": (1, 2, 6, 16), "v": (1, 2, 6, 8)}),
    "plain_3d": ({}, {"q": (3, 5, 16), "kv": (3, 7, 16)}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_sdpa_matches_eager(name: str) -> None:
    kwargs, shapes = CASES[name]
    _check(Attention(**kwargs), shapes)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_masked_row_gives_zero(kind: str) -> None:
    """A query row that sees no key: torch (_safe_softmax) gives 0, and so do we."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 4, 16, generator=gen)
    k, v = torch.randn(1, 2, 6, 16, generator=gen), torch.randn(1, 2, 6, 16, generator=gen)
    keep = _bool_mask((1, 1, 4, 6), gen)
    keep[..., 2, :] = False
    mask = keep if kind == "bool" else torch.zeros(keep.shape).masked_fill(~keep, -math.inf)
    module = Attention()
    (got,) = run_forward(_lower(module, [q, k, v, mask]), [x.numpy() for x in (q, k, v, mask)])
    want = module(q, k, v, mask).numpy()
    assert (want[..., 2, :] == 0).all() and (got[..., 2, :] == 0).all()
    assert _error(got, want) <= TOLERANCE


def test_gqa_is_an_index_expression_through_fusion() -> None:
    """Causal GQA through lift-to-loop and fuse: still exact, and query head h reads KV
    head h floordiv 2 straight from K and V (no kernel copies them to 4 heads)."""
    kwargs, shapes = CASES["causal_gqa_4_2"]
    lowered = _check(Attention(**kwargs), shapes, passes=("lift-to-loop", "fuse"))
    func_op = next(op for op in lowered.walk() if isinstance(op, func.FuncOp))
    k_arg, v_arg = func_op.body.block.args[1:3]
    grouped = set()
    for kernel in (op for op in lowered.walk() if isinstance(op, KernelOp)):
        assert len(kernel.inputs) > 1 or kernel.inputs[0] not in (k_arg, v_arg), "copies K/V"
        buffers = dict(zip(kernel.input_buffers, kernel.inputs, strict=True))
        for load in (op for op in kernel.walk() if isinstance(op, LoadOp)):
            if buffers.get(load.buffer) in (k_arg, v_arg):
                assert "floordiv 2" in str(load)  # [0, %a0 floordiv 2, ..]
                grouped.add(buffers[load.buffer])
    assert grouped == {k_arg, v_arg}


def test_bf16_accumulates_in_f32() -> None:
    """16-bit inputs: products, sums and probabilities in f32, one rounding at the end."""
    q, k, v = _inputs((1, 4, 8, 16), (1, 2, 8, 16))
    q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    module = Attention(is_causal=True, enable_gqa=True)
    lowered = _lower(module, [q, k, v])
    reduces = [op for op in lowered.walk() if isinstance(op, ten.ReduceOp)]
    assert len(reduces) == 4 and all(op.result.type.element_type == f32 for op in reduces)
    (got,) = run_forward(lowered, [x.float().numpy() for x in (q, k, v)])
    want = Attention(is_causal=True, enable_gqa=True)(q.float(), k.float(), v.float())
    assert _error(got, want.numpy()) <= TOLERANCE  # the interpreter keeps bf16 in f32


UNSUPPORTED = """
func.func @forward(%q: tensor<1x2x4x8xf32>, %m: tensor<4x4xi1>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %a = torch.aten "scaled_dot_product_attention.default"(query = %q, key = %q, value = %q) {dropout_p = 1.000000e-01} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %b = torch.aten "scaled_dot_product_attention.default"(query = %q, key = %q, value = %q, attn_mask = %m) {is_causal = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xi1>) -> tensor<1x2x4x8xf32>
  func.return %a, %b : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
"""  # noqa: E501


def test_unsupported_arguments_say_why() -> None:
    module = Parser(make_context(), UNSUPPORTED).parse_module()
    with pytest.raises(UnsupportedOpsError) as info:
        Decompose().apply(make_context(), module)
    reasons = [e[2] for e in info.value.entries]
    assert reasons == [
        "dropout_p=0.1: only inference (dropout_p=0) is supported",
        "is_causal=True together with attn_mask (an error in PyTorch)",
    ]


# --- the calls Hugging Face transformers makes ---------------------------------------------


def _llama_config():
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=1,
        vocab_size=128,
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )


def _sdpa_ops(module: nn.Module, inputs: tuple) -> list[AtenOp]:
    with torch.no_grad():  # as frontends/models.py: torch 2.11 keeps no_grad as an HOP
        program = import_program(torch.export.export(module, inputs))
    return [op for op in program.module.walk() if isinstance(op, AtenOp) and op.overload == TARGET]


def _check_alone(op: AtenOp) -> dict[str, object]:
    """Decompose `op` by itself (its producers are other modules' work), run it on random
    inputs of its operand types and compare with F.scaled_dot_product_attention called
    with the op's arguments. Returns those arguments."""
    block = Block(arg_types=op.operand_types)
    for arg, name in zip(block.args, op.tensor_arg_names, strict=True):
        arg.name_hint = name
    alone = op.clone(value_mapper=dict(zip(op.operands, block.args, strict=True)))
    block.add_ops([alone, func.ReturnOp(alone.results[0])])
    function = func.FuncOp(
        "forward", FunctionType.from_lists(op.operand_types, op.result_types), Region(block)
    )
    module = ModuleOp([function])
    PatternRewriteWalker(ScaledDotProductAttention()).rewrite_module(module)
    module.verify()
    assert not any(isinstance(o, AtenOp) for o in module.walk())

    gen = torch.Generator().manual_seed(2)
    tensors = {}
    for name, type_ in zip(op.tensor_arg_names, op.operand_types, strict=True):
        assert isinstance(type_, TensorType)
        shape = tuple(type_.get_shape())
        if type_.element_type == i1:
            tensors[name] = _bool_mask(shape, gen)
        else:
            tensors[name] = torch.randn(shape, generator=gen, dtype=torch_dtype(type_.element_type))
    assert not op.arg("dropout_p", 0.0)
    args = {n: op.arg(n) for n in ("is_causal", "enable_gqa", "scale") if op.arg(n) is not None}
    (got,) = run_forward(module, [t.numpy() for t in tensors.values()])
    want = F.scaled_dot_product_attention(
        tensors["query"],
        tensors["key"],
        tensors["value"],
        attn_mask=tensors.get("attn_mask"),
        **args,
    )
    assert _error(got, want.numpy()) <= TOLERANCE
    return {
        **args,
        **{n: tuple(t.shape) for n, t in tensors.items()},
        "mask_dtype": tensors["attn_mask"].dtype if "attn_mask" in tensors else None,
    }


class LlamaAttentionOnly(nn.Module):
    """transformers' LlamaAttention with its rotary embedding, called as the decoder
    layer calls it (positional arguments: the keywords differ between versions)."""

    def __init__(self):
        super().__init__()
        from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding

        config = _llama_config()
        self.attn, self.rope = LlamaAttention(config, 0), LlamaRotaryEmbedding(config)

    def forward(self, x, positions, mask=None):
        return self.attn(x, self.rope(x, positions), mask)[0]


def test_transformers_llama_attention_forms() -> None:
    """Both forms, as LlamaAttention calls F.scaled_dot_product_attention: with no mask,
    is_causal with enable_gqa on 2 KV heads; with a mask, the mask with K/V already
    repeated to 4 heads (repeat_kv) and no enable_gqa."""
    pytest.importorskip("transformers")
    module = LlamaAttentionOnly().eval()
    x, positions = torch.randn(1, 8, 64), torch.arange(8)[None]

    (causal,) = _sdpa_ops(module, (x, positions))
    assert _check_alone(causal) == {
        "is_causal": True,
        "enable_gqa": True,
        "scale": 0.25,
        "query": (1, 4, 8, 16),
        "key": (1, 2, 8, 16),
        "value": (1, 2, 8, 16),
        "mask_dtype": None,
    }
    mask = torch.ones(1, 1, 8, 8, dtype=torch.bool).tril()
    (masked,) = _sdpa_ops(module, (x, positions, mask))
    assert _check_alone(masked) == {
        "scale": 0.25,
        "query": (1, 4, 8, 16),
        "key": (1, 4, 8, 16),
        "value": (1, 4, 8, 16),
        "attn_mask": (1, 1, 8, 8),
        "mask_dtype": torch.bool,
    }


class LlamaHidden(nn.Module):
    """The last hidden state of a tiny LlamaModel, no KV cache."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaModel

        self.model = LlamaModel(_llama_config())

    def forward(self, ids, attention_mask=None):
        out = self.model(ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state


def test_transformers_llama_model_passes_a_bool_mask() -> None:
    """The whole model under torch.export: transformers (5.x) never skips the causal mask
    while exporting (masking_utils._ignore_causal_mask_sdpa), so every layer gets the
    explicit boolean (B, 1, S, S) mask and repeat_kv'd K/V; padding changes only the
    mask's values."""
    pytest.importorskip("transformers")
    model = LlamaHidden().eval()
    ids = torch.randint(0, 128, (2, 8))
    padding = torch.ones(2, 8, dtype=torch.long)
    padding[0, :3] = 0
    for inputs in ((ids,), (ids, padding)):
        (op,) = _sdpa_ops(model, inputs)
        args = _check_alone(op)
        assert not args.get("is_causal") and not args.get("enable_gqa")
        assert args["key"] == args["value"] == (2, 4, 8, 16)
        assert args["attn_mask"] == (2, 1, 8, 8) and args["mask_dtype"] == torch.bool
