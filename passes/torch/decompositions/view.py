"""Views: transpose, permute, reshape, unsqueeze, squeeze, expand, unfold, diagonal — each
one index_map.

A view moves no data in the tensor dialect: it is an affine map from the result's indices
to the source's, which fusion later folds into the loads of whoever reads it. Reshape maps
each group of result axes to the group of source axes with the same element count
(row-major linearise, then de-linearise), so merging or splitting adjacent axes gives the
short ``d0 * 64 + d1`` or ``d0 floordiv 64`` forms rather than a whole-tensor
linearisation. Copies that change nothing (contiguous, clone, alias, detach) are the
source itself, and each view's ``_copy`` form (``permute_copy``, ``view_copy``..., what
functionalised graphs hold) is the view: a tensor level value has no storage to alias.

``unfold(dim, size, step)`` gives windows along ``dim``: result ``[.., w, .., j]`` reads
``[.., w * step + j, ..]``. ``diagonal(offset, dim1, dim2)`` drops both axes and appends
the diagonal's: ``[.., k]`` reads ``dim1`` at ``k + max(-offset, 0)`` and ``dim2`` at
``k + max(offset, 0)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Decomposition,
    Emitter,
    Unsupported,
    shape_of,
)


def reshape_map(src: Sequence[int], dst: Sequence[int]) -> AffineMap:
    """The map from indices of shape ``dst`` to indices of shape ``src`` (same count).

    Size-1 axes take no part in the grouping: a source one is always index 0, a result
    one is never read.
    """
    if math.prod(src) != math.prod(dst):
        raise Unsupported(f"cannot reshape {tuple(src)} to {tuple(dst)}")
    if math.prod(dst) == 0:  # no elements: the map is never evaluated
        return AffineMap(len(dst), 0, (AffineExpr.constant(0),) * len(src))
    src_axes = [a for a, n in enumerate(src) if n != 1]
    dst_axes = [a for a, n in enumerate(dst) if n != 1]
    inner = _grouped_map([src[a] for a in src_axes], [dst[a] for a in dst_axes])
    dims = [AffineExpr.dimension(a) for a in dst_axes]
    exprs = [AffineExpr.constant(0)] * len(src)
    for axis, expr in zip(src_axes, inner.results, strict=True):
        exprs[axis] = expr.replace_dims_and_symbols(dims, [])
    return AffineMap(len(dst), 0, tuple(exprs))


def _grouped_map(src: Sequence[int], dst: Sequence[int]) -> AffineMap:
    """``reshape_map`` for shapes without size-1 axes."""
    exprs: list[AffineExpr] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        # One group: the fewest leading axes of each side with equal element counts.
        src_group, dst_group = [], []
        src_count = dst_count = 1
        if i < len(src):
            src_group.append(i)
            src_count, i = src[i], i + 1
        if j < len(dst):
            dst_group.append(j)
            dst_count, j = dst[j], j + 1
        while src_count != dst_count:
            if src_count < dst_count:
                src_group.append(i)
                src_count, i = src_count * src[i], i + 1
            else:
                dst_group.append(j)
                dst_count, j = dst_count * dst[j], j + 1
        linear: AffineExpr = AffineExpr.constant(0)
        for d in dst_group:
            linear = linear * dst[d] + AffineExpr.dimension(d)
        stride = src_count
        for position, axis in enumerate(src_group):
            stride //= src[axis]
            expr = linear if stride == 1 else linear // stride
            exprs.append(expr if position == 0 else expr % src[axis])
    return AffineMap(len(dst), 0, tuple(exprs))


def _normalized(dim: int, rank: int) -> int:
    if not -rank <= dim < max(rank, 1):
        raise Unsupported(f"dimension {dim} is out of range for rank {rank}")
    return dim % max(rank, 1)


class View(Decomposition):
    """Every view-like op: its result is the source read through an affine map."""

    # fmt: off
    targets = (
        "t.default", "transpose.int", "permute.default", "view.default", "reshape.default",
        "_unsafe_view.default", "unsqueeze.default", "squeeze.dim", "squeeze.dims",
        "squeeze.default", "expand.default", "contiguous.default", "clone.default",
        "alias.default", "detach.default", "flatten.using_ints", "t_copy.default",
        "transpose_copy.int", "permute_copy.default", "view_copy.default", "_reshape_copy.default",
        "unsqueeze_copy.default", "squeeze_copy.dim", "squeeze_copy.dims", "squeeze_copy.default",
        "expand_copy.default", "alias_copy.default",
        "unfold.default", "unfold_copy.default", "diagonal.default", "diagonal_copy.default",
    )
    # fmt: on

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        x = emit.tensor("self")
        src, dst = shape_of(x), shape_of(op.results[0])
        kind = op.overload.split(".")[0].removesuffix("_copy").removeprefix("_")
        if kind in ("contiguous", "clone", "alias", "detach"):
            return x
        if kind == "unfold":
            return emit.index_map(x, self._unfold(op, src, dst), dst, emit.name)
        if kind == "diagonal":
            return emit.index_map(x, self._diagonal(op, src, dst), dst, emit.name)
        if kind in ("t", "transpose", "permute"):
            perm = self._permutation(op, kind, len(src))
            exprs = [AffineExpr.dimension(0)] * len(src)
            for out_axis, in_axis in enumerate(perm):
                exprs[in_axis] = AffineExpr.dimension(out_axis)
            return emit.index_map(x, AffineMap(len(dst), 0, tuple(exprs)), dst, emit.name)
        if kind == "expand":
            return emit.broadcast(x, dst)
        return emit.index_map(x, reshape_map(src, dst), dst, emit.name)

    @staticmethod
    def _unfold(op: AtenOp, src: Sequence[int], dst: Sequence[int]) -> AffineMap:
        """Windows of ``size`` every ``step`` along ``dimension``: a new last axis."""
        dims = [AffineExpr.dimension(a) for a in range(len(dst))]
        if not src:  # a 0-d tensor unfolds into at most one window of its one element
            return AffineMap(len(dst), 0, ())
        dim = _normalized(int(op.arg("dimension")), len(src))
        step = int(op.arg("step"))
        if step < 1:
            raise Unsupported(f"unfold step {step} must be positive")
        exprs = dims[: len(src)]
        exprs[dim] = dims[dim] * step + dims[-1]
        return AffineMap(len(dst), 0, tuple(exprs))

    @staticmethod
    def _diagonal(op: AtenOp, src: Sequence[int], dst: Sequence[int]) -> AffineMap:
        """The other axes in order, then the diagonal of ``dim1`` and ``dim2``."""
        rank = len(src)
        offset = int(op.arg("offset", 0))
        dim1 = _normalized(int(op.arg("dim1", 0)), rank)
        dim2 = _normalized(int(op.arg("dim2", 1)), rank)
        if dim1 == dim2:
            raise Unsupported(f"diagonal of dimensions {dim1} and {dim2}: they must differ")
        dims = [AffineExpr.dimension(a) for a in range(len(dst))]
        rest = iter(dims[:-1])
        exprs = [next(rest) if a not in (dim1, dim2) else dims[-1] for a in range(rank)]
        exprs[dim1] = dims[-1] + max(-offset, 0)
        exprs[dim2] = dims[-1] + max(offset, 0)
        return AffineMap(len(dst), 0, tuple(exprs))

    @staticmethod
    def _permutation(op: AtenOp, kind: str, rank: int) -> list[int]:
        """perm[out_axis] = in_axis."""
        perm = list(range(rank))
        if kind == "t":
            perm.reverse()
        elif kind == "transpose":
            if not rank:  # a 0-d tensor transposes its 0th "axis" with itself
                return perm
            a = _normalized(int(op.arg("dim0")), rank)
            b = _normalized(int(op.arg("dim1")), rank)
            perm[a], perm[b] = perm[b], perm[a]
        else:
            perm = [_normalized(int(d), rank) for d in op.arg("dims")]
        return perm
