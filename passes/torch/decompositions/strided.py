"""as_strided, as_strided_copy, as_strided_scatter: views and writes described by strides.

`as_strided(x, size, stride, offset)` reads x's *storage*: result[i] is storage element
`offset + sum_k i_k * stride_k`. The tensor level has values, not storage, so this is only
a view when the storage of x is x itself, row-major: then it is one index_map of the
flattened x (`x.reshape(-1)` read at that affine position). That holds for a program
input (the compiled function takes contiguous tensors), a constant, and what is computed
from contiguous tensors without a view in between: a map of contiguous operands, or of
such operands broadcast in order (PyTorch's elementwise kernels lay the output out as
the operands), a reduce, a reshape. A tensor reached through a transpose, a slice, a
broadcast or any other view has storage the tensor level cannot see (a slice's base, a
transposed layout), so as_strided of one is refused rather than guessed. (A memory
format asked of `to`/`clone` is not recorded by the frontend: such a tensor is taken as
row-major.)

`as_strided_scatter(x, src, ...)` writes src into those storage positions of a copy of
x: a data-independent write, but a many-to-one one when strides overlap, so it is the
scatter family's dense form (`scatter.dense_write`) with the hit test computed from
positions alone, the last write winning in the order PyTorch's copy visits them (the
largest stride outermost; overlapping writes are unspecified in PyTorch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap

from deplodock.dialects.tensor import ConstantOp, IndexMapOp, IotaOp, MapOp, ReduceOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    shape_of,
)
from deplodock.passes.torch.decompositions.gather import flatten
from deplodock.passes.torch.decompositions.scatter import dense_write, positions
from deplodock.passes.torch.decompositions.view import reshape_map


def contiguous(value: SSAValue) -> bool:
    """Whether `value`'s storage is itself in row-major order (see the module docstring)."""
    if isinstance(value, BlockArgument):
        return True
    owner = value.owner
    if isinstance(owner, ConstantOp | IotaOp):
        return True
    if isinstance(owner, IndexMapOp):  # only a reshape keeps the row-major order
        source, shape = shape_of(owner.source), shape_of(value)
        if math.prod(source) != math.prod(shape):
            return False
        return owner.map.data == reshape_map(source, shape) and contiguous(owner.source)
    if isinstance(owner, MapOp):
        return all(contiguous(v) or _broadcast_of_contiguous(v) for v in owner.inputs)
    if isinstance(owner, ReduceOp):
        return contiguous(owner.input)
    return False


def _broadcast_of_contiguous(value: SSAValue) -> bool:
    """Whether `value` is a contiguous tensor broadcast in order (new or size-1 axes, no
    transpose): PyTorch's elementwise kernels lay their output out by the operands'
    other axes, so such an operand leaves a contiguous output contiguous."""
    owner = value.owner
    if not isinstance(owner, IndexMapOp) or not contiguous(owner.source):
        return False
    source, shape = shape_of(owner.source), shape_of(value)
    last = -1
    for expr, n in zip(owner.map.data.results, source, strict=True):
        if isinstance(expr, AffineConstantExpr) and expr.value == 0 and n == 1:
            continue
        if not isinstance(expr, AffineDimExpr) or expr.position <= last:
            return False
        if shape[expr.position] != n:
            return False
        last = expr.position
    return True


def _strided(op: AtenOp, x: SSAValue) -> tuple[list[int], list[int], int]:
    """size, stride and storage offset, checked to stay inside x's storage."""
    if not contiguous(x):
        raise Unsupported(
            "as_strided of a view or of a tensor whose memory layout is not known at the "
            "tensor level (only contiguous tensors' storage can be read by strides)"
        )
    size = [int(n) for n in op.arg("size")]
    stride = [int(s) for s in op.arg("stride")]
    offset = int(op.arg("storage_offset", 0) or 0)
    if len(size) != len(stride) or any(s < 0 for s in stride) or offset < 0:
        raise Unsupported(f"as_strided with size {size}, stride {stride}, offset {offset}")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if last >= math.prod(shape_of(x)):
            raise Unsupported(
                f"as_strided reaches storage element {last} of a tensor of {math.prod(shape_of(x))}"
            )
    return size, stride, offset


def _address(dims: Sequence[AffineExpr], stride: Sequence[int], offset: int) -> AffineExpr:
    address: AffineExpr = AffineExpr.constant(offset)
    for d, s in zip(dims, stride, strict=True):
        if s:
            address = address + d * s
    return address


class AsStrided(Decomposition):
    targets = ("as_strided.default", "as_strided_copy.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        size, stride, offset = _strided(op, x)
        shape = emit.shape
        n = math.prod(shape_of(x))
        if 0 in shape or n == 0:
            return emit.index_map(
                _one_axis(emit, x),
                AffineMap(len(shape), 0, (AffineExpr.constant(0),)),
                shape,
                emit.name,
            )
        dims = [AffineExpr.dimension(a) for a in range(len(shape))]
        address = _address(dims, stride, offset)
        return emit.index_map(
            _one_axis(emit, x), AffineMap(len(shape), 0, (address,)), shape, emit.name
        )


def _one_axis(emit: Emitter, x: SSAValue) -> SSAValue:
    if not shape_of(x):
        return emit.index_map(x, AffineMap(1, 0, ()), (1,))
    return flatten(emit, x)


class AsStridedScatter(Decomposition):
    targets = ("as_strided_scatter.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, src = emit.tensor("self"), emit.tensor("src")
        size, stride, offset = _strided(op, x)
        shape = shape_of(x)
        n = math.prod(shape)
        if 0 in size or n == 0:
            return emit.convert(x, emit.element)
        flat = _one_axis(emit, x)
        space = (n, *size)
        pos = positions(emit, space, range(len(space)))

        def hit(b: Body, p: SSAValue, *i: SSAValue) -> SSAValue:
            address = b.const(offset, i64)
            for iv, s in zip(i, stride, strict=True):
                if s:
                    address = b.binary("add", address, b.binary("mul", iv, b.const(s, i64)))
            return b.emit(arith.CmpiOp(address, p, "eq"))

        hits = emit.map(pos, i1, hit, name="hits", shape=space)
        dims = [AffineExpr.dimension(a) for a in range(len(space))]
        values = emit.index_map(src, AffineMap(len(space), 0, tuple(dims[1:])), space)
        # Overlapping positions: the last write wins in the order PyTorch's copy walks
        # them, the largest stride outermost.
        order = sorted(range(1, len(space)), key=lambda a: -stride[a - 1])
        out = dense_write(emit, flat, space, hits, values, "set", order=order)
        return emit.index_map(out, reshape_map(shape_of(out), shape), shape)
