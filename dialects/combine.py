"""Reduction kinds shared by every level: ``ten.reduce``, reduce loops, ``tile.combine``.

One table says, for each kind, its identity (the accumulator's initial value), how two
partial results combine in numpy and as an arith op, so interpreters, lowerings and the
CUDA emitter agree by construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue


@dataclass(frozen=True)
class CombineKind:
    name: str
    identity: float
    numpy_reduce: Callable[..., np.ndarray]
    numpy_combine: Callable[[np.ndarray, np.ndarray], np.ndarray]
    float_op: type[Operation]
    int_op: type[Operation]
    cuda_float: str  # a C expression template over {a} and {b}


COMBINE_KINDS: dict[str, CombineKind] = {
    "add": CombineKind("add", 0.0, np.sum, np.add, arith.AddfOp, arith.AddiOp, "{a} + {b}"),
    "mul": CombineKind("mul", 1.0, np.prod, np.multiply, arith.MulfOp, arith.MuliOp, "{a} * {b}"),
    "max": CombineKind(
        "max", -math.inf, np.max, np.maximum, arith.MaximumfOp, arith.MaxSIOp, "maximumf({a}, {b})"
    ),
    "min": CombineKind(
        "min", math.inf, np.min, np.minimum, arith.MinimumfOp, arith.MinSIOp, "minimumf({a}, {b})"
    ),
}


def combine_kind(name: str) -> CombineKind:
    """The kind called ``name``; a ValueError lists the known ones."""
    try:
        return COMBINE_KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown reduction kind '{name}' (known: {', '.join(COMBINE_KINDS)})"
        ) from None


def identity_attr(kind: str, type: Attribute) -> Attribute:
    """The accumulator's starting value as a typed attribute (for arith.constant)."""
    value = combine_kind(kind).identity
    if isinstance(type, AnyFloat):
        return FloatAttr(value, type)
    assert isinstance(type, IntegerType)
    if math.isinf(value):
        width = type.width.data
        value = -(2 ** (width - 1)) if value < 0 else 2 ** (width - 1) - 1
    return IntegerAttr(int(value), type)


def combine_op(kind: str, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """The arith op that merges two partial results of ``kind``."""
    k = combine_kind(kind)
    op_type = k.float_op if isinstance(lhs.type, AnyFloat) else k.int_op
    return op_type(lhs, rhs)
