"""``chunk-reduce``: a reduction too long for one block is split across blocks in chunks.

``cooperative-reduce`` gives each row of a reduction one block. With few rows that leaves
the GPU idle: ``x.sum()`` over 16M floats would run on one SM of 132. This pass splits
such a row's reduce loop into ``C`` chunks, each computed by its own blocks in a new
kernel that writes the partial results, and the original kernel combines the ``C``
partials instead::

    %s = loop.for %k = 0 to K reduce(add) -> f32 { ..%x_b[%k].. }          // in @k_sum

    %p = tile.kernel @k_sum_chunks axes(%c : C = free) .. outs(%p_b : tensor<Cxf32>) {
      %s = loop.for %j = 0 to K/C reduce(add) -> f32 { %k = %c * K/C + %j; ..%x_b[%k].. }
      loop.store %s, %p_b[%c] }
    %s = loop.for %c = 0 to C reduce(add) -> f32 { loop.load %p_b[.., %c] }  // in @k_sum

The partials combine with the loop's own kind (``add`` of sums, ``max`` of maxima), so the
result is the same reduction in another order. The chunk kernel keeps the original's row
axes in front of ``%c``, so a norm over few long rows chunks per row; its reduce loop is
then made cooperative like any other.

When the rest of the original kernel is free loops over the same extent (RMSNorm's
normalising loop), those are chunked too: the kernel gets an axis ``%c`` of ``C`` and each
loop covers its chunk, so the elementwise tail is as parallel as the reduction. Every
block re-combines the ``C`` partials, which costs ``C`` reads.

Which reduce loops qualify: at the top level of a kernel with only free axes (before
``cooperative-reduce``), reading only the kernel's axes, inputs and constants (softmax's
exp-sum reads the max computed before it, so only its max would qualify, and the pass
leaves such kernels whole: a chunked max alone saves nothing). A kernel of several such
reductions, independent of each other (fusion put ``x.sum() + y.sum()`` in one kernel), has
each split on its own (the roofline guard found the two sums on one block, 528x their
roofline). How many chunks is the cost
function ``chunks_for``; ``chunks`` overrides it (1 turns the pass off). With ``kernels``
named, those kernels are split even into one chunk: fission, the inverse of fusing a
reduction into its consumer, for a fused kernel that does not fit (``compile_fitting``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplodock.dialects import loop, tile
from deplodock.dialects.access import buffer_type, element_bytes
from deplodock.dialects.affine_syntax import apply_op
from deplodock.dialects.combine import identity_attr
from deplodock.passes.tile.analysis import (
    causal_walk,
    outside_values,
    prelude,
    walks_columns,
    weighted_walk,
)
from deplodock.passes.tile.edge_tiles import guard_accesses
from deplodock.passes.tile.schedule.reduce import (
    ELEMENT_BYTES,
    chunks_for,
    column_chunks_for,
    walk_chunks,
)
from deplodock.target import DEFAULT_ARCH, pass_target


def _chunked_free_loops(kernel: tile.KernelOp, reduce: loop.ForOp) -> list[loop.ForOp] | None:
    """The kernel's other top-level ops, when they are free loops over the reduce's extent
    and pure scalar ops (so a chunk axis can deal them out); else None."""
    loops = []
    for op in kernel.body.block.ops:
        if op is reduce:
            continue
        if isinstance(op, loop.ForOp):
            if op.is_reduce or op.extent != reduce.extent or op.lower.data != 0:
                return None
            loops.append(op)
        elif op.regions or isinstance(op, loop.StoreOp | tile.StageOp):
            return None
    return loops


def _narrow(for_op: loop.ForOp, chunk: SSAValue, size: int, extent: int | None = None) -> None:
    """``loop.for %j = 0 to K`` → ``loop.for %j_in = 0 to K/C`` with
    ``%j = affine.apply (%c * K/C + %j_in)`` at the top of its body. ``extent``: the
    loop's length when ``size`` chunks overshoot it (ragged chunks: a reduce loop only),
    whose steps past it then yield the combine's identity (``mask_past_end``)."""
    body = for_op.body.block
    old = body.args[0]
    inner = body.insert_arg(IndexType(), 0)
    inner.name_hint = f"{old.name_hint or 'j'}_in"
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    index = apply_op(d0 * size + d1, [chunk, inner], old.name_hint)
    if body.first_op is None:
        body.add_op(index)
    else:
        body.insert_op_before(index, body.first_op)
    old.replace_all_uses_with(index.result)
    body.erase_arg(old)
    for_op.properties["upper"] = IntAttr(size)
    if extent is not None:
        mask_past_end(for_op, index.result, extent)


def mask_past_end(reduce: loop.ForOp, index: SSAValue, extent: int) -> None:
    """The steps of ``reduce`` whose ``index`` reaches ``extent`` or past it add nothing:
    each yielded value becomes ``select(index < extent, value, identity)``, and the loads
    that may now leave their buffers are guarded (they read 0 there, unused)."""
    yield_op = reduce.body.block.last_op
    assert isinstance(yield_op, loop.YieldOp)
    bound = arith.ConstantOp(IntegerAttr(extent, IndexType()))
    inside = arith.CmpiOp(index, bound.result, "ult")
    inside.result.name_hint = "in_chunk"
    ops: list = [bound, inside]
    values = []
    for kind, value in zip(reduce.kinds, yield_op.values, strict=True):
        identity = arith.ConstantOp(identity_attr(kind, value.type))
        chosen = arith.SelectOp(inside.result, value, identity.result)
        ops += [identity, chosen]
        values.append(chosen.result)
    reduce.body.block.insert_ops_before(ops, yield_op)
    yield_op.operands = values
    guard_accesses(reduce)


def step_bytes(reduce: loop.ForOp) -> int:
    """Bytes one step of ``reduce`` loads (its body's loads, not counting the trips of a
    loop inside it): 4 for a sum of floats, a key's value row and score for attention's
    walk."""
    loaded = sum(
        element_bytes(o.buffer.type.element_type)  # type: ignore[attr-defined]
        for o in reduce.body.walk()
        if isinstance(o, loop.LoadOp)
    )
    return loaded or ELEMENT_BYTES


def _rebuild(kernel: tile.KernelOp, extra_axes: int, extra_inputs: list[SSAValue]) -> tile.KernelOp:
    """``kernel`` with ``extra_axes`` free axes of the given extent appended to its axes
    (0: none) and ``extra_inputs`` appended to its inputs; the body moves over."""
    block = kernel.body.block
    axes = [(e, b) for _, e, b in kernel.axes]
    if extra_axes:
        axis = block.insert_arg(IndexType(), kernel.num_axes)
        axis.name_hint = "c"
        axes.append((extra_axes, "free"))
    position = len(axes) + len(kernel.inputs)
    for i, value in enumerate(extra_inputs):
        block.insert_arg(buffer_type(value.type), position + i).name_hint = "part_b"
    return _replace_kernel(kernel, axes, [*kernel.inputs, *extra_inputs])


def _replace_kernel(
    kernel: tile.KernelOp, axes: list[tuple[int, str]], inputs: list[SSAValue]
) -> tile.KernelOp:
    """A kernel of these axes and inputs (its body's block arguments already match them)
    taking ``kernel``'s body, name, results and attributes, in its place."""
    body = Rewriter.move_region_contents_to_new_regions(kernel.body)
    new = tile.KernelOp(kernel.sym_name.data, axes, inputs, [r.type for r in kernel.results], body)
    new.attributes.update(kernel.attributes)
    Rewriter.replace_op(kernel, new)
    return new


def _fresh_name(kernel: tile.KernelOp, suffix: str) -> str:
    """``kernel``'s name with ``suffix``, numbered when the function has it already (a
    split matmul's combine kernel, chunked in turn, would be a second ``k_*_chunks``)."""
    func = kernel.parent_op()
    taken = (
        {k.sym_name.data for k in func.walk() if isinstance(k, tile.KernelOp)} if func else set()
    )
    name, n = f"{kernel.sym_name.data}{suffix}", 2
    while name in taken:
        name, n = f"{kernel.sym_name.data}{suffix}{n}", n + 1
    return name


def _slots(reduce: loop.ForOp, stacked: bool) -> list[tuple[int, int | None]]:
    """Where each result of ``reduce`` goes among the chunk kernel's outputs: (output,
    None) an output a result; ``stacked`` (a walk's online group: its max, its sum, then
    its value columns) the max and the sum on their own and the value columns in one
    output, column ``j`` at last index ``j`` (``(2, j)``), as the walk stores its row, so
    ``split-walk-columns`` can deal the chunk kernel's columns out to lanes too."""
    if not stacked:
        return [(k, None) for k in range(len(reduce.results))]
    return [(0, None), (1, None), *((2, j) for j in range(len(reduce.results) - 2))]


def _slot_access(slot, buffer, rank: int, index: list[SSAValue], value=None):
    """A load of (or, with ``value``, a store to) ``buffer`` at ``index``, and at the
    slot's column last when it has one."""
    column = slot[1]
    dims = tuple(AffineExpr.dimension(i) for i in range(rank))
    if column is not None:
        dims = (*dims, AffineExpr.constant(column))
    access = AffineMap(rank, 0, dims)
    if value is None:
        return loop.LoadOp(buffer, access, index)
    return loop.StoreOp(value, buffer, access, index)


def _chunk_kernel(
    kernel: tile.KernelOp,
    reduce: loop.ForOp,
    chunks: int,
    chunk_first: bool = False,
    stacked: bool = False,
    before: Sequence[Operation] = (),
) -> tile.KernelOp:
    """The kernel computing ``reduce`` over each chunk: axes (rows.., %c), one output of
    shape (rows.., C) per result; with ``chunk_first`` axes (%c, rows..) and outputs of
    shape (C, rows..) (a matmul's K split: its rows stay the last two axes); ``stacked``:
    a walk's value columns in one output (``_slots``); ``before``: the ops it reads of the
    kernel's own (``analysis.prelude``), copied in first."""
    axes = [(arg, extent) for arg, extent, _ in kernel.axes]
    outside = [*outside_values(reduce), *(v for o in before for v in o.operands)]
    buffers = list(kernel.input_buffers)
    used = [b for b in buffers if b in outside]
    operands = [kernel.inputs[buffers.index(b)] for b in used]
    rows = [e for _, e in axes]
    shape = [chunks, *rows] if chunk_first else [*rows, chunks]
    slots = _slots(reduce, stacked)
    results = [
        TensorType(r.type, shape if column is None else [*shape, len(reduce.results) - 2])
        for r, (k, column) in zip(reduce.results, slots, strict=True)
        if column in (None, 0)
    ]
    part_axes = [(e, "free") for e in shape]
    body = tile.KernelOp.empty_body(part_axes, [v.type for v in operands], results)
    block = body.block
    mapping: dict[SSAValue, SSAValue] = {}
    row_args = block.args[1 : len(axes) + 1] if chunk_first else block.args[: len(axes)]
    for (arg, _), new in zip(axes, row_args, strict=True):
        mapping[arg], new.name_hint = new, arg.name_hint
    chunk = block.args[0 if chunk_first else len(axes)]
    chunk.name_hint = "c"
    first_buffer = len(part_axes)
    for b, new in zip(used, block.args[first_buffer:], strict=False):
        mapping[b], new.name_hint = new, b.name_hint
    outs = block.args[first_buffer + len(used) :]
    for out in outs:
        out.name_hint = "part_b"
    for value in outside:
        if isinstance(value.owner, arith.ConstantOp) and value not in mapping:
            constant = value.owner.clone()
            block.add_op(constant)
            mapping[value] = constant.result
    for op in before:  # what the reduce reads of the kernel's own: a walk's query row
        if op.results and op.results[0] in mapping:
            continue  # a constant, cloned above
        block.add_op(op.clone(value_mapper=mapping))
    partial = reduce.clone(value_mapper=mapping)
    block.add_op(partial)
    size = -(-reduce.extent // chunks)
    _narrow(partial, chunk, size, reduce.extent if size * chunks != reduce.extent else None)
    rank = len(shape)
    row_axes = [mapping[a] for a, _ in axes]
    index = [chunk, *row_axes] if chunk_first else [*row_axes, chunk]
    for result, slot in zip(partial.results, slots, strict=True):
        block.add_op(_slot_access(slot, outs[slot[0]], rank, index, result))
    new = tile.KernelOp(_fresh_name(kernel, "_chunks"), part_axes, operands, results, body)
    new.attributes.update(kernel.attributes)
    for result in new.results:
        result.name_hint = f"{kernel.sym_name.data.removeprefix('k_')}_parts"
    return new


def split(
    kernel: tile.KernelOp,
    reduce: loop.ForOp,
    chunks: int,
    chunk_first: bool = False,
    stacked: bool = False,
) -> tile.KernelOp:
    """Rewrite ``kernel`` in place, with its chunk kernel inserted before it (see the
    module docstring); returns the chunk kernel. ``chunk_first``, ``stacked``: see
    ``_chunk_kernel`` (with ``chunk_first`` the elementwise tail is left whole)."""
    before = prelude(kernel, reduce) or []
    slots = _slots(reduce, stacked)
    part = _chunk_kernel(kernel, reduce, chunks, chunk_first, stacked, before)
    Rewriter.insert_op(part, InsertPoint.before(kernel))
    tail = _chunked_free_loops(kernel, reduce) if chunks > 1 and not chunk_first else None
    row_axes = kernel.num_axes
    kernel = _rebuild(kernel, chunks if tail else 0, list(part.outputs))
    block = kernel.body.block
    row_args = list(block.args[:row_axes])
    buffers = kernel.input_buffers[len(kernel.inputs) - len(part.outputs) :]
    combine = loop.ForOp(
        0, chunks, reduce=reduce.kinds, result_types=[r.type for r in reduce.results]
    )
    index = combine.induction_var
    index.name_hint = "c_part"
    parts = [index, *row_args] if chunk_first else [*row_args, index]
    loads = [_slot_access(slot, buffers[slot[0]], row_axes + 1, parts) for slot in slots]
    for load, old in zip(loads, reduce.results, strict=True):
        load.result.name_hint = f"{old.name_hint or 'acc'}_part"
    combine.body.block.add_ops([*loads, loop.YieldOp(*[ld.result for ld in loads])])
    for old, new in zip(reduce.results, combine.results, strict=True):
        new.name_hint = old.name_hint
    Rewriter.replace_op(reduce, combine)
    for op in reversed(before):  # the combine reads partials, not the reduce's inputs
        if not any(r.uses for r in op.results):
            Rewriter.erase_op(op)
    if tail:
        chunk = block.args[row_axes]
        for free in tail:
            _narrow(free, chunk, free.extent // chunks)
    _drop_unused_inputs(kernel)
    return part


def _drop_unused_inputs(kernel: tile.KernelOp) -> None:
    """Rebuild ``kernel`` without the inputs its body no longer reads (a split matmul's
    combine kernel reads only the partial sums, not the operands)."""
    block = kernel.body.block
    buffers = list(kernel.input_buffers)
    unused = [i for i, b in enumerate(buffers) if not b.uses]
    if not unused:
        return
    for i in reversed(unused):
        block.erase_arg(buffers[i])
    inputs = [v for i, v in enumerate(kernel.inputs) if i not in unused]
    _replace_kernel(kernel, [(e, b) for _, e, b in kernel.axes], inputs)


@dataclass(frozen=True)
class ChunkReduce(ModulePass):
    """Split long reductions of few rows across blocks (see the module docstring)."""

    name = "chunk-reduce"

    chunks: int = 0
    """Chunks per row for every qualifying reduce; 0: ``chunks_for`` decides."""

    kernels: tuple[str, ...] = ()
    """Only these kernels, split even with ``chunks=1``: the reduction moves into a kernel
    of its own (how ``compile_fitting`` splits a fused kernel that spills)."""

    arch: str = DEFAULT_ARCH
    """The target (``deplodock.target``) whose SMs the chunks are to fill."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            if self.kernels and kernel.sym_name.data not in self.kernels:
                continue
            if any(binding != "free" for _, _, binding in kernel.axes):
                continue
            if tile.is_register_tiled(kernel):
                continue  # a tiled matmul: its K is split by split-matmul-k, if at all
            reduces = [
                o for o in kernel.body.block.ops if isinstance(o, loop.ForOp) and o.is_reduce
            ]
            if not reduces or any(prelude(kernel, r) is None for r in reduces):
                continue
            rows = 1
            for _, extent, _ in kernel.axes:
                rows *= extent
            # Independent reductions fused into one kernel (``x.sum() + y.sum()``) are
            # each split on their own; only a kernel's one reduction chunks its tail too.
            for reduce in reduces:
                kernel = reduce.parent_op()
                assert isinstance(kernel, tile.KernelOp)
                columns = walks_columns(kernel, reduce)
                many = weighted_walk(kernel) and rows >= target.sm_count
                if columns:
                    planned = column_chunks_for(rows, reduce.extent, target)
                elif many:  # attention's rows: split to fill the GPU (prefill, not decode)
                    values = len(reduce.kinds) - 2
                    planned = walk_chunks(rows, reduce.extent, values, causal_walk(kernel), target)
                else:
                    planned = chunks_for(rows, reduce.extent, target, step_bytes(reduce))
                chunks = self.chunks or planned
                wanted = chunks > 1 or bool(self.kernels)
                ragged = reduce.extent % chunks != 0
                if wanted and not (ragged and _chunked_free_loops(kernel, reduce)):
                    # a column reduction keeps its outputs innermost, and so does a walk
                    # of many rows (a block's rows share each staged chunk of keys): the
                    # chunk axis first; a decode step's few rows keep their chunks together
                    split(kernel, reduce, chunks, chunk_first=columns or many, stacked=many)
