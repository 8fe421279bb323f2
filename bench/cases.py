"""The benchmark's cases: what ``deplodock bench`` measures.

A case is a small PyTorch program at a real model's dimensions: a name
(``rmsnorm/tinyllama/S128``), a group (``seed``, ``memory-bound``, ``matmul``,
``attention``, ``block``, ``model``), a function that captures it with ``torch.export``
on the CPU (only when the case is run: listing cases captures nothing), and what it
costs at least:

- **traffic**: every input and parameter read once and every output written once, in
  bytes (what a perfect schedule moves through HBM; the ``--stats`` rule of
  ``deplodock.kernel_stats`` applied to the whole program). The tests check each figure
  against the captured program's own signature.
- **FLOPs**: rough, for orientation only: one per elementwise arithmetic op per element
  (add, mul, div, exp, max, …), 2·M·N·K per matmul; each case says what it counted.

The seed's three expressions are captured exactly as ``deplodock run -c`` captures them;
the memory-bound and matmul cases take their sizes from the shipped configs of the two
reference models (``deplodock.frontends.models.BUILTIN_CONFIGS``), fp32. Parameters and
inputs of the captured programs are placeholders (zeros, or the seed's seeded values):
the benchmark draws fresh random inputs and parameters on the GPU.

The matmul group (issue 6, the matmul schedules): every projection of both models,
``F.linear(x, W)`` with x (1, S, in) at S = 32, 128 and 512 (Qwen2's q and k/v carry a
bias; k and v share a shape, and so do gate and up, so each pair is one case); the
gated MLP ``silu(x Wg^T) * (x Wu^T)`` and the down projection with its residual
``r + h Wd^T`` at S = 128 and 512; and square ``a @ b`` at n = 1024, 2048, 4096. Its
tolerance is ``MATMUL_RTOL``, not the elementwise 1e-5.

The attention group is causal grouped-query attention alone,
``F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)`` with q
(1, heads, S, head_dim) and k, v (1, kv_heads, S, head_dim), at S = 32, 128 and 512
(tolerance ``MATMUL_RTOL``, as two contractions; eager fp32 on the CPU is within 6e-7 of
fp64 there on N(0, 1) inputs at S = 512). The attention-shapes group (issue 20's new
cases, ``ATTENTION_SHAPES``) is attention beyond the two models' prefill: long causal
sequences (S = 4096 at head dim 64, S = 2048 at 128), a non-causal length that no block
divides (S = 1000), a head dim of 1024, and decode (one query against a KV of 4096 and
32768). The block group is the first decoder
layer of each model (``capture_model(part="layer")``) at S = 128 and 512; the model
group is each whole causal LM, input ids to logits (``capture_model(part="model")``), at
S = 128 (capturing builds 4.4 GB of weights for TinyLlama, 30.5 GB for Qwen2.5-7B;
compiling TinyLlama takes about 30 s on a 2-core CPU).

Adding a case is one more ``Case`` from a family function called by ``all_cases``:
``build`` may return any object with ``source``, ``module``, ``example_inputs`` and
``program`` (a ``CapturedModel`` of ``deplodock.frontends.models`` has them).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

FP32 = 4  # bytes per element; every case is fp32 today

GROUPS = (
    "seed",
    "memory-bound",
    "matmul",
    "attention",
    "attention-shapes",
    "shapes",
    "block",
    "model",
)  # report order
MODELS = {"tinyllama": "tinyllama-1.1b", "qwen2.5-7b": "qwen2.5-7b"}  # short → config name
SEQS = (128, 512)  # the decoder layers
PER_OP_SEQS = (32, 128, 512)  # every per-op case: a decode-ish batch of tokens, two prefills
PROJECTION_SEQS = PER_OP_SEQS
SQUARES = (1024, 2048, 4096)
ATTENTION_SEQS = PER_OP_SEQS
WHOLE_MODELS = {"tinyllama": (128,), "qwen2.5-7b": (128,)}  # the model group: short name → seqs

RTOL = 1e-5
"""The default tolerance, max |got - want| / max |want|: fp32 elementwise and reduction
programs, summed over at most a few thousand terms."""

MATMUL_RTOL = 1e-4
"""The matmul group's tolerance. Summing K products in fp32 in another order than cuBLAS
(tiles, split K) moves an output by at most about sqrt(K)·2^-24 of the largest one on
random data: 8e-6 at K = 18944, Qwen's down projection (eager on the CPU is 5e-7 from
fp64 there). 1e-4 leaves a margin and still catches one term dropped or doubled (about
1/(5·sqrt(K)) ≈ 1.5e-3 of the largest output at K = 18944)."""

BLOCK_RTOL = 2e-3
"""The block group's tolerance. With every parameter drawn from N(0, 1) (what the
benchmark does), a decoder layer's attention logits are large and its softmax nearly
one-hot, so fp32 itself is far from exact: eager fp32 on the CPU is 1e-4 to 4e-4 from
fp64 (both models, S = 128 and 512, two seeds). Two fp32 implementations can differ by
the sum of their errors; 2e-3 leaves a margin over that."""

MODEL_RTOL = 5e-3
"""The model group's tolerance on the logits. As in a decoder layer (``BLOCK_RTOL``), but
through 22 of them: with every parameter drawn from N(0, 1), eager fp32 on the CPU is
itself 9.9e-4 and 1.1e-3 from fp64 on TinyLlama's logits at S = 128 (two seeds; the
logits reach about 240). Two fp32 implementations can differ by the sum of their errors,
about 2.3e-3; 5e-3 leaves a margin over that, and a wrong kernel is off by far more. (With
transformers' own initialisation, std 0.02, the whole model matched eager at 8e-6.)"""


@dataclass
class CapturedCase:
    """A captured case, shaped like ``CapturedExpression`` (what ``fresh_inputs`` reads)."""

    source: str
    module: Any  # torch.nn.Module: forward(*example_inputs) is what `program` computes
    example_inputs: tuple[Any, ...]
    program: Any  # torch.export.ExportedProgram


@dataclass(frozen=True)
class Case:
    name: str  # kind/model/size, e.g. rmsnorm/tinyllama/S128
    group: str
    shape: str  # the inputs' shapes, for people
    build: Callable[[], Any]  # → CapturedCase (or CapturedExpression / CapturedModel)
    traffic_bytes: int
    flops: int
    flops_rule: str  # how `flops` was counted
    rtol: float = RTOL  # max |got - want| / max |want| it must meet against eager


# ------------------------------------------------------------------------ modules


def _modules():
    """The case modules (defined on first use: importing this module needs no torch)."""
    global _MODULES
    if _MODULES is None:
        import torch
        import torch.nn.functional as F

        class SiluMul(torch.nn.Module):
            """The gated MLP's activation: silu(gate) · up."""

            def forward(self, gate, up):
                return F.silu(gate) * up

        def rotate_half(x):
            half = x.shape[-1] // 2
            return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

        class Rope(torch.nn.Module):
            """Rotary embedding of q, as transformers' ``apply_rotary_pos_emb`` applies it
            (``unsqueeze_dim=1``): cos and sin are (batch, seq, head_dim)."""

            def forward(self, q, cos, sin):
                cos = cos.unsqueeze(1)
                sin = sin.unsqueeze(1)
                return (q * cos) + (rotate_half(q) * sin)

        class ResidualAdd(torch.nn.Module):
            def forward(self, x, residual):
                return x + residual

        def weight(*shape):
            return torch.nn.Parameter(torch.zeros(shape), requires_grad=False)

        class Linear(torch.nn.Module):
            """One projection, ``F.linear(x, W, b)``: x (…, K), W (N, K), b (N) or none."""

            def __init__(self, n: int, k: int, bias: bool):
                super().__init__()
                self.weight = weight(n, k)
                self.bias = weight(n) if bias else None

            def forward(self, x):
                return F.linear(x, self.weight, self.bias)

        class GatedMLP(torch.nn.Module):
            """The MLP up to its down projection: silu(x Wg^T) · (x Wu^T)."""

            def __init__(self, hidden: int, inter: int):
                super().__init__()
                self.gate = weight(inter, hidden)
                self.up = weight(inter, hidden)

            def forward(self, x):
                return F.silu(F.linear(x, self.gate)) * F.linear(x, self.up)

        class DownResidual(torch.nn.Module):
            """The MLP's down projection and the residual add after it: r + h Wd^T."""

            def __init__(self, hidden: int, inter: int):
                super().__init__()
                self.down = weight(hidden, inter)

            def forward(self, h, residual):
                return residual + F.linear(h, self.down)

        class MatMul(torch.nn.Module):
            def forward(self, a, b):
                return torch.matmul(a, b)

        class Attention(torch.nn.Module):
            """Grouped-query attention, causal or not: q (b, Hq, Sq, D), k and v
            (b, Hkv, Sk, D)."""

            def __init__(self, causal: bool):
                super().__init__()
                self.causal = causal

            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=self.causal, enable_gqa=True
                )

        class CausalAttention(torch.nn.Module):
            """Causal grouped-query attention: q (b, Hq, S, D), k and v (b, Hkv, S, D)
            with Hq a multiple of Hkv; query head h reads kv head h // (Hq / Hkv)."""

            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        _MODULES = {
            "silu_mul": SiluMul,
            "rope": Rope,
            "residual_add": ResidualAdd,
            "linear": Linear,
            "gated_mlp": GatedMLP,
            "down_residual": DownResidual,
            "matmul": MatMul,
            "causal_attention": CausalAttention,
            "attention": Attention,
        }
    return _MODULES


_MODULES: dict[str, type] | None = None


def _export(source: str, make_module: Callable[[], Any], *shapes: Sequence[int]):
    """A ``build`` function: the module, exported on zero placeholder inputs."""

    def build() -> CapturedCase:
        import torch

        module = make_module().eval()
        inputs = tuple(torch.zeros(shape) for shape in shapes)
        with torch.no_grad():
            program = torch.export.export(module, inputs)
        return CapturedCase(source, module, inputs, program)

    return build


def _expression(source: str):
    def build():
        from deplodock.frontends.expression import capture_expression

        return capture_expression(source)

    return build


# ------------------------------------------------------------------------- cases


def _dims(text: Sequence[int]) -> str:
    return "x".join(map(str, text))


def _n(*shape: int) -> int:
    return math.prod(shape)


def _seed_cases() -> list[Case]:
    rms = "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
    softmax = "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"
    matmul = "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))"
    m, k, n = 16, 64, 16
    return [
        Case(
            "seed/rmsnorm",
            "seed",
            "1x32x2048",
            _expression(rms),
            (2 * _n(32, 2048) + 2048) * FP32,
            4 * _n(32, 2048),
            "4 per element: square, sum, scale, weight",
        ),
        Case(
            "seed/softmax",
            "seed",
            "1x28x2048x2048",
            _expression(softmax),
            2 * _n(28, 2048, 2048) * FP32,
            5 * _n(28, 2048, 2048),
            "5 per element: max, subtract, exp, sum, divide",
        ),
        Case(
            "seed/add-matmul-relu",
            "seed",
            "16x64 + 64, 64x16",
            _expression(matmul),
            (m * k + k + k * n + m * n) * FP32,
            m * k + 2 * m * n * k + m * n,
            "add per element, 2·M·N·K for the matmul, relu per output",
        ),
    ]


def _model_dims() -> dict[str, dict[str, int]]:
    from deplodock.frontends.models import BUILTIN_CONFIGS

    dims = {}
    for short, name in MODELS.items():
        config = BUILTIN_CONFIGS[name]
        dims[short] = {
            "hidden": config["hidden_size"],
            "intermediate": config["intermediate_size"],
            "heads": config["num_attention_heads"],
            "kv_heads": config["num_key_value_heads"],
            "head_dim": config["head_dim"],
            # Qwen2's config has no attention_bias: its q/k/v projections always have one
            "qkv_bias": int(config.get("attention_bias", config["model_type"] == "qwen2")),
        }
    return dims


def _rmsnorm(name: str, hidden: int, *lead: int) -> Case:
    shape = (*lead, hidden)

    def module():
        import torch

        return torch.nn.RMSNorm(hidden, eps=1e-6)

    return Case(
        name,
        "memory-bound",
        _dims(shape),
        _export(f"torch.nn.RMSNorm({hidden}, eps=1e-6) on {_dims(shape)}", module, shape),
        (2 * _n(*shape) + hidden) * FP32,
        4 * _n(*shape),
        "4 per element: square, sum, scale, weight",
    )


def _memory_bound_cases() -> list[Case]:
    cases: list[Case] = []
    for model, d in _model_dims().items():
        for seq in PER_OP_SEQS:
            h, inter, heads, hd = d["hidden"], d["intermediate"], d["heads"], d["head_dim"]
            tag = f"{model}/S{seq}"
            cases.append(_rmsnorm(f"rmsnorm/{tag}", h, 1, seq))
            mlp = (1, seq, inter)
            cases.append(
                Case(
                    f"silu-mul/{tag}",
                    "memory-bound",
                    f"2 × {_dims(mlp)}",
                    _export(
                        f"F.silu(gate) * up on 2 × {_dims(mlp)}",
                        lambda: _modules()["silu_mul"](),
                        mlp,
                        mlp,
                    ),
                    3 * _n(*mlp) * FP32,
                    5 * _n(*mlp),
                    "5 per element: silu as x / (1 + exp(-x)) (negate, exp, add, divide), "
                    "then the gating multiply",
                )
            )
            scores = (1, heads, seq, seq)

            def softmax():
                import torch

                return torch.nn.Softmax(dim=-1)

            cases.append(
                Case(
                    f"softmax/{tag}",
                    "memory-bound",
                    _dims(scores),
                    _export(f"softmax(dim=-1) on {_dims(scores)}", softmax, scores),
                    2 * _n(*scores) * FP32,
                    5 * _n(*scores),
                    "5 per element: max, subtract, exp, sum, divide",
                )
            )
            q, cs = (1, heads, seq, hd), (1, seq, hd)
            cases.append(
                Case(
                    f"rope/{tag}",
                    "memory-bound",
                    f"q {_dims(q)}, cos/sin {_dims(cs)}",
                    _export(
                        f"q*cos.unsqueeze(1) + rotate_half(q)*sin.unsqueeze(1), q {_dims(q)}",
                        lambda: _modules()["rope"](),
                        q,
                        cs,
                        cs,
                    ),
                    (2 * _n(*q) + 2 * _n(*cs)) * FP32,
                    3 * _n(*q),
                    "3 per output element: two multiplies and an add (the negation of "
                    "half the elements and the concatenation are not counted)",
                )
            )
            act = (1, seq, h)
            cases.append(
                Case(
                    f"residual-add/{tag}",
                    "memory-bound",
                    f"2 × {_dims(act)}",
                    _export(
                        f"x + residual on 2 × {_dims(act)}",
                        lambda: _modules()["residual_add"](),
                        act,
                        act,
                    ),
                    3 * _n(*act) * FP32,
                    _n(*act),
                    "1 per element",
                )
            )
    cases.append(_rmsnorm("rmsnorm/large/4096x4096", 4096, 1, 4096))
    # few, long rows: chunk-reduce's cases (one block per row would idle the GPU)
    cases.append(_rmsnorm("rmsnorm/long-rows/4x262144", 262144, 1, 4))
    total = 1 << 24
    cases.append(
        Case(
            "sum/16M",
            "memory-bound",
            "16777216",
            _expression(f"torch.randn({total}).sum()"),
            (total + 1) * FP32,
            total,
            "1 per element",
        )
    )
    return cases


def _projection(model: str, kind: str, seq: int, n: int, k: int, bias: bool) -> Case:
    x = (1, seq, k)
    w = f"W {n}x{k}" + (f" + b {n}" if bias else "")
    return Case(
        f"proj/{kind}/{model}/S{seq}",
        "matmul",
        f"x {_dims(x)}, {w}",
        _export(
            f"F.linear(x, W{', b' if bias else ''}), x {_dims(x)}, {w}",
            lambda: _modules()["linear"](n, k, bias),
            x,
        ),
        (seq * k + n * k + bias * n + seq * n) * FP32,
        2 * seq * n * k + bias * seq * n,
        "2·M·N·K" + (", plus 1 per output for the bias" if bias else ""),
        MATMUL_RTOL,
    )


def _matmul_cases() -> list[Case]:
    cases: list[Case] = []
    dims = _model_dims()
    for model, d in dims.items():
        h, inter, bias = d["hidden"], d["intermediate"], bool(d["qkv_bias"])
        q, kv = d["heads"] * d["head_dim"], d["kv_heads"] * d["head_dim"]
        for seq in PROJECTION_SEQS:
            # (kind, N, K, bias): k and v share a shape, and so do gate and up
            for kind, n, k, b in (
                ("q", q, h, bias),
                ("kv", kv, h, bias),
                ("o", h, q, False),
                ("gate-up", inter, h, False),
                ("down", h, inter, False),
            ):
                cases.append(_projection(model, kind, seq, n, k, b))
    for model, d in dims.items():
        h, inter = d["hidden"], d["intermediate"]
        for seq in PER_OP_SEQS:
            x, hid = (1, seq, h), (1, seq, inter)
            weights = f"Wg, Wu {inter}x{h}"
            cases.append(
                Case(
                    f"mlp/gated/{model}/S{seq}",
                    "matmul",
                    f"x {_dims(x)}, {weights}",
                    _export(
                        f"F.silu(x @ Wg.T) * (x @ Wu.T), x {_dims(x)}, {weights}",
                        lambda h=h, inter=inter: _modules()["gated_mlp"](h, inter),
                        x,
                    ),
                    (seq * h + 2 * inter * h + seq * inter) * FP32,
                    2 * (2 * seq * inter * h) + 5 * seq * inter,
                    "2·M·N·K for each of the two matmuls, 5 per output for silu and the "
                    "gating multiply (as silu-mul counts them)",
                    MATMUL_RTOL,
                )
            )
            cases.append(
                Case(
                    f"mlp/down-residual/{model}/S{seq}",
                    "matmul",
                    f"h {_dims(hid)}, r {_dims(x)}, Wd {h}x{inter}",
                    _export(
                        f"r + h @ Wd.T, h {_dims(hid)}, r {_dims(x)}, Wd {h}x{inter}",
                        lambda h=h, inter=inter: _modules()["down_residual"](h, inter),
                        hid,
                        x,
                    ),
                    (seq * inter + seq * h + h * inter + seq * h) * FP32,
                    2 * seq * h * inter + seq * h,
                    "2·M·N·K, plus 1 per output for the residual add",
                    MATMUL_RTOL,
                )
            )
    for n in SQUARES:
        cases.append(
            Case(
                f"square/{n}",
                "matmul",
                f"{n}x{n} @ {n}x{n}",
                _export(
                    f"torch.matmul(a, b), a and b {n}x{n}",
                    lambda: _modules()["matmul"](),
                    (n, n),
                    (n, n),
                ),
                3 * n * n * FP32,
                2 * n**3,
                "2·M·N·K",
                MATMUL_RTOL,
            )
        )
    return cases


def _attention(model: str, seq: int, heads: int, kv_heads: int, head_dim: int) -> Case:
    q, kv = (1, heads, seq, head_dim), (1, kv_heads, seq, head_dim)
    shapes = f"q {_dims(q)}, k/v {_dims(kv)}"
    return Case(
        f"attention/{model}/S{seq}",
        "attention",
        shapes,
        _export(
            f"F.scaled_dot_product_attention(q, k, v, causal, GQA), {shapes}",
            lambda: _modules()["causal_attention"](),
            q,
            kv,
            kv,
        ),
        (2 * _n(*q) + 2 * _n(*kv)) * FP32,  # q, k, v read once; the output, q's shape
        _attention_flops(heads, seq, head_dim),
        "2·M·N·K for q·kᵀ and for p·v over the whole S×S square (the causal half is not "
        "subtracted); the softmax and the scaling are not counted",
        MATMUL_RTOL,
    )


def _attention_flops(heads: int, seq: int, head_dim: int) -> int:
    """q·kᵀ and p·v of one batch, each 2·S·S·D per query head, the whole square."""
    return 2 * 2 * heads * seq * seq * head_dim


def _attention_cases() -> list[Case]:
    return [
        _attention(model, seq, d["heads"], d["kv_heads"], d["head_dim"])
        for model, d in _model_dims().items()
        for seq in ATTENTION_SEQS
    ]


ATTENTION_SHAPES = (
    # name, query heads, kv heads, queries, keys, head dim, causal
    ("d64/S4096/causal", 32, 8, 4096, 4096, 64, True),
    ("d128/S2048/causal", 16, 16, 2048, 2048, 128, True),
    ("d64/S1000/full", 8, 8, 1000, 1000, 64, False),
    ("d1024/S512/causal", 4, 4, 512, 512, 1024, True),
    ("decode/KV4096", 32, 8, 1, 4096, 128, False),
    ("decode/KV32768", 32, 8, 1, 32768, 128, False),
)
"""The attention-shapes group: (name, heads, kv heads, queries, keys, head dim, causal)."""


def _attention_shape(
    name: str, heads: int, kv_heads: int, sq: int, sk: int, head_dim: int, causal: bool
) -> Case:
    q, kv = (1, heads, sq, head_dim), (1, kv_heads, sk, head_dim)
    shapes = f"q {_dims(q)}, k/v {_dims(kv)}"
    kind = "causal" if causal else "not causal"
    # the causal half is counted, as in the attention group (the roofline: the square)
    return Case(
        f"attention-shapes/{name}",
        "attention-shapes",
        shapes,
        _export(
            f"F.scaled_dot_product_attention(q, k, v, {kind}, GQA), {shapes}",
            lambda: _modules()["attention"](causal),
            q,
            kv,
            kv,
        ),
        (2 * _n(*q) + 2 * _n(*kv)) * FP32,
        2 * 2 * heads * sq * sk * head_dim,
        "2·M·N·K for q·kᵀ and for p·v over every query and key (a causal half is not "
        "subtracted); the softmax and the scaling are not counted",
        MATMUL_RTOL,
    )


def _attention_shape_cases() -> list[Case]:
    return [_attention_shape(*shape) for shape in ATTENTION_SHAPES]


def _layer_figures(d: dict[str, int], seq: int) -> tuple[int, int]:
    """One decoder layer: its parameters (elements) and its matmuls' FLOPs at ``seq``
    (the seven projections, and attention over the whole S×S square)."""
    h, inter, hd = d["hidden"], d["intermediate"], d["head_dim"]
    q, kv = d["heads"] * hd, d["kv_heads"] * hd
    projections = h * q + 2 * h * kv + q * h + 3 * h * inter  # q k v o, gate up down
    bias = q + 2 * kv if d["qkv_bias"] else 0
    params = 2 * h + projections + bias  # plus the two RMSNorm vectors and the biases
    flops = 2 * seq * projections + _attention_flops(d["heads"], seq, hd)
    return params, flops


def _captured_model(short: str, part: str, seq: int) -> Callable[[], Any]:
    """A ``build`` function: ``capture_model`` (the weights are built then, not before)."""

    def build():
        from deplodock.frontends.models import capture_model

        return capture_model(MODELS[short], part=part, seq=seq)

    return build


def _decoder_layer(short: str, seq: int) -> Case:
    d = _model_dims()[short]
    params, flops = _layer_figures(d, seq)
    act = (1, seq, d["hidden"])
    return Case(
        f"layer/{short}/S{seq}",
        "block",
        f"hidden {_dims(act)}",
        _captured_model(short, "layer", seq),
        # hidden states in and out, the weights, and the rotary embedding's two buffers
        # of head_dim / 2 values (inv_freq, original_inv_freq: both are lifted inputs)
        (2 * _n(*act) + params + d["head_dim"]) * FP32,
        flops,
        "2·M·N·K for the seven projections and for q·k^T and p·v over the whole "
        "S×S square (the causal half is not subtracted); the elementwise work is not "
        f"counted ({d['heads']} heads of {d['head_dim']})",
        BLOCK_RTOL,
    )


def _block_cases() -> list[Case]:
    return [_decoder_layer(model, seq) for model in _model_dims() for seq in SEQS]


def model_figures(short: str, seq: int, layers: int | None = None) -> tuple[int, int]:
    """The whole causal LM (its first ``layers`` decoder layers; all of them by default)
    at ``seq``: its minimum traffic in bytes and its matmuls' FLOPs."""
    from deplodock.frontends.models import BUILTIN_CONFIGS

    d, config = _model_dims()[short], BUILTIN_CONFIGS[MODELS[short]]
    layers = config["num_hidden_layers"] if layers is None else layers
    vocab, h = config["vocab_size"], d["hidden"]
    layer_params, layer_flops = _layer_figures(d, seq)
    head = 0 if config.get("tie_word_embeddings", False) else vocab * h
    # the embedding, the layers, the final RMSNorm, the LM head (unless tied to the
    # embedding), the rotary embedding's two buffers of head_dim / 2 values
    params = vocab * h + layers * layer_params + h + head + d["head_dim"]
    traffic = params * FP32 + seq * 8 + seq * vocab * FP32  # int64 ids in, fp32 logits out
    return traffic, layers * layer_flops + 2 * seq * h * vocab


def _whole_model(short: str, seq: int) -> Case:
    from deplodock.frontends.models import BUILTIN_CONFIGS

    config = BUILTIN_CONFIGS[MODELS[short]]
    layers, vocab = config["num_hidden_layers"], config["vocab_size"]
    traffic, flops = model_figures(short, seq)
    return Case(
        f"model/{short}/S{seq}",
        "model",
        f"ids 1x{seq}, {layers} layers, logits 1x{seq}x{vocab}",
        _captured_model(short, "model", seq),
        traffic,
        flops,
        "2·M·N·K for each layer's seven projections and for q·k^T and p·v over the "
        f"whole S×S square (the causal half is not subtracted), {layers} layers, and for "
        "the LM head: about 2·S·(parameters less the embedding), plus attention; the "
        "elementwise work and the embedding lookup are not counted",
        MODEL_RTOL,
    )


def _model_cases() -> list[Case]:
    return [_whole_model(short, seq) for short, seqs in WHOLE_MODELS.items() for seq in seqs]


REDUCE_RTOL = 1e-4
"""The shapes group's tolerance for reductions over 10^8 elements and more: fp32 sums of
that many terms in another order than PyTorch's differ by about sqrt(n)·2^-24 of the
largest partial sum, a few 1e-6 of a sum of N(0, 1) elements at n = 2^28."""

SHAPE_SIZES = {
    # name: (family, dims) at full size: beyond the H200's 60 MB L2, of sizes no schedule
    # was fitted to (primes, odd lengths)
    "mm/prime": ("mm", (3001, 3011, 2999)),
    "mm/even": ("mm", (3072, 3072, 3072)),  # the divisible size next to it
    "linear/odd": ("linear", (2047, 4093, 11003)),
    "linear/even": ("linear", (2048, 4096, 11008)),
    "mm/matvec": ("mm", (1, 8191, 8193)),
    "linear/decode": ("linear", (1, 4096, 14336)),
    "mm/tall-skinny": ("mm", (1048576, 64, 64)),
    "mm/tiny-k": ("mm", (8192, 16, 8192)),
    "mm/long-k": ("mm", (64, 262147, 64)),
    "bmm/small": ("bmm", (8192, 32, 33, 31)),
    "linear/sigmoid-sum": ("linear_sigmoid_sum", (1024, 1024, 30001)),
    "sum/rows": ("reduce", ((16384, 8191), "sum", (-1,))),
    "sum/cols": ("reduce", ((8191, 16384), "sum", (0,))),
    "mean/middle": ("reduce", ((16, 4093, 2048), "mean", (1,))),
    "amax/4d-axis1": ("reduce", ((16, 257, 64, 512), "amax", (1,))),
    "sum/4d-last-two": ("reduce", ((64, 33, 257, 255), "sum", (2, 3))),
    "sum/all": ("reduce", ((16383, 16384), "sum", ())),
    "loss/mse": ("mse", (2**28,)),
    "loss/cross-entropy": ("cross_entropy", (8192, 32001)),
    "elementwise/gelu-tanh": ("elementwise", (2**28,)),
    "softmax/odd": ("softmax", (4096, 50257)),
    "layernorm/odd": ("layernorm", (32768, 4097)),
    "rmsnorm/odd": ("rmsnorm", (16384, 5121)),
}

SMALL_SHAPE_SIZES = {
    # the same families at sizes the CPU interprets in seconds (the tests'): still
    # primes and odd lengths, one more than a tile
    "mm/prime": ("mm", (97, 101, 103)),
    "mm/even": ("mm", (128, 64, 128)),
    "linear/odd": ("linear", (63, 67, 129)),
    "linear/even": ("linear", (64, 64, 128)),
    "mm/matvec": ("mm", (1, 131, 257)),
    "linear/decode": ("linear", (1, 128, 263)),
    "mm/tall-skinny": ("mm", (4099, 64, 64)),
    "mm/tiny-k": ("mm", (257, 16, 129)),
    "mm/long-k": ("mm", (32, 4099, 64)),
    "bmm/small": ("bmm", (67, 32, 33, 31)),
    "linear/sigmoid-sum": ("linear_sigmoid_sum", (64, 32, 1001)),
    "sum/rows": ("reduce", ((67, 513), "sum", (-1,))),
    "sum/cols": ("reduce", ((513, 67), "sum", (0,))),
    "mean/middle": ("reduce", ((3, 131, 64), "mean", (1,))),
    "amax/4d-axis1": ("reduce", ((2, 37, 5, 33), "amax", (1,))),
    "sum/4d-last-two": ("reduce", ((2, 3, 37, 35), "sum", (2, 3))),
    "sum/all": ("reduce", ((257, 129), "sum", ())),
    "loss/mse": ("mse", (40001,)),
    "loss/cross-entropy": ("cross_entropy", (33, 1001)),
    "elementwise/gelu-tanh": ("elementwise", (40001,)),
    "softmax/odd": ("softmax", (9, 5003)),
    "layernorm/odd": ("layernorm", (33, 4097)),
    "rmsnorm/odd": ("rmsnorm", (33, 5121)),
}


def _shape_case(name: str, family: str, dims: tuple) -> Case:
    """One case of the shapes group: its expression, traffic and FLOPs from its family."""
    f = FP32
    rtol = RTOL
    if family in ("mm", "linear", "bmm", "linear_sigmoid_sum"):
        b, (m, k, n) = (dims[0], dims[1:]) if family == "bmm" else (1, dims)
        x, w = f"torch.randn({b},{m},{k})" if family == "bmm" else f"torch.randn({m},{k})", ""
        if family == "linear" or family == "linear_sigmoid_sum":
            w = f"torch.randn({n},{k})"
            expr = f"torch.nn.functional.linear({x}, {w})"
        else:
            w = f"torch.randn({b},{k},{n})" if family == "bmm" else f"torch.randn({k},{n})"
            expr = f"torch.{'bmm' if family == 'bmm' else 'matmul'}({x}, {w})"
        out, flops, rule = b * m * n, 2 * b * m * n * k, "2·M·N·K"
        if family == "linear_sigmoid_sum":
            expr, out = f"torch.sigmoid({expr}).sum(-1)", m
            flops, rule = flops + 5 * m * n, "2·M·N·K, 4 per output for sigmoid, 1 for the sum"
        traffic = (b * m * k + b * k * n + out) * f
        shape = f"{b}x{m}x{k} @ {b}x{k}x{n}" if family == "bmm" else f"{m}x{k}, {k}x{n}"
        return Case(f"shapes/{name}", "shapes", shape, _expression(expr), traffic, flops, rule,
                    MATMUL_RTOL)  # fmt: skip
    if family == "reduce":
        shape_, op, axes = dims
        size = _n(*shape_)
        kept = [e for i, e in enumerate(shape_) if i not in {a % len(shape_) for a in axes}]
        out = _n(*kept) if axes else 1
        args = f"({', '.join(map(str, axes))}{',' if len(axes) == 1 else ''})" if axes else ""
        expr = f"torch.randn({','.join(map(str, shape_))}).{op}({args})"
        if size >= 10**8 or not axes:
            rtol = REDUCE_RTOL
        return Case(f"shapes/{name}", "shapes", _dims(shape_), _expression(expr),
                    (size + out) * f, size, f"1 per element ({op})", rtol)  # fmt: skip
    if family == "mse":
        (n,) = dims
        expr = f"torch.nn.functional.mse_loss(torch.randn({n}), torch.randn({n}))"
        return Case(f"shapes/{name}", "shapes", f"2 x {n}", _expression(expr),
                    (2 * n + 1) * f, 3 * n, "3 per element: subtract, square, sum",
                    REDUCE_RTOL)  # fmt: skip
    if family == "cross_entropy":
        rows, classes = dims
        expr = (
            f"torch.nn.functional.cross_entropy(torch.randn({rows},{classes}), "
            f"torch.randint(0, {classes}, ({rows},)))"
        )
        return Case(f"shapes/{name}", "shapes", f"{rows}x{classes}", _expression(expr),
                    rows * classes * f + rows * 8 + f, 4 * rows * classes,
                    "4 per logit: max, subtract, exp, sum", REDUCE_RTOL)  # fmt: skip
    (rows, *rest) = dims
    size = _n(*dims)
    if family == "elementwise":
        expr = f"torch.tanh(torch.nn.functional.gelu(torch.randn({rows})) * 1.5 + 0.5)"
        return Case(f"shapes/{name}", "shapes", str(rows), _expression(expr), 2 * size * f,
                    12 * size, "about 12 per element: gelu's erf, scale, shift, tanh")  # fmt: skip
    (cols,) = rest
    x = f"torch.randn({rows},{cols})"
    if family == "softmax":
        expr, params, rule = f"torch.softmax({x}, -1)", 0, "5 per element"
    elif family == "layernorm":
        expr, params = f"torch.nn.functional.layer_norm({x}, ({cols},))", 0
        rule = "7 per element: mean, subtract, square, sum, scale, shift"
    else:
        expr, params, rule = f"torch.nn.RMSNorm({cols})({x})", cols, "4 per element"
    per = {"softmax": 5, "layernorm": 7, "rmsnorm": 4}[family]
    return Case(f"shapes/{name}", "shapes", f"{rows}x{cols}", _expression(expr),
                (2 * size + params) * f, per * size, rule)  # fmt: skip


def shapes_cases(small: bool = False) -> list[Case]:
    """The shapes group (issue 19): the families a schedule fitted to the suite's shapes
    misses (irregular matmuls, matrix-vector, tall-skinny, large and tiny K, batched small
    products, reductions over each axis of 2-, 3- and 4-d tensors and over all of them,
    losses, a long elementwise chain, softmax and norms over odd rows, a linear with a
    reduction over its features), at sizes beyond the 60 MB L2; ``small``: the same
    families at sizes the tests interpret on a CPU."""
    sizes = SMALL_SHAPE_SIZES if small else SHAPE_SIZES
    return [_shape_case(name, family, dims) for name, (family, dims) in sizes.items()]


def all_cases() -> list[Case]:
    """Every case, in report order (grouped, then by kind, model and size). Listing
    them builds nothing: each case captures its program only when ``build`` is called."""
    cases = (
        _seed_cases()
        + _memory_bound_cases()
        + _matmul_cases()
        + _attention_cases()
        + _attention_shape_cases()
        + shapes_cases()
        + _block_cases()
        + _model_cases()
    )
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def matches(case: Case, pattern: str) -> bool:
    """A pattern selects a case by group (``memory-bound``), by a glob over the name
    (``rmsnorm/*/S512``), or by a piece of the name (``qwen``). A group's name selects
    that group alone (``matmul`` is not also ``seed/add-matmul-relu``)."""
    if pattern in GROUPS:
        return case.group == pattern
    return fnmatch.fnmatchcase(case.name, pattern) or (
        not any(ch in pattern for ch in "*?[") and pattern in case.name
    )


def select(patterns: Iterable[str] | None) -> list[Case]:
    """The cases any of ``patterns`` match (all of them when there are none). Each
    pattern may itself list several, comma-separated."""
    wanted = [p.strip() for text in patterns or () for p in text.split(",") if p.strip()]
    cases = all_cases()
    if not wanted:
        return cases
    return [c for c in cases if any(matches(c, p) for p in wanted)]
