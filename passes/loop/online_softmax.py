"""``online-softmax``: softmax's maximum and exp-sum in one pass over the row.

Softmax, log-softmax, log-sum-exp and cross-entropy reach the loop level as two reduce
loops over a row, the second reading the first's result::

    %max = loop.for %a1 = 0 to N reduce(max) -> f32 {
      %x = loop.load %x_b[%a0, %a1] : ..
      loop.yield %x : f32
    }
    %sum = loop.for %a2 = 0 to N reduce(add) -> f32 {
      %y = loop.load %x_b[%a0, %a2] : ..            // %x again
      %d = arith.subf %y, %max : f32
      %e = math.exp %d : f32
      loop.yield %e : f32
    }

They become one loop of the online group (``dialects/combine.py``: the running maximum
``m`` and ``sum exp(x - m)``, rescaled whenever the maximum moves)::

    %max, %sum = loop.for %a1 = 0 to N reduce(online_max, online_sum) -> (f32, f32) {
      %x = loop.load %x_b[%a0, %a1] : ..
      %one = arith.constant 1.000000e+00 : f32
      loop.yield %x, %one : f32, f32
    }

It reads the row once where the two loops read it twice (a long row's second read comes
from L2 at best, from HBM at worst), its partials merge by one rule across threads and
blocks, and it reads only the kernel's inputs, so ``chunk-reduce`` can split a long row
across blocks. A short row is left as it is (``online_pays``): its group of threads
keeps it in registers between the loops, and the merged loop's rescaling only costs.
The uses of ``%max`` after the loops (softmax's normalising loop, log-sum-exp's
``max + log(sum)``) read the group's maximum, which is the row's.

When: the second loop yields ``exp(y - c)`` for a ``c`` from outside it, ``y`` is the
first loop's yielded value computed again (``same_value``: the same ops on the same
operands, the induction variables paired), both loops have the same bounds and float
results, and nothing between them writes memory. Only ``y`` of the second loop's body
mattered, and it is the first's, so the merged loop keeps the first's body. ``c`` is
``%max`` for softmax; log-sum-exp subtracts ``max`` made 0 where it is infinite, and its
sum is then the group's rescaled, ``sum * exp(max - c)``, where the second loop was
(``exp(max - c)`` itself for a +inf maximum: infinities and NaN come out as the two loops
gave them, ``combine.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, ModuleOp
from xdsl.ir import Block, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import MemoryWriteEffect

from deplodock.dialects import loop
from deplodock.dialects.access import element_bytes, memref_bytes
from deplodock.dialects.combine import ONLINE_MAX, ONLINE_SUM
from deplodock.passes.tile.stage_inputs import DEFAULT_MIN_SOURCE_BYTES, large_slab_budget
from deplodock.target import DEFAULT_ARCH, Target, pass_target


def same_value(a: SSAValue, b: SSAValue, pairs: dict[SSAValue, SSAValue]) -> bool:
    """Whether ``b`` computes what ``a`` does: the same value, values ``pairs`` maps
    ``b``'s to ``a``'s (the induction variables), or results of ops of the same name,
    properties and attributes, without regions or writes, on operands that are the same
    in turn. Pairs found are added to ``pairs``."""
    if a is b or pairs.get(b) is a:
        return True
    if not isinstance(a, OpResult) or not isinstance(b, OpResult) or a.index != b.index:
        return False
    x, y = a.op, b.op
    if (
        x.name != y.name
        or x.properties != y.properties
        or x.attributes != y.attributes
        or x.regions
        or y.regions
        or len(x.operands) != len(y.operands)
        or x.has_trait(MemoryWriteEffect)
    ):
        return False
    if not all(same_value(p, q, pairs) for p, q in zip(x.operands, y.operands, strict=True)):
        return False
    pairs[b] = a
    return True


def _yielded(for_op: loop.ForOp) -> SSAValue | None:
    last = for_op.body.block.last_op
    return last.operands[0] if isinstance(last, loop.YieldOp) and len(last.operands) == 1 else None


def _exp_of_difference(second: loop.ForOp) -> tuple[SSAValue, SSAValue] | None:
    """``(y, c)`` when ``second`` yields ``math.exp(arith.subf(y, c))`` with ``c`` from
    outside the loop, else None."""
    value = _yielded(second)
    exp = value.owner if value is not None else None
    if not isinstance(exp, math.ExpOp):
        return None
    sub = exp.operand.owner
    if not isinstance(sub, arith.SubfOp):
        return None
    owner = sub.rhs.owner
    defining = owner.parent_op() if isinstance(owner, Block) else owner
    if defining is not None and second.is_ancestor(defining):
        return None
    return sub.lhs, sub.rhs


def online_pair(first: loop.ForOp) -> tuple[loop.ForOp, SSAValue] | None:
    """The exp-sum loop that merges with the max loop ``first``, and the value its
    exponent subtracts (see the module docstring), or None."""
    if first.kinds != ["max"] or not isinstance(first.results[0].type, AnyFloat):
        return None
    x = _yielded(first)
    if x is None:
        return None
    op = first.next_op
    while op is not None:
        if isinstance(op, loop.ForOp):
            found = _matches(first, op, x)
            if found is not None:
                return op, found
        if any(o.has_trait(MemoryWriteEffect) for o in op.walk()):
            return None  # a later loop's reads might see what this writes
        op = op.next_op
    return None


def _matches(first: loop.ForOp, second: loop.ForOp, x: SSAValue) -> SSAValue | None:
    if second.kinds != ["add"] or second.results[0].type != first.results[0].type:
        return None
    if (second.lower.data, second.upper.data) != (first.lower.data, first.upper.data):
        return None
    found = _exp_of_difference(second)
    if found is None:
        return None
    y, subtracted = found
    if not same_value(x, y, {second.induction_var: first.induction_var}):
        return None
    return subtracted


def merge(first: loop.ForOp, second: loop.ForOp, subtracted: SSAValue) -> loop.ForOp:
    """One loop of the online group in place of ``first`` (the max) and ``second`` (the
    exp-sum of ``y - subtracted``): ``first``'s body, yielding its score and a 1 to the
    sum. When ``subtracted`` is not the maximum (log-sum-exp subtracts 0 for an infinite
    one), the sum is rescaled where ``second`` was: ``sum * exp(max - subtracted)``."""
    body = first.body.block
    last = body.last_op
    assert isinstance(last, loop.YieldOp)
    value_type = first.results[0].type
    one = arith.ConstantOp(FloatAttr(1.0, value_type))
    one.result.name_hint = "one"
    body.insert_ops_before([one, loop.YieldOp(last.operands[0], one.result)], last)
    body.erase_op(last)
    merged = loop.ForOp(
        first.lower.data,
        first.upper.data,
        first.detach_region(first.body),
        [ONLINE_MAX, ONLINE_SUM],
        [value_type, value_type],
    )
    merged.attributes.update(first.attributes)
    maximum, total = merged.results
    maximum.name_hint = first.results[0].name_hint
    total.name_hint = second.results[0].name_hint
    block = first.parent_block()
    assert block is not None
    block.insert_op_before(merged, first)
    was_maximum = subtracted is first.results[0]
    first.results[0].replace_all_uses_with(maximum)
    if not was_maximum:
        # sum exp(y - c) = sum exp(y - max) * exp(max - c); a +inf maximum gives
        # exp(inf - c) (the group's sum is then NaN, where the second pass had inf).
        shift = arith.SubfOp(maximum, subtracted)
        scale = math.ExpOp(shift.result)
        rescaled = arith.MulfOp(total, scale.result)
        inf = arith.ConstantOp(FloatAttr(float("inf"), value_type))
        infinite = arith.CmpfOp(maximum, inf.result, "oeq")
        exact = arith.SelectOp(infinite.result, scale.result, rescaled.result)
        block.insert_ops_before([shift, scale, rescaled, inf, infinite, exact], second)
        total = exact.result
    second.results[0].replace_all_uses_with(total)
    block.erase_op(second)
    block.erase_op(first)
    return merged


MIN_ONLINE_ROW = 16384
"""A row this long or longer is read twice by the two loops; a shorter one stays in the
registers of its group of threads between them (up to 16 elements a thread in a block of
1024: the emitter's unrolled row loops), and there the online form's second ``exp`` a
step only costs. H200 (session 12, ``docs/bench/h200-2026-12-02-s12/rows.py``): rows of
2048 two-pass 230 µs, online 240-328 µs; 8191 even; 32001 (cross-entropy) 380 -> 288 µs;
50257 882 -> 843 µs; 8 rows of 4M (chunked across blocks, which only the online loop
can be) 5435 -> 115 µs."""


def online_pays(extent: int, min_row: int = MIN_ONLINE_ROW, staged_reread: bool = False) -> bool:
    """Cost function: merge a row's max and exp-sum loops when the row is ``min_row``
    long or longer (``MIN_ONLINE_ROW``), unless ``stage-inputs`` stages the row whole
    with one block an SM and a loop after the two reads it again (``staged_reread``:
    ``staged_alone``, an input of ``DEFAULT_MIN_SOURCE_BYTES`` or more, softmax's
    normalising loop): read from HBM once either way, its loops then walk shared memory,
    and the online form's second ``exp`` a step only costs. A row read by the two loops
    alone (cross-entropy, log-sum-exp) is read once by the online loop and never staged:
    merged (H100 host, session 36: cross-entropy over 8192 x 32001 online 357.5 µs,
    staged two-pass 446.6)."""
    return extent >= min_row and not staged_reread


def staged_alone(extent: int, element: int, target: Target) -> bool:
    """Whether a row of ``extent`` elements of ``element`` bytes is too large for two
    blocks' slabs an SM and fits one's (``stage_inputs.large_slab_budget``; 0 where the
    target stages none): on the H200 112-223 KB of fp32. H100 host, session 36
    (``docs/bench/h100-2026-12-07-s36/``, ``copyrate.py``): softmax over rows of
    50257 staged, two-pass 732.7 µs, online 819.1, unstaged online 1026.0 (eager 1025.6);
    log-softmax the same 710.2, 789.8, 904.0; rows of 32768 (128 KB) 366.2, 441.0, 408.2."""
    row = extent * element
    return large_slab_budget(target, element, 2) < row <= large_slab_budget(target, element, 1)


def _read_after(kernel: loop.KernelOp, first: loop.ForOp, second: loop.ForOp) -> bool:
    """Whether a loop of ``kernel`` other than the pair ``first``, ``second`` loads a
    buffer ``first`` loads (softmax's normalising loop reads the row a third time)."""
    buffers = {op.buffer for op in first.walk() if isinstance(op, loop.LoadOp)}
    return any(
        isinstance(op, loop.LoadOp) and op.buffer in buffers
        for other in kernel.walk()
        if isinstance(other, loop.ForOp) and _apart(other, first) and _apart(other, second)
        for op in other.walk()
    )


def _apart(a: loop.ForOp, b: loop.ForOp) -> bool:
    """Neither loop holds the other (nor is it)."""
    return not a.is_ancestor(b) and not b.is_ancestor(a)


def _source_bytes(first: loop.ForOp) -> int:
    """The bytes of the largest buffer the row loop ``first`` loads: ``stage-inputs``
    stages none under ``DEFAULT_MIN_SOURCE_BYTES`` (its re-reads hit L2), and a few long
    rows are split across blocks (``chunk-reduce``), which only the online loop can be."""
    loads = [op for op in first.walk() if isinstance(op, loop.LoadOp)]
    return max((memref_bytes(op.buffer.type) for op in loads), default=0)


def _row_element(first: loop.ForOp) -> int:
    """The bytes of an element of the buffer the row loop ``first`` loads (4 if none)."""
    load = next((op for op in first.walk() if isinstance(op, loop.LoadOp)), None)
    return element_bytes(load.buffer.type.element_type) if load is not None else 4


@dataclass(frozen=True)
class OnlineSoftmax(ModulePass):
    """Merge each row's max and exp-sum loops into one online loop (module docstring)."""

    name = "online-softmax"

    min_row: int = MIN_ONLINE_ROW
    """Rows shorter than this keep their two loops (``online_pays``; 0: every row, a
    large value: none)."""

    arch: str = DEFAULT_ARCH
    """The target whose shared memory holds a staged row (``staged_alone``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        for first, pair, pays in self.pairs(op):
            if pays:
                merge(first, *pair)

    def pairs(self, op: ModuleOp):
        """Each long row's max loop with its exp-sum pair, and whether merging them pays
        (``online_pays``), in the order ``apply`` merges them."""
        target = pass_target(self.name, self.arch)
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            for first in [f for f in kernel.walk() if isinstance(f, loop.ForOp)]:
                if first.parent is None or first.extent < self.min_row:
                    continue  # the cheap half of ``online_pays`` first
                pair = online_pair(first)
                if pair is None:
                    continue
                staged_reread = (  # the size first: the walk of the kernel last
                    staged_alone(first.extent, _row_element(first), target)
                    and _source_bytes(first) >= DEFAULT_MIN_SOURCE_BYTES
                    and _read_after(kernel, first, pair[0])
                )
                yield first, pair, online_pays(first.extent, self.min_row, staged_reread)


def kept(module: ModuleOp, pass_: OnlineSoftmax) -> list[str]:
    """After the pass: each long row whose two loops it kept, and why (``deplodock -v``
    prints them as the pass's notes)."""
    notes = []
    for first, _, pays in pass_.pairs(module):
        if not pays:
            kernel = loop.enclosing_kernel(first)
            assert isinstance(kernel, loop.KernelOp)
            kb = first.extent * _row_element(first) / 1024
            notes.append(
                f"@{kernel.sym_name.data}: a row of {first.extent} ({kb:.0f} KB) keeps its max "
                "and exp-sum loops: staged whole with one block an SM and read again after "
                "them, it is walked in shared memory (online_softmax.staged_alone)"
            )
    return notes
