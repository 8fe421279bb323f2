"""``collapse-reduce``: a nest of reduce loops becomes one reduce loop over their product.

A reduction over several axes (``x.sum((0, 1, 2, 3))``, a loss's mean over every
element, ``x.sum((1, 2))``) reaches the tile level as reduce loops nested one in the
other, each adding the next one's result: a row of 2 x 3 x 10 x 68 elements is four loops
of 2, 3, 10 and 68 trips. The passes that spread a reduction over threads and blocks
look at one loop (``cooperative-reduce`` at its extent, ``chunk-reduce`` at its length),
so such a kernel ran on one thread. This pass collapses a perfect nest (a reduce loop
whose body is a reduce loop of the same combine kinds and the yield of its results, after
at most some index arithmetic) into
one loop whose iteration ``%i`` stands for ``(%i floordiv E_in, %i mod E_in)``::

    %s = loop.for %a0 = 0 to 2 reduce(add) -> f32 {
      %r = loop.for %a1 = 0 to 68 reduce(add) -> f32 { .. loop.load %x_b[%a0, %a1] .. }
      loop.yield %r : f32 }

    %s = loop.for %a0_a1 = 0 to 136 reduce(add) -> f32 {
      %a0 = affine.apply (%a0_a1 floordiv 68)    %a1 = affine.apply (%a0_a1 mod 68)
      .. loop.load %x_b[%a0, %a1] .. }

The same elements are combined in the same order, so the result is the nest's up to
the rounding of the additions' grouping (exact for max and min). The decision is
``collapsible``; the pass runs before the reduction planners, which then see the whole
row.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from deplodock.dialects import loop, tile
from deplodock.dialects.affine_syntax import apply_op


def collapsible(outer: loop.ForOp) -> loop.ForOp | None:
    """The inner loop ``outer`` collapses with, or None: ``outer`` is a reduce loop from
    0 whose body is pure scalar ops (its own index arithmetic), then one reduce loop from
    0 with the same combine kinds, then the yield of that loop's results, in order."""
    if not outer.is_reduce or outer.lower.data != 0:
        return None
    ops = list(outer.body.block.ops)
    if len(ops) < 2:
        return None
    *prefix, inner, yielded = ops
    if not isinstance(inner, loop.ForOp) or not isinstance(yielded, loop.YieldOp):
        return None
    if any(op.regions or not op.has_trait(Pure) for op in prefix):
        return None
    if not inner.is_reduce or inner.lower.data != 0 or inner.kinds != outer.kinds:
        return None
    if list(yielded.values) != list(inner.results):
        return None
    return inner


def collapse(outer: loop.ForOp, inner: loop.ForOp) -> loop.ForOp:
    """One loop over ``outer.extent * inner.extent`` in place of the two (see above)."""
    extent = inner.extent
    body = Block(arg_types=[IndexType()])
    flat = body.args[0]
    names = (outer.induction_var.name_hint, inner.induction_var.name_hint)
    flat.name_hint = "_".join(n for n in names if n) or None
    d0 = AffineExpr.dimension(0)
    hi = apply_op(d0 // extent, [flat], names[0])
    lo = apply_op(d0 % extent, [flat], names[1])
    body.add_ops([hi, lo])
    outer.induction_var.replace_all_uses_with(hi.result)
    inner.induction_var.replace_all_uses_with(lo.result)
    prefix = list(outer.body.block.ops)[:-2]
    for op in [*prefix, *inner.body.block.ops]:
        op.detach()
        body.add_op(op)
    kinds = outer.kinds
    new = loop.ForOp(0, outer.extent * extent, Region(body), kinds, [r.type for r in outer.results])
    new.attributes.update(outer.attributes)
    for old, result in zip(outer.results, new.results, strict=True):
        result.name_hint = old.name_hint
        old.replace_all_uses_with(result)
    block = outer.parent_block()
    assert block is not None
    block.insert_op_before(new, outer)
    block.erase_op(outer, safe_erase=False)
    return new


@dataclass(frozen=True)
class CollapseReduce(ModulePass):
    """Collapse every perfect nest of reduce loops in a tile kernel into one loop."""

    name = "collapse-reduce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            for reduce in [o for o in kernel.walk() if isinstance(o, loop.ForOp)]:
                if reduce.parent is None:
                    continue  # erased: collapsed into its parent
                outer = reduce
                while (inner := collapsible(outer)) is not None:
                    outer = collapse(outer, inner)
