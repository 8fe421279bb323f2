"""The signature convention of a program's ``@forward``: which arguments are the user's
inputs and which the module's parameters, buffers and constants (``torch.kind`` and
``torch.target`` on each argument, as the frontend writes them), and the element types
of torch's dtypes. The frontend writes it (``frontends.export``); the runtime and the
caches read it back (``graph_inputs``), so it lives below both.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from deplodock.errors import UserInputError

if TYPE_CHECKING:  # xDSL loads where IR is read or written: the program cache's reader
    # (``GraphInput``) runs a warm compile without it
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Attribute, SSAValue

KIND_ATTR = "torch.kind"
TARGET_ATTR = "torch.target"


@dataclass(frozen=True)
class GraphInput:
    """One argument of the imported function."""

    name: str  # the SSA name the printer shows, e.g. "x", "p_weight"
    kind: str  # "input" | "param" | "buffer" | "constant"
    target: str | None  # the module's fully qualified parameter/buffer name; None for inputs
    shape: tuple[int, ...]
    dtype: torch.dtype


# ------------------------------------------------------------------------ dtypes


@functools.cache
def element_types() -> dict[torch.dtype, Attribute]:
    """torch dtype -> its builtin element type, for every dtype a program may hold."""
    from xdsl.dialects.builtin import (
        IntegerType,
        Signedness,
        bf16,
        f16,
        f32,
        f64,
        i1,
        i8,
        i16,
        i32,
        i64,
    )

    return {
        torch.float32: f32,
        torch.float16: f16,
        torch.bfloat16: bf16,
        torch.float64: f64,
        torch.int64: i64,
        torch.int32: i32,
        torch.int16: i16,
        torch.int8: i8,
        torch.uint8: IntegerType(8, Signedness.UNSIGNED),
        torch.bool: i1,
    }


@functools.cache
def _dtypes() -> dict[Attribute, torch.dtype]:
    return {v: k for k, v in element_types().items()}


def element_type(dtype: torch.dtype) -> Attribute:
    """The builtin element type of a torch dtype (torch.bool → i1)."""
    try:
        return element_types()[dtype]
    except KeyError:
        raise UserInputError(f"unsupported tensor dtype {dtype}") from None


def torch_dtype(element: Attribute) -> torch.dtype:
    """The torch dtype of a builtin element type (inverse of `element_type`)."""
    try:
        return _dtypes()[element]
    except KeyError:
        raise ValueError(f"no torch dtype for element type {element}") from None


# -------------------------------------------------------------- reading back


def _printed_names(func: FuncOp) -> dict[SSAValue, str]:
    """The SSA names the xDSL printer gives the function's values (arguments, then each
    op's results; see `deplodock.dialects.torch.printed_names`)."""
    from deplodock.dialects.torch import printed_names

    return printed_names(func.body.blocks)


def graph_inputs(func: FuncOp, arg_names: Sequence[str] | None = None) -> list[GraphInput]:
    """The arguments of an imported (or re-parsed) function, read from their types and
    their `torch.kind` / `torch.target` attributes. `arg_names`: the arguments' printed
    names when the caller has them (naming a whole model's values walks every op)."""
    from xdsl.dialects.builtin import StringAttr, TensorType

    if arg_names is not None and len(arg_names) == len(func.args):
        names = dict(zip(func.args, arg_names, strict=True))
    else:
        names = _printed_names(func)
    attrs = func.arg_attrs.data if func.arg_attrs is not None else ()
    inputs: list[GraphInput] = []
    for i, arg in enumerate(func.args):
        entry = attrs[i].data if i < len(attrs) else {}
        kind = entry.get(KIND_ATTR)
        target = entry.get(TARGET_ATTR)
        ty = arg.type
        if not isinstance(ty, TensorType):
            raise ValueError(f"argument {names[arg]} of @{func.sym_name.data} is not a tensor")
        inputs.append(
            GraphInput(
                name=names[arg],
                kind=kind.data if isinstance(kind, StringAttr) else "input",
                target=target.data if isinstance(target, StringAttr) else None,
                shape=tuple(ty.get_shape()),
                dtype=torch_dtype(ty.get_element_type()),
            )
        )
    return inputs


def graph_outputs(func: FuncOp) -> list[str]:
    """The SSA names of the values the function returns."""
    ret = func.get_return_op()
    if ret is None:
        return []
    names = _printed_names(func)
    return [names[v] for v in ret.arguments]
