"""fuse: merge producer kernels into their consumers by substitution, under a cost guard.

After ``lift-to-loop`` every tensor op is its own kernel, and each intermediate tensor is a
buffer written by one kernel and read by the next. Fusion removes those buffers the way
an engineer does by hand: where a consumer kernel C loads an element of a tensor that a
producer kernel P computes, it computes that element *there* instead.

1. **Substitute.** Each ``loop.load`` of P's tensor in C is replaced by a clone of the
   ops that feed P's single store (whole reduce loops included), with P's free induction
   variables replaced by C's index expressions for that load. A P load of an input at
   ``m(P ivs)`` becomes a C load at ``m`` composed with those expressions (so a
   broadcast, a transpose, a reshape or a slice folds into the index); where a P iv is
   used as a value it is materialised as an ``affine.apply``. P's inputs become C's.
   An index that is data (a gather's loaded row id) substitutes like an iv: the id's
   load and cast move in with the rest of P's slice, and hoisting puts them where the
   values they read are defined (once per row for an embedding feeding a norm).
2. **Hoist.** An op whose operands are all defined outside its loop moves before that
   loop, repeatedly: pure scalar ops, loads of kernel inputs (read-only inside a kernel)
   and whole reduce loops. This puts RMSNorm's sum-of-squares before the normalising
   loop instead of recomputing it per element.
3. **Deduplicate** identical ops (identical loads; identical reduce loops: softmax's max
   reduce arrives twice, once through the exp-sum and once through the normalise loop),
   then drop dead ones: xDSL's own common subexpression and dead code elimination, from
   the ops' declared effects. Hoisting stays the project's: xDSL's loop-invariant code
   motion moves only side-effect-free ops, and a load of a kernel input is invariant
   (nothing in a kernel writes its inputs) though it reads memory.

Order: two sweeps, each a reverse walk (consumers before producers) repeated to a
fixpoint; within one consumer, producers it alone reads before shared ones.

* The first sweep fuses only ``elementwise_pair``s: a reduction-free consumer takes in a
  reduction-free producer with at least as many elements (an elementwise chain, a view
  that is not a broadcast), or a producer that reduces, element for element, when the
  consumer computes something (a matmul's bias, activation or residual epilogue). No
  arithmetic moves into a larger iteration space there, so nothing it builds can later
  be materialised bigger than a tensor the program already wrote. This is what puts
  RoPE's ``q * cos`` and ``rotate_half(q) * sin`` and their sum in one kernel before the
  score matmul, which refuses the whole (it would recompute it per key), sees any part
  of it; in one sweep the matmul took the cheap final add and stranded the two products
  as kernels of their own. The size rule is what keeps a matmul's (M, K, N) broadcast
  product, reduction-free itself, from taking in a norm or a RoPE table and being
  materialised at gigabytes when its reduce then refuses them.
* The second sweep tries every pair. Pulling producers into the *last* kernel first
  means a refused substitution leaves the materialised tensor where the chain is
  narrowest: for ``matmul(transpose(matmul))`` the inner matmul's (M, K) result is kept,
  not the (M, K, N) broadcast product a forward sweep would have fused it into before
  meeting the refusal. Sole producers first lets a shared one become sole: softmax's
  exp is read by the sum and by the division, and moves in once the division has taken
  in the sum. A refusal is tried again when either kernel has changed since, so the
  mask reaches the scores once it has taken in the gathers that built it.

The guard is one function, ``fusion_cost(producer, consumer, fused)``, judging the fused
kernel itself (after hoisting and deduplication). It refuses a substitution that would

* run the producer's reductions more often than the producer does (a reduce loop left
  inside a loop it does not depend on: ``matmul(transpose(matmul))``, a column sum read
  by every row, the cumsum of the sequence ids read at both ends of every mask element)
  — bound ``max_reduce_recompute``;
* copy a producer that other kernels still read, unless it is cheap to copy
  (``duplication_problem``: no reduction; a view, arithmetic on function inputs, or
  arithmetic that expands the results of kernels that reduce, as the attention mask
  does): copies of copies compound, as a residual stream would be recomputed from the
  first layer in every layer;
* recompute arithmetic in a kernel where it costs time: the kernel's ops, counted per
  execution, against each op once per point of the loops it depends on, over
  ``max_recompute`` — unless the kernel stays memory-bound (at most ``max_intensity``
  ops per byte of its minimum HBM traffic, half the H200's balance point) or is tiny
  (at most ``launch_ops`` ops: it costs a launch whatever it does). So a cos table
  recomputed per head in RoPE, or the mask recomputed per head, passes, and a norm
  recomputed per output column inside a matmul's K loop does not;
* read more bytes than the two kernels apart — bound ``max_read_growth`` (a buffer of at
  most ``cached_bytes``, which stays in cache, counts once).

Refused pairs stay separate kernels; the consumer records why in ``fusion.refused``
(``refusals(module)`` lists them for the CLI; ``fuse_module`` returns them).

A producer is removed once nothing uses it; one still used elsewhere (returned by the
function, say) stays. Each fused kernel keeps the consumer's name and merges ``covers``.
The pass is deterministic, and idempotent: it stops at a fixpoint, so a second run finds
nothing to do.

**Identical layers are fused once.** The answer for a pair (the fused kernel, or why
not) depends only on the two kernels' structure, on which of their inputs are one
value, and on a few facts about their neighbours (``FusionMemo.key``). ``FusionMemo``
remembers each answer by that key, and answers a pair met again (the same two kernels in
the next decoder layer) by cloning the remembered fused body under this pair's names, so
a whole model costs about one layer's substitutions: TinyLlama's 22 layers make about
6000 attempts, of which under 300 are computed. The result is the one fusing every
pair would give (``Fuse(memoise=False)``; a test compares the two on a two-layer model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import affine, arith
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter
from xdsl.traits import Pure
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce

from deplodock.dialects.access import buffer_type
from deplodock.dialects.affine_syntax import index_map_for
from deplodock.dialects.clone import COVERS, REFUSED, clone_region, same, structure
from deplodock.dialects.combine import ONLINE_MAX
from deplodock.dialects.loop import ForOp, KernelOp, LoadOp, StoreOp, YieldOp
from deplodock.dialects.torch import merge_locations
from deplodock.passes.loop.cost import (
    arithmetic_work,
    bytes_read,
    dependences,
    external_operands,
    is_arithmetic,
    minimum_bytes,
    minimum_traffic,
    trips,
)

# --- the pass ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fuse(ModulePass):
    """Fuse producer kernels into consumers (see the module docstring)."""

    name = "fuse"

    max_recompute: float = 2.0
    """Refuse when a fused kernel would run more than this many times the arithmetic it
    needs (each op once per point of the loops it depends on), unless it stays memory-bound
    (``max_intensity``) or tiny (``launch_ops``)."""
    max_intensity: float = 8.0
    """Recomputation is free in a kernel that does at most this many ops per byte of its
    minimum HBM traffic: half the H200's balance point (~67 TFLOP/s fp32 over ~4.8 TB/s,
    about 14 ops/byte), so the recomputed ops hide under the memory time."""
    launch_ops: int = 1 << 20
    """Recomputation is free in a kernel that executes at most this many ops in all: it
    costs about a launch whatever it computes (a 128x128 mask, a cumsum over 128)."""
    max_read_growth: float = 2.0
    """Refuse when the fused kernel reads more than this many times the pair's bytes."""
    cached_bytes: int = 64 * 1024
    """Loads of a buffer this small count its bytes once in the read-growth bound: it
    stays in an SM's L1 (256 KB with shared memory on the H200) after the first touch, as
    a RoPE frequency table or a mask's 128 sequence ids do."""
    max_reduce_recompute: float = 1.0
    """Refuse when a producer's reduce loops run this many times more often once fused."""
    copy_shared: bool = False
    """Copy a producer that other kernels also read even when it is not cheap to copy."""
    matmul_alone: bool = True
    """Keep a matmul apart from any other reduction (the ``matmul and reduction`` refusal)."""
    nest_reductions: bool = False
    """Fuse a reduction over another reduction's results, nesting their loops (else the
    ``nested reductions`` refusal keeps them apart)."""
    memoise: bool = True
    """Answer a pair structurally identical to one already tried (the same two kernels
    in another decoder layer) by replaying that answer instead of substituting again."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_module(op, self)


def fuse_module(
    module: ModuleOp, options: Fuse | None = None, memo: FusionMemo | None = None
) -> list[str]:
    """Fuse in place; return the refused substitutions, one line each, in program order.

    Two sweeps, each to a fixpoint: elementwise chains first (``elementwise_pair``), then
    every pair.
    """
    options = options or Fuse()
    if memo is None and options.memoise:
        memo = FusionMemo()
    for elementwise_only in (True, False):
        pattern = AbsorbProducers(options, elementwise_only=elementwise_only, memo=memo)
        walker = PatternRewriteWalker(pattern, walk_reverse=True, apply_recursively=True)
        walker.rewrite_module(module)
    return refusals(module)


def refusals(module: ModuleOp) -> list[str]:
    """``@consumer: @producer not fused: why``, from every kernel's ``fusion.refused``."""
    return [
        f"@{op.sym_name.data}: {reason.data}"
        for op in module.walk()
        if isinstance(op, KernelOp) and isinstance(refused := op.attributes.get(REFUSED), ArrayAttr)
        for reason in refused.data
    ]


@dataclass
class AbsorbProducers(RewritePattern):
    """Substitute into a kernel the first producer kernel the cost guard accepts."""

    options: Fuse
    elementwise_only: bool = False
    """The first sweep: only pairs ``elementwise_pair`` admits, and no records."""
    memo: FusionMemo | None = None
    """Answers by structure, shared by both sweeps (None: every pair is tried)."""
    refused: dict[tuple, str] = field(default_factory=dict)
    """Without a memo, refusals so far by (producer, consumer, the producer's users).
    Kernels are replaced, never changed in place, so a key seen again gets the same
    answer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: KernelOp, rewriter: PatternRewriter) -> None:
        reasons: list[str] = []
        for producer in producers_of(op):
            if self.elementwise_only and not self._elementwise_pair(producer, op):
                continue
            if self.memo is not None:
                fused = self.memo.fuse(producer, op, self._try)
            else:
                users = frozenset(use.operation for use in producer.results[0].uses)
                fused = self.refused.get((producer, op, users)) or self._try(producer, op)
                if isinstance(fused, str):
                    self.refused[(producer, op, users)] = fused
            if isinstance(fused, KernelOp):
                rewriter.replace(op, fused)
                if not producer.results[0].uses:
                    rewriter.erase(producer)
                return
            reasons.append(f"@{producer.sym_name.data} not fused: {fused}")
        # A record, not a rewrite: set without telling the rewriter, so it is no "change".
        if self.elementwise_only:
            return
        if reasons:
            op.attributes[REFUSED] = ArrayAttr([StringAttr(r) for r in reasons])
        else:
            op.attributes.pop(REFUSED, None)

    def _elementwise_pair(self, producer: KernelOp, consumer: KernelOp) -> bool:
        if self.memo is None:
            return elementwise_pair(producer, consumer)
        return self.memo.elementwise_pair(producer, consumer)

    def _try(self, producer: KernelOp, consumer: KernelOp) -> KernelOp | str:
        """The fused kernel, or why there is none."""
        problem = (
            why_not_substitutable(producer, consumer)
            or walk_recompute(producer, consumer, self.options)
            or pair_refusal(producer, consumer, self.options)
        )
        if problem is not None:
            return problem
        fused = substitute(consumer, producer)
        decision = fusion_cost(producer, consumer, fused, self.options, paired=True)
        if decision.ok:
            return fused
        fused.erase()
        return decision.reason


# --- memoisation: identical layers are fused once ------------------------------------------


@dataclass
class _Facts:
    """What the memo needs to know of one kernel (computed once per kernel object)."""

    shape: int
    """The kernel's structure without names, interned to a small integer."""
    hints: tuple[str | None, ...]
    """The name hints of its values (results, loop variables) in walk order."""
    reduces: bool


@dataclass
class _Answer:
    """A remembered answer: why not, or the fused kernel's body and the names it used."""

    reason: str | None
    body: Region | None = None
    hints: tuple[str | None, ...] = ()
    """The name hints of the producer's and consumer's values when it was made."""
    shape: int | None = None
    """The fused kernel's ``_Facts.shape``, once known (every replay has it)."""
    reduces: bool = False
    body_hints: tuple[tuple[str | None, bool], ...] = ()
    """The fused kernel's ``_Facts.hints``, each with whether it is a loop variable (those
    keep their names in a replay)."""
    body_locations: tuple[int | None, ...] = ()
    """For each op of ``body`` (walk order), where its location came from: the position of
    the op with that location among the pair's ops (``_pair_ops``); None: made by the
    fusion itself, kept as it is."""


@dataclass
class FusionMemo:
    """Answers of ``AbsorbProducers._try`` by the structure of the pair.

    A decoder layer's kernels repeat in every layer, equal but for names (of parameters,
    of kernels, of values). The answer for a pair, the fused kernel or the refusal, is a
    function of the two kernels' structure, of which of their inputs are the same value,
    and of what ``duplication_problem`` reads (whether the producer has other users, and
    which of its inputs other kernels compute and whether those reduce). With those as
    the key, a pair met again is answered by cloning the remembered fused body and
    giving it this pair's names: its buffers as ``substitute`` names them, its values by
    the correspondence between the two pairs' values, which must map each old name to
    one new name (else the pair is fused afresh). So the result is the one fusing the pair
    would give, which ``test_memoised_fusion_equals_fusing_each_layer`` checks.
    """

    answers: dict[tuple, _Answer] = field(default_factory=dict)
    facts: dict[KernelOp, _Facts] = field(default_factory=dict)
    shapes: dict[tuple, int] = field(default_factory=dict)
    computed: int = 0
    replayed: int = 0

    def kernel(self, kernel: KernelOp) -> _Facts:
        facts = self.facts.get(kernel)
        if facts is None:
            shape, hints = structure(kernel)
            facts = self.facts[kernel] = _Facts(
                self.shapes.setdefault(shape, len(self.shapes)),
                hints,
                any(isinstance(op, ForOp) and op.is_reduce for op in kernel.walk()),
            )
        return facts

    def _replayed(self, answer: _Answer, fused: KernelOp, names: dict | None) -> None:
        """Record what a replayed kernel is without walking or hashing it again."""
        if answer.shape is None:
            facts = self.kernel(fused)
            answer.shape, answer.reduces = facts.shape, facts.reduces
            return
        if names is None:
            hints = tuple(h for h, _ in answer.body_hints)
        else:
            hints = tuple(h if iv else names.get(h, h) for h, iv in answer.body_hints)
        self.facts[fused] = _Facts(answer.shape, hints, answer.reduces)

    def elementwise_pair(self, producer: KernelOp, consumer: KernelOp) -> bool:
        key = ("elementwise", self.kernel(producer).shape, self.kernel(consumer).shape)
        answer = self.answers.get(key)
        if answer is None:
            answer = self.answers[key] = _Answer(
                None if elementwise_pair(producer, consumer) else "no"
            )
        return answer.reason is None

    def key(self, producer: KernelOp, consumer: KernelOp) -> tuple:
        ids: dict[SSAValue, int] = {}
        for value in (*consumer.inputs, *producer.inputs, producer.results[0]):
            ids.setdefault(value, len(ids))
        tensor = producer.results[0]
        return (
            self.kernel(producer).shape,
            self.kernel(consumer).shape,
            tuple(ids[v] for v in (*consumer.inputs, *producer.inputs, tensor)),
            any(use.operation is not consumer for use in tensor.uses),
            tuple(
                self.kernel(v.owner).reduces if isinstance(v.owner, KernelOp) else None
                for v in producer.inputs
            ),
        )

    def fuse(
        self,
        producer: KernelOp,
        consumer: KernelOp,
        attempt: Callable[[KernelOp, KernelOp], KernelOp | str],
    ) -> KernelOp | str:
        """The answer for the pair: remembered, or ``attempt``'s (then remembered)."""
        key = self.key(producer, consumer)
        answer = self.answers.get(key)
        hints = self.kernel(producer).hints + self.kernel(consumer).hints
        if answer is not None:
            if answer.reason is not None:
                self.replayed += 1
                return answer.reason
            assert answer.body is not None
            names = _renaming(answer.hints, hints)
            if names is not False:
                fused = _replay(answer, names, producer, consumer)
                self.replayed += 1
                self._replayed(answer, fused, names)
                return fused
        self.computed += 1
        result = attempt(producer, consumer)
        if answer is None:
            if isinstance(result, str):
                self.answers[key] = _Answer(result)
            else:
                self.answers[key] = _Answer(
                    None,
                    result.body.clone(),
                    hints,
                    body_hints=_body_hints(result),
                    body_locations=_location_sources(result, producer, consumer),
                )
        return result


def _pair_ops(producer: KernelOp, consumer: KernelOp) -> list[Operation]:
    """The ops of a pair's bodies in walk order: two pairs of one key align op by op."""
    return [*producer.body.walk(), *consumer.body.walk()]


def _location_sources(
    fused: KernelOp, producer: KernelOp, consumer: KernelOp
) -> tuple[int | None, ...]:
    """``_Answer.body_locations`` of a fused kernel made from the pair."""
    where: dict[Attribute, int] = {}
    for i, op in enumerate(_pair_ops(producer, consumer)):
        where.setdefault(op.location, i)
    return tuple(where.get(op.location) for op in fused.body.walk())


def _renaming(
    old: tuple[str | None, ...], new: tuple[str | None, ...]
) -> dict[str | None, str | None] | None | Literal[False]:
    """The map of old name hints to new ones (None: the same names; False: not a map)."""
    if old == new:
        return None
    names: dict[str | None, str | None] = {}
    for a, b in zip(old, new, strict=True):
        if names.setdefault(a, b) != b:
            return False
    return names


def _body_hints(kernel: KernelOp) -> tuple[tuple[str | None, bool], ...]:
    """``structure``'s hints, each marked with whether it is a block argument."""
    hints: list[tuple[str | None, bool]] = []
    for op in kernel.body.walk():
        hints.extend((r.name_hint, False) for r in op.results)
        for region in op.regions:
            for b in region.blocks:
                hints.extend((arg.name_hint, True) for arg in b.args)
    return tuple(hints)


def _replay(
    answer: _Answer, names: dict | None, producer: KernelOp, consumer: KernelOp
) -> KernelOp:
    """The remembered fused body as this pair's kernel, named as fusing it would name it:
    buffers as ``fused_inputs`` names them, values renamed through ``names``, each op at
    the location of the pair's op it came from."""
    assert answer.body is not None
    inputs, hints = fused_inputs(consumer, producer)
    rename = (lambda hint: names.get(hint, hint)) if names else same
    region = clone_region(answer.body, {}, rename)
    pair = _pair_ops(producer, consumer)
    for op, source in zip(region.walk(), answer.body_locations, strict=True):
        if source is not None:
            op.location = pair[source].location
    for arg, hint in zip(region.block.args, hints, strict=True):
        arg.name_hint = hint
    fused = KernelOp(consumer.sym_name.data, inputs, consumer.result_types, region)
    fused.attributes.update(consumer.attributes)
    fused.attributes[COVERS] = _merged_covers(producer, consumer)
    fused.location = merge_locations(producer.location, consumer.location)
    for a, b in zip(consumer.results, fused.results, strict=True):
        b.name_hint = a.name_hint
    return fused


def elementwise_pair(producer: KernelOp, consumer: KernelOp) -> bool:
    """A pair the first sweep fuses: neither kernel reduces, and the producer's tensor has
    at least as many elements as the consumer's.

    So the first sweep never moves arithmetic into a larger iteration space: whatever it
    builds is materialised, if its consumer later refuses it, at a size some kernel
    already wrote. Without the size rule the (M, K, N) broadcast product of a matmul,
    reduction-free itself, would take in a norm or a RoPE table before its reduce could
    refuse them, and be materialised at gigabytes. With it, RoPE's q * cos and
    rotate_half(q) * sin meet in one kernel before the score matmul sees either.
    """
    if reduce_runs(consumer):
        return False
    if reduce_runs(producer):
        return elements(producer) == elements(consumer) and any(
            is_arithmetic(op) for op in consumer.walk() if op is not consumer
        )
    return elements(producer) >= elements(consumer)


def elements(kernel: KernelOp) -> int:
    """Elements of the kernel's (first) result."""
    type_ = kernel.result_types[0]
    assert isinstance(type_, TensorType)
    return math.prod(type_.get_shape())


def producers_of(consumer: KernelOp) -> list[KernelOp]:
    """The single-result kernels whose tensors ``consumer`` reads: those it is the only
    user of first (they move in whole), then shared ones, each group in operand order.

    Taking sole producers first lets a shared one become sole: softmax's exp is read by
    the sum and by the division; once the division has taken in the sum, exp moves in.
    """
    found: list[KernelOp] = []
    for value in consumer.inputs:
        owner = value.owner
        if isinstance(owner, KernelOp) and len(owner.results) == 1 and owner not in found:
            found.append(owner)
    return sorted(found, key=lambda p: any(u.operation is not consumer for u in p.results[0].uses))


# --- substitution --------------------------------------------------------------------------


def producer_store(producer: KernelOp) -> StoreOp | str:
    """The single store of ``producer``, or why it cannot be substituted element-wise."""
    stores = [op for op in producer.walk() if isinstance(op, StoreOp)]
    if len(stores) != 1:
        return f"it has {len(stores)} stores, not one"
    (store,) = stores
    if any(isinstance(op, LoadOp) and op.buffer is store.buffer for op in producer.walk()):
        return "it reads its own output"
    enclosing: list[SSAValue] = []
    parent = store.parent_op()
    while parent is not producer:
        if not isinstance(parent, ForOp) or parent.is_reduce:
            return "its store is inside a reduce loop"
        enclosing.append(parent.induction_var)
        parent = parent.parent_op()
    used: list[SSAValue] = []
    for expr in store.map.data.results:
        if isinstance(expr, AffineDimExpr):
            used.append(store.indices[expr.position])
        elif not isinstance(expr, AffineConstantExpr):
            return f"it stores at a computed index ({expr})"
    if len(used) != len(enclosing) or any(not any(u is e for u in used) for e in enclosing):
        return "its store does not write one element per iteration of its loops"
    return store


def why_not_substitutable(producer: KernelOp, consumer: KernelOp) -> str | None:
    """Why ``producer`` cannot be substituted into ``consumer`` at all (None: it can)."""
    store = producer_store(producer)
    if isinstance(store, str):
        return store
    for value, buf in zip(consumer.inputs, consumer.input_buffers, strict=True):
        if value is producer.results[0]:
            for use in buf.uses:
                if not (isinstance(use.operation, LoadOp) and use.index == 0):
                    return "the consumer uses its tensor other than by loads"
    return None


def substitute(consumer: KernelOp, producer: KernelOp) -> KernelOp:
    """A new kernel: ``consumer`` with every load of ``producer``'s tensor recomputed.

    The consumer and producer are left as they are; the caller swaps the result in.
    """
    store = producer_store(producer)
    assert isinstance(store, StoreOp)
    tensor = producer.results[0]
    inputs, hints = fused_inputs(consumer, producer)
    block = Block(
        arg_types=[buffer_type(v.type) for v in inputs]
        + [buffer_type(r.type) for r in consumer.results]
    )
    for arg, hint in zip(block.args, hints, strict=True):
        arg.name_hint = hint
    mapper: dict[SSAValue, SSAValue] = {}
    for value, buf in zip(consumer.inputs, consumer.input_buffers, strict=True):
        if value is not tensor:
            mapper[buf] = block.args[_position(inputs, value)]
    for old, new in zip(consumer.output_buffers, block.args[len(inputs) :], strict=True):
        mapper[old] = new
    # The producer's buffer, until every load of it is replaced.
    placeholder = block.insert_arg(buffer_type(tensor.type), len(block.args))
    for value, buf in zip(consumer.inputs, consumer.input_buffers, strict=True):
        if value is tensor:
            mapper[buf] = placeholder
    for op in consumer.body.block.ops:
        block.add_op(op.clone(mapper))

    producer_buffers = {
        buf: block.args[_position(inputs, value)]
        for value, buf in zip(producer.inputs, producer.input_buffers, strict=True)
    }
    slice_ = store_slice(store)
    for load in [u.operation for u in list(placeholder.uses)]:
        assert isinstance(load, LoadOp)
        _inline_element(load, store, slice_, producer_buffers)
    block.erase_arg(placeholder)

    fused = KernelOp(consumer.sym_name.data, inputs, consumer.result_types, Region(block))
    fused.attributes.update(consumer.attributes)
    fused.attributes[COVERS] = _merged_covers(producer, consumer)
    fused.location = merge_locations(producer.location, consumer.location)
    for old, new in zip(consumer.results, fused.results, strict=True):
        new.name_hint = old.name_hint
    cleanup(fused)
    return fused


def fused_inputs(consumer: KernelOp, producer: KernelOp) -> tuple[list[SSAValue], list[str | None]]:
    """The fused kernel's inputs, and the name hints of its buffers (inputs, then outputs).

    The producer's inputs take the place of its tensor, so operands read in the order the
    computation uses them (x, bias, w for the matmul chain). A buffer keeps the name the
    consumer gave it, else the producer's.
    """
    tensor = producer.results[0]
    spliced: list[SSAValue] = []
    for value in consumer.inputs:
        spliced.extend(producer.inputs if value is tensor else [value])
    inputs = _distinct(spliced)
    hints: list[str | None] = [None] * len(inputs)
    named = [
        *(
            (v, b)
            for v, b in zip(consumer.inputs, consumer.input_buffers, strict=True)
            if v is not tensor
        ),
        *zip(producer.inputs, producer.input_buffers, strict=True),
    ]
    for value, buf in named:
        at = _position(inputs, value)
        hints[at] = hints[at] or buf.name_hint
    return inputs, hints + [buf.name_hint for buf in consumer.output_buffers]


def store_slice(store: StoreOp) -> list[Operation]:
    """The producer ops the stored value needs, whole (regions included), in program order.

    They all sit in blocks enclosing the store (values are used where they dominate), so
    cloning them in order at one point keeps every definition before its uses.
    """
    needed: set[Operation] = set()
    pending = [store.value]
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Operation) and owner not in needed:
            needed.add(owner)
            pending.extend(external_operands(owner))
    kernel = store.parent_op()
    while not isinstance(kernel, KernelOp):
        assert kernel is not None
        kernel = kernel.parent_op()
    return [op for op in kernel.walk() if op in needed]


def _inline_element(
    load: LoadOp,
    store: StoreOp,
    slice_: Sequence[Operation],
    producer_buffers: dict[SSAValue, SSAValue],
) -> None:
    """Replace ``load`` by the producer's computation of the element it reads."""
    block = load.parent_block()
    assert block is not None
    mapper: dict[SSAValue, SSAValue] = dict(producer_buffers)
    for position, expr in enumerate(store.map.data.results):
        if not isinstance(expr, AffineDimExpr):
            continue  # an extent-1 axis: both sides index it with 0
        iv = store.indices[expr.position]
        index = load.map.data.results[position]
        if isinstance(index, AffineDimExpr):
            mapper[iv] = load.indices[index.position]
        else:
            map_, operands = index_map_for(AffineMap(len(load.indices), 0, (index,)), load.indices)
            apply = affine.ApplyOp(operands, AffineMapAttr(map_))
            apply.result.name_hint = iv.name_hint
            block.insert_op_before(apply, load)
            mapper[iv] = apply.result
    for op in slice_:
        block.insert_op_before(op.clone(mapper), load)
    value = mapper.get(store.value, store.value)
    load.result.replace_all_uses_with(value)
    block.erase_op(load)


def _merged_covers(producer: KernelOp, consumer: KernelOp) -> ArrayAttr:
    names: list[str] = []
    for kernel in (producer, consumer):
        covers = kernel.attributes.get(COVERS)
        for name in covers.data if isinstance(covers, ArrayAttr) else ():
            if isinstance(name, StringAttr) and name.data not in names:
                names.append(name.data)
    return ArrayAttr([StringAttr(n) for n in names])


def _distinct(values: Iterable[SSAValue]) -> list[SSAValue]:
    out: list[SSAValue] = []
    for v in values:
        if not any(v is o for o in out):
            out.append(v)
    return out


def _position(values: Sequence[SSAValue], value: SSAValue) -> int:
    return next(i for i, v in enumerate(values) if v is value)


# --- cleanup: fold indices, hoist, deduplicate, drop dead ops, rename ----------------------


def cleanup(kernel: KernelOp) -> None:
    """Bring a freshly substituted kernel to its canonical form (idempotent).

    A round hoists, then merges twins, then drops dead ops; another round follows only
    when merging or dropping changed something (a merged operand may now be defined
    outside a loop). What hoisting alone changed needs none: one hoisting pass moves
    every op as far out as it goes (``hoist_invariants``), and the merge and the drop
    that followed it in the round saw its result. On TinyLlama's fusions that spares 89
    of 382 rounds, each a walk, a CSE and a DCE of the kernel."""
    inputs = set(kernel.input_buffers)
    fold_applies(kernel)
    while True:
        hoist_invariants(kernel, inputs)
        changed = deduplicate(kernel)
        changed |= drop_dead(kernel)
        if not changed:
            break
    rename_ivs(kernel)


def fold_applies(kernel: KernelOp) -> None:
    """Compose ``affine.apply`` results used as load indices into the load's map."""
    loads = [
        op
        for op in kernel.walk()
        if isinstance(op, LoadOp) and any(isinstance(v.owner, affine.ApplyOp) for v in op.indices)
    ]
    while loads:
        for load in loads:
            _fold_into(load)
        drop_dead(kernel)
        loads = [
            op
            for op in kernel.walk()
            if isinstance(op, LoadOp)
            and any(isinstance(v.owner, affine.ApplyOp) for v in op.indices)
        ]


def _fold_into(load: LoadOp) -> None:
    """Replace ``load`` by one whose map reads through its ``affine.apply`` operands."""
    operands: list[SSAValue] = []

    def dim_of(value: SSAValue) -> AffineExpr:
        if not any(value is o for o in operands):
            operands.append(value)
        return AffineExpr.dimension(_position(operands, value))

    replacement: list[AffineExpr] = []
    for value in load.indices:
        apply = value.owner
        if isinstance(apply, affine.ApplyOp):
            inner = [dim_of(v) for v in apply.mapOperands]
            replacement.append(apply.map.data.results[0].replace_dims_and_symbols(inner, []))
        else:
            replacement.append(dim_of(value))
    results = tuple(r.replace_dims_and_symbols(replacement, []) for r in load.map.data.results)
    new = LoadOp(load.buffer, AffineMap(len(operands), 0, results), operands)
    new.result.name_hint = load.result.name_hint
    block = load.parent_block()
    assert block is not None
    block.insert_op_before(new, load)
    load.result.replace_all_uses_with(new.result)
    block.erase_op(load)


def is_pure(op: Operation, inputs: set[SSAValue]) -> bool:
    """Free of effects inside its kernel: may be moved, merged with a twin, or dropped.

    ``inputs`` are the kernel's input buffers: loads from them count, since nothing in
    the kernel writes an input. A reduce loop counts when its whole body does.
    """
    if isinstance(op, LoadOp):
        return op.buffer in inputs
    if isinstance(op, ForOp):
        return op.is_reduce and all(
            isinstance(inner, YieldOp) or is_pure(inner, inputs) for inner in op.body.block.ops
        )
    return not op.regions and op.has_trait(Pure) and not isinstance(op, YieldOp)


def hoist_invariants(kernel: KernelOp, inputs: set[SSAValue]) -> bool:
    """Move each pure op before the outermost loop that does not define its operands.

    One pass in program order suffices: an op's operands are defined before it, so they
    have already moved as far out as they go when the op's turn comes.
    """
    changed = False
    for op in list(kernel.walk()):
        loop = op.parent_op()
        if not isinstance(loop, ForOp) or not is_pure(op, inputs):
            continue
        operands = list(external_operands(op))
        target: ForOp | None = None
        while isinstance(loop, ForOp) and not any(loop.is_ancestor(v.owner) for v in operands):
            target, loop = loop, loop.parent_op()
        if target is not None:
            op.detach()
            block = target.parent_block()
            assert block is not None
            block.insert_op_before(op, target)
            changed = True
    return changed


def deduplicate(kernel: KernelOp) -> bool:
    """Merge each op into an identical earlier one that dominates it (xDSL's common
    subexpression elimination: pure ops anywhere, loads and reduce loops that only read
    when nothing writes between them). Whether it erased an op: the rewriter counts its
    erasures, rather than the kernel's ops being counted before and after."""
    rewriter = _CountingRewriter()
    cse(kernel.body, rewriter)
    return rewriter.erased > 0


class _CountingRewriter(Rewriter):
    """xDSL's rewriter, counting the ops that common subexpression elimination erases
    (every op it drops or merges into a twin goes through ``erase_op``)."""

    def __init__(self) -> None:
        self.erased = 0

    def erase_op(self, op: Operation, safe_erase: bool = True) -> None:
        self.erased += 1
        Rewriter.erase_op(op, safe_erase)


def drop_dead(kernel: KernelOp) -> bool:
    """Erase the ops whose results nothing uses and that have no effect (xDSL's region
    dead-code elimination: loads, pure ops, reduce loops whose bodies only read).
    Whether it erased any, as ``region_dce`` reports it."""
    return region_dce(kernel.body)


def rename_ivs(kernel: KernelOp) -> None:
    """Induction variables a0, a1, .. in program order, as lift-to-loop names them."""
    loops = [op for op in kernel.walk() if isinstance(op, ForOp)]
    for i, loop in enumerate(loops):
        loop.induction_var.name_hint = f"a{i}"


# --- the cost guard ------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionDecision:
    ok: bool
    reason: str


def reduce_runs(kernel: KernelOp) -> int:
    """How many times reduce loops start (each run is one full reduction)."""
    return sum(trips(op) for op in kernel.walk() if isinstance(op, ForOp) and op.is_reduce)


def nested_reduces(kernel: KernelOp) -> int:
    """Reduce loops of ``kernel`` inside another reduce loop, but for an online group's
    (``weighs_scores``)."""
    count = 0
    for op in kernel.walk():
        if isinstance(op, ForOp) and op.is_reduce:
            parent = op.parent_op()
            while parent is not None and parent is not kernel:
                if isinstance(parent, ForOp) and parent.is_reduce:
                    count += not weighs_scores(parent)
                    break
                parent = parent.parent_op()
    return count


def weighs_scores(loop_op: ForOp) -> bool:
    """Whether ``loop_op`` is an online group's walk over a row (``ten.softmax_sum``'s):
    its scores are meant to be computed inside it, a matmul's dot products included, so
    that attention's S x S scores never reach memory (``fusion_cost`` lets them in)."""
    return ONLINE_MAX in loop_op.kinds


def _weighs_only(kernel: KernelOp) -> bool:
    """Every top-level reduce loop of ``kernel`` is an online group's."""
    loops = [
        op
        for op in kernel.walk()
        if isinstance(op, ForOp) and op.is_reduce and not _inside_reduce(op, kernel)
    ]
    return bool(loops) and all(weighs_scores(op) for op in loops)


def _inside_reduce(op: Operation, kernel: KernelOp) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not kernel:
        if isinstance(parent, ForOp) and parent.is_reduce:
            return True
        parent = parent.parent_op()
    return False


def duplication_problem(producer: KernelOp, consumer: KernelOp) -> str | None:
    """Why ``producer`` may not be copied into ``consumer`` while it stays for other users.

    A copy doubles the producer's work, and it makes the consumer read the producer's own
    inputs. Only a cheap producer qualifies: no reduction, and either no arithmetic (a
    view or a constant), or inputs that no kernel computes, or inputs computed only by
    kernels that reduce and fewer bytes of them than it writes. Otherwise each copy could
    drag the producer's producers along and chains compound (a residual stream recomputed
    from the start of the network in every layer), or the copies would read more than the
    shared tensor: materialising it is cheaper. A kernel that reduces is never copied, so
    a producer that expands a reduction's result ends the chain: the attention mask, 16 KB
    built from the 1 KB cumsum of the sequence ids, is copied into every layer's scores.
    """
    if all(use.operation is consumer for use in producer.results[0].uses):
        return None  # the producer moves, it is not copied
    if reduce_runs(producer):
        return "it has other users, and copying it would compute its reduction twice"
    store = producer_store(producer)
    assert isinstance(store, StoreOp)
    if not any(is_arithmetic(op) or op.regions for op in store_slice(store)):
        return None
    computed = [v.owner for v in producer.inputs if isinstance(v.owner, KernelOp)]
    if not computed:
        return None
    if any(not reduce_runs(kernel) for kernel in computed):
        return "it has other users, and a copy would also recompute the kernels it reads"
    read, written = minimum_traffic(producer)
    if read >= written:
        return "it has other users, and copies would read more than its result"
    return None


def walk_recompute(producer: KernelOp, consumer: KernelOp, options: Fuse) -> str | None:
    """The ``reductions`` refusal of ``fusion_cost``, found without substituting, for a
    reducing producer whose elements an online-group walk of ``consumer`` reads at indices
    that move with the walk: each such load would get its own copy of the producer's
    reductions, which hoisting cannot take out of the walk, so they would run
    ``sum(trips of those loads) / elements(producer)`` times as often (a lower bound when
    the producer is read elsewhere too). A walk is large (a load and an accumulator per
    value column), and substituting and cleaning it up only to refuse was most of the
    time fusion spent on a decoder layer (a matmul's result read per key and column)."""
    if not reduce_runs(producer) or not _weighs_only(consumer):
        return None
    inputs = list(consumer.inputs)
    if producer.results[0] not in inputs:
        return None
    buffer = consumer.input_buffers[inputs.index(producer.results[0])]
    runs = 0
    for load in consumer.walk():
        if not isinstance(load, LoadOp) or load.buffer is not buffer:
            continue
        walk = load.parent_op()
        while walk is not None and not (isinstance(walk, ForOp) and weighs_scores(walk)):
            walk = walk.parent_op()
        if walk is None:
            continue
        moves = any(
            v is walk.induction_var
            or (isinstance(v.owner, Operation) and walk.is_ancestor(v.owner))
            for v in load.indices
        )
        if moves:
            runs += trips(load)
    factor = runs / elements(producer)
    if factor > options.max_reduce_recompute:
        limit = options.max_reduce_recompute
        return f"its reductions would run {factor:g}x as often (limit {limit:g}x)"
    return None


def has_contraction(kernel: KernelOp) -> bool:
    """Whether a reduce loop of ``kernel`` multiplies elements of two different buffers:
    a matmul's K loop (a norm's sum of squares multiplies one buffer by itself); or
    reduces a tensor that a kernel of such products computes (``ten.reduce`` of a
    ``ten.map`` of products: the matmul before its broadcast product is fused in, so
    that ``linear(x).sigmoid().sum(-1)`` keeps the sum out of the matmul's kernel)."""
    for loop_op in kernel.walk():
        if not (isinstance(loop_op, ForOp) and loop_op.is_reduce):
            continue
        for op in loop_op.walk():
            if isinstance(op, arith.MulfOp) and _multiplies_two_buffers(op):
                return True
            if isinstance(op, LoadOp) and _products_of(kernel, op.buffer):
                return True
    return False


def _multiplies_two_buffers(mul: arith.MulfOp) -> bool:
    sources = {_loaded_buffer(v) for v in mul.operands}
    return None not in sources and len(sources) == 2


def _products_of(kernel: KernelOp, buffer: SSAValue) -> bool:
    """Whether ``buffer`` (an input of ``kernel``) is computed by a kernel without a
    reduction whose stored value is a product of two buffers' elements."""
    inputs = list(kernel.input_buffers)
    if buffer not in inputs:
        return False
    producer = kernel.inputs[inputs.index(buffer)].owner
    if not isinstance(producer, KernelOp) or reduce_runs(producer):
        return False
    stores = [o for o in producer.walk() if isinstance(o, StoreOp)]
    return len(stores) == 1 and (
        isinstance(mul := stores[0].value.owner, arith.MulfOp) and _multiplies_two_buffers(mul)
    )


def _loaded_buffer(value: SSAValue) -> SSAValue | None:
    """The buffer ``value`` is loaded from, through elementwise prologue ops (x + b)."""
    owner = value.owner
    if isinstance(owner, LoadOp):
        return owner.buffer
    if isinstance(owner, Operation) and owner.has_trait(Pure) and owner.operands:
        return _loaded_buffer(owner.operands[0])
    return None


def fusion_cost(
    producer: KernelOp,
    consumer: KernelOp,
    fused: KernelOp,
    options: Fuse | None = None,
    *,
    paired: bool = False,
) -> FusionDecision:
    """Whether ``fused`` (``producer`` substituted into ``consumer``) is worth having.

    Six refusals, the two that the pair alone decides first (``pair_refusal``; skipped
    where ``paired``: the caller asked it before substituting, which a refusal then
    spares):
    * matmul and reduction: one side holds a contraction (``has_contraction``) and the
      other a reduction (the gated MLP's second matmul, before its product is fused in);
      one kernel would force one schedule on both loops, and no K split. Not when the
      consumer's reductions are online groups (``weighs_scores``): attention's scores
      move into the walk that weighs them;
    * duplication: the producer keeps other users and is not cheap to copy
      (``duplication_problem``);
    * reductions: the producer's reduce loops would run more often than in the producer
      (a reduce loop left, after hoisting, inside a loop it does not depend on: each
      result element reduced again per consumer element that reads it);
    * nested reductions (unless ``nest_reductions``): the fused kernel holds more reduce
      loops inside other reduce loops than the two kernels apart (a reduction over a
      reduction's results, which would walk the inner reductions serially under few
      outputs), an online group's walk aside (``nested_reduces``);
    * recompute: the fused kernel's arithmetic would exceed ``max_recompute`` times the
      arithmetic it needs (``arithmetic_work``) in a kernel where that costs time: one
      doing more than ``max_intensity`` ops per byte of its ``minimum_bytes`` (compute-
      bound) and more than ``launch_ops`` ops in all. A cheap prologue inside a matmul's
      reduce passes (a bias add); a norm recomputed per output column does not. In a
      memory-bound kernel recomputation hides under the memory time and passes (RoPE's
      cos and sin per head, the mask per head);
    * bytes: the fused kernel would read more than ``max_read_growth`` times the bytes
      the two kernels read apart (``bytes_read``).
    All are measured on the kernels themselves, so a second run reaches the same answers.
    """
    options = options or Fuse()
    problem = None if paired else pair_refusal(producer, consumer, options)
    if problem is not None:
        return FusionDecision(False, problem)
    produced = reduce_runs(producer)
    if produced:
        factor = (reduce_runs(fused) - reduce_runs(consumer)) / produced
        if factor > options.max_reduce_recompute:
            return FusionDecision(
                False,
                f"its reductions would run {factor:g}x as often "
                f"(limit {options.max_reduce_recompute:g}x)",
            )
    if not options.nest_reductions and nested_reduces(fused) > nested_reduces(
        producer
    ) + nested_reduces(consumer):
        return FusionDecision(
            False,
            "a reduction nested in another: the outer one would walk the inner ones one "
            "after another, in one kernel of its few outputs (cross-entropy's row "
            "log-sum-exps inside its mean: one block for the whole batch)",
        )
    depends = dependences(fused)  # both measures walk it
    executed, necessary = arithmetic_work(fused, depends)
    recompute = executed / max(necessary, 1)
    intensity = executed / max(minimum_bytes(fused, depends), 1)
    # An online group's walk (attention) is compute-bound however few bytes it reads at
    # the moment (its operands may still be broadcast buffers, fused later): no escape.
    walk = _weighs_only(consumer)
    if recompute > options.max_recompute and (
        walk or (intensity > options.max_intensity and executed > options.launch_ops)
    ):
        return FusionDecision(
            False,
            f"its arithmetic would be recomputed {recompute:.2f}x "
            f"(limit {options.max_recompute:g}x) in a compute-bound kernel "
            f"({intensity:.1f} ops/byte, limit {options.max_intensity:g})",
        )
    cached = options.cached_bytes
    apart = bytes_read(producer, cached) + bytes_read(consumer, cached)
    read = bytes_read(fused, cached) / max(apart, 1)
    if read > options.max_read_growth:
        return FusionDecision(
            False, f"bytes read would grow {read:.2f}x (limit {options.max_read_growth:g}x)"
        )
    return FusionDecision(True, f"recompute {recompute:.2f}x, bytes read {read:.2f}x")


def pair_refusal(producer: KernelOp, consumer: KernelOp, options: Fuse) -> str | None:
    """The refusals of ``fusion_cost`` that the two kernels decide without the fused one:
    a matmul beside another reduction (``matmul_alone``), a shared producer that is not
    cheap to copy (``duplication_problem``, unless ``copy_shared``)."""
    if options.matmul_alone and (
        (has_contraction(producer) and reduce_runs(consumer) and not _weighs_only(consumer))
        or (reduce_runs(producer) and has_contraction(consumer))
    ):
        return (
            "a matmul and another reduction in one kernel: a matmul is tiled and split best "
            "alone (the gated MLP fused was 0.26-0.64x cuBLAS on the H200)"
        )
    return None if options.copy_shared else duplication_problem(producer, consumer)


__all__ = [
    "Fuse",
    "FusionDecision",
    "fuse_module",
    "fusion_cost",
    "pair_refusal",
    "refusals",
    "substitute",
]
