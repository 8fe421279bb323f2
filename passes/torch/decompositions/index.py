"""index.Tensor (`x[i0, i1]` with index tensors): one `ten.gather` on a linearised axis.

    flat = index_map x      the indexed axes merged into one (a reshape view)
    lin  = ten.map(i0_b, ..): sum_k wrap(i_k) * stride_k      i64, broadcast indices
    out  = ten.gather flat[lin] axis p

torch's placement rule: when the indexed axes are adjacent, the broadcast index shape
takes their place; when they are not, it comes first. The second case permutes x so the
indexed axes lead, which makes it the first. A negative index counts from the end, as in
Python (`wrap`), so the gather's index is always in bounds for valid input. Boolean mask
indices select a data-dependent number of elements and are not supported.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.tensor import GatherOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    broadcast_shape,
    element_of,
    shape_of,
)
from deplodock.passes.torch.decompositions.view import reshape_map


def wrap(b: Body, i: SSAValue, n: int) -> SSAValue:
    """`i` as an i64 in [0, n): `i + n` when negative."""
    i = b.cast(i, i64)
    negative = b.emit(arith.CmpiOp(i, b.const(0, i64), "slt"))
    return b.emit(arith.SelectOp(negative, b.binary("add", i, b.const(n, i64)), i))


class Index(Decomposition):
    targets = ("index.Tensor", "index.Tensor_hacked_twin")

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x, indices = emit.tensor("self"), op.tensor_list_arg("indices")
        present = op.arg("indices") or [True] * len(indices)
        axes = [a for a, p in enumerate(present) if p]
        if not indices or any(element_of(t) == i1 for t in indices):
            raise Unsupported("boolean mask indices select a data-dependent shape")
        shape = shape_of(x)
        if axes != list(range(axes[0], axes[-1] + 1)):  # apart: permute them to the front
            perm = axes + [a for a in range(len(shape)) if a not in axes]
            exprs = [AffineExpr.dimension(perm.index(a)) for a in range(len(shape))]
            shape = tuple(shape[a] for a in perm)
            x = emit.index_map(x, AffineMap(len(shape), 0, tuple(exprs)), shape)
            axes = list(range(len(axes)))
        p, q = axes[0], axes[-1] + 1
        sizes = shape[p:q]
        flat_shape = (*shape[:p], math.prod(sizes), *shape[q:])
        if flat_shape != shape:
            x = emit.index_map(x, reshape_map(shape, flat_shape), flat_shape)
        strides = [math.prod(sizes[k + 1 :]) for k in range(len(sizes))]

        def linear(b: Body, *ids: SSAValue) -> SSAValue:
            total = None
            for i, n, stride in zip(ids, sizes, strides, strict=True):
                term = wrap(b, i, n)
                if stride != 1:
                    term = b.binary("mul", term, b.const(stride, i64))
                total = term if total is None else b.binary("add", total, term)
            assert total is not None
            return total

        ids_shape = broadcast_shape(*(shape_of(t) for t in indices))
        lin = emit.map(indices, i64, linear, name="lin", shape=ids_shape)
        return emit.add(GatherOp(x, lin, p))
