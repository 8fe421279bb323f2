"""The PyTorch frontend: expressions and modules → the torch dialect, and back from text."""

from __future__ import annotations

import io

import pytest
import torch
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType, f32
from xdsl.dialects.func import Func, FuncOp
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.torch import AtenOp, Torch
from deplodock.errors import UserInputError
from deplodock.frontends.export import (
    GraphInput,
    graph_inputs,
    graph_outputs,
    import_program,
    source_location,
)
from deplodock.frontends.expression import capture_expression

RMSNORM = "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"
SOFTMAX = "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))"
MATMUL = "torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))"


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Torch):
        ctx.load_dialect(dialect)
    return ctx


def _parse(text: str) -> ModuleOp:
    module = Parser(_context(), text).parse_module()
    module.verify()
    return module


def _aten_ops(module: ModuleOp) -> list[AtenOp]:
    return [op for op in module.walk() if isinstance(op, AtenOp)]


def _func(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


@pytest.fixture(scope="module")
def rmsnorm():
    return import_program(capture_expression(RMSNORM).program)


# ------------------------------------------------------------------ expressions


@pytest.mark.parametrize(
    ("src", "targets"),
    [
        (RMSNORM, ["rms_norm.default"]),
        (SOFTMAX, ["softmax.int"]),
        (MATMUL, ["add.Tensor", "matmul.default", "relu.default"]),
    ],
)
def test_expression_targets(src: str, targets: list[str]) -> None:
    """Pre-dispatch export keeps composite ops whole: these targets decide which
    decompositions exist."""
    imported = import_program(capture_expression(src).program)
    ops = _aten_ops(imported.module)
    assert [op.overload for op in ops] == targets
    for op in ops:
        assert op.source_location == f"<expression>:1: {src}"


def test_rmsnorm_module_is_exported_itself(rmsnorm) -> None:
    assert rmsnorm.inputs == [
        GraphInput("p_weight", "param", "weight", (2048,), torch.float32),
        GraphInput("x", "input", None, (1, 32, 2048), torch.float32),
    ]
    assert rmsnorm.outputs == ["rms_norm"]
    (op,) = _aten_ops(rmsnorm.module)
    assert op.tensor_arg_names == ("input", "weight")
    assert op.tensor_arg("weight") is _func(rmsnorm.module).args[0]
    assert op.arg("normalized_shape") == [2048]
    assert op.arg("eps", 1e-6) == 1e-6  # nn.RMSNorm passes eps=None: left out


def test_expression_inputs_named_in_source_order() -> None:
    captured = capture_expression(MATMUL)
    assert [t.shape for t in captured.example_inputs] == [(16, 64), (64,), (64, 16)]
    imported = import_program(captured.program)
    assert [(i.name, i.kind, i.shape) for i in imported.inputs] == [
        ("x", "input", (16, 64)),
        ("x1", "input", (64,)),
        ("x2", "input", (64, 16)),
    ]
    x, x1, x2 = captured.example_inputs
    assert torch.allclose(captured.module(x, x1, x2), torch.relu((x + x1) @ x2))


def test_capture_is_reproducible() -> None:
    a = capture_expression(MATMUL).example_inputs
    b = capture_expression(MATMUL).example_inputs
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_wrapper_holds_modules_as_submodules() -> None:
    captured = capture_expression("F.silu(nn.Linear(8, 4)(torch.randn(2, 8))) * torch.ones(4)")
    imported = import_program(captured.program)
    assert [(i.name, i.kind, i.target) for i in imported.inputs] == [
        ("p_m0_weight", "param", "m0.weight"),
        ("p_m0_bias", "param", "m0.bias"),
        ("x", "input", None),
        ("x1", "input", None),
    ]
    assert [op.overload for op in _aten_ops(imported.module)] == [
        "linear.default",
        "silu.default",
        "mul.Tensor",
    ]
    inputs = captured.example_inputs
    expected = captured.module(*inputs)
    assert torch.allclose(captured.program.module()(*inputs), expected)


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("torch.randn(3,", "invalid expression: '(' was never closed\n  torch.randn(3,\n  "),
        ("torch.randn(3) + torch.randn(4)", "the expression raised RuntimeError: The size"),
        ("torch.randn(3).shape", "the expression gives Size, not a tensor"),
        ("1 + 2", "the expression gives int, not a tensor"),
        ("torch.nn.RMSNorm(4)", "the expression gives a module (RMSNorm), not a tensor"),
        ("torch.nonzero(torch.randn(4))", "result shape depends on tensor values"),
    ],
)
def test_expression_errors(src: str, message: str) -> None:
    with pytest.raises(UserInputError) as info:
        capture_expression(src)
    assert message in str(info.value)


def test_syntax_error_shows_the_column() -> None:
    with pytest.raises(UserInputError) as info:
        capture_expression("torch.relu(torch.randn(4)))")
    lines = str(info.value).splitlines()
    assert lines[1].strip() == "torch.relu(torch.randn(4)))"
    assert lines[2].index("^") == len(lines[1]) - 1  # the unmatched last ")"


def test_unsupported_nodes_are_listed_at_once() -> None:
    class Updates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count.add_(x)
            return x.add_(1) * 2

    program = torch.export.export(Updates(), (torch.randn(4),))
    with pytest.raises(UserInputError) as info:
        import_program(program)
    text = str(info.value)
    assert "(2 problems)" in text
    assert "add_.Tensor updates the program input b_count in place" in text
    assert "add_.Tensor updates the program input x in place" in text
    assert "test_frontend.py:" in text  # each problem says where it came from


def test_multi_result_ops_map_getitem() -> None:
    class Norm(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out, mean, rstd = torch.native_layer_norm(x, [4], None, None, 1e-5)
            return out + rstd

    imported = import_program(torch.export.export(Norm(), (torch.randn(3, 4),)))
    norm, add = _aten_ops(imported.module)
    assert norm.overload == "native_layer_norm.default" and len(norm.results) == 3
    assert add.tensor_arg("self") is norm.results[0]
    assert add.tensor_arg("other") is norm.results[2]
    assert "test_frontend.py:" in norm.source_location


def test_source_location_skips_torch_frames() -> None:
    trace = (
        '  File "/home/u/model.py", line 12, in forward\n'
        "    return self.norm(x)\n"
        f'  File "{torch.__file__.rsplit("/", 1)[0]}/nn/modules/normalization.py", line 427,'
        " in forward\n"
        "    return F.rms_norm(x)\n"
    )
    assert source_location(trace) == "/home/u/model.py:12: return self.norm(x)"
    assert source_location(None) is None


def test_location_names_the_module_and_line() -> None:
    """Each torch op's MLIR location: the module it ran in, around the source line; it
    prints only with debug info and parses back."""
    src = "torch.relu(torch.nn.Linear(8, 4)(torch.randn(2, 8)))"
    module = import_program(capture_expression(src).program).module
    linear, relu = _aten_ops(module)
    assert str(linear.location) == 'loc("m0"("<expression>":1:0))'  # the wrapper's m0
    assert str(relu.location) == 'loc("<expression>":1:0)'  # the root module
    assert "loc(" not in str(module)
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module)
    reparsed = _aten_ops(_parse(out.getvalue()))
    assert [op.location for op in reparsed] == [linear.location, relu.location]


# ------------------------------------------------------------------ text form


def test_print_parse_print_is_identical(rmsnorm) -> None:
    text = str(rmsnorm.module)
    assert str(_parse(text)) == text
    matmul = str(import_program(capture_expression(MATMUL).program).module)
    assert str(_parse(matmul)) == matmul


def test_graph_inputs_round_trip_through_text(rmsnorm) -> None:
    func = _func(_parse(str(rmsnorm.module)))
    assert graph_inputs(func) == rmsnorm.inputs
    assert graph_outputs(func) == rmsnorm.outputs


def test_printed_rmsnorm() -> None:
    imported = import_program(capture_expression(RMSNORM).program)
    assert str(imported.module).splitlines()[2].strip() == (
        '%rms_norm = torch.aten "rms_norm.default"(input = %x, weight = %p_weight) '
        '{normalized_shape = [2048], source = "<expression>:1: '
        'torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))"} : '
        "(tensor<1x32x2048xf32>, tensor<2048xf32>) -> tensor<1x32x2048xf32>"
    )


def test_verifier_rejects_wrong_operand_count() -> None:
    block = Block(arg_types=[TensorType(f32, [4]), TensorType(f32, [4])])
    op = AtenOp("add.Tensor", block.args, ["self"], [TensorType(f32, [4])])
    with pytest.raises(VerifyException, match="operand count .2. must equal .* tensor_args .1."):
        op.verify()
