"""What every torch → ten decomposition shares.

A decomposition is a `Decomposition` pattern: it names the ATen overloads it handles and
builds their meaning with an `Emitter`, which collects ten ops in order and spells out
what PyTorch leaves implicit:

- broadcasting (numpy rules) is a `ten.index_map` that pins size-1 axes to 0 and drops
  missing leading ones (`broadcast`);
- `keepdim=True` re-inserts the axes `ten.reduce` drops with another index_map (`expand`),
  and so does putting a reduced value back next to its input (softmax, rms_norm);
- a Python number is an `arith.constant` inside the map body, so it costs no tensor;
- type promotion is a cast in the body to the result's element type, which torch.export
  already computed;
- 16-bit floats are accumulated in f32 (`accumulator_type`), as PyTorch's own kernels do.

A decomposition that meets arguments it cannot express raises `Unsupported`: the op is
left alone and the pass reports it, with the reason, next to every other unsupported op.
"""

from __future__ import annotations

import math as pymath
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnknownLoc,
    f32,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from deplodock.dialects.tensor import IndexMapOp, MapOp, ReduceOp, YieldOp
from deplodock.dialects.torch import AtenOp, merge_locations

Scalar = int | float | bool


class Unsupported(Exception):
    """This call's arguments are beyond the decomposition; the message says which."""


# ------------------------------------------------------------------ types and shapes


def shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def element_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def is_float(type_: Attribute) -> bool:
    return isinstance(type_, AnyFloat)


def accumulator_type(element: Attribute) -> Attribute:
    """Where sums and products of `element` are computed: f32 for 16-bit floats."""
    return f32 if is_float(element) and element.bitwidth < 32 else element


def machine_eps(element: Attribute) -> float:
    """torch.finfo(dtype).eps, the default eps of rms_norm."""
    if isinstance(element, BFloat16Type):
        return 2.0**-7
    return 2.0 ** -{16: 10, 32: 23, 64: 52}[element.bitwidth]


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy's broadcast of `shapes`; Unsupported when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for i, size in enumerate(shape, start=rank - len(shape)):
            if size != 1 and out[i] not in (1, size):
                raise Unsupported(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
            out[i] = size if size != 1 else out[i]
    return tuple(out)


def axis(dim: int, rank: int) -> int:
    """``dim`` as a non-negative axis of a tensor of ``rank`` (a 0-d tensor has axis 0 or
    -1, as torch takes it); out of range is ``Unsupported``."""
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise Unsupported(f"dimension {dim} is out of range for rank {rank}")
    return dim % max(rank, 1)


def normalize_dims(dims: object, rank: int) -> list[int]:
    """Sorted non-negative axes; None or [] means every axis, as torch's reductions say."""
    if dims is None or dims == []:
        return list(range(rank))
    dims = dims if isinstance(dims, list) else [dims]
    return sorted({d % rank for d in dims}) if rank else []


# ---------------------------------------------------------------------- map bodies

_FLOAT_BINARY: dict[str, type[Operation]] = {
    "add": arith.AddfOp,
    "sub": arith.SubfOp,
    "mul": arith.MulfOp,
    "div": arith.DivfOp,
    "max": arith.MaximumfOp,
    "min": arith.MinimumfOp,
    "pow": math.PowFOp,
}
_BOOL_BINARY: dict[str, type[Operation]] = {
    "add": arith.OrIOp,
    "mul": arith.AndIOp,
    "max": arith.OrIOp,
    "min": arith.AndIOp,
}
_INT_BINARY: dict[str, type[Operation]] = {
    "add": arith.AddiOp,
    "sub": arith.SubiOp,
    "mul": arith.MuliOp,
    "max": arith.MaxSIOp,
    "min": arith.MinSIOp,
}


def is_half(type_: Attribute) -> bool:
    """Whether `type_` is a 16-bit float (f16, bf16): stored in 16 bits, computed in f32."""
    return is_float(type_) and type_.bitwidth == 16


# Ops on 16-bit floats kept as they are: conversions, constants, and selects (which only
# move a value). Everything else computes in f32, as PyTorch's kernels do (their "opmath"
# type), and is rounded back to 16 bits after each op, as eager PyTorch rounds each op.
_HALF_AS_IS = (
    arith.ExtFOp,
    arith.TruncFOp,
    arith.ConstantOp,
    arith.SelectOp,
    arith.FPToSIOp,
    arith.SIToFPOp,
    arith.BitcastOp,
)


class Body:
    """The scalar ops of one ten.map body, built in order.

    Arithmetic on 16-bit floats is computed in f32: `emit` rebuilds such an op on its
    operands widened to f32 (`arith.extf`) and rounds its float result back
    (`arith.truncf`), so a body never holds f16/bf16 arithmetic, which CUDA's half types
    do not all have (no `fmaxf` of `__nv_bfloat16`, an ambiguous `__half + 1.0f`)."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def emit(self, op: Operation) -> SSAValue:
        halves = [v for v in (*op.operands, *op.results) if is_half(v.type)]
        if halves and not isinstance(op, _HALF_AS_IS):
            return self._in_f32(op)
        self.ops.append(op)
        return op.results[0]

    def _in_f32(self, op: Operation) -> SSAValue:
        operands = [self.emit(arith.ExtFOp(v, f32)) if is_half(v.type) else v for v in op.operands]
        wide = type(op).create(
            operands=operands,
            result_types=[f32 if is_half(r.type) else r.type for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        op.drop_all_references()  # the 16-bit op is never inserted: drop its operand uses
        self.ops.append(wide)
        result, wanted = wide.results[0], op.results[0].type
        return self.emit(arith.TruncFOp(result, wanted)) if is_half(wanted) else result

    def const(self, value: Scalar, type_: Attribute) -> SSAValue:
        if is_float(type_):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), type_)))
        return self.emit(arith.ConstantOp(IntegerAttr(int(value), type_)))

    def binary(self, kind: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        if is_float(lhs.type):
            table = _FLOAT_BINARY
        else:  # on bools, torch's + is or and * is and (i1 addi would be xor)
            table = _BOOL_BINARY if lhs.type == i1 else _INT_BINARY
        if kind not in table:
            raise Unsupported(f"{kind} of {lhs.type} values")
        return self.emit(table[kind](lhs, rhs))

    def unary(self, op_type: type[Operation], x: SSAValue) -> SSAValue:
        """A math op on a float (exp, rsqrt, ...)."""
        if not is_float(x.type):
            raise Unsupported(f"{op_type.name} of {x.type} values")
        return self.emit(op_type(x))

    def cast(self, x: SSAValue, to: Attribute) -> SSAValue:
        """`x` converted to `to` as torch's type promotion does (no-op when equal)."""
        src = x.type
        if src == to:
            return x
        if src == i1 and to != i1:
            return self.emit(arith.SelectOp(x, self.const(1, to), self.const(0, to)))
        if is_float(src) and is_float(to):
            if src.bitwidth == to.bitwidth:  # bf16 <-> f16: through f32
                return self.cast(self.cast(x, f32), to)
            op = arith.ExtFOp if src.bitwidth < to.bitwidth else arith.TruncFOp
            return self.emit(op(x, to))
        if isinstance(src, IntegerType) and is_float(to):
            return self.emit(arith.SIToFPOp(x, to))
        if is_float(src) and isinstance(to, IntegerType) and to != i1:
            return self.emit(arith.FPToSIOp(x, to))
        if isinstance(src, IntegerType) and isinstance(to, IntegerType) and to != i1:
            wider = src.width.data < to.width.data
            return self.emit((arith.ExtSIOp if wider else arith.TruncIOp)(x, to))
        raise Unsupported(f"conversion from {src} to {to}")


# ------------------------------------------------------------------------- emitter


class Emitter:
    """Collects, in order, the ten ops that replace one torch.aten op."""

    def __init__(self, op: AtenOp):
        self.op = op
        self.ops: list[Operation] = []
        self.name = op.results[0].name_hint or op.overload.split(".")[0].strip("_")
        """The name the result will print with (`%rms_norm`), a stem for the others."""

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the aten op's (first) result."""
        return shape_of(self.op.results[0])

    @property
    def element(self) -> Attribute:
        """The element type of the aten op's (first) result."""
        return element_of(self.op.results[0])

    def tensor(self, name: str) -> SSAValue:
        """The tensor passed for schema argument `name`."""
        value = self.op.tensor_arg(name)
        if value is None:
            raise Unsupported(f"argument '{name}' is not a tensor")
        return value

    def tensor_or_scalar(self, name: str) -> SSAValue | Scalar:
        """The tensor or the Python number passed for `name` (`x + 1` passes 1)."""
        value = self.op.tensor_arg(name)
        if value is not None:
            return value
        scalar = self.op.arg(name)
        if not isinstance(scalar, int | float):
            raise Unsupported(f"argument '{name}' is {scalar!r}, not a tensor or number")
        return scalar

    def map_pair(
        self,
        lhs: SSAValue | Scalar,
        rhs: SSAValue | Scalar,
        compute: Attribute,
        element: Attribute,
        function: Callable[[Body, SSAValue, SSAValue], SSAValue],
    ) -> SSAValue:
        """``function(b, x, y)`` elementwise into a tensor of ``element`` and the op's
        shape, over two operands each a tensor (its element cast to ``compute``) or a
        Python number (a ``compute`` constant): binary arithmetic, comparisons, shifts."""
        tensors = [v for v in (lhs, rhs) if isinstance(v, SSAValue)]

        def body(b: Body, *args: SSAValue) -> SSAValue:
            scalars = iter(args)
            x, y = (
                b.cast(next(scalars), compute) if isinstance(v, SSAValue) else b.const(v, compute)
                for v in (lhs, rhs)
            )
            return function(b, x, y)

        return self.map(tensors, element, body, shape=self.shape)

    def add(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        if name is not None:
            op.results[0].name_hint = name
        return op.results[0]

    # ------------------------------------------------------------------- ops

    def map(
        self,
        inputs: Sequence[SSAValue],
        element: Attribute,
        body: Callable[..., SSAValue],
        name: str | None = None,
        shape: Sequence[int] | None = None,
    ) -> SSAValue:
        """`ten.map` over `inputs` broadcast to `shape` (default: their common shape);
        `body(b, *scalars)` builds the element's value with the `Body` b."""
        if shape is None:
            shape = broadcast_shape(*(shape_of(v) for v in inputs))
        inputs = [self.broadcast(v, shape) for v in inputs]
        block = Block(arg_types=[element_of(v) for v in inputs])
        b = Body()
        result = b.cast(body(b, *block.args), element)
        block.add_ops([*b.ops, YieldOp(result)])
        return self.add(MapOp(inputs, TensorType(element, shape), Region(block)), name)

    def convert(self, x: SSAValue, element: Attribute) -> SSAValue:
        """`x` with elements of type `element` (itself when they already are)."""
        if element_of(x) == element:
            return x
        name = f"{x.name_hint}_{element}" if x.name_hint else None
        return self.map([x], element, lambda b, v: b.cast(v, element), name)

    def reduce(
        self, kind: str, x: SSAValue, dims: Sequence[int], name: str | None = None
    ) -> SSAValue:
        """`ten.reduce` of `x`; a 16-bit float one combines in f32 and is rounded once."""
        element = element_of(x)
        if not is_half(element):
            return self.add(ReduceOp(kind, x, dims), name)
        wide = self.add(ReduceOp(kind, self.convert(x, f32), dims), name and f"{name}_f32")
        result = self.convert(wide, element)
        result.name_hint = name or result.name_hint
        return result

    def index_map(
        self, x: SSAValue, map: AffineMap, shape: Sequence[int], name: str | None = None
    ) -> SSAValue:
        """`ten.index_map` of `x`; a view of a view is folded into one map."""
        producer = x.owner
        location = UnknownLoc()
        if isinstance(producer, IndexMapOp):
            # The folded view's torch op is computed here too (its own op may go dead).
            map, x, location = producer.map.data.compose(map), producer.source, producer.location
        if name is None and x.name_hint is not None:
            name = f"{x.name_hint}_b"
        view = IndexMapOp(x, map, TensorType(element_of(x), shape))
        view.location = location
        return self.add(view, name)

    def broadcast(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`x` broadcast to `shape` by numpy's rules (itself when already that shape)."""
        src = shape_of(x)
        if src == tuple(shape):
            return x
        if len(src) > len(shape):
            raise Unsupported(f"cannot broadcast {src} to {tuple(shape)}")
        exprs = []
        for j, size in enumerate(src, start=len(shape) - len(src)):
            if size == shape[j]:
                exprs.append(AffineExpr.dimension(j))
            elif size == 1:
                exprs.append(AffineExpr.constant(0))
            else:
                raise Unsupported(f"cannot broadcast {src} to {tuple(shape)}")
        return self.index_map(x, AffineMap(len(shape), 0, tuple(exprs)), shape)

    def expand(self, x: SSAValue, shape: Sequence[int], dims: Sequence[int]) -> SSAValue:
        """Re-insert the axes `dims` of `shape` that a reduce dropped from `x`: size 1
        for keepdim, full size to line a reduced value up with its input again."""
        kept = tuple(AffineExpr.dimension(i) for i in range(len(shape)) if i not in dims)
        return self.index_map(x, AffineMap(len(shape), 0, kept), shape)


def count(shape: Sequence[int], dims: Sequence[int]) -> int:
    """How many elements a reduce over `dims` of `shape` combines."""
    return pymath.prod(shape[d] for d in dims)


# -------------------------------------------------------------------- provenance


def record_provenance(
    op: AtenOp, emitted: Sequence[Operation], result: SSAValue, replaced: SSAValue | None = None
) -> None:
    """Every op `op` decomposed into, nested ones included, names `op` in its location
    (see `deplodock.dialects.torch`), after any torch op it already names (a folded view).

    A decomposition that emits nothing and returns an existing value (`to` its own dtype,
    `contiguous`) is computed by whatever reads that value: each torch op using the result
    (`replaced`, the op's first when not given) names `op` too, so its own decomposition
    carries it on.
    """
    location = op.location
    for new in emitted:
        for inner in new.walk():
            inner.location = merge_locations(inner.location, location)
    if result.owner not in emitted:
        for use in list((replaced or op.results[0]).uses):
            if isinstance(use.operation, AtenOp):
                use.operation.location = merge_locations(location, use.operation.location)


# ---------------------------------------------------------------------- patterns


class Decomposition(RewritePattern, ABC):
    """Rewrites each torch.aten op whose target is in `targets` into ten ops.

    `reasons` is shared by the pass's patterns: why an op was left alone, for the report.
    """

    targets: ClassVar[tuple[str, ...]]

    def __init__(self, reasons: dict[AtenOp, str] | None = None):
        self.reasons = {} if reasons is None else reasons

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AtenOp, rewriter: PatternRewriter) -> None:
        if op.overload not in self.targets:
            return
        emit = Emitter(op)
        try:
            value = self.decompose(op, emit)
        except Unsupported as e:
            self.reasons[op] = str(e)
            for new in reversed(emit.ops):  # built before the refusal: drop their uses
                new.erase(safe_erase=False)
            return
        results = [value] if isinstance(value, SSAValue) else list(value)
        if len(results) != len(op.results):
            raise AssertionError(
                f"decomposing {op.overload} gave {len(results)} results, expected {len(op.results)}"
            )
        for got, want in zip(results, op.results, strict=True):
            if got.type != want.type:
                raise AssertionError(
                    f"decomposing {op.overload} gave {got.type}, expected {want.type}"
                )
        # The results print as the torch op's did; the rest must not take those names.
        names = {r.name_hint for r in op.results} | {emit.name}
        for new in emit.ops:
            if new.results[0].name_hint in (None, *names):
                new.results[0].name_hint = f"{emit.name}_t"
        for got, want in zip(results, op.results, strict=True):
            if got.owner in emit.ops:
                got.name_hint = want.name_hint or emit.name
        for got, want in zip(results, op.results, strict=True):
            record_provenance(op, emit.ops, got, want)
        rewriter.replace(op, emit.ops, results)

    @abstractmethod
    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue | Sequence[SSAValue]:
        """The value of `op`'s result (a sequence of them, one per result, for ops with
        several: `var_mean`, `max.dim`), built with `emit` (raise Unsupported to decline)."""
