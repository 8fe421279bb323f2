"""The benchmark's cases: what ``deplodock bench`` measures.

A case is a small PyTorch program at a real model's dimensions: a name
(``rmsnorm/tinyllama/S128``), a group (``seed``, ``memory-bound``; later ``matmul``,
``attention``, ``block``, ``model``), a function that captures it with ``torch.export``
on the CPU, and what it costs at least:

- **traffic**: every input and parameter read once and every output written once, in
  bytes (what a perfect schedule moves through HBM; the ``--stats`` rule of
  ``deplodock.kernel_stats`` applied to the whole program). The tests check each figure
  against the captured program's own signature.
- **FLOPs**: rough, for orientation only: one per elementwise arithmetic op per element
  (add, mul, div, exp, max, …), 2·M·N·K per matmul; each case says what it counted.

The seed's three expressions are captured exactly as ``deplodock run -c`` captures them;
the memory-bound cases take their sizes from the shipped configs of the two reference
models (``deplodock.frontends.models.BUILTIN_CONFIGS``) at S = 128 and 512 tokens, fp32.
Parameters and inputs of the captured programs are placeholders (zeros, or the seed's
seeded values): the benchmark draws fresh random inputs and parameters on the GPU.

Adding a case (issue 8's projections, gated MLP, attention, decoder layers, whole
models) is one more ``Case`` in ``CASES``: ``build`` may return any object with
``source``, ``module``, ``example_inputs`` and ``program`` (a ``CapturedModel`` of
``deplodock.frontends.models`` has them).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

FP32 = 4  # bytes per element; every case is fp32 today

GROUPS = ("seed", "memory-bound")  # in report order; matmul, attention, block, model later
SEQS = (128, 512)


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

        _MODULES = {"silu_mul": SiluMul, "rope": Rope, "residual_add": ResidualAdd}
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
    for short, name in (("tinyllama", "tinyllama-1.1b"), ("qwen2.5-7b", "qwen2.5-7b")):
        config = BUILTIN_CONFIGS[name]
        dims[short] = {
            "hidden": config["hidden_size"],
            "intermediate": config["intermediate_size"],
            "heads": config["num_attention_heads"],
            "head_dim": config["head_dim"],
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
        for seq in SEQS:
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


def all_cases() -> list[Case]:
    """Every case, in report order (grouped, then by kind, model and size)."""
    cases = _seed_cases() + _memory_bound_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def matches(case: Case, pattern: str) -> bool:
    """A pattern selects a case by group (``memory-bound``), by a glob over the name
    (``rmsnorm/*/S512``), or by a piece of the name (``qwen``)."""
    return (
        pattern == case.group
        or fnmatch.fnmatchcase(case.name, pattern)
        or (not any(ch in pattern for ch in "*?[") and pattern in case.name)
    )


def select(patterns: Iterable[str] | None) -> list[Case]:
    """The cases any of ``patterns`` match (all of them when there are none). Each
    pattern may itself list several, comma-separated."""
    wanted = [p.strip() for text in patterns or () for p in text.split(",") if p.strip()]
    cases = all_cases()
    if not wanted:
        return cases
    return [c for c in cases if any(matches(c, p) for p in wanted)]
