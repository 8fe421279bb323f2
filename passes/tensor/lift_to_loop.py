"""lift-to-loop: every tensor-level op becomes one ``loop.kernel``, the nest it needs alone.

Fusion is decided at the loop level (the ``fuse`` pass), on loop nests, so this pass does
no fusing and no scheduling: it writes down, for each ``ten`` op, the loop nest an engineer
would write for that op by itself. One kernel per op keeps every rewrite here local.

* ``ten.map`` → free loops over the result shape; one load per distinct operand at the
  identity index; the map body's scalar ops cloned inline; one store.
* ``ten.reduce`` → free loops over the kept axes; one reduce loop per reduced axis,
  nested in axis order (the innermost yields the loaded element, each outer one yields
  the inner loop's result); the store after the reduce loops.
* ``ten.index_map`` → free loops over the result shape; one load at the view's indices
  (the op's affine map composed onto the induction variables); one store.
* ``ten.gather`` → free loops over the result shape; a load of the index (at the ivs of
  the index axes), ``arith.index_cast`` to ``index``, and a load of the table with that
  value as the gathered axis's index operand: the one load whose index is data. Its range
  is unknown, so the in-bounds verifier leaves that axis alone.
* ``ten.constant``: a *splat* becomes a fill kernel (a store of an ``arith.constant``), so
  fusion folds it into each consumer as a scalar constant like any other producer. Any
  other literal stays a graph-level tensor: it is data (like a weight), an input of the
  kernels that read it. (arith.constant is signless: a uint8 one is an i64 constant and
  an ``arith.trunci``.)
* a tensor with no elements is a kernel with no inputs and an empty body, and a reduce
  over an axis of extent 0 a fill of the kind's identity, so no later level meets a loop
  of no iterations or a load from an empty buffer.

Axes of extent 1 get no loop; their index is the constant 0 (``%x_b[0, %a0, %a1]``), as in
the listings an engineer draws. Names keep listings readable: the kernel is
``k_<result name>`` (made unique in the module), induction variables are ``a0, a1, ..``
per kernel, a buffer is its tensor's name with ``_b`` (``ins(%x_b = %x ..)``), and a load
takes the name of the map-body argument it replaces (``in`` when that has none).

Provenance: each kernel gets ``covers = [..]``, the torch-level ops it computes: the names
of the torch ops the ten op's location names (decompose puts them there; see
``deplodock.dialects.torch``), usually one, in program order. Without such a location (a
hand-written tensor level) it is the ten op's own ``covers`` attribute, else its result
name. ``fuse`` merges the lists. The kernel and every op in it also take the ten op's
location, so after fusion each op of a fused kernel still says which torch op, module and
source line it computes (``deplo-opt --print-debuginfo``), and the ``covers`` names can be
resolved to their overload and line (``deplodock.kernel_stats``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnknownLoc,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from deplodock.dialects import tensor as ten
from deplodock.dialects.clone import COVERS
from deplodock.dialects.combine import ONLINE_MAX, ONLINE_SUM, identity_attr
from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, StoreOp, YieldOp
from deplodock.dialects.torch import origins
from deplodock.passes.tile.schedule.reduce import walk_column_lanes

# --- names ---------------------------------------------------------------------------------


@dataclass
class KernelNames:
    """Hands out ``k_<hint>`` kernel names, unique within one module."""

    taken: set[str] = field(default_factory=set)

    @staticmethod
    def of_module(module: ModuleOp) -> KernelNames:
        return KernelNames({op.sym_name.data for op in module.walk() if isinstance(op, KernelOp)})

    def fresh(self, hint: str) -> str:
        base = "k_" + re.sub(r"\W", "_", hint)
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name


def _hint(value: SSAValue, default: str) -> str:
    return value.name_hint or default


def covers_of(op: Operation, default: str) -> ArrayAttr:
    """The ``covers`` list of the kernel lifted from ``op`` (see the module docstring)."""
    names = [o.name for o in origins(op.location)]
    if names:
        return ArrayAttr([StringAttr(n) for n in names])
    given = op.attributes.get(COVERS)
    if isinstance(given, ArrayAttr):
        return given
    hint = op.results[0].name_hint if op.results else None
    return ArrayAttr([StringAttr(hint or default)])


def _finish(k: _Kernel, op: Operation, default: str) -> None:
    """Record what the kernel lifted from ``op`` computes: ``covers``, and ``op``'s
    location on the kernel and on every op in it that has none of its own."""
    k.op.attributes[COVERS] = covers_of(op, default)
    for inner in k.op.walk():
        if isinstance(inner.location, UnknownLoc):
            inner.location = op.location


# --- the kernel shell ----------------------------------------------------------------------


@dataclass
class _Kernel:
    """A kernel under construction: distinct tensor inputs, one output, buffers named."""

    op: KernelOp
    buffers: dict[SSAValue, SSAValue]  # graph-level tensor -> its buffer in the body
    out: SSAValue
    next_iv: int = 0

    @staticmethod
    def create(name: str, inputs: Sequence[SSAValue], result: SSAValue) -> _Kernel:
        distinct: list[SSAValue] = []
        for value in inputs:
            if not any(value is d for d in distinct):
                distinct.append(value)
        op = KernelOp(name, distinct, [result.type])
        op.results[0].name_hint = result.name_hint
        buffers = dict(zip(distinct, op.input_buffers, strict=True))
        for i, (tensor, buf) in enumerate(buffers.items()):
            buf.name_hint = _hint(tensor, f"in{i}") + "_b"
        out = op.output_buffers[0]
        out.name_hint = _hint(result, "out") + "_b"
        return _Kernel(op, buffers, out)

    @property
    def block(self) -> Block:
        return self.op.body.block

    def loop(
        self,
        parent: Block,
        extent: int,
        reduce: str | None = None,
        result_type: Attribute | None = None,
    ) -> ForOp:
        """Append a loop (free, or reduce of ``reduce`` kind) with the next iv name."""
        if reduce is None:
            loop = ForOp(0, extent)
        else:
            assert result_type is not None
            loop = ForOp(0, extent, reduce=[reduce], result_types=[result_type])
        loop.induction_var.name_hint = f"a{self.next_iv}"
        self.next_iv += 1
        parent.add_op(loop)
        return loop

    def free_nest(
        self, shape: Sequence[int], parent: Block | None = None
    ) -> tuple[Block, list[SSAValue | None]]:
        """Free loops over ``shape`` (none for extent-1 axes) in ``parent`` (the kernel's
        body by default); the innermost body and ivs."""
        block = parent or self.block
        ivs: list[SSAValue | None] = []
        for extent in shape:
            if extent == 1:
                ivs.append(None)
                continue
            loop = self.loop(block, extent)
            ivs.append(loop.induction_var)
            block = loop.body.block
        return block, ivs


def access(ivs: Sequence[SSAValue | None]) -> tuple[AffineMap, list[SSAValue]]:
    """The identity access over ``ivs``: one dim per iv, the constant 0 where None."""
    operands = [iv for iv in ivs if iv is not None]
    exprs: list[AffineExpr] = []
    for iv in ivs:
        if iv is None:
            exprs.append(AffineExpr.constant(0))
        else:
            exprs.append(AffineExpr.dimension(next(i for i, o in enumerate(operands) if o is iv)))
    return AffineMap(len(operands), 0, tuple(exprs)), operands


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


# --- one pattern per op kind ---------------------------------------------------------------


@dataclass
class LiftMap(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.MapOp, rewriter: PatternRewriter) -> None:
        k = _Kernel.create(self.names.fresh(_hint(op.result, "map")), op.inputs, op.result)
        body, ivs = k.free_nest(_shape(op.result))
        map_, operands = access(ivs)
        loads: dict[SSAValue, SSAValue] = {}
        mapper: dict[SSAValue, SSAValue] = {}
        for arg, tensor in zip(op.body.block.args, op.inputs, strict=True):
            buf = k.buffers[tensor]
            if buf not in loads:
                load = LoadOp(buf, map_, operands)
                load.result.name_hint = arg.name_hint or "in"
                body.add_op(load)
                loads[buf] = load.result
            mapper[arg] = loads[buf]
        for inner in op.body.block.ops:
            if isinstance(inner, ten.YieldOp):
                value = mapper.get(inner.value, inner.value)
                body.add_op(StoreOp(value, k.out, map_, operands))
            else:
                body.add_op(inner.clone(mapper))
        _finish(k, op, "map")
        rewriter.replace(op, k.op)


@dataclass
class LiftReduce(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.ReduceOp, rewriter: PatternRewriter) -> None:
        k = _Kernel.create(self.names.fresh(_hint(op.result, "reduce")), [op.input], op.result)
        shape = _shape(op.input)
        dims = op.reduced_dims
        kept = [n for i, n in enumerate(shape) if i not in dims]
        body, kept_ivs = k.free_nest(kept)
        element = op.result.type.element_type  # type: ignore[union-attr]
        ivs: dict[int, SSAValue | None] = dict(
            zip([i for i in range(len(shape)) if i not in dims], kept_ivs, strict=True)
        )
        loops: list[ForOp] = []
        block = body
        for axis in dims:
            if shape[axis] == 1:
                ivs[axis] = None
                continue
            loop = k.loop(block, shape[axis], op.kind.data, element)
            loop.results[0].name_hint = op.result.name_hint
            ivs[axis] = loop.induction_var
            loops.append(loop)
            block = loop.body.block
        map_, operands = access([ivs[i] for i in range(len(shape))])
        load = LoadOp(k.buffers[op.input], map_, operands)
        load.result.name_hint = "in"
        block.add_op(load)
        value: SSAValue = load.result
        for loop in reversed(loops):
            loop.body.block.add_op(YieldOp(value))
            value = loop.results[0]
        out_map, out_operands = access(kept_ivs)
        body.add_op(StoreOp(value, k.out, out_map, out_operands))
        _finish(k, op, "reduce")
        rewriter.replace(op, k.op)


MAX_VALUE_COLUMNS = 64
"""The most value columns a thread of a ``ten.softmax_sum`` walk accumulates (a row's
walk holds that many times its lanes: ``value_columns``)."""


def value_columns(columns: int, most: int = MAX_VALUE_COLUMNS, rows: int = 0) -> int:
    """How many of a ``ten.softmax_sum``'s value columns one walk over a row accumulates:
    the largest divisor of ``columns`` up to ``most`` a thread. Each walk computes the
    row's weights again, and the walks after the first read the scores stored (a head dim
    of 128 in two walks of 64 is a scores kernel, then the walks), so fewer walks save
    work; each column is an accumulator a thread keeps, so ``most`` bounds the registers.
    With ``rows`` (the walks' rows) a walk may take as many more columns as the lanes
    ``split-walk-columns`` will deal a row's head dim out to (``walk_column_lanes``, the
    head dim taken as ``columns``): a head dim of 128 over 16384 rows is one walk of 4
    lanes, 32 columns a lane, the scores never stored (session 18, H200: Qwen's S=512
    attention 206 us instead of 281); a decode step's few rows keep 64 a walk, and so
    does a head dim whose lanes' shares would pass ``most`` (1024: 128 a lane)."""
    lanes = walk_column_lanes(rows, columns, columns) if rows else 1
    if columns <= most * lanes:  # each lane's share of the query row as short as a walk's
        most *= lanes
    return max(d for d in range(1, min(columns, most) + 1) if columns % d == 0)


@dataclass
class LiftSoftmaxSum(RewritePattern):
    """``ten.softmax_sum`` → free loops over blocks of value columns (``value_columns``,
    outermost) and over the kept axes, one loop over the reduced axis of the online group,
    ``reduce(online_max, online_sum, online_sum..)``: it yields the score, a 1 (the
    weights' sum) and the row's value in each column of the block; after it each column's
    accumulator over the sum is stored (0 for a row of -inf scores when ``safe``)."""

    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.SoftmaxSumOp, rewriter: PatternRewriter) -> None:
        k = _Kernel.create(
            self.names.fresh(_hint(op.result, "softmax_sum")), [op.scores, op.values], op.result
        )
        shape = _shape(op.values)
        dim, columns = op.reduced_dim, shape[-1]
        row_extents = [n for i, n in enumerate(shape[:-1]) if i != dim]
        width = value_columns(columns, rows=math.prod(row_extents))
        # The walks over blocks of columns outermost: the rows stay the innermost axes, so
        # the tile level sees a row reduction (a block axis innermost reads like columns).
        parent, block_iv = k.block, None
        if columns > width:
            block_loop = k.loop(parent, columns // width)
            parent, block_iv = block_loop.body.block, block_loop.induction_var
        body, kept = k.free_nest(row_extents, parent)
        element = op.result.type.element_type  # type: ignore[union-attr]
        kinds = [ONLINE_MAX] + [ONLINE_SUM] * (1 + width)
        row = ForOp(0, shape[dim], reduce=kinds, result_types=[element] * len(kinds))
        row.induction_var.name_hint = f"a{k.next_iv}"
        k.next_iv += 1
        body.add_op(row)
        ivs = list(kept)
        ivs.insert(dim, row.induction_var)
        s_map, s_operands = access(ivs)
        score = LoadOp(k.buffers[op.scores], s_map, s_operands)
        score.result.name_hint = "score"
        one = arith.ConstantOp(FloatAttr(1.0, element))
        one.result.name_hint = "one"
        row.body.block.add_ops([score, one])
        loads = []
        for c in range(width):
            v_map, v_operands = _column_access(ivs, block_iv, width, c)
            load = LoadOp(k.buffers[op.values], v_map, v_operands)
            load.result.name_hint = "value"
            loads.append(load)
        row.body.block.add_ops(loads)
        row.body.block.add_op(YieldOp(score.result, one.result, *(x.result for x in loads)))
        maximum, total, *sums = row.results
        maximum.name_hint, total.name_hint = "max", "sum"
        for c, acc in enumerate(sums):
            acc.name_hint = "acc"
            mean = arith.DivfOp(acc, total)
            body.add_op(mean)
            value = mean.result
            if op.safe is not None:
                inf = arith.ConstantOp(FloatAttr(float("-inf"), element))
                empty = arith.CmpfOp(maximum, inf.result, "oeq")
                zero = arith.ConstantOp(FloatAttr(0.0, element))
                pick = arith.SelectOp(empty.result, zero.result, mean.result)
                body.add_ops([inf, empty, zero, pick])
                value = pick.result
            value.name_hint = _hint(op.result, "out")
            out_map, out_operands = _column_access(kept, block_iv, width, c)
            body.add_op(StoreOp(value, k.out, out_map, out_operands))
        _finish(k, op, "softmax_sum")
        rewriter.replace(op, k.op)


def _column_access(
    ivs: Sequence[SSAValue | None], block_iv: SSAValue | None, width: int, column: int
) -> tuple[AffineMap, list[SSAValue]]:
    """The identity access over ``ivs`` and one more, last index: value column
    ``block * width + column`` (``column`` alone without a block loop)."""
    map_, operands = access(ivs)
    if block_iv is None:
        last: AffineExpr = AffineExpr.constant(column)
    else:
        last = AffineExpr.dimension(len(operands)) * width + column
        operands = [*operands, block_iv]
    return AffineMap(len(operands), 0, (*map_.results, last)), operands


@dataclass
class LiftIndexMap(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.IndexMapOp, rewriter: PatternRewriter) -> None:
        k = _Kernel.create(self.names.fresh(_hint(op.result, "view")), [op.source], op.result)
        body, ivs = k.free_nest(_shape(op.result))
        map_, operands = access(ivs)
        # The view's map is over result axes: substitute each axis's index (its iv, or 0).
        view = op.map.data
        source_map = AffineMap(
            len(operands),
            0,
            tuple(r.replace_dims_and_symbols(map_.results, []) for r in view.results),
        )
        load = LoadOp(k.buffers[op.source], source_map, operands)
        load.result.name_hint = "in"
        body.add_op(load)
        body.add_op(StoreOp(load.result, k.out, map_, operands))
        _finish(k, op, "index_map")
        rewriter.replace(op, k.op)


def _scalar_constant(block: Block, attr: FloatAttr | IntegerAttr) -> SSAValue:
    """`attr` as a scalar appended to `block`, named ``c``. arith.constant takes signless
    integers only, so an unsigned one (uint8) is an i64 constant truncated to its type."""
    type_ = attr.type
    if isinstance(type_, IntegerType) and type_.signedness.data == Signedness.UNSIGNED:
        wide = arith.ConstantOp(IntegerAttr(attr.value.data, i64))
        block.add_op(wide)
        op: Operation = arith.TruncIOp(wide.result, type_)
    else:
        op = arith.ConstantOp(attr)
    op.results[0].name_hint = "c"
    block.add_op(op)
    return op.results[0]


@dataclass
class LiftSplat(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.ConstantOp, rewriter: PatternRewriter) -> None:
        value = op.value
        if not value.is_splat():
            return  # a literal tensor stays a graph-level input (see the module docstring)
        element = op.result.type.element_type  # type: ignore[union-attr]
        scalar = value.get_values()[0]
        attr = (
            FloatAttr(float(scalar), element)  # type: ignore[arg-type]
            if isinstance(scalar, float)
            else IntegerAttr(int(scalar), element)  # type: ignore[arg-type]
        )
        k = _Kernel.create(self.names.fresh(_hint(op.result, "splat")), [], op.result)
        value_ = _scalar_constant(k.block, attr)
        body, ivs = k.free_nest(_shape(op.result))
        map_, operands = access(ivs)
        body.add_op(StoreOp(value_, k.out, map_, operands))
        _finish(k, op, "constant")
        rewriter.replace(op, k.op)


@dataclass
class LiftIota(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.IotaOp, rewriter: PatternRewriter) -> None:
        k = _Kernel.create(self.names.fresh(_hint(op.result, "iota")), [], op.result)
        body, ivs = k.free_nest(_shape(op.result))
        map_, operands = access(ivs)
        iv = ivs[op.axis]
        element = op.result.type.element_type  # type: ignore[union-attr]
        if iv is None:  # an extent-1 axis: the position is always 0
            value = arith.ConstantOp(IntegerAttr(0, element))
        else:
            value = arith.IndexCastOp(iv, element)
        value.results[0].name_hint = "pos"
        body.add_op(value)
        body.add_op(StoreOp(value.results[0], k.out, map_, operands))
        _finish(k, op, "iota")
        rewriter.replace(op, k.op)


@dataclass
class LiftGather(RewritePattern):
    names: KernelNames

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ten.GatherOp, rewriter: PatternRewriter) -> None:
        inputs = [op.table, op.ids]
        k = _Kernel.create(self.names.fresh(_hint(op.result, "gather")), inputs, op.result)
        body, ivs = k.free_nest(_shape(op.result))
        axis, rank = op.gather_axis, len(_shape(op.ids))
        ids_map, ids_operands = access(ivs[axis : axis + rank])
        load_id = LoadOp(k.buffers[op.ids], ids_map, ids_operands)
        load_id.result.name_hint = "id"
        body.add_op(load_id)
        index: SSAValue = load_id.result
        if not isinstance(index.type, IndexType):
            cast = arith.IndexCastOp(index, IndexType())
            cast.result.name_hint = "row"
            body.add_op(cast)
            index = cast.result
        # The table's axes: the leading result axes, the loaded index, the trailing ones.
        table_ivs = [*ivs[:axis], index, *ivs[axis + rank :]]
        table_map, table_operands = access(table_ivs)
        load = LoadOp(k.buffers[op.table], table_map, table_operands)
        load.result.name_hint = "in"
        body.add_op(load)
        map_, operands = access(ivs)
        body.add_op(StoreOp(load.result, k.out, map_, operands))
        _finish(k, op, "gather")
        rewriter.replace(op, k.op)


_TEN_OPS = (
    ten.MapOp,
    ten.ReduceOp,
    ten.SoftmaxSumOp,
    ten.IndexMapOp,
    ten.ConstantOp,
    ten.IotaOp,
    ten.GatherOp,
)


@dataclass
class LiftEmpty(RewritePattern):
    """A tensor of no elements is computed by a kernel that does nothing: no inputs, no
    loops, no stores (an empty body launches as one thread that returns). A reduce over
    an axis of extent 0 reads nothing either: a fill kernel of the kind's identity (the
    sum of no terms is 0). So no kernel ever loads from, or loops over, an empty tensor,
    and every later level sees only non-empty extents."""

    names: KernelNames

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _TEN_OPS):
            return
        if 0 in _shape(op.results[0]):
            k = _Kernel.create(self.names.fresh(_hint(op.results[0], "empty")), [], op.results[0])
            _finish(k, op, "empty")
            rewriter.replace(op, k.op)
        elif isinstance(op, ten.ReduceOp) and 0 in _shape(op.input):
            element = op.result.type.element_type  # type: ignore[union-attr]
            k = _Kernel.create(self.names.fresh(_hint(op.result, "reduce")), [], op.result)
            identity = _scalar_constant(k.block, identity_attr(op.kind.data, element))
            body, ivs = k.free_nest(_shape(op.result))
            map_, operands = access(ivs)
            body.add_op(StoreOp(identity, k.out, map_, operands))
            _finish(k, op, "reduce")
            rewriter.replace(op, k.op)


@dataclass(frozen=True)
class LiftToLoop(ModulePass):
    """Turn every ten op into one loop.kernel (see the module docstring)."""

    name = "lift-to-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = KernelNames.of_module(op)
        patterns = GreedyRewritePatternApplier(
            [
                LiftEmpty(names),
                LiftMap(names),
                LiftReduce(names),
                LiftSoftmaxSum(names),
                LiftIndexMap(names),
                LiftSplat(names),
                LiftIota(names),
                LiftGather(names),
            ]
        )
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
