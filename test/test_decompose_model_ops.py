"""The ops of Hugging Face Llama and Qwen2 graphs decompose to the ten dialect and keep
their meaning.

Every op family the two CausalLM graphs hold (linear, embedding, conversions, cat,
slices, comparisons, logical ops, where, creation, index, cumsum, diff, cos/sin) runs on
fresh random inputs through the tensor interpreter and is compared with PyTorch eager:
floats to a relative error of 1e-5 (max|a-b| / max|b|), booleans and integers exactly.
Then the pieces as transformers writes them: RoPE (apply_rotary_pos_emb and rotate_half,
with cos/sin from the model's own rotary module), the causal mask a tiny model's graph
builds, and the whole tiny models (2 layers, 8 tokens), at the tensor level and, for
RoPE, the mask and an embedding lookup, after lift-to-loop and fuse as well.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects import arith
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.dialects.func import ReturnOp

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.dialects.loop import KernelOp, LoadOp
from deplodock.dialects.tensor import GatherOp
from deplodock.dialects.torch import AtenOp
from deplodock.frontends.export import ImportedProgram, import_program
from deplodock.passes.loop.fuse import Fuse
from deplodock.passes.tensor.lift_to_loop import LiftToLoop
from deplodock.passes.torch.decompose import Decompose, UnsupportedOpsError

TOLERANCE = 1e-5
Sampler = Callable[[torch.Generator], tuple[torch.Tensor, ...]]


class Fn(nn.Module):
    """A function as a module, so torch.export can capture it."""

    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


# --- running and comparing -----------------------------------------------------------------


def _arguments(program: ImportedProgram, state: dict, inputs: Sequence[torch.Tensor]) -> list:
    user = iter(inputs)
    return [
        (next(user) if g.kind == "input" else state[g.target]).detach().numpy()
        for g in program.inputs
    ]


def _export(module: nn.Module, inputs: tuple) -> torch.export.ExportedProgram:
    """Captured under no_grad, as frontends/models.py does: transformers' rotary module is
    decorated with no_grad, which is a higher-order op in a graph captured with grad on."""
    with torch.no_grad():
        return torch.export.export(module, inputs)


def _decompose(program: ImportedProgram) -> None:
    Decompose().apply(make_context(), program.module)
    program.module.verify()
    assert not any(isinstance(op, AtenOp) for op in program.module.walk())


def _lift_and_fuse(module: ModuleOp) -> None:
    LiftToLoop().apply(make_context(), module)
    Fuse().apply(make_context(), module)
    module.verify()


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    if not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got, want)
        return
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # -inf, inf, NaN where torch
    if finite.any():
        scale = max(float(np.max(np.abs(want[finite]))), 1e-30)
        error = float(np.max(np.abs(got[finite] - want[finite]))) / scale
        assert error <= TOLERANCE, f"relative error {error:.3g}"


def _outputs(value: object) -> list[np.ndarray]:
    values = value if isinstance(value, tuple | list) else (value,)
    return [v.detach().numpy() for v in values]


def _check(module: nn.Module, sample: Sampler, loop: bool = False) -> ModuleOp:
    """Lower `module` (captured on one sample), run it on a fresh one, compare with eager;
    with `loop`, also after lift-to-loop and fuse. Returns the tensor-level module."""
    module.eval()
    exported = _export(module, sample(torch.Generator().manual_seed(0)))
    program = import_program(exported)
    _decompose(program)
    inputs = sample(torch.Generator().manual_seed(1))
    args = _arguments(program, {**exported.state_dict, **exported.constants}, inputs)
    with torch.no_grad():
        want = _outputs(module(*inputs))
    for got, expected in zip(run_forward(program.module, args), want, strict=True):
        _assert_close(got, expected)
    tensor_level = program.module.clone()
    if loop:
        _lift_and_fuse(program.module)
        for got, expected in zip(run_forward(program.module, args), want, strict=True):
            _assert_close(got, expected)
    return tensor_level


# --- samplers ------------------------------------------------------------------------------


def randn(*shapes: tuple[int, ...]) -> Sampler:
    return lambda g: tuple(torch.randn(s, generator=g) for s in shapes)


def mixed(*specs: tuple[str, tuple[int, ...]]) -> Sampler:
    """Inputs of several kinds: "f" normal floats, "b" booleans, "i" small ints in
    [-4, 4), "p" ints in [0, 8), "n" floats with NaN and infinities mixed in."""

    def sample(g: torch.Generator) -> tuple[torch.Tensor, ...]:
        out = []
        for kind, shape in specs:
            if kind == "b":
                out.append(torch.rand(shape, generator=g) < 0.5)
            elif kind == "i":
                out.append(torch.randint(-4, 4, shape, generator=g))
            elif kind == "p":
                out.append(torch.randint(0, 8, shape, generator=g))
            else:
                x = torch.randn(shape, generator=g)
                if kind == "n":
                    x.view(-1)[::5] = float("nan")
                    x.view(-1)[1::7] = float("inf")
                    x.view(-1)[2::9] = 0.0
                out.append(x)
        return tuple(out)

    return sample


# --- each op family on random inputs -------------------------------------------------------


def _linear(n: int, k: int, bias: bool) -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(k, n, bias=bias)


def _embedding() -> nn.Module:
    torch.manual_seed(0)
    return nn.Embedding(16, 8)


def _gather_rows(x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
    return x[i, :, j]


OPS: dict[str, tuple[nn.Module, Sampler]] = {
    # linear / embedding
    "linear_bias_3d": (_linear(6, 5, True), randn((2, 3, 5))),
    "linear_no_bias_2d": (_linear(6, 5, False), randn((4, 5))),
    "embedding": (_embedding(), lambda g: (torch.randint(0, 16, (2, 5), generator=g),)),
    # conversions
    "to_float": (Fn(lambda i: i.to(torch.float32) * 0.5), mixed(("i", (3, 4)))),
    "to_int": (Fn(lambda x: (x * 3).to(torch.int64)), randn((3, 4))),
    "to_bool": (Fn(lambda x: x.to(torch.bool)), mixed(("n", (3, 5)))),
    "bool_to_float": (Fn(lambda b: b.float() + 1), mixed(("b", (3, 4)))),
    "type_as": (Fn(lambda i, x: i.type_as(x) + x), mixed(("i", (3, 4)), ("f", (3, 4)))),
    # cat, slice, select, narrow
    "cat_middle": (Fn(lambda a, b: torch.cat((a, b), 1)), randn((2, 3, 4), (2, 5, 4))),
    "cat_three": (Fn(lambda a, b, c: torch.cat((a, b, c), -1)), randn((2, 3), (2, 1), (2, 4))),
    "cat_repeat": (Fn(lambda a: torch.cat((a, a), -1).cos()), randn((2, 3))),
    "rotate_half": (Fn(lambda x: torch.cat((-x[..., 4:], x[..., :4]), -1)), randn((2, 3, 8))),
    "slice_step": (Fn(lambda x: x[:, 1::2] + x[:, -3:-1].sum(1, keepdim=True)), randn((3, 9))),
    "select_narrow": (
        Fn(lambda x: x[1] + x.narrow(0, 2, 1)[0] + x[:, 2:3].t()[0, -1]), randn((4, 6))
    ),
    # comparisons: floats with NaN/inf, ints, bools
    "compare_tensors": (
        Fn(lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y)),
        mixed(("n", (3, 5)), ("n", (5,))),
    ),
    "compare_scalars": (
        Fn(lambda x: (x == 0, x != 0, x < 0.5, x <= 0, x > -0.5, x >= 1)), mixed(("n", (4, 5)))
    ),
    "compare_ints": (
        Fn(lambda i, j: (i < j, i >= j, i == 2, i > 1.5)), mixed(("i", (4, 1)), ("i", (1, 5)))
    ),
    "compare_bools": (
        Fn(lambda a, b: (a < b, a >= b, a == b, a != b)), mixed(("b", (4, 5)), ("b", (4, 5)))
    ),
    # logical / bitwise
    "logical": (
        Fn(lambda x, b: (torch.logical_and(x, b), torch.logical_or(x, b),
                         torch.logical_xor(x, b), torch.logical_not(x))),
        mixed(("n", (3, 4)), ("b", (3, 4))),
    ),
    "bitwise_bool": (Fn(lambda a, b: (a & b, a | b, a ^ b, ~a)), mixed(("b", (3, 4)), ("b", (4,)))),
    "bitwise_int": (
        Fn(lambda i, j: (i & j, i | 6, i ^ j, ~i)), mixed(("i", (3, 4)), ("i", (3, 4)))
    ),
    # where / masked_fill
    "where": (
        Fn(lambda c, x, y: (torch.where(c, x, y), torch.where(c, x, 0.0), torch.where(c, 1.0, y))),
        mixed(("b", (3, 4)), ("f", (3, 4)), ("f", (4,))),
    ),
    "masked_fill": (
        Fn(lambda x, m: (x.masked_fill(m, float("-inf")), x.masked_fill(m, torch.tensor(2.0)))),
        mixed(("f", (2, 3, 4)), ("b", (3, 1))),
    ),
    # creation
    "fills": (
        Fn(lambda x: (x + torch.full((3, 4), 2.5), x.new_ones(4) * x, torch.zeros(3, 1) - x,
                      torch.ones(3, 4, dtype=torch.bool) & (x > 0),
                      torch.full((1, 4), float("-inf")) + x)),
        randn((3, 4)),
    ),
    "scalar_tensor": (Fn(lambda x: x * torch.scalar_tensor(3.0)), randn((3, 4))),
    "arange": (
        Fn(lambda x: (torch.arange(4) + x.shape[0], torch.arange(2, 11, 3),
                      torch.arange(0.5, 2.5, 0.5) * x, torch.arange(4, dtype=torch.float32))),
        randn((4,)),
    ),
    # index.Tensor
    "index_adjacent": (
        Fn(lambda x, i, j: x[i, j]), mixed(("f", (5, 8, 3)), ("i", (2, 1)), ("p", (4,)))
    ),
    "index_middle": (Fn(lambda x, i: x[:, i]), mixed(("f", (3, 8, 2)), ("i", (2, 3)))),
    "index_apart": (Fn(_gather_rows), mixed(("f", (4, 3, 8)), ("i", (5,)), ("p", (5,)))),
    # cumsum / diff
    "cumsum_float": (Fn(lambda x: x.cumsum(1)), randn((2, 6, 3))),
    "cumsum_bool": (Fn(lambda b: b.cumsum(-1)), mixed(("b", (2, 7)))),
    "diff_prepend": (
        Fn(lambda i, p: torch.diff(i, prepend=p)), mixed(("i", (2, 6)), ("i", (2, 1)))
    ),
    "diff_twice_append": (
        Fn(lambda x, a: torch.diff(x, n=2, dim=0, append=a)), randn((5, 3), (2, 3))
    ),
    "diff_bool": (Fn(lambda b: torch.diff(b)), mixed(("b", (3, 6)))),
    # cos / sin
    "cos_sin": (Fn(lambda x: (x.cos(), x.sin() * 2)), randn((3, 7))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(OPS))
def test_op_matches_eager(name: str) -> None:
    module, sample = OPS[name]
    _check(module, sample)


@pytest.mark.parametrize(
    "name",
    [
        "embedding",
        "rotate_half",
        "index_apart",
        "cumsum_bool",
        "diff_prepend",
        "masked_fill",
        "arange",
        "cat_three",
    ],
)
def test_op_matches_eager_after_lift_and_fuse(name: str) -> None:
    module, sample = OPS[name]
    _check(module, sample, loop=True)


def test_embedding_is_a_gather_that_fuses_into_rms_norm() -> None:
    """The row lookup moves into the norm's kernel: one kernel, whose table load takes
    its row from a loaded id."""

    class EmbedNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.norm = nn.Embedding(16, 8), nn.RMSNorm(8)
            nn.init.normal_(self.norm.weight)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.norm(self.embed(ids))

    sample = lambda g: (torch.randint(0, 16, (2, 5), generator=g),)  # noqa: E731
    tensor_level = _check(EmbedNorm(), sample, loop=True)
    assert any(isinstance(op, GatherOp) for op in tensor_level.walk())
    module = tensor_level.clone()
    _lift_and_fuse(module)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert len(kernels) == 1
    rows = [
        op
        for op in kernels[0].walk()
        if isinstance(op, LoadOp)
        and any(isinstance(i.owner, arith.IndexCastOp) for i in op.indices)
    ]
    assert len(rows) == 2, "the table is read at a loaded row, in both loops of the norm"


# --- RoPE as transformers writes it --------------------------------------------------------


def _transformers():
    return pytest.importorskip("transformers")


TINY = dict(
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    vocab_size=128,
    num_hidden_layers=2,
    use_cache=False,
    attn_implementation="sdpa",
)


class Rope(nn.Module):
    """cos/sin from LlamaRotaryEmbedding on positions arange(seq), applied to q and k by
    apply_rotary_pos_emb (rotate_half inside)."""

    def __init__(self) -> None:
        super().__init__()
        _transformers()
        from transformers import LlamaConfig
        from transformers.models.llama import modeling_llama

        self.rotary = modeling_llama.LlamaRotaryEmbedding(LlamaConfig(**TINY))
        self.apply_rotary = modeling_llama.apply_rotary_pos_emb

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(q.shape[2]).unsqueeze(0)
        cos, sin = self.rotary(q, positions)
        return self.apply_rotary(q, k, cos, sin)


def test_rope_through_decompose_and_lift_fuse() -> None:
    tensor_level = _check(Rope(), randn((1, 4, 8, 16), (1, 2, 8, 16)), loop=True)
    # rotate_half's cat is a select between two reads of q inside the kernel that computes
    # q_embed: no kernel (no buffer) for the cat, the negation or the slices
    fused = tensor_level.clone()
    _lift_and_fuse(fused)
    names = [op.sym_name.data for op in fused.walk() if isinstance(op, KernelOp)]
    assert not any(n.startswith(("k_cat", "k_neg", "k_slice", "k_pos")) for n in names), names
    ret = next(op for op in fused.walk() if isinstance(op, ReturnOp))
    for value in ret.operands:  # the kernels computing q_embed and k_embed select in place
        assert isinstance(value.owner, KernelOp)
        assert any(isinstance(op, arith.SelectOp) for op in value.owner.walk())


# --- the tiny models -----------------------------------------------------------------------


class Logits(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids).logits


@functools.cache
def _tiny(family: str) -> tuple[nn.Module, torch.export.ExportedProgram]:
    transformers = _transformers()
    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
    }[family]
    torch.manual_seed(0)
    model = Logits(model_class(config_class(**TINY)).eval())
    return model, _export(model, (_ids(0),))


def _ids(seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, TINY["vocab_size"], (1, 8), generator=gen)


def _returning(program: ImportedProgram, value) -> None:
    """Make @forward return `value` alone and drop the torch ops it does not need."""
    func = program.func
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    ret.operands = (value,)
    func.function_type = FunctionType.from_lists(func.function_type.inputs.data, [value.type])
    for op in reversed(list(func.body.block.ops)):
        if isinstance(op, AtenOp) and all(not r.uses for r in op.results):
            func.body.block.erase_op(op)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_causal_mask_building(family: str) -> None:
    """The mask the graph builds for its SDPA (positions, cumsum of packed-sequence
    starts, index, comparisons, &) equals what PyTorch computes, before and after fusion."""
    model, exported = _tiny(family)
    program = import_program(exported)
    sdpa = next(
        op
        for op in program.module.walk()
        if isinstance(op, AtenOp) and op.overload.startswith("scaled_dot_product")
    )
    mask = sdpa.tensor_arg("attn_mask")
    if mask is None:
        pytest.skip("this transformers version passes is_causal, not a mask")
    node = next(
        n
        for n in exported.graph.nodes
        if n.target is torch.ops.aten.scaled_dot_product_attention.default
    )
    mask_node = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
    _returning(program, mask)
    _decompose(program)
    state = {**exported.state_dict, **exported.constants}
    args = _arguments(program, state, [_ids(1)])

    seen: dict = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n is mask_node:
                seen["mask"] = value
            return value

    with torch.no_grad():
        Capture(exported.graph_module).run(*[torch.from_numpy(np.asarray(a)) for a in args])
    want = seen["mask"].numpy()
    assert want.dtype == np.bool_ and want[0, 0].sum() == 8 * 9 // 2  # causal
    (got,) = run_forward(program.module, args)
    np.testing.assert_array_equal(got, want)
    _lift_and_fuse(program.module)
    (got,) = run_forward(program.module, args)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("family,loop", [("llama", True), ("qwen2", False)])
def test_tiny_model_through_decompose(family: str, loop: bool) -> None:
    """The whole CausalLM, ids to logits, at the tensor level; Llama also after lift-to-loop
    and fuse (embedding gathers, RoPE selects and the mask in the loop interpreter)."""
    model, exported = _tiny(family)
    program = import_program(exported)
    try:
        Decompose().apply(make_context(), program.module)
    except UnsupportedOpsError as error:
        missing = {target for target, _, _ in error.entries}
        if missing == {"aten.scaled_dot_product_attention.default"}:
            pytest.skip("scaled_dot_product_attention has no decomposition yet (sdpa.py)")
        raise
    program.module.verify()
    ids = _ids(1)
    args = _arguments(program, {**exported.state_dict, **exported.constants}, [ids])
    (got,) = run_forward(program.module, args)
    with torch.no_grad():
        want = model(ids).numpy()
    _assert_close(got, want)
    if loop:
        _lift_and_fuse(program.module)
        (got,) = run_forward(program.module, args)
        _assert_close(got, want)


def test_bool_add_and_mul_are_or_and_and() -> None:
    """torch's + on bools is or, * is and (an i1 addi would be xor)."""
    import numpy as np
    import torch

    from deplodock.dialects import make_context
    from deplodock.dialects.interpreters.run import run_forward
    from deplodock.frontends.export import import_program
    from deplodock.passes import get_pass

    class M(torch.nn.Module):
        def forward(self, a, b):
            return (a > 0) + (b > 0), (a > 0) * (b > 0)

    a, b = torch.randn(6, 5), torch.randn(6, 5)
    module = import_program(torch.export.export(M(), (a, b))).module
    get_pass("decompose")().apply(make_context(), module)
    got = run_forward(module, [a.numpy(), b.numpy()])
    for g, w in zip(got, M()(a, b), strict=True):
        assert np.array_equal(g, w.numpy())
