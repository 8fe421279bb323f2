"""cat along one axis, without an op of its own: a select on the position.

For inputs t_0 .. t_{k-1} starting at offsets o_0 = 0 < o_1 < .. along axis d,

    v_j = index_map t_j   axis d read at (i_d - o_j) mod n_j     always in bounds
    pos = ten.iota dim d
    out = ten.map(v_0, .., v_{k-1}, pos): pos < o_1 ? v_0 : pos < o_2 ? v_1 : .. v_{k-1}

Each view is in bounds everywhere (an element it reads for a position outside its part
is computed and selected away), so after fusion a concat is a select between loads at
shifted indices: RoPE's rotate_half, `cat(-x[h:], x[:h])`, becomes one expression per
element, with no buffer for the concat. The offset is written `(i_d + c) mod n_j` with
c = -o_j mod n_j so the index never goes negative (the CUDA emitter's `%` truncates).
Inputs of size 0 along the axis (torch's legacy empty 1-D tensors included) add
nothing (a result with no elements is an empty constant), and an input read through the
same view as the one before it needs no select (`cat((freqs, freqs))` in the rotary
embedding is a repeat: one index_map, `i mod n`).
`concat` is shared with diff.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.tensor import ConstantOp, IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    is_float,
    shape_of,
)


def concat(
    emit: Emitter,
    inputs: Sequence[SSAValue],
    dim: int,
    shape: Sequence[int],
    element: Attribute,
    name: str | None = None,
) -> SSAValue:
    """`inputs` concatenated along `dim` into `shape`, with elements of type `element`."""
    if 0 in shape:  # no elements (every part empty): nothing to read
        type_ = TensorType(element, shape)
        zero = 0.0 if is_float(element) else 0
        return emit.add(ConstantOp(DenseIntOrFPElementsAttr.from_list(type_, [zero])), name)
    parts = [v for v in inputs if shape_of(v)[dim : dim + 1] not in ((0,), ())]
    if any(len(shape_of(v)) != len(shape) for v in parts):
        raise Unsupported(f"cat of ranks {[len(shape_of(v)) for v in parts]} into {len(shape)}")
    offsets = [0]
    for v in parts:
        offsets.append(offsets[-1] + shape_of(v)[dim])
    if offsets[-1] != shape[dim]:
        raise Unsupported(f"cat parts of {offsets[-1]} elements along {dim}, not {shape[dim]}")
    if len(parts) == 1:
        return emit.convert(parts[0], element)
    dims = [AffineExpr.dimension(i) for i in range(len(shape))]
    reads: list[tuple[SSAValue, AffineMap]] = []
    bounds: list[int] = []  # where each read after the first starts
    for v, start in zip(parts, offsets, strict=False):
        n = shape_of(v)[dim]
        exprs = list(dims)
        exprs[dim] = (dims[dim] + (-start) % n) % n if n > 1 else AffineExpr.constant(0)
        read = (v, AffineMap(len(shape), 0, tuple(exprs)))
        if reads and reads[-1][0] is v and reads[-1][1] == read[1]:
            continue  # the same view again (cat((x, x)) is a repeat): no select needed
        if reads:
            bounds.append(start)
        reads.append(read)
    views = [emit.index_map(v, m, shape) for v, m in reads]
    if len(views) == 1:
        return emit.convert(views[0], element)
    pos = emit.add(IotaOp(dim, TensorType(i64, shape)), "pos")

    def body(b: Body, *args: SSAValue) -> SSAValue:
        *values, p = args
        result = b.cast(values[-1], element)
        for j in range(len(values) - 2, -1, -1):
            before = b.emit(arith.CmpiOp(p, b.const(bounds[j], i64), "slt"))
            result = b.emit(arith.SelectOp(before, b.cast(values[j], element), result))
        return result

    return emit.map([*views, pos], element, body, name=name)


class Cat(Decomposition):
    targets = ("cat.default", "concat.default", "concatenate.default")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        shape = emit.shape
        if not shape:
            raise Unsupported("cat into a 0-d tensor")
        dim = int(op.arg("dim", 0)) % len(shape)
        return concat(emit, op.tensor_list_arg("tensors"), dim, shape, emit.element)
