"""constant_pad_nd: the source at shifted indices where it lies, `value` around it.

`pad` lists (before, after) pairs from the last axis backwards. Along an axis of extent n
padded by (lo, hi), result position i reads source position i - lo. A negative pad crops:
when every position reads inside the source (lo <= 0 and hi <= 0) the axis is a shifted
view and nothing is selected. Otherwise

    v   = index_map x      axis read at (i + (-lo mod n)) mod n      always in bounds
    out = ten.map(v, iota_d..): lo <= pos_d < lo + n for every such d ? v : value

as `cat` does (an element read outside the source is computed and selected away), so
after fusion a pad is a select between a load and a constant, with no buffer of its own.
A source with no elements is all `value`.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    Signedness,
    TensorType,
    i1,
    i64,
)
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


def fill_value(value: object, element: object) -> int | float:
    """`value` as torch stores it in a tensor of `element`."""
    if not isinstance(value, int | float):
        raise Unsupported(f"pad value {value!r} is not a number")
    if element == i1:
        return int(bool(value))
    return float(value) if is_float(element) else int(value)


def constant(b: Body, value: int | float, element: Attribute) -> SSAValue:
    """`value` as a scalar of `element`; arith.constant takes signless integers only, so
    an unsigned one (uint8) is an i64 constant truncated to its type."""
    if isinstance(element, IntegerType) and element.signedness.data == Signedness.UNSIGNED:
        return b.emit(arith.TruncIOp(b.const(value, i64), element))
    return b.const(value, element)


class ConstantPad(Decomposition):
    targets = ("constant_pad_nd.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        src, dst = shape_of(x), emit.shape
        pad = [int(p) for p in op.arg("pad")]
        if len(pad) % 2 or len(pad) // 2 > len(src):
            raise Unsupported(f"pad of {len(pad)} sizes for a rank-{len(src)} tensor")
        value = fill_value(op.arg("value", 0), emit.element)
        if 0 in src or 0 in dst:  # nothing of the source is read
            type_ = TensorType(emit.element, dst)
            return emit.add(ConstantOp(DenseIntOrFPElementsAttr.from_list(type_, [value])))
        exprs = [AffineExpr.dimension(a) for a in range(len(dst))]
        bounds: list[tuple[int, int, int]] = []  # (axis, first, end) of the source's part
        for k in range(len(pad) // 2):
            d = len(src) - 1 - k
            lo, n = pad[2 * k], src[d]
            if lo <= 0 and dst[d] - lo <= n:  # a crop: every position reads the source
                exprs[d] = exprs[d] + (-lo) if lo else exprs[d]
                continue
            shift = (-lo) % n
            exprs[d] = ((exprs[d] + shift) % n) if n > 1 else AffineExpr.constant(0)
            bounds.append((d, lo, lo + n))
        view = emit.index_map(x, AffineMap(len(dst), 0, tuple(exprs)), dst)
        if not bounds:
            return view
        positions = [emit.add(IotaOp(d, TensorType(i64, dst)), "pos") for d, _, _ in bounds]

        def body(b: Body, v: SSAValue, *pos: SSAValue) -> SSAValue:
            inside = None
            for p, (_, first, end) in zip(pos, bounds, strict=True):
                after = b.emit(arith.CmpiOp(p, b.const(first, i64), "sge"))
                before = b.emit(arith.CmpiOp(p, b.const(end, i64), "slt"))
                both = b.emit(arith.AndIOp(after, before))
                inside = both if inside is None else b.emit(arith.AndIOp(inside, both))
            assert inside is not None
            return b.emit(arith.SelectOp(inside, v, constant(b, value, emit.element)))

        return emit.map([view, *positions], emit.element, body, name=emit.name)
