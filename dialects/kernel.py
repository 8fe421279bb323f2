"""The kernel level (dialect ``kernel``): the schedule spelled in hardware primitives.

Target-neutral (the same IR could print as HIP or Metal), one tree walk from CUDA C::

    %y = kernel.kernel @k_rms_norm grid(32, 1, 1) block(256, 1, 1)
           ins(%xb = %x : tensor<1x32x2048xf32>, ..) outs(%yb : ..) {
      %tid = kernel.thread_id x
      %bid = kernel.block_id x
      %red = kernel.shared "acc0_smem" : memref<8xf32>
      %p = kernel.for %i = %tid to 2048 step 256 reduce(add) -> f32 { .. kernel.yield %v : f32 }
      %s = kernel.shfl_xor %p, 16 : f32
      kernel.barrier
      ...
    }

Thread and block ids, shared-memory allocations, barriers, warp shuffles, loops,
loads/stores, ``cp.async`` (commit/wait groups) and, for sm_90, TMA box copies with
mbarriers (``kernel.mbarrier``, ``mbarrier_init``, ``mbarrier_arrive_expect_tx``,
``mbarrier_wait``, ``tma_load``: see ``TmaLoadOp`` for TMA's rules) are this dialect's;
guards are upstream ``scf.if``, index math upstream ``affine.apply``, scalar math
``arith``/``math``. The verifiers hold what the hardware requires: a block of at most
1024 threads, shared memory within the target's 227 KB, ids only inside a kernel, no
barrier under control flow that depends on the thread, TMA's alignment and box rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsTerminator,
    MemoryAllocEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from deplodock.dialects.access import (
    LoadBase,
    StoreBase,
    element_bytes,
    kernel_block,
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
    row_major_offset,
    value_ranges,
)
from deplodock.dialects.loop import KernelBase, StridedForBase
from deplodock.dialects.mma import MmaBase
from deplodock.dialects.scope import check_block
from deplodock.dialects.tile import min_blocks_per_sm, verify_schedule_attributes
from deplodock.dialects.tma import (
    TMA_ALIGNMENT,
    TMA_MAX_TX_BYTES,
    swizzle_repeat,
    tma_box_rule,
)
from deplodock.target import MAX_SHARED_BYTES

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)  # CUDA's limits on each block dimension
MAX_GRID = (2**31 - 1, 65535, 65535)  # and on each grid dimension
WARP = 32
STATIC_SHARED_BYTES = 48 * 1024  # above this CUDA needs dynamic shared memory
SHARED_ALIGNMENT = 16  # bytes; every shared array may be read 16 bytes at a time
MAX_SHARED_ALIGNMENT = 1024
DIMS = ("x", "y", "z")


def _triple(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    padded = list(values) + [1] * (3 - len(values))
    return ArrayAttr([IntAttr(v) for v in padded])


@irdl_op_definition
class KernelOp(KernelBase):
    """One GPU kernel with its launch shape; tensors in, tensors out."""

    name = "kernel.kernel"
    grid = prop_def(ArrayAttr[IntAttr])
    block = prop_def(ArrayAttr[IntAttr])
    resident = opt_prop_def(IntAttr)
    """Blocks an SM the ``__launch_bounds__`` ask for where no schedule says: set to 1 by
    ``compile_fitting`` for a kernel that spilled under ptxas's own occupancy heuristic
    (``__launch_bounds__(64)`` alone: 168 registers and a spill where ``(64, 1)`` takes 181
    and none, NVRTC 13.5, a head dim 128 attention walk). Printed ``resident(N)``."""

    def __init__(
        self,
        name: str,
        grid: Sequence[int],
        block: Sequence[int],
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region | None = None,
    ):
        if body is None:
            body = Region(kernel_block([v.type for v in inputs], result_types))
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            regions=[body],
            properties={
                "sym_name": StringAttr(name),
                "grid": _triple(grid),
                "block": _triple(block),
            },
        )

    @property
    def grid_shape(self) -> tuple[int, int, int]:
        return tuple(v.data for v in self.grid.data)  # type: ignore[return-value]

    @property
    def min_blocks_per_sm(self) -> int | None:
        """The ``__launch_bounds__`` minimum of blocks per SM: the kernel's own ``resident``,
        else ``tile.min_blocks_per_sm`` (the schedule's, for a register-tiled kernel), or
        None for none."""
        return self.resident.data if self.resident is not None else min_blocks_per_sm(self)

    @property
    def block_shape(self) -> tuple[int, int, int]:
        return tuple(v.data for v in self.block.data)  # type: ignore[return-value]

    def shared_layout(self) -> tuple[dict[SharedOp | MBarrierOp, int], int]:
        """Where each shared array of the body starts, in bytes from the block's shared
        memory, and where the last one ends: in walk order, each array 16-byte aligned
        (the emitter declares them ``__align__(SHARED_ALIGNMENT)`` for vector accesses) or
        at its own ``align``; mbarriers take 8 bytes each."""
        offsets: dict[SharedOp | MBarrierOp, int] = {}
        end = 0
        for op in self.walk():
            if isinstance(op, SharedOp | MBarrierOp):
                align = op.alignment
                offsets[op] = -(-end // align) * align
                end = offsets[op] + op.size_bytes()
        return offsets, end

    def shared_bytes(self) -> int:
        """Shared memory the body allocates (``shared_layout``'s end)."""
        return self.shared_layout()[1]

    def dynamic_shared_bytes(self) -> int:
        """The dynamic shared memory a launch of this kernel asks for: all of it when it
        is more than CUDA's ``STATIC_SHARED_BYTES`` (48 KB) allow in static ``__shared__``
        arrays (the emitter then carves the arrays out of one ``extern __shared__`` buffer
        and the launch opts in past 48 KB), else 0."""
        total = self.shared_bytes()
        return total if total > STATIC_SHARED_BYTES else 0

    def verify_(self) -> None:
        check_block(self.body.block)
        verify_signature(self, self.body)
        block, grid = self.block_shape, self.grid_shape
        if min(block) < 1 or min(grid) < 1:
            raise VerifyException(f"kernel.kernel: grid {grid} and block {block} must be positive")
        if self.resident is not None and self.resident.data < 1:
            raise VerifyException(f"kernel.kernel: resident({self.resident.data}) must be positive")
        threads = block[0] * block[1] * block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"kernel.kernel: block {block} has {threads} threads, more than "
                f"{MAX_THREADS_PER_BLOCK}"
            )
        for what, shape, limit in (("block", block, MAX_BLOCK), ("grid", grid, MAX_GRID)):
            if any(n > most for n, most in zip(shape, limit, strict=True)):
                raise VerifyException(
                    f"kernel.kernel: {what} {shape} exceeds CUDA's limits {limit} per dimension"
                )
        if threads % WARP and any(isinstance(op, ShflXorOp) for op in self.walk()):
            raise VerifyException(
                f"kernel.kernel: block {block} has {threads} threads, not whole warps of "
                f"{WARP}, but kernel.shfl_xor exchanges across whole warps"
            )
        verify_schedule_attributes(self)
        if self.shared_bytes() > MAX_SHARED_BYTES:
            raise VerifyException(
                f"kernel.kernel: {self.shared_bytes()} bytes of shared memory exceed the "
                f"target's {MAX_SHARED_BYTES} per block"
            )

    def print(self, printer: Printer) -> None:
        print_kernel_name(printer, self)
        printer.print_string(
            f" grid({', '.join(map(str, self.grid_shape))})"
            f" block({', '.join(map(str, self.block_shape))})"
        )
        if self.resident is not None:
            printer.print_string(f" resident({self.resident.data})")
        print_signature(printer, self, self.body)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name()
        parser.parse_keyword("grid")
        grid = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_integer)
        parser.parse_keyword("block")
        block = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_integer)
        resident = None
        if parser.parse_optional_keyword("resident"):
            parser.parse_punctuation("(")
            resident = parser.parse_integer()
            parser.parse_punctuation(")")
        operands, args, result_types = parse_signature(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        op = cls(name.data, grid, block, operands, result_types, region)
        if resident is not None:
            op.resident = IntAttr(resident)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


def enclosing_kernel(op: Operation) -> KernelOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, KernelOp):
        parent = parent.parent_op()
    return parent


class _IdOp(IRDLOperation):
    """``%t = kernel.<thread|block>_id x``"""

    dim = prop_def(StringAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, dim: str = "x"):
        super().__init__(result_types=[IndexType()], properties={"dim": StringAttr(dim)})

    def extent(self, kernel: KernelOp) -> int:
        raise NotImplementedError

    def index_range(self, value: SSAValue) -> tuple[int, int] | None:
        kernel = enclosing_kernel(self)
        if kernel is None:
            return None
        return (0, self.extent(kernel) - 1)

    def verify_(self) -> None:
        if self.dim.data not in DIMS:
            raise VerifyException(f"{self.name}: dimension '{self.dim.data}' is not x, y or z")
        if enclosing_kernel(self) is None:
            raise VerifyException(f"{self.name}: only meaningful inside a kernel.kernel")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dim.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        dim = parser.parse_identifier()
        op = cls(dim)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


@irdl_op_definition
class ThreadIdOp(_IdOp):
    name = "kernel.thread_id"

    def extent(self, kernel: KernelOp) -> int:
        return kernel.block_shape[DIMS.index(self.dim.data)]


@irdl_op_definition
class BlockIdOp(_IdOp):
    name = "kernel.block_id"

    def extent(self, kernel: KernelOp) -> int:
        return kernel.grid_shape[DIMS.index(self.dim.data)]


class _ArrayOp(IRDLOperation):
    """An array a kernel allocates by name: ``%s = kernel.<shared|local> "name" : memref``."""

    WHAT: ClassVar[str] = "an array"

    sym_name = prop_def(StringAttr)
    result = result_def(MemRefType)
    traits = traits_def(MemoryAllocEffect())

    def __init__(self, name: str, type_: MemRefType):
        super().__init__(result_types=[type_], properties={"sym_name": StringAttr(name)})

    def size_bytes(self) -> int:
        type_ = self.result.type
        assert isinstance(type_, MemRefType)
        return memref_bytes(type_)

    def verify_(self) -> None:
        kernel = enclosing_kernel(self)
        if kernel is None or self.parent_op() is not kernel:
            raise VerifyException(
                f"{self.name}: {self.WHAT} is allocated at the top level of a kernel.kernel"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.sym_name.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error(f"{cls.name} allocates a memref")
        op = cls(name, type_)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SharedOp(_ArrayOp):
    """``%s = kernel.shared "acc0_smem" [align 128] : memref<8xf32>``: a block's shared array.

    Every shared array starts ``SHARED_ALIGNMENT`` (16) bytes aligned, enough for 16-byte
    vector accesses; ``align N`` asks for more (a power of two up to 1024): a TMA copy's
    destination must be 128-byte aligned (``kernel.tma_load``)."""

    name = "kernel.shared"
    WHAT: ClassVar[str] = "shared memory"
    align = opt_prop_def(IntAttr)

    def __init__(self, name: str, type_: MemRefType, align: int | None = None):
        super().__init__(name, type_)
        if align is not None:
            self.align = IntAttr(align)

    @property
    def alignment(self) -> int:
        return (
            max(SHARED_ALIGNMENT, self.align.data) if self.align is not None else SHARED_ALIGNMENT
        )

    def verify_(self) -> None:
        super().verify_()
        if self.align is not None:
            a = self.align.data
            if a < 1 or a & (a - 1) or a > MAX_SHARED_ALIGNMENT:
                raise VerifyException(
                    f"kernel.shared: align {a} must be a power of two up to {MAX_SHARED_ALIGNMENT}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.sym_name.data)
        if self.align is not None:
            printer.print_string(f" align {self.align.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        name = parser.parse_str_literal()
        align = None
        if parser.parse_optional_keyword("align") is not None:
            align = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if not isinstance(type_, MemRefType):
            parser.raise_error(f"{cls.name} allocates a memref")
        op = cls(name, type_, align)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class LocalOp(_ArrayOp):
    """``%r = kernel.local "x_regs" : memref<4xf32>``: a small array of each thread's own.

    Indexed by constants once the loops around its accesses are unrolled, it lives in
    registers (``float x_regs[4]``); ``materialize`` holds the next K chunk in one while
    the current chunk is computed (register prefetch, see ``stage_fills``)."""

    name = "kernel.local"
    WHAT: ClassVar[str] = "a thread's local array"


def _depends_on_thread(value: SSAValue, seen: set[SSAValue] | None = None) -> bool:
    """Whether ``value`` is computed (transitively) from the thread index or a load."""
    seen = seen if seen is not None else set()
    if value in seen:
        return False
    seen.add(value)
    owner = value.owner
    if isinstance(owner, Block):
        parent = owner.parent_op()
        # A loop induction variable varies per thread when its start does.
        if isinstance(parent, ForOp) and value is parent.induction_var:
            return _depends_on_thread(parent.start, seen)
        return False
    if isinstance(owner, ThreadIdOp | LoadOp | ShflXorOp):
        return True
    return any(_depends_on_thread(o, seen) for o in owner.operands)


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """``kernel.barrier``: every thread of the block waits here (``__syncthreads``)."""

    name = "kernel.barrier"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()

    def verify_(self) -> None:
        parent = self.parent_op()
        while parent is not None and not isinstance(parent, KernelOp):
            if isinstance(parent, scf.IfOp) and _depends_on_thread(parent.cond):
                raise VerifyException(
                    "kernel.barrier: under an scf.if whose condition depends on the thread; "
                    "threads that skip the barrier deadlock the block"
                )
            if isinstance(parent, ForOp) and _depends_on_thread(parent.start):
                raise VerifyException(
                    "kernel.barrier: inside a kernel.for whose trip count depends on the thread"
                )
            parent = parent.parent_op()


@irdl_op_definition
class ShflXorOp(IRDLOperation):
    """``%r = kernel.shfl_xor %v, 16 : f32``: the value of lane ``lane ^ 16`` of the warp."""

    name = "kernel.shfl_xor"
    value = operand_def()
    offset = prop_def(IntAttr)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, offset: int):
        super().__init__(
            operands=[value], result_types=[value.type], properties={"offset": IntAttr(offset)}
        )

    def verify_(self) -> None:
        offset = self.offset.data
        if offset < 1 or offset >= 32 or offset & (offset - 1):
            raise VerifyException(
                f"kernel.shfl_xor: lane offset {offset} must be a power of two below 32"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(f", {self.offset.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> ShflXorOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        op = cls(parser.resolve_operand(value, type_), offset)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class MmaOp(MmaBase):
    """``kernel.mma``: a warp's tensor-core product (``dialects/mma.py``), from ``tile.mma``;
    emitted as ``mma.sync`` (three of them for tf32x3). The block's threads must be whole
    warps."""

    name = "kernel.mma"

    def block_threads(self) -> int | None:
        kernel = enclosing_kernel(self)
        return math.prod(kernel.block_shape) if kernel is not None else None


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a reduce ``kernel.for`` body: one contribution per accumulator."""

    name = "kernel.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class ForOp(StridedForBase):
    """``kernel.for %i = %start to N step S [vector V] [reduce(..) -> ..] [unroll U]``

    A counted loop; a reduce loop keeps one register accumulator per kind, starting at the
    kind's identity, as at the loop level. ``vector V`` as on ``tile.strided_for``: the loop
    counts ``c`` from start by S below N / V and runs the body for ``%i = V*c .. V*c+V-1``.
    """

    name = "kernel.for"


@irdl_op_definition
class LoadOp(LoadBase):
    """``%v = kernel.load %buf[%i * 2048 + %j] : memref<..>`` (global or shared)."""

    name = "kernel.load"
    traits = traits_def(MemoryReadEffect())


@irdl_op_definition
class StoreOp(StoreBase):
    """``kernel.store %v, %buf[..] : memref<..>`` (global or shared)."""

    name = "kernel.store"
    traits = traits_def(MemoryWriteEffect())


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """``kernel.cp_async %x_b[..] -> %x_smem[..] : memref<..> -> memref<..>``

    One element copied from global to shared memory in the background (``cp.async``,
    sm_80+): the copy joins the thread's open *group*, which ``kernel.cp_async_commit``
    closes; ``kernel.cp_async_wait N`` waits until at most N of the thread's groups are in
    flight. Until then the element must not be read, and other threads see it only after a
    barrier that follows the wait. Both indices are over one operand list. ``guarded``
    (a guarded slab's fill): a source index outside the buffer copies a zero (cp.async's
    zero fill: a source size of 0).
    """

    name = "kernel.cp_async"
    source = operand_def(MemRefType)
    target = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    source_map = prop_def(AffineMapAttr)
    target_map = prop_def(AffineMapAttr)
    guarded = opt_prop_def(UnitAttr)

    def __init__(
        self,
        source: SSAValue,
        source_map: AffineMap,
        target: SSAValue,
        target_map: AffineMap,
        indices: Sequence[SSAValue],
        guarded: bool = False,
    ):
        (source_map, target_map), operands = _joined([(source_map, indices), (target_map, indices)])
        properties: dict[str, Attribute] = {
            "source_map": AffineMapAttr(source_map),
            "target_map": AffineMapAttr(target_map),
        }
        if guarded:
            properties["guarded"] = UnitAttr()
        super().__init__(operands=[source, target, operands], properties=properties)

    @property
    def buffer(self) -> SSAValue:
        """The global buffer read (as a load names it in the interpreters' messages)."""
        return self.source

    @property
    def is_guarded(self) -> bool:
        return self.guarded is not None

    def guarded_dims(self) -> list[int]:
        """The source dimensions a guarded copy tests (see ``access.LoadBase``)."""
        if not self.is_guarded:
            return []
        return dims_leaving(self.source_map.data, self.indices, self.source.type.get_shape())  # type: ignore[attr-defined]

    def verify_(self) -> None:
        src, dst = self.source.type, self.target.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if src.element_type != dst.element_type:
            raise VerifyException("kernel.cp_async: copies between buffers of different elements")
        if not isinstance(self.target.owner, SharedOp):
            raise VerifyException("kernel.cp_async: the target must be a kernel.shared array")
        check_in_bounds(
            self.name, self.source_map.data, self.indices, src.get_shape(), not self.is_guarded
        )
        check_in_bounds(self.name, self.target_map.data, self.indices, dst.get_shape())

    def print(self, printer: Printer) -> None:
        _print_copy(printer, self)
        if self.is_guarded:
            printer.print_string(" guarded")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.target.type)

    @classmethod
    def parse(cls, parser: Parser) -> CpAsyncOp:
        source, source_indices, target, target_indices = _parse_copy(parser)
        guarded = parser.parse_optional_keyword("guarded") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        dst_type = parser.parse_type()
        src, dst = parser.resolve_operands([source, target], [src_type, dst_type], parser.pos)
        (source_map, target_map), indices = _joined(
            [_resolved(parser, source_indices), _resolved(parser, target_indices)]
        )
        op = cls(src, source_map, dst, target_map, indices, guarded)
        op.attributes.update(attrs)
        return op


def _print_copy(printer: Printer, op: CpAsyncOp | TmaLoadOp) -> None:
    """`` %src[..] -> %dst[..]``: a copy's source and target, each with its indices."""
    printer.print_string(" ")
    printer.print_ssa_value(op.source)
    print_indices(printer, op.source_map.data, op.indices)
    printer.print_string(" -> ")
    printer.print_ssa_value(op.target)
    print_indices(printer, op.target_map.data, op.indices)


def _parse_copy(parser: Parser) -> tuple:
    """What ``_print_copy`` prints: (source, its (map, unresolved operands), target, its)."""
    source = parser.parse_unresolved_operand()
    source_indices = parse_indices(parser)
    parser.parse_punctuation("->")
    target = parser.parse_unresolved_operand()
    return source, source_indices, target, parse_indices(parser)


def _resolved(parser: Parser, indices: tuple) -> tuple[AffineMap, list[SSAValue]]:
    """A parsed (map, unresolved operands) with its operands resolved as indices."""
    map_, operands = indices
    return map_, [parser.resolve_operand(o, IndexType()) for o in operands]


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """``kernel.cp_async_commit``: close the thread's open group of ``kernel.cp_async``."""

    name = "kernel.cp_async_commit"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CpAsyncWaitOp(IRDLOperation):
    """``kernel.cp_async_wait 1``: wait until at most N committed groups are in flight.

    The verifier holds that every ``kernel.cp_async`` before it (in program order) was
    committed: a copy left in the open group is never waited for by this wait, which is a
    schedule bug, not a choice."""

    name = "kernel.cp_async_wait"
    pending = prop_def(IntAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, pending: int):
        super().__init__(properties={"pending": IntAttr(pending)})

    def verify_(self) -> None:
        if self.pending.data < 0:
            raise VerifyException("kernel.cp_async_wait: the pending count must not be negative")
        kernel = enclosing_kernel(self)
        if kernel is None:
            raise VerifyException("kernel.cp_async_wait: only meaningful inside a kernel.kernel")
        open_copies, committed = 0, 0
        for op in kernel.walk():
            if op is self:
                break
            if isinstance(op, CpAsyncOp):
                open_copies += 1
            elif isinstance(op, CpAsyncCommitOp):
                committed += 1
                open_copies = 0
        if open_copies:
            raise VerifyException(
                "kernel.cp_async_wait: cp.async copies before it are not committed "
                "(kernel.cp_async_commit closes their group; a wait never covers an open group)"
            )
        if not committed:
            raise VerifyException("kernel.cp_async_wait: no committed cp.async group to wait for")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.pending.data}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> CpAsyncWaitOp:
        op = cls(parser.parse_integer())
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


# --- TMA and mbarriers (sm_90) -------------------------------------------------------------


@irdl_op_definition
class MBarrierOp(_ArrayOp):
    """``%bar = kernel.mbarrier "k_bar" : memref<2xi64>``: N mbarriers in shared memory.

    An mbarrier (sm_80+; transaction counts sm_90) counts *arrivals* and *transaction
    bytes* per *phase*: a phase completes when its expected arrivals have arrived and the
    bytes it was told to expect (``kernel.mbarrier_arrive_expect_tx``) have landed (TMA
    copies complete bytes on it, ``kernel.tma_load``); then the next phase begins.
    Threads wait for a phase by its parity (``kernel.mbarrier_wait``)."""

    name = "kernel.mbarrier"
    WHAT: ClassVar[str] = "an mbarrier"

    @property
    def alignment(self) -> int:
        return 8

    def verify_(self) -> None:
        super().verify_()
        type_ = self.result.type
        assert isinstance(type_, MemRefType)
        element = type_.element_type
        if (
            len(type_.get_shape()) != 1
            or not isinstance(element, IntegerType)
            or element.width.data != 64
        ):
            raise VerifyException(
                f"kernel.mbarrier: mbarriers are a memref<Nxi64> (one 8-byte word each), "
                f"not {type_}"
            )


def _joined(
    parts: Sequence[tuple[AffineMap, Sequence[SSAValue]]],
) -> tuple[list[AffineMap], list[SSAValue]]:
    """Several index maps, each over its own operands, as maps over one operand list
    (canonical: dims in order of first appearance, a repeated value one dim)."""
    results: list[tuple[AffineExpr, ...]] = []
    operands: list[SSAValue] = []
    for map_, values in parts:
        shift = [AffineExpr.dimension(len(operands) + i) for i in range(map_.num_dims)]
        results.append(tuple(r.replace_dims_and_symbols(shift, []) for r in map_.results))
        operands.extend(values)
    both = AffineMap(len(operands), 0, tuple(r for rs in results for r in rs))
    both, operands = index_map_for(both, operands)
    maps, start = [], 0
    for rs in results:
        maps.append(AffineMap(both.num_dims, 0, both.results[start : start + len(rs)]))
        start += len(rs)
    return maps, operands


def _check_mbarrier(op: Operation, barrier: SSAValue, map_: AffineMap, indices) -> MBarrierOp:
    """The ``kernel.mbarrier`` an op uses: allocated, index in bounds, initialised (some
    ``kernel.mbarrier_init`` of the array precedes ``op`` in program order)."""
    owner = barrier.owner
    if not isinstance(owner, MBarrierOp):
        raise VerifyException(f"{op.name}: the barrier must be a kernel.mbarrier array")
    check_in_bounds(op.name, map_, indices, owner.result.type.get_shape())  # type: ignore[attr-defined]
    if isinstance(op, MBarrierInitOp):
        return owner
    kernel = enclosing_kernel(op)
    if kernel is not None:
        for other in kernel.walk():
            if other is op:
                break
            if isinstance(other, MBarrierInitOp) and other.barrier is barrier:
                return owner
    raise VerifyException(
        f"{op.name}: the mbarrier {owner.sym_name.data!r} is used before any "
        "kernel.mbarrier_init of it"
    )


class _BarrierOpBase(IRDLOperation):
    """``kernel.<op> %bar[index], N : memref<Kxi64>``: an op on one mbarrier of an array,
    with one integer (``VALUE``: the arrival count, the transaction bytes)."""

    VALUE: ClassVar[str]
    BOUNDS: ClassVar[tuple[int, int]]
    """The values the hardware takes, inclusive."""
    OUT_OF_BOUNDS: ClassVar[str]
    """The verifier's message for a value outside ``BOUNDS`` (``{value}``, ``{low}``,
    ``{high}`` filled in)."""

    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(self, barrier: SSAValue, map_: AffineMap, indices: Sequence[SSAValue], value):
        map_, operands = index_map_for(map_, indices)
        super().__init__(
            operands=[barrier, operands],
            properties={"map": AffineMapAttr(map_), self.VALUE: IntAttr(value)},
        )

    @property
    def value(self) -> int:
        return self.properties[self.VALUE].data  # type: ignore[attr-defined]

    def verify_(self) -> None:
        _check_mbarrier(self, self.barrier, self.map.data, self.indices)
        low, high = self.BOUNDS
        if not low <= self.value <= high:
            message = self.OUT_OF_BOUNDS.format(value=self.value, low=low, high=high)
            raise VerifyException(f"{self.name}: {message}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.barrier)
        print_indices(printer, self.map.data, self.indices)
        printer.print_string(f", {self.value}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)

    @classmethod
    def parse(cls, parser: Parser):
        barrier = parser.parse_unresolved_operand()
        map_, index_operands = parse_indices(parser)
        parser.parse_punctuation(",")
        value = parser.parse_integer()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        bar = parser.resolve_operand(barrier, type_)
        indices = [parser.resolve_operand(o, IndexType()) for o in index_operands]
        op = cls(bar, map_, indices, value)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class MBarrierInitOp(_BarrierOpBase):
    """``kernel.mbarrier_init %bar[0], 1 : memref<2xi64>``: phase 0 begins, expecting
    ``count`` arrivals a phase. One thread initialises; a ``kernel.barrier`` then makes
    the barrier visible to the others (the interpreter reports a use before it)."""

    name = "kernel.mbarrier_init"
    count = prop_def(IntAttr)
    VALUE: ClassVar[str] = "count"
    BOUNDS: ClassVar[tuple[int, int]] = (1, MAX_THREADS_PER_BLOCK)
    OUT_OF_BOUNDS: ClassVar[str] = (
        "{value} arrivals a phase; a block has {low} to {high} threads to arrive"
    )


@irdl_op_definition
class MBarrierArriveExpectTxOp(_BarrierOpBase):
    """``kernel.mbarrier_arrive_expect_tx %bar[%buf], 6144 : memref<2xi64>``: the thread
    arrives on the barrier's current phase and tells it to expect that many more bytes
    (the TMA copies issued for the phase complete them)."""

    name = "kernel.mbarrier_arrive_expect_tx"
    bytes = prop_def(IntAttr)
    VALUE: ClassVar[str] = "bytes"
    BOUNDS: ClassVar[tuple[int, int]] = (0, TMA_MAX_TX_BYTES)
    OUT_OF_BOUNDS: ClassVar[str] = (
        "{value} bytes; an mbarrier's transaction count holds {low} to {high}"
    )


@irdl_op_definition
class MBarrierWaitOp(IRDLOperation):
    """``kernel.mbarrier_wait %bar[%buf], %parity : memref<2xi64>``: wait until the
    barrier's phase of parity ``%parity`` (0 or 1) has completed (``try_wait.parity``):
    the current phase if its parity is ``%parity``, else the one before it, which has
    (the wait returns at once). The copies that completed on the phase are then visible
    to the waiting thread."""

    name = "kernel.mbarrier_wait"
    barrier = operand_def(MemRefType)
    parity = operand_def(IndexType)
    indices = var_operand_def(IndexType)
    map = prop_def(AffineMapAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(
        self, barrier: SSAValue, map_: AffineMap, indices: Sequence[SSAValue], parity: SSAValue
    ):
        map_, operands = index_map_for(map_, indices)
        super().__init__(
            operands=[barrier, parity, operands], properties={"map": AffineMapAttr(map_)}
        )

    def verify_(self) -> None:
        _check_mbarrier(self, self.barrier, self.map.data, self.indices)
        bounds = value_ranges([self.parity])[0]
        if bounds is not None and (bounds[0] < 0 or bounds[1] > 1):
            raise VerifyException(
                f"kernel.mbarrier_wait: the parity ranges over [{bounds[0]}, {bounds[1]}], "
                "not 0 or 1"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.barrier)
        print_indices(printer, self.map.data, self.indices)
        printer.print_string(", ")
        printer.print_ssa_value(self.parity)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)

    @classmethod
    def parse(cls, parser: Parser) -> MBarrierWaitOp:
        barrier = parser.parse_unresolved_operand()
        map_, index_operands = parse_indices(parser)
        parser.parse_punctuation(",")
        parity = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        bar = parser.resolve_operand(barrier, type_)
        indices = [parser.resolve_operand(o, IndexType()) for o in index_operands]
        op = cls(bar, map_, indices, parser.resolve_operand(parity, IndexType()))
        op.attributes.update(attrs)
        return op


def _multiple_of(expr: AffineExpr, n: int) -> bool:
    """Whether ``expr`` is a multiple of ``n`` for every value of its dims (sufficient
    test: sums of multiples, products with a multiple)."""
    if isinstance(expr, AffineConstantExpr):
        return expr.value % n == 0
    if isinstance(expr, AffineBinaryOpExpr):
        if expr.kind == AffineBinaryOpKind.Add:
            return _multiple_of(expr.lhs, n) and _multiple_of(expr.rhs, n)
        if expr.kind == AffineBinaryOpKind.Mul:
            for factor, other in ((expr.rhs, expr.lhs), (expr.lhs, expr.rhs)):
                if isinstance(factor, AffineConstantExpr):
                    g = math.gcd(factor.value, n)
                    return g == n or _multiple_of(other, n // g)
    return False


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """``kernel.tma_load %x_b[%k * 16, %m0] -> %x_smem[%buf, 0, 0] box [16, 32]
    barrier %bar[%buf] : memref<128x64xf32> -> memref<2x16x32xf32>, memref<2xi64>``

    One thread copies a whole *box* of a global input into shared memory with the Tensor
    Memory Accelerator (``cp.async.bulk.tensor``, sm_90): the box of extents ``box``
    (the source's trailing dimensions, in its order) at the source coordinates lands
    densely (row-major, no padding) from the destination index on, and its bytes complete
    on the mbarrier: a thread may read the box once it waited for that phase
    (``kernel.mbarrier_wait``). The runtime passes a tensor map per (source, box,
    swizzle) as a kernel parameter.

    ``swizzle 128`` (``SWIZZLE_128B``, the one mode modelled) stores each 128-byte box row
    with its 16-byte chunks permuted, chunk ``c`` of row ``r`` at ``c xor (r mod 8)``, so
    that reading a column touches every bank; the box's inner row is at most 128 bytes
    and the box starts at a multiple of 1024 bytes (the pattern's repeat: it follows the
    address bits) of an array aligned so.

    The verifier holds TMA's rules, each named when broken: the source is an input
    buffer of the kernel; the box is of rank 1 to 5, each extent 1 to 256, its inner row a
    multiple of 16 bytes (and within the swizzle span), the source's strides multiples of
    16 bytes; the box fills the trailing dimensions of the destination densely (a padded
    slab cannot be TMA'd); the destination is a ``kernel.shared`` array aligned to 128
    bytes (``align 128``) and the box starts at a multiple of 128 bytes in it; the box lies
    inside the source; the barrier is an initialised ``kernel.mbarrier``.
    """

    name = "kernel.tma_load"
    source = operand_def(MemRefType)
    target = operand_def(MemRefType)
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    source_map = prop_def(AffineMapAttr)
    target_map = prop_def(AffineMapAttr)
    barrier_map = prop_def(AffineMapAttr)
    box = prop_def(ArrayAttr[IntAttr])
    swizzle = opt_prop_def(IntAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(
        self,
        source: SSAValue,
        source_map: AffineMap,
        target: SSAValue,
        target_map: AffineMap,
        barrier: SSAValue,
        barrier_map: AffineMap,
        indices: Sequence[SSAValue],
        box: Sequence[int],
        swizzle: int | None = None,
    ):
        """All three maps are over ``indices``."""
        (source_map, target_map, barrier_map), operands = _joined(
            [(source_map, indices), (target_map, indices), (barrier_map, indices)]
        )
        properties: dict[str, Attribute] = {
            "source_map": AffineMapAttr(source_map),
            "target_map": AffineMapAttr(target_map),
            "barrier_map": AffineMapAttr(barrier_map),
            "box": ArrayAttr([IntAttr(e) for e in box]),
        }
        if swizzle is not None:
            properties["swizzle"] = IntAttr(swizzle)
        super().__init__(operands=[source, target, barrier, operands], properties=properties)

    @property
    def buffer(self) -> SSAValue:
        """The global buffer read (as a load names it in the interpreters' messages)."""
        return self.source

    @property
    def box_shape(self) -> tuple[int, ...]:
        return tuple(e.data for e in self.box.data)

    @property
    def swizzle_bytes(self) -> int | None:
        return self.swizzle.data if self.swizzle is not None else None

    def box_bytes(self) -> int:
        src = self.source.type
        assert isinstance(src, MemRefType)
        return math.prod(self.box_shape) * element_bytes(src.element_type)

    def _fail(self, rule: str) -> VerifyException:
        return VerifyException(f"kernel.tma_load: {rule}")

    def verify_(self) -> None:
        src, dst = self.source.type, self.target.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if src.element_type != dst.element_type:
            raise self._fail("copies between buffers of different elements")
        kernel = enclosing_kernel(self)
        if kernel is None or self.source not in kernel.input_buffers:
            raise self._fail(
                "the source must be an input buffer of the kernel (TMA reads global memory)"
            )
        if not isinstance(self.target.owner, SharedOp):
            raise self._fail("the target must be a kernel.shared array")
        box, shape, stored = self.box_shape, src.get_shape(), dst.get_shape()
        element = element_bytes(src.element_type)
        broken = tma_box_rule(box, element, shape, self.swizzle_bytes)
        if broken is not None:
            raise self._fail(broken)
        k = len(box)
        dense = k <= len(stored) and tuple(stored[len(stored) - k :]) == tuple(box)
        inner = self.target_map.data.results[len(stored) - k :] if dense else ()
        if not dense or not all(isinstance(e, AffineConstantExpr) and e.value == 0 for e in inner):
            raise self._fail(
                f"the box {list(box)} must fill the trailing dimensions of the shared array "
                f"{list(stored)} from index 0 (TMA writes a box densely: no pad)"
            )
        alignment = self.target.owner.alignment
        if alignment < TMA_ALIGNMENT:
            raise self._fail(
                f"the shared destination {self.target.owner.sym_name.data!r} is {alignment}-byte "
                f"aligned; TMA needs {TMA_ALIGNMENT} (kernel.shared ... align {TMA_ALIGNMENT})"
            )
        offset = row_major_offset(self.target_map.data, stored) * element
        if not _multiple_of(offset, TMA_ALIGNMENT):
            raise self._fail(
                f"the box does not start at a multiple of {TMA_ALIGNMENT} bytes of the shared "
                "array (TMA's destination alignment)"
            )
        if self.swizzle is not None:
            repeat = swizzle_repeat(self.swizzle.data)
            if alignment < repeat or not _multiple_of(offset, repeat):
                raise self._fail(
                    f"a {self.swizzle.data}-byte swizzle follows the address bits: the box "
                    f"must start at a multiple of {repeat} bytes of an array aligned to {repeat}"
                )
        check_in_bounds(self.name, self.target_map.data, self.indices, stored)
        ranges = value_ranges(self.indices)
        extents = [1] * (len(shape) - k) + list(box)
        for dim, (expr, size, extent) in enumerate(
            zip(self.source_map.data.results, shape, extents, strict=True)
        ):
            bounds = expr_range(expr, ranges)
            if bounds is not None and (bounds[0] < 0 or bounds[1] + extent > size):
                raise self._fail(f"dimension {dim} of the box leaves the source's extent {size}")
        _check_mbarrier(self, self.barrier, self.barrier_map.data, self.indices)

    def print(self, printer: Printer) -> None:
        _print_copy(printer, self)
        printer.print_string(f" box [{', '.join(map(str, self.box_shape))}]")
        if self.swizzle is not None:
            printer.print_string(f" swizzle {self.swizzle.data}")
        printer.print_string(" barrier ")
        printer.print_ssa_value(self.barrier)
        print_indices(printer, self.barrier_map.data, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.target.type)
        printer.print_string(", ")
        printer.print_attribute(self.barrier.type)

    @classmethod
    def parse(cls, parser: Parser) -> TmaLoadOp:
        source, source_indices, target, target_indices = _parse_copy(parser)
        parser.parse_keyword("box")
        box = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        swizzle = None
        if parser.parse_optional_keyword("swizzle") is not None:
            swizzle = parser.parse_integer()
        parser.parse_keyword("barrier")
        barrier = parser.parse_unresolved_operand()
        barrier_indices = parse_indices(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        parser.parse_punctuation("->")
        dst_type = parser.parse_type()
        parser.parse_punctuation(",")
        bar_type = parser.parse_type()
        src, dst, bar = parser.resolve_operands(
            [source, target, barrier], [src_type, dst_type, bar_type], parser.pos
        )
        (source_map, target_map, barrier_map), indices = _joined(
            [_resolved(parser, i) for i in (source_indices, target_indices, barrier_indices)]
        )
        op = cls(src, source_map, dst, target_map, bar, barrier_map, indices, box, swizzle)
        op.attributes.update(attrs)
        return op


Kernel = Dialect(
    "kernel",
    [
        KernelOp,
        ThreadIdOp,
        BlockIdOp,
        SharedOp,
        LocalOp,
        BarrierOp,
        ShflXorOp,
        MmaOp,
        ForOp,
        YieldOp,
        LoadOp,
        StoreOp,
        CpAsyncOp,
        CpAsyncCommitOp,
        CpAsyncWaitOp,
        MBarrierOp,
        MBarrierInitOp,
        MBarrierArriveExpectTxOp,
        MBarrierWaitOp,
        TmaLoadOp,
    ],
)
