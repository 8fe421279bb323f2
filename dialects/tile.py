"""The tile level (dialect ``tile``): a loop kernel with a GPU schedule attached.

The schedule is what the tile passes decide, step by step, and each step stays readable::

    %y = tile.kernel @k_rms_norm axes(%a0 : 256 = thread, %a1 : 32 = block)
           ins(%xb = %x : tensor<1x32x2048xf32>, ..) outs(%yb : tensor<1x32x2048xf32>) {
      %p = tile.strided_for %a2 = %a0 to 2048 step 256 reduce(add) -> f32 {
        ...
        loop.yield %sq : f32
      }
      %ss = tile.combine add %p across %a0 : f32
      ...
    }

* ``axes``: the kernel's parallel axes, each ``free`` (not yet placed: tileify's output),
  ``thread`` or ``block``. Thread axes of one kernel multiply into the block size, which
  the verifier holds to the target's 1024 threads.
* ``tile.strided_for``: a loop whose iterations are dealt out over a thread axis (start at
  the thread's index, step by the axis extent): a free loop or a reduce loop with partial
  accumulators, as in ``loop.for``.
* ``tile.combine``: merges the partial accumulators of every thread of a thread axis; every
  thread gets the result (warp shuffles then shared memory, once materialised).
* ``tile.stage``: a slab of an input buffer that the block holds in shared memory, so that
  the loads reading it more than once read it from there (see ``StageOp``).

Inside a tile kernel the loop level's ops (``loop.for``, ``loop.load``, ``loop.store``)
are reused unchanged: the tile level adds only what the loop level cannot say.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    IndexType,
    IntAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.access import (
    buffer_type,
    element_bytes,
    memref_bytes,
    parse_signature,
    print_kernel_name,
    print_signature,
    verify_signature,
)
from deplodock.dialects.affine_syntax import (
    check_in_bounds,
    dims_leaving,
    expr_range,
    index_map_for,
    parse_indices,
    print_indices,
    value_ranges,
)
from deplodock.dialects.combine import clause_error, groups
from deplodock.dialects.loop import (
    KernelBase,
    StridedForBase,
    enclosing_kernel,
)
from deplodock.dialects.mma import PRECISIONS, MmaBase
from deplodock.dialects.scope import check_block
from deplodock.dialects.tma import SWIZZLE_CHUNK, SWIZZLE_SPANS, TMA_ALIGNMENT, tma_box_rule
from deplodock.target import MAX_SHARED_BYTES

BINDINGS = ("free", "thread", "block")
MAX_THREADS_PER_BLOCK = 1024
WARP = 32  # threads that run in lockstep and exchange registers by shuffles


@irdl_op_definition
class KernelOp(KernelBase):
    """A scheduled kernel: parallel axes (block args first), then the buffers."""

    name = "tile.kernel"
    extents = prop_def(ArrayAttr[IntAttr])
    bindings = prop_def(ArrayAttr[StringAttr])

    def __init__(
        self,
        name: str,
        axes: Sequence[tuple[int, str]],
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            regions=[body],
            properties={
                "sym_name": StringAttr(name),
                "extents": ArrayAttr([IntAttr(e) for e, _ in axes]),
                "bindings": ArrayAttr([StringAttr(b) for _, b in axes]),
            },
        )

    @staticmethod
    def empty_body(
        axes: Sequence[tuple[int, str]],
        operand_types: Sequence[Attribute],
        result_types: Sequence[Attribute],
    ) -> Region:
        types = [IndexType()] * len(axes) + [
            buffer_type(t) for t in (*operand_types, *result_types)
        ]
        return Region(Block(arg_types=types))

    @property
    def num_axes(self) -> int:
        return len(self.extents.data)

    @property
    def axes(self) -> list[tuple[SSAValue, int, str]]:
        """(induction value, extent, binding) per axis."""
        return [
            (arg, e.data, b.data)
            for arg, e, b in zip(
                self.body.block.args, self.extents.data, self.bindings.data, strict=False
            )
        ]

    @property
    def leading_args(self) -> int:
        return self.num_axes

    def threads_per_block(self) -> int:
        return math.prod(extent for _, extent, binding in self.axes if binding == "thread")

    def axis_of(self, value: SSAValue) -> tuple[int, str] | None:
        """(extent, binding) when ``value`` is one of this kernel's axes."""
        for arg, extent, binding in self.axes:
            if arg is value:
                return extent, binding
        return None

    def index_range(self, value: SSAValue) -> tuple[int, int] | None:
        axis = self.axis_of(value)
        return (0, axis[0] - 1) if axis is not None else None

    def verify_(self) -> None:
        check_block(self.body.block)
        if len(self.extents.data) != len(self.bindings.data):
            raise VerifyException("tile.kernel: one binding per axis extent")
        for arg, extent, binding in self.axes:
            if binding not in BINDINGS:
                raise VerifyException(
                    f"tile.kernel: axis binding '{binding}' is not one of {', '.join(BINDINGS)}"
                )
            if extent < 1:
                raise VerifyException(f"tile.kernel: axis extent {extent} must be positive")
            if not isinstance(arg.type, IndexType):
                raise VerifyException("tile.kernel: axis arguments are of type index")
        if self.threads_per_block() > MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"tile.kernel: thread axes give {self.threads_per_block()} threads per block, "
                f"more than the target's {MAX_THREADS_PER_BLOCK}"
            )
        verify_signature(self, self.body, first_arg=self.num_axes)
        verify_schedule_attributes(self)

    def print(self, printer: Printer) -> None:
        print_kernel_name(printer, self)
        printer.print_string(" axes(")

        def print_axis(axis: tuple[SSAValue, int, str]) -> None:
            printer.print_ssa_value(axis[0])
            printer.print_string(f" : {axis[1]} = {axis[2]}")

        printer.print_list(self.axes, print_axis)
        printer.print_string(")")
        print_signature(printer, self, self.body, first_arg=self.num_axes)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name()
        parser.parse_keyword("axes")

        def parse_axis():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation(":")
            extent = parser.parse_integer()
            parser.parse_punctuation("=")
            binding = parser.parse_identifier()
            return arg.resolve(IndexType()), (extent, binding)

        axes = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_axis)
        operands, args, result_types = parse_signature(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region([a for a, _ in axes] + args)
        op = cls(name.data, [ax for _, ax in axes], operands, result_types, region)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


FILLS = ("sync", "prefetch", "async", "async3", "mixed", "tma")
"""How a kernel's K loop fills its shared-memory slabs (``fill-k-loop`` decides it):
``sync`` one copy, filled and then read (or two copies, not rotated); ``prefetch`` two
copies, chunk ``k + 1`` loaded into registers while chunk ``k`` is computed; ``async`` two
copies filled by ``cp.async`` one chunk ahead; ``async3`` three such copies, two chunks
ahead, one barrier a chunk; ``mixed`` both (cp.async for slabs in the
source's order, register prefetch for transposed ones); ``tma`` two copies filled by TMA
box copies on mbarriers."""

SCHEDULE = "schedule"
"""The name of a kernel's ``ScheduleAttr`` (``schedule_of`` reads it)."""

PIPELINED = "pipeline"
"""On a K loop: ``fill-k-loop`` rotates its fills (materialize reads it)."""

SELECT_MERGE = "select_merge"
"""On a reduce loop of an online group: the emitter merges each step without a branch
(``combine.cuda_online_step``'s ``branch=False``; ``tile-walk{merge=select}``)."""


SCHEDULE_DEFAULTS: dict[str, Any] = {
    "threads_m": 0, "threads_n": 0, "k_chunk": 0, "splits": 1, "resident": 1, "unroll": 0,
    "fill": "", "planned": 0, "stores": 1, "mma": "",
}  # fmt: skip
"""``ScheduleAttr``'s fields after the register tile, with the value an omitted one has."""
_LISTS = (("thread", ("tm", "tn")), ("threads", ("threads_m", "threads_n")))
_SCALARS = ("k_chunk", "splits", "resident", "unroll", "stores")


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """A matmul kernel's schedule, the answer of its one planning function
    (``passes/tile/schedule/matmul.py``) and what the passes after it follow::

        #tile.schedule<planned, thread = [8, 8], threads = [16, 16], k_chunk = 16, splits = 4>
        #tile.schedule<thread = [8, 8], threads = [16, 8], k_chunk = 8, resident = 4,
                       fill = prefetch>

    * ``thread``: the register tile, ``TM x TN`` outputs a thread (``register-tile``);
    * ``threads``: the block's ``Tm x Tn`` threads, so the block tile is ``TM*Tm x TN*Tn``
      (``blockify-launch``); absent when an option, not the plan, gave the register tile;
    * ``k_chunk``: K elements staged a chunk, ``BK`` (``chunk-matmul-k``);
    * ``splits``: the K splits of a kernel of partial sums (``split-matmul-k``);
    * ``resident``: the blocks an SM must hold, the emitter's ``__launch_bounds__`` minimum;
    * ``unroll``: the K steps of a chunk ``mark-unroll`` unrolls (absent: its own rule);
    * ``fill``: how the K loop fills its slabs (``FILLS``; absent until ``fill-k-loop``);
    * ``planned``: decided (by ``split-matmul-k``) but not yet applied by ``register-tile``;
    * ``stores``: outputs a thread writes at once from a row of its register tile, 1 or 4
      (the emitter's float4 stores, ``emit.packed_stores``: where the output is most of a
      memory-bound product's traffic, ``schedule.matmul.stores_for``);
    * ``mma``: the K loop's products run on tensor cores at this precision (``tf32x3`` or
      ``tf32``, ``dialects/mma.py``), each warp a grid of m16n8k8 tiles (``mma-contract``);
      absent: fp32 FMAs.

    Omitted fields print nothing and read back as their defaults (0, 1, 1, 0, "", no, 1, "").
    """

    name = "tile.schedule"

    tm: IntAttr
    tn: IntAttr
    threads_m: IntAttr
    threads_n: IntAttr
    k_chunk: IntAttr
    splits: IntAttr
    resident: IntAttr
    unroll: IntAttr
    fill: StringAttr
    planned: IntAttr
    stores: IntAttr
    mma: StringAttr

    @staticmethod
    def make(tm: int, tn: int, **fields: Any) -> ScheduleAttr:
        """The schedule with register tile ``tm x tn`` and ``fields`` (else the defaults)."""
        unknown = set(fields) - set(SCHEDULE_DEFAULTS)
        if unknown:
            raise TypeError(f"tile.schedule has no field {', '.join(sorted(unknown))}")
        values = {**SCHEDULE_DEFAULTS, **fields}
        params = [IntAttr(tm), IntAttr(tn)]
        for key, default in SCHEDULE_DEFAULTS.items():
            value = values[key]
            params.append(StringAttr(value) if isinstance(default, str) else IntAttr(int(value)))
        return ScheduleAttr(*params)

    def values(self) -> dict[str, Any]:
        return {key: getattr(self, key).data for key in ("tm", "tn", *SCHEDULE_DEFAULTS)}

    def replace(self, **fields: Any) -> ScheduleAttr:
        """This schedule with ``fields`` changed (attributes are immutable)."""
        values = {**self.values(), **fields}
        return ScheduleAttr.make(values.pop("tm"), values.pop("tn"), **values)

    @property
    def thread_tile(self) -> tuple[int, int]:
        return self.tm.data, self.tn.data

    @property
    def block_tile(self) -> tuple[int, int]:
        """``(BM, BN)``: the outputs a block owns (the thread tile when no block tile was
        planned)."""
        threads_m, threads_n = self.block_threads or (1, 1)
        return self.tm.data * threads_m, self.tn.data * threads_n

    @property
    def block_threads(self) -> tuple[int, int] | None:
        """``(Tm, Tn)`` when the plan chose the block tile, else None."""
        return (self.threads_m.data, self.threads_n.data) if self.threads_m.data else None

    @property
    def is_planned(self) -> bool:
        return bool(self.planned.data)

    def verify(self) -> None:
        v = self.values()
        problems = []
        if v["tm"] < 1 or v["tn"] < 1:
            problems.append("the thread tile must be positive")
        threads = (v["threads_m"], v["threads_n"])
        if (threads[0] == 0) != (threads[1] == 0) or min(threads) < 0:
            problems.append("threads are both positive or both absent")
        elif v["threads_m"] * v["threads_n"] > MAX_THREADS_PER_BLOCK:
            problems.append(f"threads exceed the {MAX_THREADS_PER_BLOCK} of a block")
        if v["threads_m"] and v["k_chunk"] < 1:
            problems.append("a planned block tile has a k_chunk")
        if v["k_chunk"] < 0 or v["unroll"] < 0:
            problems.append("k_chunk and unroll are not negative")
        if v["unroll"] and (not v["k_chunk"] or v["k_chunk"] % v["unroll"]):
            problems.append("unroll divides k_chunk")
        if v["splits"] < 1 or v["resident"] < 1:
            problems.append("splits and resident are positive")
        if v["fill"] not in ("", *FILLS):
            problems.append(f"fill is one of {', '.join(FILLS)}")
        if v["planned"] not in (0, 1):
            problems.append("planned is 0 or 1")
        if v["stores"] not in (1, 4) or v["tn"] % v["stores"]:
            problems.append("stores is 1 or 4, and divides the tile's columns")
        if v["mma"] not in ("", *PRECISIONS):
            problems.append(f"mma is one of {', '.join(PRECISIONS)}")
        if problems:
            raise VerifyException(f"tile.schedule: {'; '.join(problems)}, got {self}")

    def print_parameters(self, printer: Printer) -> None:
        v = self.values()
        parts = ["planned"] if v["planned"] else []
        for word, (a, b) in _LISTS:
            if v[a] or word == "thread":
                parts.append(f"{word} = [{v[a]}, {v[b]}]")
        for key in _SCALARS:
            if v[key] != SCHEDULE_DEFAULTS[key]:
                parts.append(f"{key} = {v[key]}")
        if v["fill"]:
            parts.append(f"fill = {v['fill']}")
        if v["mma"]:
            parts.append(f"mma = {v['mma']}")
        printer.print_string(f"<{', '.join(parts)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        fields: dict[str, Any] = {}
        lists = dict(_LISTS)

        def parse_field() -> None:
            word = parser.parse_identifier()
            if word == "planned":
                fields["planned"] = 1
                return
            parser.parse_punctuation("=")
            if word in lists:
                a, b = lists[word]
                values = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer
                )
                if len(values) != 2:
                    parser.raise_error(f"tile.schedule: {word} takes two integers")
                fields[a], fields[b] = values
            elif word in _SCALARS:
                fields[word] = parser.parse_integer()
            elif word in ("fill", "mma"):
                fields[word] = parser.parse_identifier()
            else:
                parser.raise_error(
                    f"tile.schedule: unknown field '{word}' (planned, thread, threads, "
                    f"{', '.join(_SCALARS)}, fill, mma)"
                )

        parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_field)
        if "tm" not in fields:
            parser.raise_error("tile.schedule: thread = [TM, TN] is required")
        try:
            schedule = ScheduleAttr.make(fields.pop("tm"), fields.pop("tn"), **fields)
        except VerifyException as e:
            parser.raise_error(str(e))
        return list(schedule.parameters)


def schedule_of(op: Operation) -> ScheduleAttr | None:
    """The schedule the matmul planning function left on the kernel ``op``, if any."""
    attr = op.attributes.get(SCHEDULE)
    return attr if isinstance(attr, ScheduleAttr) else None


def is_register_tiled(op: Operation) -> bool:
    """Whether ``register-tile`` gave each thread of the kernel ``op`` a tile of outputs
    (its K loop is then the matmul passes' business, not the reduction passes')."""
    schedule = schedule_of(op)
    return schedule is not None and not schedule.is_planned


def min_blocks_per_sm(op: Operation) -> int | None:
    """The blocks per SM the kernel's ``__launch_bounds__`` asks for: the schedule's
    ``resident`` for a register-tiled kernel, else None."""
    schedule = schedule_of(op)
    return schedule.resident.data if is_register_tiled(op) else None  # type: ignore[union-attr]


def verify_schedule_attributes(op: Operation) -> None:
    """A kernel's ``schedule`` attribute is a ``#tile.schedule``."""
    attr = op.attributes.get(SCHEDULE)
    if attr is not None and not isinstance(attr, ScheduleAttr):
        raise VerifyException(f"{op.name}: attribute schedule must be a #tile.schedule, got {attr}")


def thread_axis_extent(op: IRDLOperation, value: SSAValue) -> int:
    """The extent of ``value`` as a thread axis of the enclosing tile.kernel, or raise."""
    kernel = op.parent_op()
    while kernel is not None and not isinstance(kernel, KernelOp):
        kernel = kernel.parent_op()
    axis = kernel.axis_of(value) if kernel is not None else None
    if axis is None or axis[1] != "thread":
        raise VerifyException(
            f"{op.name}: {value.name_hint or 'the operand'} must be a thread axis of the "
            "enclosing tile.kernel"
        )
    return axis[0]


@irdl_op_definition
class StridedForOp(StridedForBase):
    """``tile.strided_for %i = %t to N step S [vector V]``: iterations ``t, t+S, ..`` below N.

    With ``vector V`` the loop counts ``c = t, t+S, ..`` below N / V and runs its body for
    ``%i = V*c, V*c+1, .., V*c+V-1`` in order: each thread takes V consecutive elements at a
    time, so contiguous accesses become V-wide (16-byte for V = 4 floats) ones.
    """

    name = "tile.strided_for"


@irdl_op_definition
class CombineOp(IRDLOperation):
    """``%r = tile.combine add %partial across %t : f32``: merge over a thread axis.

    A reduce clause's online group combines together (``combine.groups``):
    ``%m, %s = tile.combine online_max, online_sum %m_part, %s_part across %t : f32, f32``.
    Every thread of the group gets the results."""

    name = "tile.combine"
    kinds = prop_def(ArrayAttr)
    values = var_operand_def()
    axis = operand_def(IndexType)
    results_ = var_result_def()
    traits = traits_def(Pure())

    def __init__(self, kinds: str | Sequence[str], values: SSAValue | Sequence[SSAValue], axis):
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        values = [values] if isinstance(values, SSAValue) else list(values)
        super().__init__(
            operands=[values, axis],
            result_types=[[v.type for v in values]],
            properties={"kinds": ArrayAttr([StringAttr(k) for k in kinds])},
        )

    @property
    def kind_names(self) -> list[str]:
        return [k.data for k in self.kinds.data]

    def verify_(self) -> None:
        kinds = self.kind_names
        error = clause_error(kinds, [v.type for v in self.values])
        if error is not None:
            raise VerifyException(f"tile.combine: {error}")
        if len(kinds) != len(self.values) or not kinds:
            raise VerifyException(f"tile.combine: {len(kinds)} kinds for {len(self.values)} values")
        if len(groups(kinds)) != 1:
            raise VerifyException("tile.combine: one kind, or one online group, a combine")
        size = thread_axis_extent(self, self.axis)
        if (size <= WARP and size & (size - 1)) or (size > WARP and size % WARP):
            raise VerifyException(
                f"tile.combine: across {size} threads; warp shuffles combine a power of two "
                f"up to {WARP} or whole warps of {WARP}"
            )
        kernel = self.parent_op()
        while kernel is not None and not isinstance(kernel, KernelOp):
            kernel = kernel.parent_op()
        placed = kernel is not None and all(b != "free" for _, _, b in kernel.axes)
        threads = kernel.threads_per_block() if placed else WARP  # free axes: not yet
        if threads % WARP:
            raise VerifyException(
                f"tile.combine: the kernel's {threads} threads per block are not whole warps "
                f"of {WARP}; warp shuffles need every lane of a warp"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {', '.join(self.kind_names)} ")
        printer.print_list(self.values, printer.print_ssa_value)
        printer.print_string(" across ")
        printer.print_ssa_value(self.axis)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list((v.type for v in self.values), printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> CombineOp:
        kinds = [parser.parse_identifier()]
        while parser.parse_optional_punctuation(","):
            kinds.append(parser.parse_identifier())
        values = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            values.append(parser.parse_unresolved_operand())
        parser.parse_keyword("across")
        axis = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(values):
            parser.raise_error(f"tile.combine: {len(values)} values but {len(types)} types")
        resolved = parser.resolve_operands([*values, axis], [*types, IndexType()], parser.pos)
        op = cls(kinds, resolved[:-1], resolved[-1])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class StageOp(IRDLOperation):
    """``%s = tile.stage %x_b[0, %a0, 0] : memref<1x32x2048xf32> -> memref<2048xf32>``

    The slab of an input buffer that one block copies into shared memory, so the loads
    that read it several times read shared memory instead of global memory. The slab's
    *box* (rank k) spans the trailing k dimensions of the source from the origin:
    ``s[j..] = x[o_0, .., o_{n-k-1}, o_{n-k} + j_0, ..]``. The origin is block-uniform
    (constants, block axes, and the induction variable of a top-level ``loop.for``),
    because every thread of the block fills and reads the same slab.

    A stage at the top of the kernel is copied once. A stage inside a top-level
    ``loop.for`` (a matmul's K-outer loop, ``chunk-matmul-k``) is copied again on each
    iteration, at its origin for that iteration: a K chunk of each operand::

        %xs = tile.stage %x_b[0, %m0, %k0] box [128, 8] transpose pad 4
                : memref<1x128x2048xf32> -> memref<8x132xf32>

    ``buffers 2`` keeps two copies, chunk ``k`` in copy ``k % 2`` (``buffers 3``, async
    stages only: three, chunk ``k`` in copy ``k % 3``, two chunks in flight), and ``async`` fills it
    with ``cp.async`` (a stage at the top of the kernel too: ``stage-inputs``' row past
    48 KB, every copy in flight before one wait), ``tma`` (sm_90) with whole-box TMA
    copies that complete on an mbarrier: a ``pipeline`` K loop then copies chunk
    ``k + 1`` while it computes chunk ``k`` (``fill-k-loop`` sets all of them, as
    ``schedule.fill.plan_fill`` chose). The
    tile level's meaning is unchanged (the slab at this iteration's origin); materialize
    spells the rotation out.

    ``split S`` (``split-inner-for-swizzle``, TMA slabs) stores the box's inner dimension
    in pieces of S elements, one after the other, each a box of its own for TMA: a box
    ``[R, C]`` is stored ``[C / S, R, S]``, element ``(r, c)`` at ``[c floordiv S, r,
    c mod S]`` (loads index the stored layout, as for ``transpose``). ``swizzle 128``
    (TMA's ``SWIZZLE_128B``, a slab of rank 2 whose stored rows are 128 bytes) permutes
    the 16-byte chunks of each row as they land: chunk ``j`` of row ``r`` is stored at
    chunk ``j xor (r mod 8)``, so a column's elements fall in different banks. Loads
    index the stored (swizzled) position, which is not affine: the column index is
    ``(chunk xor (r mod 8)) * (16 / element bytes) + within``, an ``arith.xori``.

    ``box`` gives the slab's extents in the source's order when the stored layout differs
    from it: ``transpose`` (rank 2) stores ``s[j1, j0] = x[.., o + j0, o' + j1]``, so
    threads that walk the source's second-to-last dimension read consecutive shared
    addresses; ``pad P`` adds P unused elements to each stored row (``pad-smem``: a row
    stride that spreads a column's elements over the banks). The result type is the
    stored layout: ``box``, transposed, the last extent plus ``pad``.

    The verifier proves the box inside the source (interval bounds of the origin), that
    the source is one of the kernel's inputs (read-only, so a copy never goes stale), the
    stored type from box, transpose, pad and split, and that all slabs of the kernel fit
    the target's shared memory. A ``tma`` slab is double-buffered, stored in the source's
    order and dense (no transpose, no pad: TMA writes a box as it lies), not ``async``
    too, within TMA's box rules (``tma.tma_box_rule``: extents up to 256, an inner row
    of a multiple of 16 bytes, the source's strides multiples of 16 bytes) and a multiple
    of 128 bytes (so its second buffer, and each piece, starts aligned); ``split`` needs
    ``tma``, divides the inner extent and keeps each piece's row a multiple of 16 bytes.
    Each load it serves is a ``loop.load`` of the result, whose own verifier proves it
    inside the stored array.
    """

    name = "tile.stage"
    source = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    box = opt_prop_def(ArrayAttr[IntAttr])  # the slab's extents in source order
    transpose = opt_prop_def(UnitAttr)
    pad = opt_prop_def(IntAttr)
    buffers = opt_prop_def(IntAttr)  # fill-k-loop: copies of the slab, chunk k in k % 2
    async_ = opt_prop_def(UnitAttr, prop_name="async")  # fill-k-loop: filled by cp.async
    tma = opt_prop_def(UnitAttr)  # fill-k-loop: filled by TMA box copies (sm_90)
    split = opt_prop_def(IntAttr)  # split-inner-for-swizzle: inner pieces of this many
    swizzle = opt_prop_def(IntAttr)  # split-inner-for-swizzle: TMA swizzle mode, bytes
    guarded = opt_prop_def(UnitAttr)  # an edge tile's: the box may leave the source (zeros)
    result = result_def(MemRefType)

    def __init__(
        self,
        source: SSAValue,
        map: AffineMap,
        indices: Sequence[SSAValue],
        slab: MemRefType | Sequence[int],
        transpose: bool = False,
        pad: int = 0,
        guarded: bool = False,
    ):
        """``slab``: the stored type, or the box (source-order extents) when
        ``transpose``/``pad`` make the stored layout differ from it."""
        map, operands = index_map_for(map, indices)
        properties: dict[str, Attribute] = {"map": AffineMapAttr(map)}
        if guarded:
            properties["guarded"] = UnitAttr()
        if not isinstance(slab, MemRefType):
            box = list(slab)
            if transpose or pad:  # else the stored type says it all
                properties["box"] = ArrayAttr([IntAttr(e) for e in box])
            if transpose:
                properties["transpose"] = UnitAttr()
            if pad:
                properties["pad"] = IntAttr(pad)
            element = source.type.element_type  # type: ignore[attr-defined]
            slab = MemRefType(element, stored_shape(box, transpose, pad))
        super().__init__(operands=[source, operands], result_types=[slab], properties=properties)

    @property
    def slab_shape(self) -> tuple[int, ...]:
        """The stored array's shape (transposed and padded)."""
        assert isinstance(self.result.type, MemRefType)
        return tuple(self.result.type.get_shape())

    @property
    def box_shape(self) -> tuple[int, ...]:
        """The slab's extents in the source's dimension order."""
        if self.box is not None:
            return tuple(e.data for e in self.box.data)
        return self.slab_shape

    @property
    def is_transposed(self) -> bool:
        return self.transpose is not None

    @property
    def padding(self) -> int:
        return self.pad.data if self.pad is not None else 0

    @property
    def buffer_count(self) -> int:
        return self.buffers.data if self.buffers is not None else 1

    @property
    def is_async(self) -> bool:
        return self.async_ is not None

    @property
    def is_tma(self) -> bool:
        return self.tma is not None

    @property
    def is_guarded(self) -> bool:
        return self.guarded is not None

    def guarded_dims(self) -> list[int]:
        """The source dimensions a fill of a guarded slab tests: those the box may leave
        (its elements there are zeros); none when unguarded."""
        if not self.is_guarded:
            return []
        shape = self.source.type.get_shape()  # type: ignore[attr-defined]
        extents = [1] * (len(shape) - len(self.box_shape)) + list(self.box_shape)
        return dims_leaving(self.map.data, self.indices, shape, extents)

    @property
    def split_width(self) -> int:
        """Elements of the inner dimension per stored piece (0: not split)."""
        return self.split.data if self.split is not None else 0

    @property
    def swizzle_bytes(self) -> int:
        """The TMA swizzle mode's span in bytes (0: not swizzled)."""
        return self.swizzle.data if self.swizzle is not None else 0

    @property
    def element_bytes(self) -> int:
        return element_bytes(self.source.type.element_type)  # type: ignore[attr-defined]

    @property
    def written_shape(self) -> tuple[int, ...]:
        """The part of the stored array a fill writes (the stored shape without pad)."""
        return stored_shape(self.box_shape, self.is_transposed, 0, self.split_width)

    def size_bytes(self) -> int:
        """Shared memory the slab takes, every buffer of it."""
        assert isinstance(self.result.type, MemRefType)
        return memref_bytes(self.result.type) * self.buffer_count

    def stored_index(self, box_index: Sequence[Any]) -> list[Any]:
        """Index into the stored array of the box element ``box_index`` (affine exprs or
        integer arrays; a swizzled slab's only integer arrays: the swizzle is no affine
        map)."""
        if self.split_width:
            width, inner = self.split_width, box_index[-1]
            stored = [inner // width, *box_index[:-1], inner % width]
        else:
            stored = list(box_index[::-1]) if self.is_transposed else list(box_index)
        if self.swizzle_bytes:
            stored[-1] = self.swizzled_column(stored[-2], stored[-1])
        return stored

    def box_index(self, stored_index: Sequence[Any]) -> list[Any]:
        """Box (source-order) index of the stored element ``stored_index``."""
        stored = list(stored_index)
        if self.swizzle_bytes:  # the swizzle is its own inverse
            stored[-1] = self.swizzled_column(stored[-2], stored[-1])
        if self.split_width:
            piece, *lead, inner = stored
            return [*lead, piece * self.split_width + inner]
        return stored[::-1] if self.is_transposed else stored

    def swizzled_column(self, row: Any, column: Any) -> Any:
        """Where a swizzled row ``row`` keeps its element ``column`` (integer arrays): its
        16-byte chunk moves to ``chunk xor (row mod 8)``."""

        per_chunk = SWIZZLE_CHUNK // self.element_bytes
        lines = self.swizzle_bytes // SWIZZLE_CHUNK
        if isinstance(row, AffineExpr) or isinstance(column, AffineExpr):
            raise ValueError("a swizzled slab's stored index is not affine (xor)")
        return ((column // per_chunk) ^ (row % lines)) * per_chunk + column % per_chunk

    def verify_(self) -> None:
        src, slab = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(slab, MemRefType)
        if src.element_type != slab.element_type:
            raise VerifyException("tile.stage: the slab's elements differ from the source's")
        shape, box = src.get_shape(), self.box_shape
        rank = len(box)
        if rank < 1 or rank > len(shape) or len(self.map.data.results) != len(shape):
            raise VerifyException(
                f"tile.stage: a slab of rank {rank} needs one origin index per dimension of "
                f"the source (rank {len(shape)}) and at most its rank"
            )
        if self.is_transposed and rank != 2:
            raise VerifyException("tile.stage: only a slab of rank 2 is stored transposed")
        if self.padding < 0:
            raise VerifyException(f"tile.stage: pad {self.padding} must not be negative")
        self._verify_tma(src, box)
        stored = stored_shape(box, self.is_transposed, self.padding, self.split_width)
        if tuple(slab.get_shape()) != stored:
            split = f", split {self.split_width}" if self.split_width else ""
            raise VerifyException(
                f"tile.stage: box {list(box)}{' transposed' if self.is_transposed else ''} "
                f"with pad {self.padding}{split} is stored as {list(stored)}, not "
                f"{list(slab.get_shape())}"
            )
        kernel, loop_ = self.parent_op(), None
        if not isinstance(kernel, KernelOp):
            loop_, kernel = kernel, kernel.parent_op() if kernel is not None else None
        if not isinstance(kernel, KernelOp) or (
            loop_ is not None and getattr(loop_, "name", "") != "loop.for"
        ):
            raise VerifyException(
                "tile.stage: stages sit at the top level of a tile.kernel or of a loop.for there"
            )
        if loop_ is None and self.buffer_count != 1:
            raise VerifyException("tile.stage: only a stage refilled in a loop is multi-buffered")
        if self.buffer_count not in (1, 2, 3):
            raise VerifyException(f"tile.stage: buffers {self.buffer_count} must be 1, 2 or 3")
        if self.is_async and loop_ is not None and self.buffer_count < 2:
            raise VerifyException(
                "tile.stage: an async stage in a loop needs buffers 2 or 3 (the copy of the "
                "next chunk lands while this one is read)"
            )
        if self.buffer_count == 3 and not self.is_async:
            raise VerifyException(
                "tile.stage: buffers 3 only for an async stage (cp.async keeps two chunks in "
                "flight; loads into registers rotate two buffers)"
            )
        if self.is_async and self.element_bytes < 4:
            raise VerifyException(
                "tile.stage: an async stage's elements are 4 bytes or more (cp.async copies "
                "4, 8 or 16 bytes)"
            )
        if self.source not in kernel.input_buffers:
            raise VerifyException("tile.stage: only an input buffer of the kernel is staged")
        for value in self.indices:
            axis = kernel.axis_of(value)
            is_loop_iv = loop_ is not None and value is loop_.body.block.args[0]
            if not is_loop_iv and (axis is None or axis[1] == "thread"):
                raise VerifyException(
                    "tile.stage: the origin must be block-uniform (constants, block axes and "
                    "the enclosing loop's induction variable)"
                )
        ranges = value_ranges(self.indices)
        extents = [1] * (len(shape) - rank) + list(box)
        for dim, (expr, size, extent) in enumerate(
            zip(self.map.data.results, shape, extents, strict=True)
        ):
            bounds = expr_range(expr, ranges)
            if (
                bounds is None
                or bounds[0] < 0
                or (bounds[1] + extent > size and not self.is_guarded)
            ):
                raise VerifyException(
                    f"tile.stage: dimension {dim} of the slab leaves the source's extent {size}"
                    " (only a guarded slab may reach past its end)"
                )
        total = sum(o.size_bytes() for o in kernel.walk() if isinstance(o, StageOp | ShareOp))
        if total > MAX_SHARED_BYTES:
            raise VerifyException(
                f"tile.stage: the kernel's slabs take {total} bytes of shared memory, more "
                f"than the target's {MAX_SHARED_BYTES} per block"
            )

    def _verify_tma(self, src: MemRefType, box: Sequence[int]) -> None:
        """The rules of ``tma`` and ``split`` (see the class docstring)."""

        width = self.split_width
        if self.split is not None and (not self.is_tma or width < 1 or box[-1] % width):
            raise VerifyException(
                f"tile.stage: split {width} needs a tma slab whose inner extent {box[-1]} "
                "it divides"
            )
        if self.swizzle is not None:
            self._verify_swizzle(box, width)
        if not self.is_tma:
            return
        if self.is_transposed or self.padding:
            raise VerifyException(
                "tile.stage: a tma slab is stored as the source lies (TMA writes a box "
                "densely): no transpose, no pad"
            )
        if self.is_async:
            raise VerifyException(
                "tile.stage: a slab is filled by tma or by async copies, not both"
            )
        if self.buffer_count != 2:
            raise VerifyException(
                "tile.stage: a tma stage needs buffers 2 (the copy of the next chunk lands "
                "while this one is read)"
            )
        element = self.element_bytes
        pieces = list(box[:-1]) + [width or box[-1]]
        broken = tma_box_rule(pieces, element, src.get_shape(), None)
        if broken is not None:
            raise VerifyException(f"tile.stage: a tma slab's box breaks TMA's rules: {broken}")
        piece_bytes = element
        for extent in pieces:
            piece_bytes *= extent
        if piece_bytes % TMA_ALIGNMENT:
            raise VerifyException(
                f"tile.stage: a tma slab's box of {piece_bytes} bytes is not a multiple of "
                f"{TMA_ALIGNMENT}: the next one would land misaligned"
            )

    def _verify_swizzle(self, box: Sequence[int], width: int) -> None:

        swizzle = self.swizzle_bytes
        row = (width or box[-1]) * self.element_bytes
        lines = swizzle // SWIZZLE_CHUNK if swizzle > 0 else 0
        if not self.is_tma or swizzle not in SWIZZLE_SPANS:
            raise VerifyException(
                f"tile.stage: swizzle {swizzle} needs a tma slab and one of "
                f"{', '.join(map(str, SWIZZLE_SPANS))} bytes"
            )
        if len(box) != 2 or row != swizzle or box[0] % lines:
            raise VerifyException(
                f"tile.stage: a {swizzle}-byte swizzle needs a slab of rank 2 whose stored "
                f"rows are {swizzle} bytes (not {row}) and whose row count is a multiple of "
                f"{lines} (the pattern's repeat)"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        print_indices(printer, self.map.data, self.indices)
        if self.box is not None:
            printer.print_string(f" box [{', '.join(map(str, self.box_shape))}]")
        if self.is_transposed:
            printer.print_string(" transpose")
        if self.pad is not None:
            printer.print_string(f" pad {self.padding}")
        if self.buffers is not None:
            printer.print_string(f" buffers {self.buffer_count}")
        if self.is_async:
            printer.print_string(" async")
        if self.is_tma:
            printer.print_string(" tma")
        if self.split is not None:
            printer.print_string(f" split {self.split_width}")
        if self.swizzle is not None:
            printer.print_string(f" swizzle {self.swizzle_bytes}")
        if self.is_guarded:
            printer.print_string(" guarded")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> StageOp:
        source = parser.parse_unresolved_operand()
        map, index_operands = parse_indices(parser)
        properties: dict[str, Attribute] = {"map": AffineMapAttr(map)}
        if parser.parse_optional_keyword("box") is not None:
            box = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
            properties["box"] = ArrayAttr([IntAttr(e) for e in box])
        if parser.parse_optional_keyword("transpose") is not None:
            properties["transpose"] = UnitAttr()
        if parser.parse_optional_keyword("pad") is not None:
            properties["pad"] = IntAttr(parser.parse_integer())
        if parser.parse_optional_keyword("buffers") is not None:
            properties["buffers"] = IntAttr(parser.parse_integer())
        if parser.parse_optional_keyword("async") is not None:
            properties["async"] = UnitAttr()
        if parser.parse_optional_keyword("tma") is not None:
            properties["tma"] = UnitAttr()
        if parser.parse_optional_keyword("split") is not None:
            properties["split"] = IntAttr(parser.parse_integer())
        if parser.parse_optional_keyword("swizzle") is not None:
            properties["swizzle"] = IntAttr(parser.parse_integer())
        if parser.parse_optional_keyword("guarded") is not None:
            properties["guarded"] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        slab = parser.parse_type()
        if not isinstance(src_type, MemRefType) or not isinstance(slab, MemRefType):
            parser.raise_error("tile.stage copies a memref into a memref")
        (src,) = parser.resolve_operands([source], [src_type], parser.pos)
        indices = [parser.resolve_operand(o, IndexType()) for o in index_operands]
        op = cls.create(
            operands=[src, *indices],
            result_types=[slab],
            properties=properties,
            attributes=attrs,
        )
        return op


@irdl_op_definition
class ShareOp(IRDLOperation):
    """``%p = tile.share %s0 [%tx, %ty * 4], %s1 [%tx + 8, %ty * 4] : f32 -> memref<16x68xf32>``

    Values computed in registers, made readable by every thread of the block: each thread
    writes each of its values at the value's index (affine in the kernel's axes and the
    enclosing loops' induction variables), and the result is the array the block wrote,
    which ``loop.load`` reads. It is what a block's threads exchange when the thread that
    needs a value is not the thread that computed it and the exchange is too large for
    shuffles: an attention walk's probabilities, computed with the keys dealt to lanes and
    read with the head dim dealt to them (``docs/bench/h200-2026-12-07-s38/fa``: through
    shared memory 85 us where shuffles took 141, head dim 64, S=1000).

    Every element the loads read must have been written by exactly one thread: the tile
    interpreter raises on an element written twice or read unwritten. All threads of the
    block reach it (it sits at the top level of the kernel or of ``loop.for`` ops there:
    materialize surrounds the writes with barriers), and a share inside a loop is written
    afresh each iteration (its previous contents are dead once the next share begins).
    Materialize gives it a ``kernel.shared`` array of the result's type: a barrier (in a
    loop, so the previous iteration's reads are done), the stores, a barrier.
    """

    name = "tile.share"
    values = var_operand_def()
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)  # rank results per value, over ``indices``
    result = result_def(MemRefType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        values: Sequence[SSAValue],
        map: AffineMap,
        indices: Sequence[SSAValue],
        shared: MemRefType,
    ):
        """``map``: the indices of every value in turn (``len(values) * rank`` results)."""
        map, operands = index_map_for(map, indices)
        super().__init__(
            operands=[list(values), operands],
            result_types=[shared],
            properties={"map": AffineMapAttr(map)},
        )

    @property
    def rank(self) -> int:
        return len(self.result.type.get_shape())  # type: ignore[attr-defined]

    def value_map(self, k: int) -> AffineMap:
        """The index of value ``k``, over the op's index operands."""
        results = self.map.data.results[k * self.rank : (k + 1) * self.rank]
        return AffineMap(self.map.data.num_dims, 0, tuple(results))

    def size_bytes(self) -> int:
        assert isinstance(self.result.type, MemRefType)
        return memref_bytes(self.result.type)

    def verify_(self) -> None:
        shared = self.result.type
        assert isinstance(shared, MemRefType)
        if not self.values:
            raise VerifyException("tile.share: no values to share")
        for value in self.values:
            if value.type != shared.element_type:
                raise VerifyException(
                    f"tile.share: a value of type {value.type} in an array of {shared.element_type}"
                )
        if len(self.map.data.results) != len(self.values) * self.rank:
            raise VerifyException(
                f"tile.share: {len(self.map.data.results)} indices for {len(self.values)} "
                f"values of rank {self.rank}"
            )
        for k in range(len(self.values)):
            check_in_bounds("tile.share", self.value_map(k), self.indices, shared.get_shape())
        kernel = self.parent_op()
        while kernel is not None and not isinstance(kernel, KernelOp):
            if getattr(kernel, "name", "") != "loop.for":
                raise VerifyException(
                    "tile.share: every thread of the block must reach it (its writes sit "
                    "between barriers): at the top level of a tile.kernel or of loop.for ops"
                )
            kernel = kernel.parent_op()
        if kernel is None:
            raise VerifyException("tile.share: outside a tile.kernel")
        total = sum(o.size_bytes() for o in kernel.walk() if isinstance(o, StageOp | ShareOp))
        if total > MAX_SHARED_BYTES:
            raise VerifyException(
                f"tile.share: the kernel's slabs and shared values take {total} bytes of "
                f"shared memory, more than the target's {MAX_SHARED_BYTES} per block"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        for k, value in enumerate(self.values):
            if k:
                printer.print_string(", ")
            printer.print_ssa_value(value)
            printer.print_string(" ")
            print_indices(printer, self.value_map(k), self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.values[0].type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShareOp:
        values, maps = [], []
        while True:
            values.append(parser.parse_unresolved_operand())
            maps.append(parse_indices(parser))
            if not parser.parse_optional_punctuation(","):
                break
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        element = parser.parse_type()
        parser.parse_punctuation("->")
        shared = parser.parse_type()
        if not isinstance(shared, MemRefType):
            parser.raise_error("tile.share makes a memref")
        resolved = parser.resolve_operands(values, [element] * len(values), parser.pos)
        operands, results = [], []
        for map, unresolved in maps:  # one map over every value's operands, in turn
            shift = len(operands)
            operands += [parser.resolve_operand(o, IndexType()) for o in unresolved]
            moved = [AffineExpr.dimension(shift + d) for d in range(map.num_dims)]
            results += [r.replace_dims_and_symbols(moved, []) for r in map.results]
        op = cls(resolved, AffineMap(len(operands), 0, tuple(results)), operands, shared)
        op.attributes.update(attrs)
        return op


def stored_shape(box: Sequence[int], transpose: bool, pad: int, split: int = 0) -> tuple[int, ...]:
    """The shape a slab of extents ``box`` (source order) is stored in."""
    if split:
        return (box[-1] // split, *box[:-1], split)
    shape = list(box[::-1]) if transpose else list(box)
    shape[-1] += pad
    return tuple(shape)


@irdl_op_definition
class MmaOp(MmaBase):
    """``tile.mma``: a warp's tensor-core product (``dialects/mma.py``); the kernel's
    threads must be whole warps, since every lane of a warp holds part of each operand."""

    name = "tile.mma"

    def block_threads(self) -> int | None:
        kernel = enclosing_kernel(self)
        if not isinstance(kernel, KernelOp):
            raise VerifyException("tile.mma: outside a tile.kernel")
        placed = all(b != "free" for _, _, b in kernel.axes)
        return kernel.threads_per_block() if placed else None


Tile = Dialect("tile", [KernelOp, StridedForOp, CombineOp, StageOp, ShareOp, MmaOp], [ScheduleAttr])
