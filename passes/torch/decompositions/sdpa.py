"""scaled_dot_product_attention: two products and a stable softmax, in ten ops.

    q_b, k_b = index_map q, k        -> (.., Sq, Sk, D)     the QKᵀ product space
    qk       = reduce add (q_b * k_b) over D                 (D last: both read along it)
    scores   = qk * scale, masked                            one ten.map
    probs    = softmax(scores) over Sk                        max, exp(s - max), sum, div
    probs_b, v_b = index_map probs, v -> (.., Sq, Sk, Dv)   the PV product space
    attn     = reduce add (probs_b * v_b) over Sk

As in matmul.py, a product is a broadcast multiply in a product space and a sum; both
spaces here share the (.., Sq, Sk) prefix, so the scores and the probabilities line up
with either by dropping or adding the last axis. The batch axes (.., H) broadcast by
numpy's rules, as torch.matmul broadcasts them in PyTorch's math backend.

The masks Hugging Face transformers passes (see test/test_sdpa.py):

- `is_causal=True`, no mask: key j is visible to query i when j <= i, aligned top-left
  as PyTorch does for Sq != Sk (`torch.ones(Sq, Sk).tril()`). The positions are two
  `ten.iota`s compared inside the scores map, `select(j <= i, s, -inf)`: no mask tensor.
  Every row keeps key 0, so no row is ever fully masked.
- `attn_mask`: boolean (True attends: `select(mask, s, -inf)`) or float (added),
  broadcast to the scores' shape by numpy's rules. A row whose keys are all masked out
  (all -inf) attends to nothing and gives 0, as PyTorch's `_safe_softmax` does (the
  plain formula would give NaN): the probs map selects 0 where the row's max is -inf.
  Only an explicit mask can do that, so only then is the guard emitted.

`enable_gqa=True` (grouped-query attention): K and V have Hkv heads and q has Hq = g·Hkv;
query head h reads KV head h floordiv g, an index expression in the views of K and V
(PyTorch's repeat_interleave), never a copy. Without it, a K/V head axis of 1 broadcasts.

`scale` defaults to 1/sqrt(D). dropout_p must be 0 (this is inference), and is_causal
with a mask is an error in PyTorch itself; both are Unsupported. 16-bit inputs are
computed in f32 (scores, probabilities, both sums) and rounded once at the end.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from deplodock.dialects.tensor import IotaOp
from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import (
    Body,
    Decomposition,
    Emitter,
    Unsupported,
    accumulator_type,
    broadcast_shape,
    element_of,
    is_float,
    shape_of,
)
from deplodock.passes.torch.decompositions.softmax import NEG_INF, stable_softmax


def attention_batch(
    q: Sequence[int], k: Sequence[int], v: Sequence[int], gqa: bool
) -> tuple[int, ...]:
    """The batch axes (all but the last two) of the output: numpy's broadcast of the
    three operands', except that with `gqa` the head axis (-3) is the query's, whose
    head count must be a multiple of K's and V's."""
    if not gqa:
        return broadcast_shape(q[:-2], k[:-2], v[:-2])
    if min(len(q), len(k), len(v)) < 3:
        raise Unsupported("enable_gqa needs a head axis (-3) in query, key and value")
    heads = q[-3]
    for name, shape in (("key", k), ("value", v)):
        if shape[-3] > heads or heads % shape[-3]:
            raise Unsupported(
                f"enable_gqa: {heads} query heads are not a multiple of {shape[-3]} {name} heads"
            )
    return (*broadcast_shape(q[:-3], k[:-3], v[:-3]), heads)


def _operand_view(
    shape: Sequence[int], batch: Sequence[int], inner: Sequence[int], rank: int
) -> AffineMap:
    """From a product space of `rank` axes (`batch` first) to an operand of `shape`: its
    batch axes align right with `batch` (size 1 pins to 0; a smaller head count is a
    GQA group, head h reads h floordiv g), its last two axes are the space's `inner`."""
    exprs = []
    for j, size in enumerate(shape[:-2], start=len(batch) - len(shape) + 2):
        axis = AffineExpr.dimension(j)
        if size == batch[j]:
            exprs.append(axis)
        elif size == 1:
            exprs.append(AffineExpr.constant(0))
        else:  # attention_batch allowed this only for the GQA head axis
            exprs.append(axis // (batch[j] // size))
    exprs += [AffineExpr.dimension(a) for a in inner]
    return AffineMap(rank, 0, tuple(exprs))


def product_sum(
    emit: Emitter,
    a: SSAValue,
    b: SSAValue,
    space: Sequence[int],
    axis: int,
    acc: Attribute,
    names: tuple[str, str],
) -> SSAValue:
    """sum over `axis` of a * b, both already views in `space`, computed in `acc`;
    `names` are the product's and the sum's."""
    prod = emit.map(
        [a, b],
        acc,
        lambda bd, x, y: bd.binary("mul", bd.cast(x, acc), bd.cast(y, acc)),
        name=names[0],
    )
    return emit.reduce("add", prod, [axis], name=names[1])


class ScaledDotProductAttention(Decomposition):
    targets = ("scaled_dot_product_attention.default",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        q, k, v = emit.tensor("query"), emit.tensor("key"), emit.tensor("value")
        mask = op.tensor_arg("attn_mask")
        causal = bool(op.arg("is_causal", False))
        gqa = bool(op.arg("enable_gqa", False))
        dropout = op.arg("dropout_p", 0.0)
        if dropout:
            raise Unsupported(f"dropout_p={dropout}: only inference (dropout_p=0) is supported")
        if causal and mask is not None:
            raise Unsupported("is_causal=True together with attn_mask (an error in PyTorch)")
        if not is_float(emit.element):
            raise Unsupported(f"attention over {emit.element} values")
        sq, sk, sv = shape_of(q), shape_of(k), shape_of(v)
        if min(len(sq), len(sk), len(sv)) < 2:
            raise Unsupported("query, key and value need a sequence and a feature axis")
        if sq[-1] != sk[-1] or sk[-2] != sv[-2]:
            raise Unsupported(
                f"query {list(sq)}, key {list(sk)}, value {list(sv)}: feature sizes of "
                f"query and key or sequence lengths of key and value differ"
            )
        batch = attention_batch(sq, sk, sv, gqa)
        (n_q, d), n_k, d_v = sq[-2:], sk[-2], sv[-1]
        i, j, last = len(batch), len(batch) + 1, len(batch) + 2  # Sq, Sk, D (or Dv) axes
        acc = accumulator_type(emit.element)
        scale = op.arg("scale")
        scale = 1.0 / pymath.sqrt(d) if scale is None else float(scale)

        # scores = q @ kᵀ over (.., Sq, Sk, D), the reduce over D last
        space = (*batch, n_q, n_k, d)
        q_b = emit.index_map(q, _operand_view(sq, batch, [i, last], len(space)), space)
        k_b = emit.index_map(k, _operand_view(sk, batch, [j, last], len(space)), space)
        qk = product_sum(emit, q_b, k_b, space, last, acc, ("qk_prod", "qk"))

        # scale, then mask: one map over (.., Sq, Sk)
        shape = (*batch, n_q, n_k)

        def scaled(b: Body, s: SSAValue) -> SSAValue:
            return s if scale == 1.0 else b.binary("mul", s, b.const(scale, acc))

        inputs, body = [qk], scaled
        if causal:
            rows = emit.add(IotaOp(i, TensorType(i64, shape)), "q_pos")
            cols = emit.add(IotaOp(j, TensorType(i64, shape)), "k_pos")
            inputs += [rows, cols]

            def body(b: Body, s: SSAValue, row: SSAValue, col: SSAValue) -> SSAValue:
                visible = b.emit(arith.CmpiOp(col, row, "sle"))
                return b.emit(arith.SelectOp(visible, scaled(b, s), b.const(NEG_INF, acc)))

        elif mask is not None:
            inputs.append(mask)
            if element_of(mask) == i1:

                def body(b: Body, s: SSAValue, keep: SSAValue) -> SSAValue:
                    return b.emit(arith.SelectOp(keep, scaled(b, s), b.const(NEG_INF, acc)))

            elif is_float(element_of(mask)):

                def body(b: Body, s: SSAValue, bias: SSAValue) -> SSAValue:
                    return b.binary("add", scaled(b, s), b.cast(bias, acc))

            else:
                raise Unsupported(f"attn_mask of {element_of(mask)} (bool or float expected)")
        scores = emit.map(inputs, acc, body, name="scores", shape=shape)

        probs = stable_softmax(emit, scores, j, guard_masked_rows=mask is not None)

        # attn = probs @ v over (.., Sq, Sk, Dv), the reduce over Sk (matmul's M, K, N)
        space = (*batch, n_q, n_k, d_v)
        probs_b = emit.expand(probs, space, [last])
        v_b = emit.index_map(v, _operand_view(sv, batch, [j, last], len(space)), space)
        attn = product_sum(emit, probs_b, v_b, space, j, acc, ("pv_prod", "attn"))
        return emit.convert(attn, emit.element)
