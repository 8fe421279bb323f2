"""torch.export ExportedProgram → an xDSL module in the `torch` dialect.

The capture itself (torch.export, the decomposition to Core ATen, the program's
fingerprint) is `frontends/capture.py`, which loads no xDSL.

The graph is the default `torch.export.export(...)` one (pre-dispatch ATen): composite ops
such as linear, scaled_dot_product_attention, silu and rms_norm stay whole, and no
decompositions are run here; turning them into tensor-level ops is the job of the
`torch` → `tensor` decompositions, which can choose a fused form for each.

The result is one `func.func @forward`:

- its arguments are the graph's placeholders in graph order (parameters, buffers and
  lifted constants first, then user inputs, as torch.export orders them), each named
  after its placeholder (`%p_weight`, `%x`) and carrying `{torch.kind = "param",
  torch.target = "weight"}`, so a printed and re-parsed module still knows which argument
  is which parameter (`graph_inputs` reads them back);
- each call_function node becomes one `torch.aten` op named after the node
  (see `deplodock.dialects.torch` for how arguments become operands and attributes),
  its location the module it ran in (`nn_module_stack`'s innermost entry) around the
  user's file:line, MLIR debug info that decompose turns into provenance;
  `operator.getitem` on a multi-result node selects that op's result; ATen ops that
  return nothing (`_assert_tensor_metadata` and the like) are checks on the capture,
  not computation, and are dropped;
- it returns the output node's values.

The pre-dispatch graph is not functional: it can hold in-place ops (`add_.Tensor`). One
is imported as is, to be read as its out-of-place form, where that is exact: it updates
an intermediate that is no view and that nothing reads afterwards under its old name.
Updating a program input, parameter or buffer (a side effect) or an aliased tensor is
reported as unsupported.

Argument names are the names the printer shows. xDSL drops a trailing `_<digits>` from
a name hint and renumbers in print order, so a placeholder `p_params_0` prints (and is
reported) as `%p_params`; the fully qualified `target` is never renamed.

Anything this version cannot express (dynamic shapes, non-tensor values, mutated
buffers, higher-order ops) is collected over the whole graph and reported at once,
with the user's source line of each, as a `UserInputError`.
"""

from __future__ import annotations

import importlib.util
import operator
import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    LocationAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from deplodock.dialects.signature import (
    KIND_ATTR,
    TARGET_ATTR,
    GraphInput,
    element_type,
    element_types,
    graph_inputs,
    graph_outputs,
    torch_dtype,
)
from deplodock.dialects.torch import AtenOp, printed_names, site_location
from deplodock.errors import UserInputError
from deplodock.frontends.capture import target_name

__all__ = [
    "GraphInput",
    "ImportedProgram",
    "element_type",
    "graph_inputs",
    "graph_outputs",
    "import_program",
    "source_location",
    "torch_dtype",
]


@dataclass
class ImportedProgram:
    """The imported program and how its arguments and results map to the PyTorch one."""

    module: ModuleOp
    inputs: list[GraphInput]  # in function-argument order
    outputs: list[str]  # SSA names of the returned values

    @property
    def func(self) -> FuncOp:
        """The `func.func` holding the program."""
        return next(op for op in self.module.ops if isinstance(op, FuncOp))


# ------------------------------------------------------------ source locations

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>.*)$')
_TORCH_DIR = str(Path(torch.__file__).resolve().parent) + os.sep
_FRONTENDS_DIR = str(Path(__file__).resolve().parent) + os.sep
# The package root (the API's wrapper of a plain function, the OpInfo harness): tools/ in
# a checkout, site-packages/deplodock/ when installed.
_PACKAGE_DIR = str(Path(importlib.util.find_spec("deplodock").origin).resolve().parent) + os.sep


def _short_path(path: str) -> str:
    """A path as a reader wants it: inside an installed package, from the package on
    (`transformers/models/llama/modeling_llama.py`); under the working directory,
    relative to it; otherwise as given (`<expression>`)."""
    for marker in ("site-packages", "dist-packages"):
        head, sep, tail = path.rpartition(os.sep + marker + os.sep)
        if sep:
            return tail
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def source_location(stack_trace: str | None) -> str | None:
    """`file:LINE: code` of the frame that best names the user's code.

    That is the innermost frame outside torch itself (and outside these frontends): a
    model's own source line (for Hugging Face models, the line in transformers'
    modeling file), not torch.nn's implementation of the layer it calls. When every
    frame is inside torch (a bare `torch.nn.RMSNorm` exported directly), the innermost
    frame. The expression frontend rewrites traces to point at the expression itself."""
    frame = _user_frame(stack_trace)
    if frame is None:
        return None
    file, line, code = frame
    where = f"{file}:{line}"
    return f"{where}: {code}" if code else where


def _location(node: torch.fx.Node) -> LocationAttr:
    """The node's MLIR location: the module it ran in (the innermost entry of
    `nn_module_stack`, e.g. `layer.self_attn.q_proj`) around the user's file:line."""
    stack = node.meta.get("nn_module_stack") or {}
    scope = ""
    if stack:
        path = list(stack.values())[-1]
        scope = path[0] if isinstance(path, tuple | list) and isinstance(path[0], str) else ""
    frame = _user_frame(node.meta.get("stack_trace"))
    file, line = (frame[0], frame[1]) if frame is not None else ("", 0)
    return site_location(scope, file, line)


def _user_frame(stack_trace: str | None) -> tuple[str, int, str] | None:
    """(short path, line, code) of the frame `source_location` reports."""
    if not stack_trace:
        return None
    frames: list[tuple[str, str, str]] = []
    lines = stack_trace.splitlines()
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if m is None:
            continue
        code = ""
        if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]):
            code = lines[i + 1].strip()
        frames.append((m["file"], m["line"], code))
    if not frames:
        return None

    def outside(path: str) -> bool:
        resolved = str(Path(path).resolve()) if os.path.isabs(path) else path
        # <eval_with_key>: code FX generated, never the user's.
        return not resolved.startswith(
            (_TORCH_DIR, _FRONTENDS_DIR, _PACKAGE_DIR, "<eval_with_key>")
        )

    file, line, code = next((f for f in reversed(frames) if outside(f[0])), frames[-1])
    return _short_path(file), int(line), code


# ----------------------------------------------------------------------- import


class _Unsupported(Exception):
    """Something in one node this version cannot import (collected, then reported)."""


_INPUT_KINDS = {
    InputKind.USER_INPUT: "input",
    InputKind.PARAMETER: "param",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
}

# Arguments with no meaning for a compiled kernel: where and how a result is stored or
# transferred. Left out like None.
_DROPPED_ARG_TYPES = (torch.device, torch.layout, torch.memory_format)
_DROPPED_ARG_NAMES = frozenset({"device", "layout", "memory_format", "pin_memory", "non_blocking"})


def _tensor_type(value: object, what: str) -> TensorType:
    """The builtin tensor type of a FakeTensor (static shapes only)."""
    if not isinstance(value, torch.Tensor):
        raise _Unsupported(f"{what} is not a tensor ({type(value).__name__})")
    shape = []
    for d in value.shape:
        if not isinstance(d, int):
            raise _Unsupported(f"{what} has a dynamic shape {tuple(value.shape)}")
        shape.append(d)
    if value.dtype not in element_types():
        raise _Unsupported(f"{what} has unsupported dtype {value.dtype}")
    return TensorType(element_types()[value.dtype], shape)


def _scalar_attr(value: object, what: str) -> Attribute | None:
    """The attribute of a non-tensor argument value; None when it is left out."""
    if value is None or isinstance(value, _DROPPED_ARG_TYPES):
        return None
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, torch.dtype):
        return element_type(value)
    if isinstance(value, list | tuple):
        elements: list[Attribute] = []
        for v in value:
            a = _scalar_attr(v, what) if v is not None else NoneType()
            if a is None:
                raise _Unsupported(f"{what} holds an unsupported value {v!r}")
            elements.append(a)
        return ArrayAttr(elements)
    if isinstance(value, torch.fx.Node):
        raise _Unsupported(f"{what} is a computed value ({value.name}), not a constant")
    raise _Unsupported(f"{what} has an unsupported value {value!r}")


def _is_view(node: torch.fx.Node) -> bool:
    """Whether the node's result aliases an input (a view such as `view`, `transpose`)."""
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and any(
        r.alias_info is not None and not r.alias_info.is_write for r in target._schema.returns
    )


class _Importer:
    """Walks an ExportedProgram's graph once, building the func body."""

    def __init__(self, ep: torch.export.ExportedProgram):
        self.ep = ep
        self.values: dict[torch.fx.Node, SSAValue | tuple[SSAValue, ...] | None] = {}
        self.errors: list[str] = []
        self.ops: list[AtenOp] = []
        self.order = {n: k for k, n in enumerate(ep.graph.nodes)}

    def fail(self, node: torch.fx.Node, message: str) -> None:
        where = source_location(node.meta.get("stack_trace"))
        self.errors.append(f"{message}" + (f"  (at {where})" if where else ""))

    def value(self, node: torch.fx.Node) -> SSAValue | None:
        """The SSA value of a tensor node; None when an earlier failure poisoned it."""
        v = self.values.get(node)
        if isinstance(v, tuple):
            raise _Unsupported(
                f"{node.name} has {len(v)} results and is used without selecting one"
            )
        return v

    # -------------------------------------------------------------- placeholders

    def inputs(self, block: Block) -> tuple[list[Attribute], list[DictionaryAttr]]:
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs}
        types: list[Attribute] = []
        attrs: list[DictionaryAttr] = []
        for node in self.ep.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            kind = _INPUT_KINDS.get(spec.kind) if spec is not None else None
            if kind == "input" and isinstance(node.meta.get("val"), bool | int | float):
                # A Python number torch.export specialized: the graph reads the constant.
                self.values[node] = None
                continue
            try:
                if kind is None:
                    what = spec.kind.name if spec is not None else "unknown"
                    raise _Unsupported(f"input {node.name} of kind {what} is not supported")
                ty = _tensor_type(node.meta.get("val"), f"input {node.name}")
            except _Unsupported as e:
                self.fail(node, str(e))
                self.values[node] = None
                continue
            entry: dict[str, Attribute] = {KIND_ATTR: StringAttr(kind)}
            if spec.target is not None and kind != "input":
                entry[TARGET_ATTR] = StringAttr(spec.target)
            arg = block.insert_arg(ty, len(block.args))
            arg.name_hint = node.name
            self.values[node] = arg
            types.append(ty)
            attrs.append(DictionaryAttr(entry))
        return types, attrs

    # ------------------------------------------------------------ call_function

    def call(self, node: torch.fx.Node) -> None:
        target = node.target
        if target is operator.getitem:
            self.getitem(node)
            return
        if not isinstance(target, torch._ops.OpOverload):
            name = str(target) if isinstance(target, torch._ops.OperatorBase) else None
            name = name or getattr(target, "__qualname__", None) or repr(target)
            raise _Unsupported(
                f"{name} is not an ATen operator (control flow, higher-order ops and "
                "Python calls are not supported)"
            )
        schema = target._schema
        if not schema.returns:
            self.values[node] = None  # an assertion on the capture, not computation
            return
        self.check_in_place(node, target)

        operands: list[SSAValue] = []
        names: list[str] = []
        attributes: dict[str, Attribute] = {}
        poisoned = False
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args) and not arg.kwarg_only:
                value = node.args[i]
            elif arg.name in node.kwargs:
                value = node.kwargs[arg.name]
            else:
                continue  # left to its default
            what = f"argument {arg.name} of {target_name(target)}"
            if isinstance(value, torch.fx.Node):
                v = self.value(value)
                poisoned |= v is None
                operands.append(v)  # type: ignore[arg-type]
                names.append(arg.name)
            elif isinstance(value, list | tuple) and any(
                isinstance(e, torch.fx.Node) for e in value
            ):
                # A tensor list, spread; Tensor?[] (aten.index) also records which
                # positions hold a tensor, since the Nones are not operands.
                for e in value:
                    if isinstance(e, torch.fx.Node):
                        v = self.value(e)
                        poisoned |= v is None
                        operands.append(v)  # type: ignore[arg-type]
                        names.append(arg.name)
                    elif e is not None:
                        raise _Unsupported(f"{what} mixes tensors and constants")
                if any(e is None for e in value):
                    attributes[arg.name] = ArrayAttr(
                        [BoolAttr.from_bool(e is not None) for e in value]
                    )
            elif arg.name not in _DROPPED_ARG_NAMES:
                attr = _scalar_attr(value, what)
                if attr is not None:
                    attributes[arg.name] = attr

        val = node.meta.get("val")
        op_name = target_name(target)
        if isinstance(val, list | tuple):
            result_types = [_tensor_type(v, f"result {k} of {op_name}") for k, v in enumerate(val)]
        else:
            result_types = [_tensor_type(val, f"the result of {op_name}")]
        if poisoned:
            self.values[node] = None
            return

        op = AtenOp(
            target_name(target),
            operands,
            names,
            result_types,
            attributes,
            source_location(node.meta.get("stack_trace")),
        )
        op.location = _location(node)
        self.ops.append(op)
        if isinstance(val, list | tuple):
            selected = {
                user.args[1]: user.name for user in node.users if user.target is operator.getitem
            }
            for k, result in enumerate(op.results):
                if k in selected:
                    result.name_hint = selected[k]
            self.values[node] = tuple(op.results)
        else:
            op.results[0].name_hint = node.name
            self.values[node] = op.results[0]

    def check_in_place(self, node: torch.fx.Node, target: torch._ops.OpOverload) -> None:
        """Accept an in-place op (`add_`, `masked_fill_`) only where reading it as its
        functional form is exact: it updates an intermediate that is no view and that no
        view or later op reads under its old name. Updating a program input, parameter
        or buffer is a side effect the compiled function cannot express."""
        schema = target._schema
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            if not isinstance(value, torch.fx.Node):
                continue
            op = target_name(target)
            if value.op == "placeholder":
                raise _Unsupported(
                    f"{op} updates the program input {value.name} in place; "
                    "in-place updates of inputs, parameters and buffers are not supported"
                )
            if _is_view(value) or any(
                u is not node and (_is_view(u) or self.order[u] > self.order[node])
                for u in value.users
            ):
                raise _Unsupported(
                    f"{op} updates {value.name} in place while a view or a later op "
                    "reads it; write the update out of place"
                )

    def getitem(self, node: torch.fx.Node) -> None:
        source, index = node.args
        results = self.values.get(source)
        if results is None:
            self.values[node] = None
        elif not isinstance(results, tuple) or not isinstance(index, int):
            raise _Unsupported(f"indexing {source.name} with getitem is not supported")
        else:
            self.values[node] = results[index]

    # ------------------------------------------------------------------ outputs

    def outputs(self, node: torch.fx.Node) -> list[SSAValue]:
        for spec in self.ep.graph_signature.output_specs:
            if spec.kind != OutputKind.USER_OUTPUT:
                what = spec.target or getattr(spec.arg, "name", "a value")
                self.fail(node, f"the program updates {what} ({spec.kind.name})")
        results: list[SSAValue] = []
        outs = node.args[0] if isinstance(node.args[0], list | tuple) else (node.args[0],)
        for out in outs:
            if not isinstance(out, torch.fx.Node):
                self.fail(node, f"an output is the constant {out!r}, not a tensor")
                continue
            try:
                v = self.value(out)
            except _Unsupported as e:
                self.fail(node, str(e))
                continue
            if v is not None:
                results.append(v)
        return results


def import_program(ep: torch.export.ExportedProgram, name: str = "forward") -> ImportedProgram:
    """Import an exported program as `func.func @<name>` in the torch dialect."""
    importer = _Importer(ep)
    block = Block()
    arg_types, arg_attrs = importer.inputs(block)
    results: list[SSAValue] = []
    for node in ep.graph.nodes:
        if node.op == "call_function":
            try:
                importer.call(node)
            except (_Unsupported, UserInputError) as e:
                importer.fail(node, f"{node.name}: {e}")
                importer.values[node] = None
        elif node.op == "output":
            results = importer.outputs(node)
        elif node.op == "get_attr":
            # A sub-graph of a higher-order op (torch.cond, …): the op that uses it is
            # reported; lifted constants are placeholders, never get_attr.
            importer.values[node] = None
        elif node.op != "placeholder":
            importer.fail(node, f"{node.name}: graph node kind '{node.op}' is not supported")
            importer.values[node] = None
    if importer.errors:
        listing = "\n".join(f"  {e}" for e in importer.errors)
        raise UserInputError(
            f"cannot import the captured program ({len(importer.errors)} problem"
            f"{'s' if len(importer.errors) != 1 else ''}):\n{listing}"
        )

    block.add_ops([*importer.ops, ReturnOp(*results)])
    func = FuncOp(
        name,
        (arg_types, [r.type for r in results]),
        Region(block),
        arg_attrs=ArrayAttr(arg_attrs),
    )
    module = ModuleOp([func])
    module.verify()
    names = printed_names(func.body.blocks)
    return ImportedProgram(module, graph_inputs(func), [names[r] for r in results])
