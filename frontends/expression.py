"""Capture a one-line PyTorch expression (`deplodock compile -c "…"`) as a program.

    torch.relu(torch.matmul(torch.randn(16,64) + torch.randn(64), torch.randn(64,16)))

An expression has no names, so its parts are given roles by what they are:

- every call that makes a tensor from nothing (`torch.randn`, `torch.rand`,
  `torch.randint`, `torch.ones`, `torch.zeros`, `torch.empty`, `torch.full`,
  `torch.arange`, `torch.tensor`) is a user input, evaluated once for the example value
  and named `x`, `x1`, `x2`, … in source order;
- every called sub-expression that evaluates to a `torch.nn.Module`
  (`torch.nn.RMSNorm(2048)` in `torch.nn.RMSNorm(2048)(…)`) is built once and held as a
  submodule, so its weights are parameters of the program, not constants;
- when the whole expression is `Module(…)(inputs…)`, that module itself is exported, and
  its parameters keep their own names (`p_weight`); otherwise a wrapper module computes
  the expression, with submodules `m0`, `m1`, … (`p_m0_weight`).

Evaluation sees `torch`, `nn` (torch.nn), `F` (torch.nn.functional) and Python's
builtins, under `torch.manual_seed(0)` (in a forked RNG state), so a capture is
reproducible. The module is exported in eval mode (deplodock compiles inference).

Each captured op's source location is the expression itself (`<expression>:1: …`): the
frames torch records point inside torch.nn or at generated code, neither of which is
what the user wrote.

Anything wrong with the expression is a `UserInputError` with a message for people.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from deplodock.errors import UserInputError
from deplodock.frontends.capture import lowered_targets, to_core_aten

__all__ = ["CapturedExpression", "capture_expression", "EXPRESSION_FILE"]

EXPRESSION_FILE = "<expression>"
"""The file name the captured ops' source locations use."""

TENSOR_CONSTRUCTORS = frozenset(
    {"randn", "rand", "randint", "ones", "zeros", "empty", "full", "arange", "tensor"}
)
"""`torch.<name>(…)` calls that become graph inputs."""

_MAX_MESSAGE = 400

_DATA_DEPENDENT = frozenset(
    {"DynamicOutputShapeException", "DataDependentOutputException", "GuardOnDataDependentSymNode"}
)
"""Fake-tensor exceptions that mean "the output's shape depends on the data"."""


@dataclass
class CapturedExpression:
    """A captured expression, ready for `import_program(program)`."""

    source: str
    module: torch.nn.Module  # forward(*example_inputs) computes the expression
    example_inputs: tuple[torch.Tensor, ...]
    program: torch.export.ExportedProgram


def _namespace() -> dict[str, object]:
    return {
        "torch": torch,
        "nn": torch.nn,
        "F": torch.nn.functional,
        "__builtins__": builtins,
    }


def _shorten(message: str) -> str:
    """The first paragraph of an exception message, capped: torch's messages can run to
    pages of internal detail."""
    text = message.strip().split("\n\n", 1)[0].strip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _raised(e: BaseException) -> UserInputError:
    return UserInputError(f"the expression raised {type(e).__name__}: {_shorten(str(e))}")


def _dotted(node: ast.expr) -> str | None:
    """`torch.nn.RMSNorm` for an attribute chain on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _evaluate(node: ast.expr, namespace: dict[str, object]) -> object:
    """Evaluate one sub-expression of the user's source."""
    code = compile(ast.Expression(body=node), EXPRESSION_FILE, "eval")
    try:
        return eval(code, namespace)  # the user's own expression, by design
    except Exception as e:
        raise _raised(e) from None


class _Roles(ast.NodeTransformer):
    """Replaces input-making calls with input names and module-making calls with
    `self.m<k>`, evaluating each once, in Python's evaluation order (so the seeded
    random values do not depend on how the expression is captured)."""

    def __init__(self, namespace: dict[str, object]):
        self.namespace = namespace
        self.inputs: list[tuple[str, torch.Tensor]] = []
        self.modules: list[torch.nn.Module] = []

    def visit_Call(self, node: ast.Call) -> ast.expr:
        name = _dotted(node.func)
        if name is not None and name.startswith("torch."):
            if name.removeprefix("torch.") in TENSOR_CONSTRUCTORS:
                return self._input(node)
        elif name is None and isinstance(node.func, ast.Call):
            value = _evaluate(node.func, self.namespace)
            if isinstance(value, torch.nn.Module):
                attr = f"m{len(self.modules)}"
                self.modules.append(value)
                node.func = ast.copy_location(
                    ast.Attribute(ast.Name("self", ast.Load()), attr, ast.Load()), node.func
                )
                node.args = [self.visit(a) for a in node.args]
                node.keywords = [self.visit(k) for k in node.keywords]
                return node
        return self.generic_visit(node)

    def _input(self, node: ast.Call) -> ast.expr:
        value = _evaluate(node, self.namespace)
        if not isinstance(value, torch.Tensor):
            raise UserInputError(f"{ast.unparse(node)} gives {type(value).__name__}, not a tensor")
        name = "x" if not self.inputs else f"x{len(self.inputs)}"
        self.inputs.append((name, value))
        return ast.copy_location(ast.Name(name, ast.Load()), node)


def _parse(src: str) -> ast.Expression:
    try:
        return ast.parse(src, filename=EXPRESSION_FILE, mode="eval")
    except SyntaxError as e:
        line = (e.text or src).rstrip("\n")
        caret = " " * max((e.offset or 1) - 1, 0) + "^"
        raise UserInputError(f"invalid expression: {e.msg}\n  {line}\n  {caret}") from None


def _build_module(
    tree: ast.Expression, roles: _Roles
) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The module to export: the called module itself when the expression is just
    `Module(…)(x, x1, …)`, else a wrapper whose forward is the rewritten expression."""
    names = [n for n, _ in roles.inputs]
    inputs = tuple(t for _, t in roles.inputs)
    body = tree.body
    if (
        len(roles.modules) == 1
        and isinstance(body, ast.Call)
        and _dotted(body.func) == "self.m0"
        and not body.keywords
        and [a.id if isinstance(a, ast.Name) else None for a in body.args] == names
    ):
        return roles.modules[0], inputs

    # Parse a template rather than build FunctionDef by hand: its fields vary between
    # Python versions.
    module_ast = ast.parse(f"def forward(self, {', '.join(names)}):\n    return None")
    fn = module_ast.body[0]
    assert isinstance(fn, ast.FunctionDef) and isinstance(fn.body[0], ast.Return)
    fn.body[0].value = body
    code = compile(ast.fix_missing_locations(module_ast), EXPRESSION_FILE, "exec")
    namespace = _namespace()
    exec(code, namespace)  # defines forward from the user's expression
    wrapper_type = type("Expression", (torch.nn.Module,), {"forward": namespace["forward"]})
    wrapper = wrapper_type()
    for k, m in enumerate(roles.modules):
        wrapper.add_module(f"m{k}", m)
    return wrapper, inputs


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """Silence the tracebacks torch logs on its own when a traced op fails: the error
    reaches the user once, as a UserInputError."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_result(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    """Run the expression on fake tensors (shapes only, no arithmetic, so a big
    expression costs nothing) to report its errors and non-tensor results plainly."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with _quiet_torch(), torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True):
            out = module(*inputs)
    except UserInputError:
        raise
    except Exception as e:
        if type(e).__name__ in _DATA_DEPENDENT:
            raise UserInputError(
                f"the expression's result shape depends on tensor values ({_shorten(str(e))}); "
                "deplodock compiles static shapes only"
            ) from None
        raise _raised(e) from None
    # A tuple, a list or a named tuple of results (torch.max(x, dim=0)'s values and
    # indices) is several outputs; torch.Size is a tuple too, but one (refused) value.
    several = isinstance(out, tuple | list) and not isinstance(out, torch.Size)
    leaves = out if several else (out,)
    for leaf in leaves:
        if isinstance(leaf, torch.nn.Module):
            raise UserInputError(
                f"the expression gives a module ({type(leaf).__name__}), not a tensor; "
                "call it on an input, e.g. torch.nn.RMSNorm(2048)(torch.randn(1, 32, 2048))"
            )
        if not isinstance(leaf, torch.Tensor):
            raise UserInputError(
                f"the expression gives {type(leaf).__name__}, not a tensor: "
                "deplodock compiles expressions that compute tensors"
            )


def capture_expression(src: str) -> CapturedExpression:
    """Capture `src` (one PyTorch expression) as an ExportedProgram with example inputs."""
    src = src.strip()
    tree = _parse(src)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        roles = _Roles(_namespace())
        tree = roles.visit(tree)
        module, inputs = _build_module(tree, roles)
    module.eval()
    _check_result(module, inputs)
    try:
        with _quiet_torch():
            program = torch.export.export(module, inputs)
            program = to_core_aten(program, lowered_targets())
    except Exception as e:
        raise UserInputError(
            f"torch.export could not capture the expression: {type(e).__name__}: {_shorten(str(e))}"
        ) from None

    one_line = " ".join(src.split())
    trace = f'  File "{EXPRESSION_FILE}", line 1, in <expression>\n    {one_line}\n'
    for node in program.graph.nodes:
        if node.op == "call_function":
            node.meta["stack_trace"] = trace
    return CapturedExpression(src, module, inputs, program)
