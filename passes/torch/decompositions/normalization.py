"""layer_norm, group_norm and batch_norm (their native forms, with their three results:
the output and the mean and 1/std they normalized with).

    mean = sum(x) / n, m2 = sum((x - mean)^2)       `variance.moments`, over the group
    rstd = rsqrt(m2 / n + eps)                      the biased variance, as torch's
    y    = (x - mean) * rstd * weight + bias        one ten.map; mean and rstd put back
                                                    by index_maps

The group each statistic is taken over:

- native_layer_norm: the trailing `normalized_shape` axes (mean and rstd keep them as
  size 1). Over the last axis this fuses into one kernel, as rms_norm does: two reduce
  loops and the output loop in one loop nest per row.
- native_group_norm: `group` consecutive blocks of the channels (axis 1) with all the
  spatial axes; the input is read through a (N, group, C/group, *spatial) index_map, the
  statistics are (N, group), and each channel c finds its group as c floordiv (C/group).
- _native_batch_norm_legit.no_stats (training, no running statistics: F.batch_norm's
  and F.instance_norm's batch statistics): every axis but the channels.
- _native_batch_norm_legit_no_training (inference): no statistics are computed; the
  running mean and variance given are used, and the two other results are empty, as
  torch's.

weight and bias are optional (absent: 1 and 0); 16-bit inputs are computed in f32 and
rounded once.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import math
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.tensor import ConstantOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    count,
    element_of,
    is_float,
    shape_of,
)
from deplodock.passes.torch.decompositions.variance import moments


def _stats(
    emit: Emitter, x: SSAValue, dims: Sequence[int], eps: float, acc: Attribute
) -> tuple[SSAValue, SSAValue]:
    """mean and rstd of `x` over `dims` (dropped), in `acc`."""
    mean, m2 = moments(emit, x, dims, acc)
    n = count(shape_of(x), dims)

    def rstd_body(b: Body, s: SSAValue) -> SSAValue:
        var = b.binary("div", s, b.const(n, acc))
        return b.unary(math.RsqrtOp, b.binary("add", var, b.const(eps, acc)))

    return mean, emit.map([m2], acc, rstd_body, name="rstd")


def _channels(emit: Emitter, v: SSAValue | None, shape: Sequence[int]) -> SSAValue | None:
    """A per-channel (axis 1) tensor read at every element of `shape`."""
    if v is None:
        return None
    return emit.index_map(v, AffineMap(len(shape), 0, (AffineExpr.dimension(1),)), shape)


def _normalize(
    emit: Emitter,
    x: SSAValue,
    mean: SSAValue,
    scale: SSAValue,
    weight: SSAValue | None,
    bias: SSAValue | None,
    acc: Attribute,
) -> SSAValue:
    """(x - mean) * scale * weight + bias, every operand already of x's shape."""
    inputs = [x, mean, scale] + [v for v in (weight, bias) if v is not None]

    def body(b: Body, v: SSAValue, m: SSAValue, r: SSAValue, *wb: SSAValue) -> SSAValue:
        rest = iter(wb)
        y = b.binary("mul", b.binary("sub", b.cast(v, acc), b.cast(m, acc)), b.cast(r, acc))
        if weight is not None:
            y = b.binary("mul", y, b.cast(next(rest), acc))
        if bias is not None:
            y = b.binary("add", y, b.cast(next(rest), acc))
        return y

    return emit.map(inputs, emit.element, body, shape=shape_of(x))


def _result(emit: Emitter, value: SSAValue, index: int, dims: Sequence[int]) -> SSAValue:
    """`value` as the op's result `index`: its element type, size-1 axes re-inserted."""
    want = emit.op.results[index]
    value = emit.convert(value, element_of(want))
    if shape_of(value) != shape_of(want):
        value.name_hint = f"{want.name_hint}_r" if want.name_hint else value.name_hint
        value = emit.expand(value, shape_of(want), dims)
    return value


def _float_input(emit: Emitter, x: SSAValue) -> Attribute:
    if not is_float(emit.element):
        raise Unsupported(f"normalization of {emit.element} values")
    if len(shape_of(x)) < 2 and emit.op.overload != "native_layer_norm.default":
        raise Unsupported(f"a {len(shape_of(x))}-d input (batch and group norm need N and C)")
    return accumulator_type(emit.element)


class LayerNorm(Decomposition):
    targets = ("native_layer_norm.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> tuple[SSAValue, ...]:
        x = emit.tensor("input")
        acc = _float_input(emit, x)
        shape = shape_of(x)
        normalized = list(op.arg("normalized_shape", []))
        if not normalized or tuple(shape[-len(normalized) :]) != tuple(normalized):
            raise Unsupported(f"normalized_shape {normalized} is not the end of {list(shape)}")
        dims = list(range(len(shape) - len(normalized), len(shape)))
        mean, rstd = _stats(emit, x, dims, float(op.arg("eps")), acc)
        out = _normalize(
            emit,
            x,
            emit.expand(mean, shape, dims),
            emit.expand(rstd, shape, dims),
            op.tensor_arg("weight"),
            op.tensor_arg("bias"),
            acc,
        )
        return out, _result(emit, mean, 1, dims), _result(emit, rstd, 2, dims)


class GroupNorm(Decomposition):
    targets = ("native_group_norm.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> tuple[SSAValue, ...]:
        x = emit.tensor("input")
        acc = _float_input(emit, x)
        shape = shape_of(x)
        groups, channels = int(op.arg("group")), shape[1]
        if groups <= 0 or channels % groups:
            raise Unsupported(f"{channels} channels in {groups} groups")
        per = channels // groups
        # (n, g, c', *s) -> (n, g * per + c', *s): each group's channels as one axis.
        d = [AffineExpr.dimension(a) for a in range(len(shape) + 1)]
        grouped = (shape[0], groups, per, *shape[2:])
        view = emit.index_map(
            x, AffineMap(len(grouped), 0, (d[0], d[1] * per + d[2], *d[3:])), grouped
        )
        dims = list(range(2, len(grouped)))
        mean, rstd = _stats(emit, view, dims, float(op.arg("eps")), acc)
        # (n, c, *s) -> (n, c floordiv per): the statistics of each channel's group.
        to_group = AffineMap(len(shape), 0, (d[0], d[1] // per))
        out = _normalize(
            emit,
            x,
            emit.index_map(mean, to_group, shape),
            emit.index_map(rstd, to_group, shape),
            _channels(emit, op.tensor_arg("weight"), shape),
            _channels(emit, op.tensor_arg("bias"), shape),
            acc,
        )
        return out, _result(emit, mean, 1, []), _result(emit, rstd, 2, [])


class BatchNorm(Decomposition):
    targets = ("_native_batch_norm_legit_no_training.default", "_native_batch_norm_legit.no_stats")

    def decompose(self, op: AtenOp, emit: Emitter) -> tuple[SSAValue, ...]:
        x = emit.tensor("input")
        acc = _float_input(emit, x)
        shape = shape_of(x)
        eps = float(op.arg("eps"))
        weight = _channels(emit, op.tensor_arg("weight"), shape)
        bias = _channels(emit, op.tensor_arg("bias"), shape)
        if op.overload == "_native_batch_norm_legit.no_stats":
            if not op.arg("training", False):
                raise Unsupported("batch norm without running statistics outside training")
            dims = [a for a in range(len(shape)) if a != 1]
            mean, rstd = _stats(emit, x, dims, eps, acc)
            mean_b, rstd_b = _channels(emit, mean, shape), _channels(emit, rstd, shape)
            out = _normalize(emit, x, mean_b, rstd_b, weight, bias, acc)
            return out, _result(emit, mean, 1, []), _result(emit, rstd, 2, [])

        def invstd(b: Body, v: SSAValue) -> SSAValue:
            return b.unary(math.RsqrtOp, b.binary("add", b.cast(v, acc), b.const(eps, acc)))

        rstd = emit.map([emit.tensor("running_var")], acc, invstd, name="rstd")
        mean = _channels(emit, emit.tensor("running_mean"), shape)
        out = _normalize(emit, x, mean, _channels(emit, rstd, shape), weight, bias, acc)
        return out, self._empty(emit, 1), self._empty(emit, 2)

    @staticmethod
    def _empty(emit: Emitter, index: int) -> SSAValue:
        """Result `index` of the op: torch's no-training batch norm saves no statistics."""
        type_ = emit.op.results[index].type
        assert isinstance(type_, TensorType)
        if 0 not in type_.get_shape():
            raise Unsupported(f"inference batch norm with a non-empty result {index}")
        return emit.add(ConstantOp(DenseIntOrFPElementsAttr.from_list(type_, [])))
