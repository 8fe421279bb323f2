"""Reduction kinds shared by every level: ``ten.reduce``, reduce loops, ``tile.combine``.

One table says, for each kind, its identity (the accumulator's initial value), how two
partial results combine in numpy and as an arith op, so interpreters, lowerings and the
CUDA emitter agree by construction.

**Online softmax.** Most kinds combine each accumulator on its own. The two *online*
kinds combine as a group: an ``online_max`` entry of a reduce clause followed by one or
more ``online_sum`` entries (``reduce(online_max, online_sum) -> (f32, f32)``). A step
yields a score ``x`` and a value ``v_j`` per sum; the results are the running maximum
``m`` of the scores and ``a_j = sum_i exp(x_i - m) * v_ij``. Softmax's max and its
exp-sum are one pass over the row this way (``v = 1``, the ``online-softmax`` pass);
attention's ``P @ V`` is the same group with ``v_j = V[key, j]``. Merging an
accumulator ``(m, a)`` with a step ``(x, v)``, or with another thread's or block's
partial ``(m', a')`` (a partial is itself a step: ``exp(m' - M) * a'``), is one rule::

    e = exp(-|x - m|)            (1 when x and m are both -inf)
    a_j = x > m ? a_j * e + v_j * (x - x + 1) : a_j + v_j * e
    m = x > m or x is NaN ? x : m

one ``exp`` a step, exact when the maximum does not move, and symmetric: two lanes
merging each other's partials get the same bits (a butterfly of shuffles needs that).
The group's identity is ``(-inf, 0..)``. Infinities and NaN come out as the two passes
give them: -inf scores weigh 0 (a row of them sums its count, rescaled by 0 once a finite
score arrives), a +inf or NaN score makes the sums NaN (``exp(inf - inf)`` of the second
pass; ``x - x + 1`` is 1 for a finite score, NaN otherwise), and a NaN score the maximum
NaN (``arith.maximumf``'s). ``groups``,
``reduce_arrays``, ``step_arrays``, ``combine_ops`` and ``cuda_online_step`` give every
level the rule for any clause, plain kinds and groups alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue


@dataclass(frozen=True)
class CombineKind:
    name: str
    identity: float
    numpy_reduce: Callable[..., np.ndarray]
    numpy_combine: Callable[[np.ndarray, np.ndarray], np.ndarray]
    float_op: type[Operation]
    int_op: type[Operation]
    cuda_float: str  # a C expression template over {a} and {b}


COMBINE_KINDS: dict[str, CombineKind] = {
    "add": CombineKind("add", 0.0, np.sum, np.add, arith.AddfOp, arith.AddiOp, "{a} + {b}"),
    "mul": CombineKind("mul", 1.0, np.prod, np.multiply, arith.MulfOp, arith.MuliOp, "{a} * {b}"),
    "max": CombineKind(
        "max", -math.inf, np.max, np.maximum, arith.MaximumfOp, arith.MaxSIOp, "maximumf({a}, {b})"
    ),
    "min": CombineKind(
        "min", math.inf, np.min, np.minimum, arith.MinimumfOp, arith.MinSIOp, "minimumf({a}, {b})"
    ),
    # The online group (see the module docstring): their numpy and arith entries are the
    # plain ones of their identities, used only through the group functions below.
    "online_max": CombineKind(
        "online_max", -math.inf, np.max, np.maximum, arith.MaximumfOp, arith.MaxSIOp, ""
    ),
    "online_sum": CombineKind("online_sum", 0.0, np.sum, np.add, arith.AddfOp, arith.AddiOp, ""),
}

ONLINE_MAX, ONLINE_SUM = "online_max", "online_sum"
PLAIN_KINDS = ("add", "mul", "max", "min")
"""The kinds an accumulator combines by alone (``ten.reduce`` takes only these)."""


def combine_kind(name: str) -> CombineKind:
    """The kind called ``name``; a ValueError lists the known ones."""
    try:
        return COMBINE_KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown reduction kind '{name}' (known: {', '.join(COMBINE_KINDS)})"
        ) from None


def identity_attr(kind: str, type: Attribute) -> Attribute:
    """The accumulator's starting value as a typed attribute (for arith.constant)."""
    value = combine_kind(kind).identity
    if isinstance(type, AnyFloat):
        return FloatAttr(value, type)
    assert isinstance(type, IntegerType)
    if math.isinf(value):
        width = type.width.data
        value = -(2 ** (width - 1)) if value < 0 else 2 ** (width - 1) - 1
    return IntegerAttr(int(value), type)


def combine_op(kind: str, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """The arith op that merges two partial results of ``kind``."""
    k = combine_kind(kind)
    op_type = k.float_op if isinstance(lhs.type, AnyFloat) else k.int_op
    return op_type(lhs, rhs)


# --- clauses: plain kinds and online groups -------------------------------------------------


def groups(kinds: Sequence[str]) -> list[list[int]]:
    """The positions of a reduce clause's entries that combine together: a plain kind
    alone, an ``online_max`` with the ``online_sum`` entries that follow it."""
    found: list[list[int]] = []
    for i, kind in enumerate(kinds):
        if kind == ONLINE_SUM and found and kinds[found[-1][0]] == ONLINE_MAX:
            found[-1].append(i)
        else:
            found.append([i])
    return found


def clause_error(kinds: Sequence[str], types: Sequence[Attribute]) -> str | None:
    """What is wrong with a reduce clause of these kinds and result types, or None: every
    kind known, an ``online_sum`` only after an ``online_max`` (or another sum of its
    group), an ``online_max`` with at least one sum, online groups of floats of one type."""
    for kind in kinds:
        if kind not in COMBINE_KINDS:
            return f"unknown reduction kind '{kind}' (known: {', '.join(COMBINE_KINDS)})"
    for group in groups(kinds):
        head = kinds[group[0]]
        if head == ONLINE_SUM:
            return "an online_sum must follow an online_max (or a sum of its group)"
        if head != ONLINE_MAX:
            continue
        if len(group) < 2:
            return "an online_max needs one or more online_sum entries after it"
        group_types = [types[i] for i in group] if len(types) > max(group) else []
        if group_types and (not isinstance(group_types[0], AnyFloat) or len(set(group_types)) != 1):
            return "an online group's results are floats of one type"
    return None


def _online_arrays(m, a, x, v):
    """The online rule on numpy arrays: ``(m, a..)`` merged with ``(x, v..)``."""
    with np.errstate(invalid="ignore", over="ignore"):
        both_empty = (x == m) & (m == -np.inf)
        e = np.where(both_empty, np.ones((), m.dtype), np.exp(-np.abs(x - m)))
        up = x > m
        own = x - x + np.ones((), x.dtype)  # 1, or NaN for an infinite or NaN score
        sums = [np.where(up, aj * e + vj * own, aj + vj * e) for aj, vj in zip(a, v, strict=True)]
        return [np.where(up | np.isnan(x), x, m), *sums]


def step_arrays(kinds: Sequence[str], accs: Sequence, values: Sequence) -> list:
    """Accumulators merged with one step's yielded values (or another partial), element
    by element: what a reduce loop does each iteration, on lanes."""
    merged: list = [None] * len(kinds)
    for group in groups(kinds):
        if kinds[group[0]] == ONLINE_MAX:
            acc = [np.asarray(accs[i]) for i in group]
            out = _online_arrays(acc[0], acc[1:], *_split([values[i] for i in group]))
            for i, value in zip(group, out, strict=True):
                merged[i] = value
        else:
            (i,) = group
            merged[i] = combine_kind(kinds[i]).numpy_combine(accs[i], values[i])
    return merged


def _split(values):
    head, *rest = (np.asarray(v) for v in values)
    return head, rest


def reduce_arrays(
    kinds: Sequence[str], values: Sequence, axis: int, keepdims: bool = False
) -> list:
    """Each entry's reduction of its values along ``axis`` (an empty axis gives the
    identities): what a whole reduce loop, or a combine across threads, computes."""
    reduced: list = [None] * len(kinds)
    for group in groups(kinds):
        if kinds[group[0]] == ONLINE_MAX:
            x, v = _split([values[i] for i in group])
            if x.shape[axis] == 0:
                m = np.max(x, axis=axis, initial=-np.inf, keepdims=True)
            else:
                m = np.max(x, axis=axis, keepdims=True)
            with np.errstate(invalid="ignore", over="ignore"):
                both_empty = (x == m) & (m == -np.inf)
                e = np.where(both_empty, np.ones((), x.dtype), np.exp(x - m))
            sums = [np.sum(vj * e, axis=axis, keepdims=keepdims) for vj in v]
            m = m if keepdims else np.squeeze(m, axis=axis)
            for i, value in zip(group, [m, *sums], strict=True):
                reduced[i] = value
        else:
            (i,) = group
            k = combine_kind(kinds[i])
            value = np.asarray(values[i])
            if value.shape[axis] == 0:
                reduced[i] = k.numpy_reduce(value, axis=axis, initial=k.identity, keepdims=keepdims)
            else:
                reduced[i] = k.numpy_reduce(value, axis=axis, keepdims=keepdims)
    return reduced


def combine_ops(
    kinds: Sequence[str], lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]
) -> tuple[list[Operation], list[SSAValue]]:
    """The arith/math ops that merge partials ``lhs`` with ``rhs``, entry by entry (a
    group by the online rule), and the merged values in clause order."""
    ops: list[Operation] = []
    merged: list[SSAValue | None] = [None] * len(kinds)
    for group in groups(kinds):
        if kinds[group[0]] != ONLINE_MAX:
            (i,) = group
            op = combine_op(kinds[i], lhs[i], rhs[i])
            ops.append(op)
            merged[i] = op.results[0]
            continue
        m, x = lhs[group[0]], rhs[group[0]]
        one = arith.ConstantOp(FloatAttr(1.0, m.type))
        empty = arith.ConstantOp(FloatAttr(-math.inf, m.type))
        same = arith.CmpfOp(x, m, "oeq")
        unset = arith.CmpfOp(m, empty.result, "oeq")
        both_empty = arith.AndIOp(same.result, unset.result)
        up = arith.CmpfOp(x, m, "ogt")
        diff = arith.SubfOp(x, m)
        size = mathd.AbsFOp(diff.result)
        minus = arith.NegfOp(size.result)
        exp = mathd.ExpOp(minus.result)
        e = arith.SelectOp(both_empty.result, one.result, exp.result)
        nothing = arith.SubfOp(x, x)
        own = arith.AddfOp(nothing.result, one.result)
        e.result.name_hint, up.result.name_hint, own.result.name_hint = "scale", "rising", "own"
        ops += [one, empty, same, unset, both_empty, up, diff, size, minus, exp, e, nothing, own]
        for i in group[1:]:
            a, v = lhs[i], rhs[i]
            scaled_a = arith.MulfOp(a, e.result)
            weighted = arith.MulfOp(v, own.result)
            rising = arith.AddfOp(scaled_a.result, weighted.result)
            scaled_v = arith.MulfOp(v, e.result)
            level = arith.AddfOp(a, scaled_v.result)
            chosen = arith.SelectOp(up.result, rising.result, level.result)
            ops += [scaled_a, weighted, rising, scaled_v, level, chosen]
            merged[i] = chosen.result
        nan = arith.CmpfOp(x, x, "uno")
        takes = arith.OrIOp(up.result, nan.result)
        top = arith.SelectOp(takes.result, x, m)
        ops += [nan, takes, top]
        merged[group[0]] = top.result
    return ops, merged  # type: ignore[return-value]


def cuda_online_step(
    accs: Sequence[str],
    values: Sequence[str],
    fresh: Callable[[str], str],
    literal: Callable[[float], str],
    ctype: str = "float",
    suffix: str = "f",
    branch: bool = True,
) -> list[str]:
    """C statements merging an online group's accumulators ``accs`` (mutable locals:
    the maximum, then the sums) with a step's ``values`` by the online rule; ``fresh``
    names the temporaries, ``literal`` spells a constant of the type, ``suffix`` is the
    math functions' type suffix (``f`` for float, empty for double). ``branch=False``:
    many sums merge without a branch, each side's factor selected once (``a * sa + v *
    sv``: a multiply more a sum, no divergence where threads of a warp disagree on
    whether their maximum rose)."""
    m, x = accs[0], values[0]
    e, up, own = fresh(f"{m}_scale"), fresh(f"{m}_rising"), fresh(f"{m}_own")
    one, empty = literal(1.0), literal(-math.inf)
    exp = f"exp{suffix}(-fabs{suffix}({x} - {m}))"
    lines = [
        f"const {ctype} {e} = {x} == {m} && {m} == {empty} ? {one} : {exp};",
        f"const bool {up} = {x} > {m};",
        f"const {ctype} {own} = {x} - {x} + {one};",
    ]
    pairs = list(zip(accs[1:], values[1:], strict=True))
    if len(pairs) == 1:
        ((a, v),) = pairs
        lines.append(f"{a} = {up} ? {a} * {e} + {v} * {own} : {a} + {v} * {e};")
    elif not branch:
        sa, sv = fresh(f"{m}_keep"), fresh(f"{m}_take")
        lines.append(f"const {ctype} {sa} = {up} ? {e} : {one};")
        lines.append(f"const {ctype} {sv} = {up} ? {own} : {e};")
        lines += [f"{a} = {a} * {sa} + {v} * {sv};" for a, v in pairs]
    else:
        # Many sums (attention's value columns): a branch, so a step whose maximum
        # holds (most of them, once a row's first scores are in) costs one multiply-add
        # a sum, where selecting between the two forms computes both.
        lines.append(f"if ({up}) {{")
        lines += [f"  {a} = {a} * {e} + {v} * {own};" for a, v in pairs]
        lines.append("} else {")
        lines += [f"  {a} = {a} + {v} * {e};" for a, v in pairs]
        lines.append("}")
    lines.append(f"{m} = {up} || {x} != {x} ? {x} : {m};")
    return lines
