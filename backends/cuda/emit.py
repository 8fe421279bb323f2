"""CUDA C from the kernel level: one tree walk, one ``__global__`` function per kernel.

Every ``kernel.kernel`` of the module becomes::

    // grid (32, 1, 1), block (256, 1, 1)
    extern "C" __global__ void __launch_bounds__(256) k_rms_norm(
        const float* __restrict__ xb, const float* __restrict__ wb, float* __restrict__ yb) {
      ...
    }

Inputs are ``const`` and every pointer ``__restrict__`` (kernels never alias their
operands), so loads can take the read-only path. The walk is one-to-one:

* SSA values become ``const`` locals named from their name hints (made C identifiers,
  unique per kernel); constants are inlined as literals (float literals are the shortest
  text that reads back to the same float32, with an ``f``; infinities and NaN spelled
  through ``__int_as_float`` so no header is needed).
* A reduce ``kernel.for`` keeps one mutable accumulator per kind: ``float acc = <identity>;
  for (..) { ..; acc = acc + v; }``; a ``kernel.for`` with ``unroll`` gets ``#pragma unroll``.
  A reduce loop whose results are only yielded to the enclosing reduce loop (a K chunk
  of ``chunk-matmul-k``) accumulates straight into the outer accumulators.
  A thread-strided loop whose trip count is the same for every thread counts from 0
  (``for (j = 0; j < 8; ++j) { a = t + j * 256; .. }``): unrolled, its loads are the same
  expressions in every loop over the row, and NVRTC keeps them in registers (softmax's
  three passes load each element once and compute its exp once).
* Indices: an index value is an ``int`` when its range (known from the ops that bind it)
  fits in 32 bits, else ``long long``; buffer accesses are linearised row-major with the
  memref's shape and computed in ``long long`` only when the buffer has 2^31 or more
  elements. ``floordiv``/``mod`` print as ``/``/``%``, exact because indices are never
  negative.
* ``kernel.cp_async`` / ``_commit`` / ``_wait N`` → the PTX ``cp.async.ca.shared.global``
  (4 bytes; a ``vector 4`` loop of copies contiguous on both sides: one 16-byte
  ``cp.async.cg``), ``cp.async.commit_group`` and ``cp.async.wait_group N`` in inline asm.
* TMA (sm_90): ``kernel.mbarrier`` → ``__shared__ unsigned long long name[N]``;
  ``kernel.mbarrier_init`` → ``mbarrier.init.shared::cta.b64`` and
  ``fence.mbarrier_init.release.cluster`` (the init is visible to the TMA unit);
  ``kernel.mbarrier_arrive_expect_tx`` → ``mbarrier.arrive.expect_tx.shared::cta.b64``;
  ``kernel.mbarrier_wait`` → a ``mbarrier.try_wait.parity.shared::cta.b64`` loop;
  ``kernel.tma_load`` → ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.
  mbarrier::complete_tx::bytes [dst], [tmap, {c..}], [bar]`` (coordinates innermost
  first). Each tensor map a kernel reads through (``tensor_maps.kernel_tensor_maps``) is
  one more parameter after the buffers, ``const __grid_constant__ TmaDescriptor
  <buffer>_tmap`` (an opaque 128-byte, 64-byte-aligned struct declared in the preamble:
  no ``cuda.h`` needed); the copy takes the parameter's address. A ``kernel.shared
  align N`` array is declared ``__align__(N)``. No ``fence.proxy.async`` precedes a TMA
  load: the generic-proxy reads of the buffer it refills are ordered before it by the
  ``__syncthreads`` between (as in the CUDA programming guide's TMA examples); a TMA
  *store* would need one.
* ``scf.if`` → ``if``; ``kernel.barrier`` → ``__syncthreads()``; ``kernel.shfl_xor`` →
  ``__shfl_xor_sync(0xffffffff, v, offset)``; ``kernel.shared`` → ``__shared__ T name[N]``;
  ``kernel.local`` → ``T name[N]`` (registers, once its indices are constants).

``arith.maximumf``/``minimumf`` (relu, max reductions) print as ``maximumf``/``minimumf``,
helpers emitted with the kernels that propagate NaN as MLIR and PyTorch do (``max.NaN.f32``
on sm_80+); ``maxnumf``/``minnumf`` are C's ``fmaxf``/``fminf``. Math calls take the f32
name (``erfinvf``) for f32 and drop the ``f`` for f64 (``erfinv``); ``math_ext``'s ops are
CUDA's ``fmodf``, ``erfcf``, ``erfcxf``, ``erfinvf`` and ``lgammaf``; ``arith.bitcast`` is
``__float_as_int`` and its kin.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

import numpy as np
from xdsl.dialects import affine, arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.traits import is_side_effect_free

from deplodock.backends.cuda.tensor_maps import TensorMapSpec, kernel_tensor_maps, spec_of
from deplodock.dialects import kernel, tile
from deplodock.dialects.access import contiguous_lanes, element_bytes, vector_access
from deplodock.dialects.affine_syntax import (
    expr_range,
    format_expr,
    row_major_offset,
    value_ranges,
)
from deplodock.dialects.combine import (
    ONLINE_MAX,
    combine_kind,
    cuda_online_step,
    groups,
)
from deplodock.dialects.loop import vector_of

INT32_MAX = 2**31 - 1


VECTOR_TYPES = {"float": "float", "int": "int"}
"""Scalar C types with CUDA vector types (``float4``, ``int2``) for ``vector`` loops."""
VECTOR_FIELDS = "xyzw"
_C_SPELLING = {AffineBinaryOpKind.FloorDiv: "/", AffineBinaryOpKind.Mod: "%"}

_C_RESERVED = frozenset(
    """auto bool break case char const continue default do double else enum extern float for
    goto if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while class new delete this true false template
    typename namespace operator private public protected virtual friend asm threadIdx blockIdx
    blockDim gridDim warpSize half min max""".split()
)

_FLOAT_BINARY = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
_INT_BINARY = {
    "arith.addi": "+",
    "arith.subi": "-",
    "arith.muli": "*",
    "arith.divsi": "/",
    "arith.remsi": "%",
    "arith.andi": "&",
    "arith.ori": "|",
    "arith.xori": "^",
    "arith.shli": "<<",
    "arith.shrsi": ">>",
}
# op name -> C function (the f32 spelling; f64 drops the trailing 'f').
_FLOAT_CALLS = {
    "arith.maximumf": "maximumf",  # NaN-propagating: the helpers in NAN_PROPAGATING
    "arith.maxnumf": "fmaxf",
    "arith.minimumf": "minimumf",
    "arith.minnumf": "fminf",
    "arith.remf": "fmodf",
    "math.absf": "fabsf",
    "math.acos": "acosf",
    "math.acosh": "acoshf",
    "math.asin": "asinf",
    "math.asinh": "asinhf",
    "math.atan": "atanf",
    "math.atan2": "atan2f",
    "math.atanh": "atanhf",
    "math.cbrt": "cbrtf",
    "math.ceil": "ceilf",
    "math.copysign": "copysignf",
    "math.cos": "cosf",
    "math.cosh": "coshf",
    "math.erf": "erff",
    "math.erfc": "erfcf",
    "math.exp": "expf",
    "math.exp2": "exp2f",
    "math.expm1": "expm1f",
    "math.floor": "floorf",
    "math.fma": "fmaf",
    "math.log": "logf",
    "math.log10": "log10f",
    "math.log1p": "log1pf",
    "math.log2": "log2f",
    "math.powf": "powf",
    "math.round": "roundf",
    "math.roundeven": "rintf",
    "math.rsqrt": "rsqrtf",
    "math.sin": "sinf",
    "math.sinh": "sinhf",
    "math.sqrt": "sqrtf",
    "math.tan": "tanf",
    "math.tanh": "tanhf",
    "math.trunc": "truncf",
    "math_ext.erfc": "erfcf",
    "math_ext.erfcx": "erfcxf",
    "math_ext.erfinv": "erfinvf",
    "math_ext.lgamma": "lgammaf",
    "math_ext.remf": "fmodf",
}
_INT_CALLS = {
    "arith.maxsi": "max",
    "arith.minsi": "min",
    "arith.maxui": "max",
    "arith.minui": "min",
    "math.absi": "abs",
}
# Functions the emitted code calls: a local of the same name would shadow them.
_C_RESERVED = _C_RESERVED | {
    *_FLOAT_CALLS.values(),
    *(f[:-1] for f in _FLOAT_CALLS.values()),
    *_INT_CALLS.values(),
    "isinf",
    "isnan",
    "INFINITY",
    "NAN",
}
_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
# cmpf: ordered predicates are C's comparisons (false on NaN); unordered ones negate
# the opposite ordered comparison (true on NaN).
_CMPF = {
    1: "{a} == {b}",
    2: "{a} > {b}",
    3: "{a} >= {b}",
    4: "{a} < {b}",
    5: "{a} <= {b}",
    6: "({a} < {b} || {a} > {b})",
    7: "({a} == {a} && {b} == {b})",
    8: "!({a} < {b} || {a} > {b})",
    9: "!({a} <= {b})",
    10: "!({a} < {b})",
    11: "!({a} >= {b})",
    12: "!({a} > {b})",
    13: "{a} != {b}",
    14: "({a} != {a} || {b} != {b})",
}
_CASTS = (
    "arith.sitofp",
    "arith.fptosi",
    "arith.extf",
    "arith.truncf",
    "arith.index_cast",
    "arith.extsi",
    "arith.trunci",
)
_UNSIGNED_CASTS = ("arith.uitofp", "arith.fptoui", "arith.extui", "arith.index_castui")
# arith.bitcast: the same bits as another type, CUDA's reinterpreting intrinsics.
_BITCASTS = {
    ("float", "int"): "__float_as_int",
    ("int", "float"): "__int_as_float",
    ("double", "long long"): "__double_as_longlong",
    ("long long", "double"): "__longlong_as_double",
}


NAN_PROPAGATING = """\
// arith.maximumf / minimumf: the larger / smaller operand, NaN if either is NaN (as
// torch.maximum, relu and max reductions); fmaxf would return the other operand.
__device__ __forceinline__ float maximumf(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
#else
  return (a != a || b != b) ? a + b : fmaxf(a, b);
#endif
}
__device__ __forceinline__ float minimumf(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
#else
  return (a != a || b != b) ? a + b : fminf(a, b);
#endif
}
__device__ __forceinline__ double maximum(double a, double b) {
  return (a != a || b != b) ? a + b : fmax(a, b);
}
__device__ __forceinline__ double minimum(double a, double b) {
  return (a != a || b != b) ? a + b : fmin(a, b);
}
"""


MMA_HELPERS = """\
// kernel.mma m16n8k8 (dialects/mma.py): a warp's D = A B + C on the tensor cores, fp32
// registers read as tf32. tf32x3 splits each operand x = hi + lo: hi is x plus half a
// tf32 ulp (the tensor core drops the low 13 bits: x rounded), lo = x - hi rounded, read
// truncated; D = a_lo b_hi + a_hi b_lo + a_hi b_hi + C.
__device__ __forceinline__ float4 dd_mma_tf32(unsigned a0, unsigned a1, unsigned a2,
    unsigned a3, unsigned b0, unsigned b1, float4 c) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c.x), "+f"(c.y), "+f"(c.z), "+f"(c.w)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  return c;
}
__device__ __forceinline__ unsigned dd_tf32_hi(float x) { return __float_as_uint(x) + 0x1000u; }
__device__ __forceinline__ unsigned dd_tf32_lo(float x) {
  return __float_as_uint(x - __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u));
}
__device__ __forceinline__ float4 dd_mma_m16n8k8_tf32(float a0, float a1, float a2, float a3,
    float b0, float b1, float c0, float c1, float c2, float c3) {
  return dd_mma_tf32(__float_as_uint(a0), __float_as_uint(a1), __float_as_uint(a2),
      __float_as_uint(a3), __float_as_uint(b0), __float_as_uint(b1),
      make_float4(c0, c1, c2, c3));
}
__device__ __forceinline__ float4 dd_mma_m16n8k8_tf32x3(float a0, float a1, float a2,
    float a3, float b0, float b1, float c0, float c1, float c2, float c3) {
  float4 d = make_float4(c0, c1, c2, c3);
  d = dd_mma_tf32(dd_tf32_lo(a0), dd_tf32_lo(a1), dd_tf32_lo(a2), dd_tf32_lo(a3),
      dd_tf32_hi(b0), dd_tf32_hi(b1), d);
  d = dd_mma_tf32(dd_tf32_hi(a0), dd_tf32_hi(a1), dd_tf32_hi(a2), dd_tf32_hi(a3),
      dd_tf32_lo(b0), dd_tf32_lo(b1), d);
  return dd_mma_tf32(dd_tf32_hi(a0), dd_tf32_hi(a1), dd_tf32_hi(a2), dd_tf32_hi(a3),
      dd_tf32_hi(b0), dd_tf32_hi(b1), d);
}
"""


TENSOR_MAP_TYPE = "TmaDescriptor"
TENSOR_MAP_STRUCT = f"""\
// A tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned), encoded on the host by
// cuTensorMapEncodeTiled and passed by value as a __grid_constant__ parameter.
struct __align__(64) {TENSOR_MAP_TYPE} {{ unsigned long long opaque[16]; }};
"""


class EmitError(Exception):
    """The kernel-level module holds something CUDA C cannot be emitted for."""


class DeferredStack(Protocol):
    """What ``emit_cuda`` reads of a decoder stack whose interior copies are not made yet
    (a part of ``runtime.DeferredCopies``, which this module cannot import: the runtime
    imports it; ``restack.Stacked`` is one)."""

    done: bool

    def unmade(self) -> list[str]: ...
    def listing(self) -> Any: ...  # a ``runtime.Listing``: its ops' ``name`` and ``launch``
    def renamed_copies(self) -> RenamedCopies | None: ...
    def complete(self) -> None: ...


GRID_DEPENDENCY = [
    "#if __CUDA_ARCH__ >= 900",
    '  asm volatile("griddepcontrol.wait;" ::: "memory");',
    "#endif",
]
"""Each kernel's first statement on sm_90 and later (programmatic dependent launch): wait
until the grid ahead on the stream has finished and its writes are visible. Launched with
programmatic stream serialization (``driver.KernelFunction``), the next kernel is launched
once every block of this one has exited (the implicit trigger), before this grid's
completion is signalled; launched plainly, the wait is a no-op. An explicit
``griddepcontrol.launch_dependents`` first in every kernel (session 33) let the grid behind
place its blocks, which then only wait, on SMs the running grid still had blocks to fill:
5-10% slower on TinyLlama's layers and whole model (session 34, H100 host)."""


def emit_cuda(module: ModuleOp, stacked: DeferredStack | None = None) -> str:
    """CUDA C for every ``kernel.kernel`` of ``module``, ready for NVRTC.

    ``stacked``: ``module`` is a decoder stack whose interior copies are not made yet
    (``restack.Stacked``): the text is the completed module's, byte for byte, without
    making them: each copy is its template's text renamed (``_renamed_copies``, checked
    on the first copy, which is made), in the order the completed module holds them
    (``stacked.listing()``); where renaming is not shown sound the copies are made and
    every kernel emitted. Making a 28-layer stack's copies took about as long as
    emitting it."""
    if stacked is not None and not stacked.done:
        texts = _deferred_functions(module, stacked)
        if texts is not None:
            return _with_preamble("\n\n".join(texts))
        stacked.complete()
    return _with_preamble("\n\n".join(text for _, text in _kernel_functions(module)))


def _deferred_functions(module: ModuleOp, stacked: DeferredStack) -> list[str] | None:
    """The CUDA functions of ``stacked``'s whole program in order, its unmade copies
    renamed from their templates; None where the copies are not all kernels (``complete``
    then emits every kernel from its IR) or renaming is not shown sound."""
    copies = stacked.renamed_copies()
    if copies is None:
        return None
    kernels = _kernels_of(module)
    texts = _renamed_copies(kernels, copies)
    own = {op.sym_name.data: op for op in kernels}
    order = [op.name for op in stacked.listing().ops if op.launch is not None]
    if not texts or set(order) != own.keys() | set(stacked.unmade()):
        return None
    return [texts.get(name) or _KernelEmitter(own[name]).emit() for name in order]


def emit_kernel_sources(module: ModuleOp) -> dict[str, str]:
    """Each kernel of ``module`` as a source of its own, by kernel name: what ``emit_cuda``
    writes for a module holding only that kernel (so NVRTC can compile them one by one)."""
    return {name: _with_preamble(text) for name, text in _kernel_functions(module)}


@dataclass(frozen=True)
class RenamedCopies:
    """Kernels of a module that are copies of others under moved names (a decoder
    stack's layers, ``deplodock.restack``): ``of[name] = (template, times)`` says kernel
    ``name`` is kernel ``template`` with ``rename(text, times)`` applied to every name."""

    of: Mapping[str, tuple[str, int]]
    rename: Callable[[str, int], str]


_COPIES: weakref.WeakKeyDictionary[ModuleOp, RenamedCopies] = weakref.WeakKeyDictionary()


def emit_copies_renamed(module: ModuleOp, copies: RenamedCopies) -> None:
    """Let ``module``'s copies be emitted by renaming their template's CUDA instead of
    walking them: each template's first copy (``times`` 1) is emitted from its IR too
    and must equal its template's text renamed, else every kernel is walked."""
    _COPIES[module] = copies


def _kernels_of(module: ModuleOp) -> list[kernel.KernelOp]:
    """Every ``kernel.kernel`` of ``module``, in order; an ``EmitError`` where loop or tile
    kernels are left."""
    kernels: list[kernel.KernelOp] = []
    leftovers: set[str] = set()
    for op in module.walk():  # one walk of a whole model's IR finds both
        if isinstance(op, kernel.KernelOp):
            kernels.append(op)
        elif op.name in ("loop.kernel", "tile.kernel"):
            leftovers.add(op.name)
    if leftovers:
        raise EmitError(
            f"emit_cuda: the module still holds {', '.join(sorted(leftovers))}; lower it to "
            "the kernel level first (tileify, cooperative-reduce, blockify-launch, materialize)"
        )
    return kernels


def _kernel_functions(module: ModuleOp) -> list[tuple[str, str]]:
    """(name, CUDA function) for every ``kernel.kernel`` of ``module``, in order."""
    kernels = _kernels_of(module)
    copies = _COPIES.get(module)
    texts: dict[str, str] = {}
    if copies is not None:
        texts = _renamed_copies(kernels, copies)
    return [
        (op.sym_name.data, texts.get(op.sym_name.data) or _KernelEmitter(op).emit())
        for op in kernels
    ]


_IDENTIFIER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)")


def _renamed_copies(kernels: list[kernel.KernelOp], copies: RenamedCopies) -> dict[str, str]:
    """The texts of ``copies``' kernels by renaming: a template's text and its first
    copy's (both emitted from their IR) must differ only in identifiers that ``rename``
    moves one layer on; those identifiers are renamed in the other copies (an identifier
    the emitter made unique with a number stays as the template has it). Else none."""
    by_name = {op.sym_name.data: op for op in kernels}
    plans: dict[str, tuple[list[str], list[int]]] = {}
    texts: dict[str, str] = {}
    for name, (template, times) in copies.of.items():
        if times == 1 and name in by_name and template in by_name:
            texts[template] = _KernelEmitter(by_name[template]).emit()
            texts[name] = _KernelEmitter(by_name[name]).emit()
            plan = _rename_plan(texts[template], texts[name], copies.rename)
            if plan is None:
                return {}
            plans[template] = plan
    for name, (template, times) in copies.of.items():
        if name not in texts:
            if template not in plans:
                return {}  # a copy whose template has no checked first copy
            parts, moving = plans[template]
            renamed = list(parts)
            for k in moving:
                renamed[k] = copies.rename(parts[k], times)
            texts[name] = "".join(renamed)
    return texts


def shared_units(
    sources: Mapping[str, str], copies: RenamedCopies, unmade: Iterable[str]
) -> dict[str, str] | None:
    """For each of ``copies``' kernels named in ``unmade`` (copies with no IR, hence no
    source), the kernel whose NVRTC unit it may run: its template, when the template's
    first copy (in ``sources`` with it) is its text with identifiers moved one layer on
    and normalises the same (``nvrtc.normalise_kernel``: so every moved identifier is a
    name the kernel declares), and this copy's moves keep the identifiers apart as the
    first copy's do (distinct from each other and from those that stay, none a
    ``_P<n>``): its normalised source is then the template's. None where a template or
    a copy fails that (the caller makes the copies and emits them)."""
    from deplodock.backends.cuda.nvrtc import normalise_kernel

    checked: dict[str, tuple[set[str], set[str]]] = {}  # template -> (moved, kept)
    for name, (template, times) in copies.of.items():
        if times != 1 or name not in sources or template not in sources:
            continue
        plan = _rename_plan(sources[template], sources[name], copies.rename)
        if plan is None or normalise_kernel(template, sources[template]) != normalise_kernel(
            name, sources[name]
        ):
            return None
        parts, moving = plan
        moved = {parts[k] for k in moving}
        kept = {parts[k] for k in set(range(1, len(parts), 2)) - set(moving)}
        if not _apart(moved, kept, copies.rename, 1):
            return None
        checked[template] = moved, kept
    shared = {}
    for name in unmade:
        template, times = copies.of[name]
        if template not in checked or not _apart(*checked[template], copies.rename, times):
            return None
        shared[name] = template
    return shared


def _apart(moved: set[str], kept: set[str], rename: Callable[[str, int], str], times: int) -> bool:
    names = {rename(m, times) for m in moved}
    return (
        len(names) == len(moved)
        and not names & kept
        and not any(re.fullmatch(r"_P\d+", n) for n in names)
    )


def _rename_plan(
    template: str, copy: str, rename: Callable[[str, int], str]
) -> tuple[list[str], list[int]] | None:
    """(the template's text split at identifiers, the positions of those that move), where
    ``copy`` is ``template`` with just those moved one layer on, else None."""
    parts, other = _IDENTIFIER.split(template), _IDENTIFIER.split(copy)
    if len(parts) != len(other):
        return None
    moving = []
    for k, (a, b) in enumerate(zip(parts, other, strict=True)):
        if a == b:
            continue
        if k % 2 == 0 or rename(a, 1) != b:
            return None
        moving.append(k)
    return parts, moving


def _with_preamble(text: str) -> str:
    """The file around kernels' ``text``: a banner, then the helpers and headers it uses."""
    header = ["// Generated by deplodock from the kernel-level IR."]
    if re.search(r"\b(maximum|minimum)f?\(", text):
        header.append(NAN_PROPAGATING)
    if "__half" in text:
        header.append("#include <cuda_fp16.h>")
    if "__nv_bfloat16" in text:
        header.append("#include <cuda_bf16.h>")
    if TENSOR_MAP_TYPE in text:
        header.append(TENSOR_MAP_STRUCT)
    if "dd_mma_" in text:
        header.append(MMA_HELPERS)
    return "\n".join(header) + "\n\n" + text + "\n"


def cuda_target(module: ModuleOp, output: IO[str]) -> None:
    """The ``-t cuda`` target of deplo-opt: the module's kernels as CUDA C."""
    output.write(emit_cuda(module))


# --- types and literals ------------------------------------------------------------------


def scalar_type(type_: Attribute) -> str:
    """The C type of a non-index scalar."""
    if isinstance(type_, Float32Type):
        return "float"
    if isinstance(type_, Float64Type):
        return "double"
    if isinstance(type_, Float16Type):
        return "__half"
    if isinstance(type_, BFloat16Type):
        return "__nv_bfloat16"
    if isinstance(type_, IntegerType):
        width = type_.width.data
        return {1: "bool", 8: "signed char", 16: "short", 32: "int", 64: "long long"}[width]
    raise EmitError(f"emit_cuda: no C type for {type_}")


def float_literal(value: float, type_: Attribute) -> str:
    """The shortest C literal that reads back as the same value of ``type_``."""
    double = isinstance(type_, Float64Type)
    if math.isnan(value):
        if double:
            return "__longlong_as_double(0x7ff8000000000000LL)"
        return "__int_as_float(0x7fc00000)"
    if math.isinf(value):
        if double:
            bits = "0xfff0000000000000ULL" if value < 0 else "0x7ff0000000000000LL"
            return f"__longlong_as_double({bits})"
        return "__int_as_float(0xff800000)" if value < 0 else "__int_as_float(0x7f800000)"
    text = repr(value) if double else str(np.float32(value))
    if not any(c in text for c in ".en"):
        text += ".0"
    return text if double else text + "f"


def _fits_int(bounds: tuple[int, int] | None) -> bool:
    return bounds is not None and -INT32_MAX - 1 <= bounds[0] and bounds[1] <= INT32_MAX


def _range(value: SSAValue) -> tuple[int, int] | None:
    """Inclusive bounds of an index value; constants and affine.apply over them included."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return (owner.value.value.data, owner.value.value.data)
    if isinstance(owner, affine.ApplyOp):
        ranges = [_range(v) for v in owner.mapOperands]
        return expr_range(owner.map.data.results[0], ranges)
    return value_ranges([value])[0]


def _fits_int_throughout(expr: AffineExpr, ranges: list[tuple[int, int] | None]) -> bool:
    """Whether ``expr`` and every subexpression stay within int (so int arithmetic is exact)."""
    if not _fits_int(expr_range(expr, ranges)):
        return False
    if isinstance(expr, AffineBinaryOpExpr):
        return _fits_int_throughout(expr.lhs, ranges) and _fits_int_throughout(expr.rhs, ranges)
    return True


def _launch_bounds(op: kernel.KernelOp, threads: int) -> str:
    """``threads``, and for a register-tiled kernel the minimum blocks per SM the cost model
    chose (``min_blocks_per_sm``, default 1): with no minimum ptxas caps registers to keep
    several blocks resident and spills the tile (the TinyLlama gated MLP at 64 registers
    spilled; with a minimum of one it takes 85 and none), while a 128-thread 8 x 8 tile
    asked for 4 blocks fits them in 128 registers without spilling."""
    wanted = op.min_blocks_per_sm
    return str(threads) if wanted is None else f"{threads}, {wanted}"


def _numel(type_: MemRefType) -> int:
    return math.prod(type_.get_shape())


def _without_ceildiv(expr: AffineExpr) -> AffineExpr:
    """``a ceildiv c`` → ``(a + c - 1) floordiv c``: C has no ceiling division."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs, rhs = _without_ceildiv(expr.lhs), _without_ceildiv(expr.rhs)
    if expr.kind == AffineBinaryOpKind.CeilDiv:
        assert isinstance(rhs, AffineConstantExpr)
        return (lhs + (rhs.value - 1)) // rhs.value
    return AffineBinaryOpExpr(expr.kind, lhs, rhs)


def fold_constants(expr: AffineExpr, operands: Sequence[SSAValue]) -> AffineExpr:
    """Substitute the dims bound to ``arith.constant`` values (so ``0 * 2048`` vanishes)."""
    dims = [
        AffineExpr.constant(v.owner.value.value.data)
        if isinstance(v.owner, arith.ConstantOp) and isinstance(v.owner.value, IntegerAttr)
        else AffineExpr.dimension(i)
        for i, v in enumerate(operands)
    ]
    return expr.replace_dims_and_symbols(dims, [])


# --- four loads as one ---------------------------------------------------------------------


def _linear(expr: AffineExpr) -> tuple[dict[str, int], int]:
    """``expr`` as ``sum(coefficient * term) + constant``; a term is a dim or a
    subexpression that is not a sum or a multiple (``d0 floordiv 8``), keyed by its text."""
    if isinstance(expr, AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        (a, c), (b, d) = _linear(expr.lhs), _linear(expr.rhs)
        merged = dict(a)
        for key, coefficient in b.items():
            merged[key] = merged.get(key, 0) + coefficient
        return {k: v for k, v in merged.items() if v}, c + d
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mul:
        for factor, other in ((expr.rhs, expr.lhs), (expr.lhs, expr.rhs)):
            if isinstance(factor, AffineConstantExpr):
                terms, constant = _linear(other)
                return {k: v * factor.value for k, v in terms.items()}, constant * factor.value
    return {str(expr): 1}, 0


def packed_loads(
    block: Block, inputs: set[SSAValue], shared: frozenset[SSAValue] = frozenset()
) -> dict[kernel.LoadOp, list[kernel.LoadOp]]:
    """Runs of four unguarded 4-byte loads in ``block`` from one kernel input at the same
    index values whose offsets are ``base + 0..3`` with ``base`` a multiple of four in
    every term: each run's first load (program order) -> the run in lane order. One
    16-byte load then reads them (inputs are 16-byte aligned, as the ``vector`` loops
    assume, and nothing in a kernel writes an input): attention's walk reads a key's and
    a value's row this way, a quarter of the load instructions. A ``shared`` array
    (16-byte aligned) is read the same way by loads with no write, barrier or loop
    between them (a chunk of keys ``chunk-walk`` staged)."""
    groups: dict[tuple, dict[int, kernel.LoadOp]] = {}
    ids: dict[SSAValue, int] = {}  # index values as dims numbered by identity, not position
    epoch = 0  # ops that may write shared memory since the block's start
    for op in block.ops:
        if not isinstance(op, kernel.LoadOp) and (op.regions or not is_side_effect_free(op)):
            epoch += 1
        if not isinstance(op, kernel.LoadOp) or op.guarded_dims():
            continue
        if op.buffer not in inputs and op.buffer not in shared:
            continue
        lane = _lane_offset(op, ids)
        if lane is None:
            continue
        terms, constant = lane
        key = (op.buffer, terms, epoch if op.buffer in shared else 0)
        groups.setdefault(key, {}).setdefault(constant, op)
    order = {op: i for i, op in enumerate(block.ops)}
    return {min(run, key=order.__getitem__): run for run in _runs_of_four(groups)}


def _lane_offset(
    op: kernel.LoadOp | kernel.StoreOp, ids: dict[SSAValue, int], through: bool = False
) -> tuple[tuple, int] | None:
    """A 4-byte access's element offset as (its terms, sorted, each a multiple of four;
    its constant), index values as dims numbered in ``ids`` by identity (constants folded;
    ``through``: an ``affine.apply`` index read as its expression over its operands, so a
    register tile's ``a1_c0 .. a1_c3`` are one base plus 0 .. 3), or None: not 4 bytes,
    no vector type, or a term not a multiple of four."""
    type_ = op.buffer.type
    if not isinstance(type_, MemRefType) or element_bytes(type_.element_type) != 4:
        return None
    if scalar_type(type_.element_type) not in VECTOR_TYPES:
        return None

    def dim(value: SSAValue) -> AffineExpr:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return AffineExpr.constant(owner.value.value.data)
        if through and isinstance(owner, affine.ApplyOp):
            inner = [dim(v) for v in owner.mapOperands]
            return owner.map.data.results[0].replace_dims_and_symbols(inner, [])
        return AffineExpr.dimension(ids.setdefault(value, len(ids)))

    dims = [dim(v) for v in op.indices]
    offset = row_major_offset(op.map.data, type_.get_shape()).replace_dims_and_symbols(dims, [])
    terms, constant = _linear(_without_ceildiv(offset))
    if any(v % 4 for v in terms.values()):
        return None
    return tuple(sorted(terms.items())), constant


def _guard_key(op: kernel.StoreOp, ids: dict[SSAValue, int]) -> tuple:
    """What a guarded store tests (``_KernelEmitter.guard``): each guarded dimension
    with its index expression over the index values (numbered in ``ids`` by identity);
    () when unguarded. Stores of equal keys are in bounds together."""
    guarded = op.guarded_dims()
    if not guarded:  # (most stores: no index expressions to spell)
        return ()
    dims = [AffineExpr.dimension(ids.setdefault(v, len(ids))) for v in op.indices]
    results = op.map.data.results
    return tuple((d, str(results[d].replace_dims_and_symbols(dims, []))) for d in guarded)


def _runs_of_four(groups: dict[tuple, dict[int, Operation]]) -> list[list[Operation]]:
    """In each group of accesses by constant offset, the runs at ``base + 0 .. 3`` with
    ``base`` a multiple of four, each in lane order."""
    runs = []
    for by_offset in groups.values():
        for base in by_offset:
            if base % 4 == 0 and all(base + i in by_offset for i in range(4)):
                runs.append([by_offset[base + i] for i in range(4)])
    return runs


def packed_stores(
    block: Block, outputs: set[SSAValue]
) -> dict[kernel.StoreOp, list[kernel.StoreOp]]:
    """Runs of four 4-byte stores in ``block`` to one kernel output whose offsets are
    ``base + 0..3`` (``_lane_offset`` through index math, ``base`` a multiple of four in
    every term), unguarded or all four under one guard (``_guard_key``: an edge tile's
    row bound, the same index values in the same guarded dimensions, so the four are
    written together or not at all): each run's last store (program order) -> the run
    in lane order. One 16-byte store writes them there (every buffer starts 16-byte aligned:
    ``runtime.VECTOR_ALIGNMENT``): a register tile's row of four, a quarter of the store
    instructions of a matmul whose output is most of its traffic. Moving the run's first
    stores down to its last changes nothing when only these come between: ops that touch
    no memory, loads of other buffers, and stores of the same group (the same output and
    terms at other constants: other elements). Anything else starts a new group. The
    emitter asks only in a kernel whose schedule says ``stores = 4`` (``stores_for``:
    compute-bound products were 2-19% slower with float4 stores on an H100)."""
    groups: dict[tuple, dict[int, kernel.StoreOp]] = {}
    ids: dict[SSAValue, int] = {}
    epoch = 0
    current: dict[SSAValue, tuple] = {}  # an output -> the group its last store joined
    for op in block.ops:
        if isinstance(op, kernel.LoadOp):
            if op.buffer in outputs:
                epoch += 1
            continue
        if isinstance(op, kernel.StoreOp) and op.buffer in outputs:
            lane = _lane_offset(op, ids, through=True)
            if lane is None:
                epoch += 1
                continue
            guard = _guard_key(op, ids)
            key = (op.buffer, lane[0], guard, epoch)
            if current.get(op.buffer, key) != key or lane[1] in groups.get(key, {}):
                epoch += 1  # another group of this output (its elements may alias), or
                key = (op.buffer, lane[0], guard, epoch)  # this element again: in order
            current[op.buffer] = key
            groups.setdefault(key, {}).setdefault(lane[1], op)
            continue
        shared_store = isinstance(op, kernel.StoreOp)  # (an output's returned above)
        if (op.regions or not is_side_effect_free(op)) and not shared_store:
            epoch += 1
    order = {op: i for i, op in enumerate(block.ops)}
    return {max(run, key=order.__getitem__): run for run in _runs_of_four(groups)}


# --- the walk ----------------------------------------------------------------------------


class _KernelEmitter:
    """Emits one kernel; owns its names (unique per kernel) and the output lines."""

    def __init__(self, op: kernel.KernelOp):
        self.op = op
        self.lines: list[str] = []
        self.depth = 0
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set()
        self.shared_names: dict[SSAValue, str] = {}
        self.tensor_maps: dict[TensorMapSpec, str] = {}  # parameter names
        self.dynamic_shared: str | None = None  # the dynamic shared buffer's name, if any
        self.shared_offsets: dict[Operation, int] = {}
        self.packs: dict[Block | None, dict[kernel.LoadOp, list[kernel.LoadOp]]] = {}
        self.packed: set[Operation] = set()  # members of a run of four (``load``, ``store``)
        self.store_packs: dict[Block | None, dict[kernel.StoreOp, list[kernel.StoreOp]]] = {}
        self.aligned_shared: frozenset[SSAValue] | None = None  # ``_aligned_shared``, once

    # names

    def _fresh(self, hint: str | None, fallback: str = "v") -> str:
        base = re.sub(r"\W", "_", hint or "") or fallback
        if base[0].isdigit():
            base = f"{fallback}{base}"
        if base in _C_RESERVED or base.startswith("__"):
            base = f"{base}_"
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name

    def bind(self, value: SSAValue, fallback: str = "v") -> str:
        name = self._fresh(value.name_hint, fallback)
        self.names[value] = name
        return name

    def ref(self, value: SSAValue) -> str:
        """The C expression for ``value``: its local's name or an inlined constant."""
        if value in self.names:
            return self.names[value]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp):
            return self._constant(owner)
        raise EmitError(f"emit_cuda: {value.name_hint or value} is used before it is defined")

    @staticmethod
    def _constant(op: arith.ConstantOp) -> str:
        attr = op.value
        if isinstance(attr, FloatAttr):
            return float_literal(attr.value.data, attr.type)
        if isinstance(attr, IntegerAttr):
            value = attr.value.data
            if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
                return "true" if value else "false"
            text = str(value)
            # An i64 literal is a long long even when small: max(x, 0) of a long long x
            # would find max(long long, long long) and max(int, int) equally good.
            wide = isinstance(attr.type, IntegerType) and attr.type.width.data == 64
            if wide or not -INT32_MAX - 1 <= value <= INT32_MAX:
                text += "LL"
            return f"({text})" if value < 0 else text
        raise EmitError(f"emit_cuda: no C literal for {attr}")

    def index_type(self, value: SSAValue) -> str:
        return "int" if _fits_int(_range(value)) else "long long"

    def ctype(self, value: SSAValue) -> str:
        if isinstance(value.type, IndexType):
            return self.index_type(value)
        return scalar_type(value.type)

    # output

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def define(self, value: SSAValue, expr: str) -> None:
        name = self.bind(value)
        self.line(f"const {self.ctype(value)} {name} = {expr};")

    # kernel

    def emit(self) -> str:
        op = self.op
        threads = math.prod(op.block_shape)
        self.taken.add(op.sym_name.data)  # the symbol the launcher looks up, kept exact
        params = []
        n_in = len(op.inputs)
        for i, arg in enumerate(op.body.block.args):
            assert isinstance(arg.type, MemRefType)
            fallback = f"in{i}" if i < n_in else f"out{i - n_in}"
            name = self.bind(arg, fallback)
            const = "const " if i < n_in else ""
            params.append(f"{const}{scalar_type(arg.type.element_type)}* __restrict__ {name}")
        for spec in kernel_tensor_maps(op):
            buffer = op.body.block.args[spec.input]
            name = self._fresh(f"{self.names[buffer]}_tmap", "tmap")
            self.tensor_maps[spec] = name
            params.append(f"const __grid_constant__ {TENSOR_MAP_TYPE} {name}")
        header = [
            f"// grid {op.grid_shape}, block {op.block_shape}",
            f'extern "C" __global__ void __launch_bounds__({_launch_bounds(op, threads)}) '
            f"{op.sym_name.data}(",
            "    " + ",\n    ".join(params) + ") {",
        ]
        self.depth = 1
        self.lines += GRID_DEPENDENCY
        if op.dynamic_shared_bytes():
            # past 48 KB: one dynamic buffer the launch sizes, each array a pointer into it
            self.dynamic_shared = self._fresh("dynamic_smem")
            self.line(f"extern __shared__ __align__(1024) unsigned char {self.dynamic_shared}[];")
            self.shared_offsets = op.shared_layout()[0]
        self.block(op.body.block)
        return "\n".join([*header, *self.lines, "}"])

    def block(self, block: Block) -> None:
        for child in block.ops:
            self.operation(child)

    def operation(self, op: Operation) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is not None:
            handler(self, op)
            return
        name = op.name
        if isinstance(op, arith.ConstantOp):
            return  # inlined at each use
        if name in _FLOAT_BINARY or name in _INT_BINARY:
            symbol = _FLOAT_BINARY.get(name) or _INT_BINARY[name]
            lhs, rhs = op.operands
            self.define(op.results[0], f"{self.ref(lhs)} {symbol} {self.ref(rhs)}")
        elif name in _FLOAT_CALLS or name in _INT_CALLS:
            self.define(op.results[0], self._call(op))
        elif name in _CASTS or name in _UNSIGNED_CASTS:
            (source,) = op.operands
            target = self.ctype(op.results[0])
            inner = self.ref(source)
            if name in _UNSIGNED_CASTS and source.type != i1:  # bool is unsigned already
                inner = f"(unsigned {self.ctype(source)}){inner}"
            self.define(op.results[0], f"({target}){inner}")
        else:
            raise EmitError(f"emit_cuda: no CUDA spelling for '{name}'")

    def _call(self, op: Operation) -> str:
        name = op.name
        if name in _FLOAT_CALLS:
            function = _FLOAT_CALLS[name]
            if isinstance(op.results[0].type, Float64Type):
                function = function[:-1]
            elif not isinstance(op.results[0].type, Float32Type):
                raise EmitError(f"emit_cuda: '{name}' on {op.results[0].type} (f32, f64 only)")
        else:
            function = _INT_CALLS[name]
        args = ", ".join(self.ref(v) for v in op.operands)
        return f"{function}({args})"

    # one method per op that is more than an expression

    def thread_id(self, op: kernel.ThreadIdOp) -> None:
        self.define(op.result, f"threadIdx.{op.dim.data}")

    def block_id(self, op: kernel.BlockIdOp) -> None:
        self.define(op.result, f"blockIdx.{op.dim.data}")

    def _array(
        self,
        op: kernel.SharedOp | kernel.MBarrierOp | kernel.LocalOp,
        fallback: str,
        declaration: str,
    ) -> None:
        """Declare a named array: ``declaration`` with ``{name}`` and ``{count}`` filled in."""
        type_ = op.result.type
        assert isinstance(type_, MemRefType)
        name = self._fresh(op.sym_name.data, fallback)
        self.names[op.result] = name
        self.line(declaration.format(name=name, count=_numel(type_)))

    def shared(self, op: kernel.SharedOp) -> None:
        element = scalar_type(op.result.type.element_type)  # type: ignore[attr-defined]
        self._shared_array(op, "smem", element, f"__align__({op.alignment})")

    def mbarrier(self, op: kernel.MBarrierOp) -> None:
        self._shared_array(op, "bar", "unsigned long long", "__align__(8)")

    def _shared_array(
        self, op: kernel.SharedOp | kernel.MBarrierOp, fallback: str, element: str, align: str
    ) -> None:
        """A static ``__shared__`` array, or in a kernel with dynamic shared memory a
        pointer to the array's place in the dynamic buffer (``shared_layout``'s offset)."""
        if self.dynamic_shared is None:
            self._array(op, fallback, f"__shared__ {align} {element} {{name}}[{{count}}];")
            return
        offset = self.shared_offsets[op]
        self._array(
            op,
            fallback,
            f"{element}* const {{name}} = reinterpret_cast<{element}*>("
            f"{self.dynamic_shared} + {offset});  // [{{count}}]",
        )

    def _shared_address(self, buffer: SSAValue, map: AffineMap, indices) -> str:
        return f"(unsigned)__cvta_generic_to_shared(&{self.access(buffer, map, indices)})"

    def mbarrier_init(self, op: kernel.MBarrierInitOp) -> None:
        """Init, then make it visible to the async proxy (the TMA unit completes bytes on
        it); a ``kernel.barrier`` after it shows it to the other threads."""
        bar = self._shared_address(op.barrier, op.map.data, op.indices)
        self.line(
            'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n'
            'fence.mbarrier_init.release.cluster;\\n" :: '
            f'"r"({bar}), "r"({op.count.data}) : "memory");'
        )

    def mbarrier_arrive_expect_tx(self, op: kernel.MBarrierArriveExpectTxOp) -> None:
        bar = self._shared_address(op.barrier, op.map.data, op.indices)
        self.line(
            'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: '
            f'"r"({bar}), "r"({op.bytes.data}) : "memory");'
        )

    def mbarrier_wait(self, op: kernel.MBarrierWaitOp) -> None:
        """Spin on ``try_wait.parity`` (it suspends the thread for a while in hardware);
        the label is local to the braces, so every wait may use the same one."""
        bar = self._shared_address(op.barrier, op.map.data, op.indices)
        self.line(
            'asm volatile("{\\n.reg .pred done;\\nTMA_WAIT:\\n'
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\\n"
            '@!done bra TMA_WAIT;\\n}\\n" :: '
            f'"r"({bar}), "r"((unsigned){self.ref(op.parity)}) : "memory");'
        )

    def tma_load(self, op: kernel.TmaLoadOp) -> None:
        """``cp.async.bulk.tensor``: one box through the input's tensor map, coordinates
        innermost first, its bytes completing on the barrier."""
        kern = self.op
        spec = spec_of(op, kern)
        tensor_map = self.tensor_maps[spec]
        names = [self.ref(v) for v in op.indices]
        coordinates = [
            f"(int)({format_expr(_without_ceildiv(fold_constants(e, op.indices)), names, _C_SPELLING)})"  # noqa: E501
            for e in reversed(op.source_map.data.results)
        ]
        rank = len(coordinates)
        dst = self._shared_address(op.target, op.target_map.data, op.indices)
        bar = self._shared_address(op.barrier, op.barrier_map.data, op.indices)
        slots = ", ".join(f"%{2 + k}" for k in range(rank))
        operands = ", ".join(f'"r"({c})' for c in coordinates)
        self.line(
            f'asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.'
            f'mbarrier::complete_tx::bytes [%0], [%1, {{{slots}}}], [%{2 + rank}];\\n" :: '
            f'"r"({dst}), "l"(reinterpret_cast<unsigned long long>(&{tensor_map})), '
            f'{operands}, "r"({bar}) : "memory");'
        )

    def local(self, op: kernel.LocalOp) -> None:
        """A thread's own array: registers once its (unrolled) accesses use constant
        indices; aligned for its float4 accesses."""
        element = scalar_type(op.result.type.element_type)  # type: ignore[attr-defined]
        self._array(op, "regs", f"__align__(16) {element} {{name}}[{{count}}];")

    def barrier(self, op: kernel.BarrierOp) -> None:
        self.line("__syncthreads();")

    def shfl_xor(self, op: kernel.ShflXorOp) -> None:
        self.define(
            op.result, f"__shfl_xor_sync(0xffffffff, {self.ref(op.value)}, {op.offset.data})"
        )

    def mma(self, op: kernel.MmaOp) -> None:
        """One ``dd_mma_<shape>_<precision>`` call (``MMA_HELPERS``); D's registers read
        out of its float4. A product of a zero C whose results are only yielded to the
        enclosing loop's add accumulators (``mma-contract``'s) takes those accumulators as
        C and writes them back: the tensor core adds, not four FADDs after it (one rounding
        fewer than the IR's ``acc + (A B + 0)``, within the reassociation it already has)."""
        into = self._mma_accumulators(op)
        c = into if into is not None else [self.ref(v) for v in op.c]
        operands = ", ".join([*(self.ref(v) for v in (*op.a, *op.b)), *c])
        packed = self._fresh("mma", "mma")
        call = f"dd_mma_{op.shape.data}_{op.precision.data}({operands})"
        self.line(f"const float4 {packed} = {call};")
        for k, (result, lane) in enumerate(zip(op.d, "xyzw", strict=True)):
            if into is None:
                self.define(result, f"{packed}.{lane}")
            else:
                self.line(f"{into[k]} = {packed}.{lane};")
                self.names[result] = into[k]  # the yield sees its accumulator: no add

    def _mma_accumulators(self, op: kernel.MmaOp) -> list[str] | None:
        """The add accumulators of the enclosing reduce loop that ``op``'s results are
        each only yielded to, when C is all zero constants; else None."""
        loop_ = op.parent_op()
        if not isinstance(loop_, kernel.ForOp) or not all(
            isinstance(v.owner, arith.ConstantOp)
            and isinstance(v.owner.value, FloatAttr)
            and v.owner.value.value.data == 0.0
            for v in op.c
        ):
            return None
        terminator = loop_.body.block.last_op
        names = []
        for result in op.d:
            uses = list(result.uses)
            if len(uses) != 1 or uses[0].operation is not terminator:
                return None
            position = uses[0].index
            if loop_.kinds[position] != "add" or loop_.results[position] not in self.names:
                return None
            names.append(self.names[loop_.results[position]])
        return names if len(set(names)) == len(names) else None

    def access(self, buffer: SSAValue, map: AffineMap, indices: Sequence[SSAValue]) -> str:
        type_ = buffer.type
        assert isinstance(type_, MemRefType)
        expr = row_major_offset(map, type_.get_shape())
        expr = _without_ceildiv(fold_constants(expr, indices))
        names = [self.ref(v) for v in indices]
        if _numel(type_) > INT32_MAX:
            # In-bounds offsets of a smaller buffer fit in int, and so does every term.
            names = self._widened(indices, names)
        return f"{self.ref(buffer)}[{format_expr(expr, names, _C_SPELLING)}]"

    def _widened(self, values: Sequence[SSAValue], names: list[str]) -> list[str]:
        """Cast the int operands of an index expression so it is computed in long long."""
        return [
            name if self.ctype(value) == "long long" else f"(long long){name}"
            for value, name in zip(values, names, strict=True)
        ]

    def guard(self, op: kernel.LoadOp | kernel.StoreOp | kernel.CpAsyncOp) -> str | None:
        """A guarded access's test that its index is inside the buffer (the dimensions
        that may leave it; None: none may, or it is not guarded)."""
        dims = op.guarded_dims()
        if not dims:
            return None
        buffer = op.source if isinstance(op, kernel.CpAsyncOp) else op.buffer
        map_ = op.source_map.data if isinstance(op, kernel.CpAsyncOp) else op.map.data
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        names = [self.ref(v) for v in op.indices]
        tests = []
        for dim in dims:
            expr = _without_ceildiv(fold_constants(map_.results[dim], op.indices))
            tests.append(f"({format_expr(expr, names, _C_SPELLING)}) < {shape[dim]}")
        return " && ".join(tests)

    def cp_async(self, op: kernel.CpAsyncOp, elements: int = 1) -> None:
        """One element (4 bytes, L1-cached: ``.ca``, all a transposed slab's scatter
        allows), or ``elements`` consecutive ones from a vector loop (``_wide_copy``):
        16 bytes bypass L1 (``.cg``), as the slab is read from shared memory only. A
        guarded copy outside the source copies 0 bytes of the buffer's first element
        (cp.async's zero fill)."""
        target = self._shared_address(op.target, op.target_map.data, op.indices)
        source = self.access(op.source, op.source_map.data, op.indices)
        size = elements * element_bytes(op.source.type.element_type)  # type: ignore[attr-defined]
        cache = "cg" if size == 16 else "ca"
        guard = self.guard(op)
        if guard is None:
            self.line(
                f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {size};\\n" :: '
                f'"r"({target}), "l"(&{source}) : "memory");'
            )
            return
        inside = self._fresh("inside", "in")
        self.line(f"const bool {inside} = {guard};")
        self.line(
            f'asm volatile("cp.async.{cache}.shared.global [%0], [%1], {size}, %2;\\n" :: '
            f'"r"({target}), "l"({inside} ? &{source} : {self.ref(op.source)}), '
            f'"r"({inside} ? {size} : 0) : "memory");'
        )

    def cp_async_commit(self, op: kernel.CpAsyncCommitOp) -> None:
        self.line('asm volatile("cp.async.commit_group;\\n" ::: "memory");')

    def cp_async_wait(self, op: kernel.CpAsyncWaitOp) -> None:
        self.line(f'asm volatile("cp.async.wait_group {op.pending.data};\\n" ::: "memory");')

    def _aligned_shared(self) -> frozenset[SSAValue]:
        """The kernel's shared arrays of rows (rank 2 or more: staged slabs; a combine's
        scratch array of partials stays scalar) that start on a 16-byte boundary."""
        found = set()
        for op in self.op.walk():
            if isinstance(op, kernel.SharedOp) and len(op.result.type.get_shape()) >= 2:
                dynamic = self.dynamic_shared is not None
                start = self.shared_offsets.get(op, 0) if dynamic else op.alignment
                if start % 16 == 0:
                    found.add(op.result)
        return frozenset(found)

    def load(self, op: kernel.LoadOp) -> None:
        block = op.parent_block()
        if block not in self.packs:
            inputs = set(self.op.body.block.args[: len(self.op.inputs)])
            if self.aligned_shared is None:
                self.aligned_shared = self._aligned_shared()
            self.packs[block] = packed_loads(block, inputs, self.aligned_shared)
            self.packed.update(o for run in self.packs[block].values() for o in run)
        run = self.packs[block].get(op)
        if run is not None:  # the run's first load reads all four (``packed_loads``)
            vtype = VECTOR_TYPES[scalar_type(op.result.type)] + "4"
            lane0 = self.access(run[0].buffer, run[0].map.data, run[0].indices)
            wide = self._fresh(f"{run[0].result.name_hint or 'v'}4", "v")
            self.line(f"const {vtype} {wide} = *reinterpret_cast<const {vtype}*>(&{lane0});")
            for field, member in zip(VECTOR_FIELDS, run, strict=True):
                self.names[member.result] = f"{wide}.{field}"
            return
        if op in self.packed:
            return  # read by its run's first load
        source = self.access(op.buffer, op.map.data, op.indices)
        guard = self.guard(op)
        if guard is not None:
            source = f"({guard}) ? {source} : ({self.ctype(op.result)})0"
        self.define(op.result, source)

    def store(self, op: kernel.StoreOp) -> None:
        block = op.parent_block()
        if block not in self.store_packs:
            schedule = tile.schedule_of(self.op)
            loop = block.parent_op() if block is not None else None
            lanes = isinstance(loop, kernel.ForOp) and vector_of(loop) > 1  # once per lane
            runs = {}
            if schedule is not None and schedule.stores.data == 4 and not lanes:  # planned
                runs = packed_stores(block, set(self.op.body.block.args[len(self.op.inputs) :]))
            self.store_packs[block] = runs
            self.packed.update(o for run in runs.values() for o in run)
        run = self.store_packs[block].get(op)
        if run is not None:  # the run's last store writes all four (``packed_stores``)
            vtype = VECTOR_TYPES[scalar_type(op.value.type)] + "4"
            lane0 = self.access(run[0].buffer, run[0].map.data, run[0].indices)
            values = ", ".join(self.ref(member.value) for member in run)
            guard = self.guard(op)  # the run's one guard (``_guard_key``), if any
            test = f"if ({guard}) " if guard is not None else ""
            self.line(f"{test}*reinterpret_cast<{vtype}*>(&{lane0}) = make_{vtype}({values});")
            return
        if op in self.packed:
            return  # written by its run's last store
        target = self.access(op.buffer, op.map.data, op.indices)
        guard = self.guard(op)
        test = f"if ({guard}) " if guard is not None else ""
        self.line(f"{test}{target} = {self.ref(op.value)};")

    def apply(self, op: affine.ApplyOp) -> None:
        expr = _without_ceildiv(fold_constants(op.map.data.results[0], op.mapOperands))
        names = [self.ref(v) for v in op.mapOperands]
        if not _fits_int_throughout(expr, [_range(v) for v in op.mapOperands]):
            names = self._widened(op.mapOperands, names)
        self.define(op.result, format_expr(expr, names, _C_SPELLING))

    def for_(self, op: kernel.ForOp) -> None:
        accumulators = []
        outer = self._outer_accumulators(op)
        for kind, result, into in zip(op.kinds, op.results, outer, strict=True):
            if into is not None:
                # Accumulate straight into the enclosing loop's accumulator (a K chunk):
                # the unchunked loop's order of additions, and no second register.
                self.names[result] = into
                accumulators.append((kind, into, result.type))
                continue
            name = self.bind(result, "acc")
            identity = self._identity(kind, result.type)
            self.line(f"{scalar_type(result.type)} {name} = {identity};")
            accumulators.append((kind, name, result.type))
        iv = op.induction_var
        upper, step = op.upper.data, op.step.data
        vector = vector_of(op)
        limit = upper // vector
        iv_type = "int" if upper + step * vector - 1 <= INT32_MAX else "long long"
        start = self.ref(op.start)
        if vector == 1:
            name = self.bind(iv, "i")
        else:
            name = self._fresh(f"{iv.name_hint or 'i'}_v{vector}", "c")
        if op.unroll is not None:
            count = op.unroll.data
            self.line("#pragma unroll" if count <= 0 else f"#pragma unroll {count}")
        trips = self._uniform_trips(op, limit) if op.limit is None else None
        if op.limit is not None:  # ``below %n``: stop at the smaller of the two bounds
            limit = f"{limit} && {name} < {self.ref(op.limit)}"
        if trips is not None:
            # Every thread runs the same count: count from 0 so that, unrolled, each
            # iteration's addresses are the same expressions in every loop over the row
            # (the compiler can then keep a row's loads in registers across the loops).
            counter = self._fresh(f"{name}_j", "j")
            self.line(f"for (int {counter} = 0; {counter} < {trips}; ++{counter}) {{")
            self.depth += 1
            self.line(f"const {iv_type} {name} = {start} + {counter} * {step};")
        else:
            increment = f"++{name}" if step == 1 else f"{name} += {step}"
            self.line(f"for ({iv_type} {name} = {start}; {name} < {limit}; {increment}) {{")
            self.depth += 1
        if vector == 1:
            self._body(op.body.block, accumulators)
        else:
            self._vector_body(op, name, iv_type, vector, accumulators)
        self.depth -= 1
        self.line("}")

    def _outer_accumulators(self, op: kernel.ForOp) -> list[str | None]:
        """Per result of a reduce loop: the accumulator of the enclosing reduce loop it is
        only yielded to, in the same position and of the same kind, else None. An online
        group goes in whole or not at all (a chunk of an attention walk, ``chunk-walk``:
        each step merges into the enclosing group, the unchunked walk's order)."""
        parent = op.parent_op()
        found: list[str | None] = [None] * len(op.results)
        if not isinstance(parent, kernel.ForOp) or any(
            isinstance(o, kernel.MmaOp) for o in op.body.block.ops
        ):
            # A loop of tensor-core products keeps accumulators of its own, from zero, and
            # adds them to the outer ones once (IEEE): the tensor core's own additions
            # truncate, and a long sum into one large accumulator drifts (2-3e-5 of the
            # largest output at K = 3072-4096 on the H100; session 42).
            return found
        terminator = parent.body.block.last_op
        if not isinstance(terminator, kernel.YieldOp):
            return found
        positions: list[int | None] = []
        for kind, result in zip(op.kinds, op.results, strict=True):
            uses = list(result.uses)
            position = uses[0].index if len(uses) == 1 else None
            if uses and uses[0].operation is not terminator:
                position = None
            mine = position is not None and parent.kinds[position] == kind
            mine = mine and parent.results[position] in self.names
            positions.append(position if mine else None)
        parent_groups = {g[0]: g for g in groups(parent.kinds)}
        for group in groups(op.kinds):
            places = [positions[k] for k in group]
            whole = len(group) == 1 or (
                None not in places and parent_groups.get(places[0]) == places  # type: ignore[arg-type]
            )
            for k, place in zip(group, places, strict=True):
                if whole and place is not None:
                    found[k] = self.names[parent.results[place]]
        return found

    @staticmethod
    def _uniform_trips(op: kernel.ForOp, limit: int) -> int | None:
        """The trip count when it is the same for every thread: the start ranges over
        ``[0, step)`` (a thread index) and ``step`` divides the count ``limit``."""
        bounds = _range(op.start)
        step = op.step.data
        if isinstance(op.start.owner, arith.ConstantOp):
            return None  # already the same for every thread, and read as it is
        if bounds is None or bounds[0] < 0 or bounds[1] >= step or limit % step:
            return None
        return limit // step

    def _body(self, body: Block, accumulators: list, lane: int | None = None, wide=None) -> None:
        """A loop body once; in lane ``lane`` of a vector loop, ``wide`` maps its vector
        accesses to the vector locals they read a field of or write a field into."""
        for child in body.ops:
            if isinstance(child, kernel.YieldOp):
                branch = tile.SELECT_MERGE not in body.parent_op().attributes  # type: ignore[union-attr]
                self._accumulate(accumulators, child.values, branch)
            elif wide and child in wide:
                field = f"{wide[child]}.{VECTOR_FIELDS[lane]}"
                if isinstance(child, kernel.LoadOp):
                    self.define(child.result, field)
                else:
                    self.line(f"{field} = {self.ref(child.value)};")  # type: ignore[attr-defined]
            else:
                self.operation(child)

    def _accumulate(self, accumulators: list, values, branch: bool = True) -> None:
        """A reduce loop's step: each accumulator merged with its yielded value (an
        online group by the online rule, ``combine.cuda_online_step``; ``branch``: its
        form for many sums)."""
        kinds = [kind for kind, _, _ in accumulators]
        for group in groups(kinds):
            if kinds[group[0]] == ONLINE_MAX:
                if all(self.ref(values[i]) == accumulators[i][1] for i in group):
                    continue  # an inner loop accumulated into them
                type_ = accumulators[group[0]][2]
                lines = cuda_online_step(
                    [accumulators[i][1] for i in group],
                    [self.ref(values[i]) for i in group],
                    self._fresh,
                    lambda value, t=type_: float_literal(value, t),
                    scalar_type(type_),
                    "" if isinstance(type_, Float64Type) else "f",
                    branch,
                )
                for line in lines:
                    self.line(line)
                continue
            ((kind, acc, type_),) = [accumulators[i] for i in group]
            value = self.ref(values[group[0]])
            if value != acc:  # else an inner loop accumulated into it
                self.line(f"{acc} = {self._combine(kind, acc, value, type_)};")

    def _vector_body(
        self, op: kernel.ForOp, count: str, iv_type: str, vector: int, accumulators: list
    ) -> None:
        """``%i = V*c + v`` for v = 0..V-1: wide loads first, the body once per lane (its
        wide accesses reading or filling a field), wide stores last."""
        iv = op.induction_var
        base = self._fresh(f"{iv.name_hint or 'i'}_0", "i0")
        self.line(f"const {iv_type} {base} = {vector} * {count};")
        self.names[iv] = base
        copy = self._wide_copy(op, vector)
        if copy is not None:  # one cp.async of the lanes' elements, from lane 0's addresses
            for apply in self._index_ops(op, [copy]):
                self.apply(apply)
            self.cp_async(copy, vector)
            return
        wide = {child: "" for child in self._wide_accesses(op, vector)}
        # Index math inside the loop that a wide access needs, computed once for lane 0.
        index_ops = self._index_ops(op, wide)
        for apply in index_ops:
            self.apply(apply)
        at_base = {apply.result: self.names[apply.result] for apply in index_ops}
        for access in wide:
            vtype = VECTOR_TYPES[scalar_type(access.buffer.type.element_type)] + str(vector)
            hint = access.results[0].name_hint if access.results else access.buffer.name_hint
            wide[access] = self._fresh(f"{hint or 'v'}{vector}", "v")
            target = self.access(access.buffer, access.map.data, access.indices)
            if isinstance(access, kernel.LoadOp):
                pointer = f"*reinterpret_cast<const {vtype}*>(&{target})"
                guard = self.guard(access)  # lane 0's: the lanes are all in or all out
                if guard is not None:
                    pointer = f"({guard}) ? {pointer} : {vtype}{{}}"
                self.line(f"const {vtype} {wide[access]} = {pointer};")
            else:
                self.line(f"{vtype} {wide[access]};")
        scalar_uses = any(use.operation not in wide for use in iv.uses)
        for lane in range(vector):
            if scalar_uses:
                self.define(iv, f"{base} + {lane}" if lane else base)
            self._body(op.body.block, accumulators, lane, wide)
        self.names[iv] = base
        self.names.update(at_base)
        for access, name in wide.items():
            if isinstance(access, kernel.StoreOp):
                target = self.access(access.buffer, access.map.data, access.indices)
                vtype = VECTOR_TYPES[scalar_type(access.value.type)] + str(vector)
                guard = self.guard(access)
                test = f"if ({guard}) " if guard is not None else ""
                self.line(f"{test}*reinterpret_cast<{vtype}*>(&{target}) = {name};")

    @staticmethod
    def _index_ops(op: kernel.ForOp, accesses) -> list[affine.ApplyOp]:
        """The ``affine.apply`` ops inside ``op`` the accesses' indices are computed by,
        in program order."""
        needed: set[affine.ApplyOp] = set()
        pending = [v for a in accesses for v in a.indices]
        while pending:
            owner = pending.pop().owner
            if isinstance(owner, affine.ApplyOp) and op.is_ancestor(owner) and owner not in needed:
                needed.add(owner)
                pending.extend(owner.mapOperands)
        return [o for o in op.walk() if o in needed]  # type: ignore[misc]

    @staticmethod
    def _wide_copy(op: kernel.ForOp, vector: int) -> kernel.CpAsyncOp | None:
        """The ``kernel.cp_async`` of a vector loop whose body is that copy and its index
        math, when both sides are contiguous and aligned over the lanes (``vector_access``)
        and the lanes' elements make a size cp.async copies at once (4, 8 or 16 bytes)."""
        body = [o for o in op.body.block.ops if not isinstance(o, affine.ApplyOp | kernel.YieldOp)]
        if len(body) != 1 or not isinstance(copy := body[0], kernel.CpAsyncOp):
            return None
        if vector * element_bytes(copy.source.type.element_type) not in (4, 8, 16):  # type: ignore[attr-defined]
            return None
        sides = ((copy.source, copy.source_map), (copy.target, copy.target_map))
        contiguous = all(
            contiguous_lanes(buffer.type, map.data, copy.indices, op, vector, copy.is_guarded)  # type: ignore[arg-type]
            for buffer, map in sides
        )
        return copy if contiguous else None

    @staticmethod
    def _wide_accesses(op: kernel.ForOp, vector: int) -> list[kernel.LoadOp | kernel.StoreOp]:
        """The body's loads and stores that become one ``vector``-wide access: contiguous
        and aligned (``vector_access``), of a type with a CUDA vector type, and on a buffer
        no other access of the loop writes (a load moves before the lanes, a store after)."""
        accesses = [o for o in op.walk() if isinstance(o, kernel.LoadOp | kernel.StoreOp)]
        written = [a.buffer for a in accesses if isinstance(a, kernel.StoreOp)]
        read = [a.buffer for a in accesses if isinstance(a, kernel.LoadOp)]
        chosen = []
        for access in op.body.block.ops:
            if not isinstance(access, kernel.LoadOp | kernel.StoreOp):
                continue
            element = access.buffer.type.element_type  # type: ignore[attr-defined]
            if scalar_type(element) not in VECTOR_TYPES:
                continue
            if isinstance(access, kernel.LoadOp):
                clash = any(b is access.buffer for b in written)
            else:
                others = [b for b in written if b is access.buffer]
                clash = len(others) > 1 or any(b is access.buffer for b in read)
            if not clash and vector_access(access, op, vector):
                chosen.append(access)
        return chosen

    @staticmethod
    def _identity(kind: str, type_: Attribute) -> str:
        value = combine_kind(kind).identity
        if isinstance(type_, IntegerType):
            width = type_.width.data
            if math.isinf(value):
                value = -(2 ** (width - 1)) if value < 0 else 2 ** (width - 1) - 1
            return str(int(value)) + ("LL" if width > 32 else "")
        return float_literal(value, type_)

    @staticmethod
    def _combine(kind: str, a: str, b: str, type_: Attribute) -> str:
        template = combine_kind(kind).cuda_float
        if isinstance(type_, Float64Type):
            template = template.replace("maximumf", "maximum").replace("minimumf", "minimum")
        elif isinstance(type_, IntegerType):
            template = template.replace("maximumf", "max").replace("minimumf", "min")
        return template.format(a=a, b=b)

    def if_(self, op: scf.IfOp) -> None:
        results = []
        for result in op.results:
            name = self.bind(result)
            self.line(f"{self.ctype(result)} {name};")
            results.append(name)
        self.line(f"if ({self.ref(op.cond)}) {{")
        self._branch(op.true_region.blocks.first, results)
        if op.false_region.blocks.first is not None and (
            results or len(op.false_region.block.ops) > 1
        ):
            self.line("} else {")
            self._branch(op.false_region.blocks.first, results)
        self.line("}")

    def _branch(self, block: Block | None, results: list[str]) -> None:
        if block is None:
            return
        self.depth += 1
        for child in block.ops:
            if isinstance(child, scf.YieldOp):
                for name, value in zip(results, child.operands, strict=True):
                    self.line(f"{name} = {self.ref(value)};")
            else:
                self.operation(child)
        self.depth -= 1

    def cmpi(self, op: arith.CmpiOp) -> None:
        predicate = op.predicate.value.data
        a, b = self.ref(op.lhs), self.ref(op.rhs)
        if predicate >= 6 and not isinstance(op.lhs.type, IndexType) and op.lhs.type != i1:
            unsigned = f"unsigned {scalar_type(op.lhs.type)}"
            a, b = f"({unsigned}){a}", f"({unsigned}){b}"
        self.define(op.result, f"{a} {_CMPI[predicate]} {b}")

    def cmpf(self, op: arith.CmpfOp) -> None:
        predicate = op.predicate.value.data
        if predicate in (0, 15):
            self.define(op.result, "true" if predicate else "false")
            return
        self.define(op.result, _CMPF[predicate].format(a=self.ref(op.lhs), b=self.ref(op.rhs)))

    def select(self, op: arith.SelectOp) -> None:
        cond, a, b = (self.ref(v) for v in op.operands)
        if isinstance(op.result.type, Float16Type | BFloat16Type):
            # A 16-bit float constant prints as a float literal; `c ? 3.0f : h` would be
            # ambiguous (float and __half convert both ways), so the literal is converted.
            ctype = scalar_type(op.result.type)
            a, b = (
                f"{ctype}({text})" if isinstance(v.owner, arith.ConstantOp) else text
                for v, text in zip(op.operands[1:], (a, b), strict=True)
            )
        self.define(op.result, f"{cond} ? {a} : {b}")

    def bitcast(self, op: arith.BitcastOp) -> None:
        pair = (self.ctype(op.input), self.ctype(op.result))
        if pair not in _BITCASTS:
            raise EmitError(f"emit_cuda: no bitcast from {op.input.type} to {op.result.type}")
        self.define(op.result, f"{_BITCASTS[pair]}({self.ref(op.input)})")

    def negf(self, op: arith.NegfOp) -> None:
        operand = self.ref(op.operand)
        self.define(op.result, f"-({operand})" if operand.startswith("-") else f"-{operand}")


_HANDLERS: dict[type[Operation], Callable[[_KernelEmitter, Operation], None]] = {
    kernel.ThreadIdOp: _KernelEmitter.thread_id,
    kernel.BlockIdOp: _KernelEmitter.block_id,
    kernel.SharedOp: _KernelEmitter.shared,
    kernel.LocalOp: _KernelEmitter.local,
    kernel.BarrierOp: _KernelEmitter.barrier,
    kernel.ShflXorOp: _KernelEmitter.shfl_xor,
    kernel.MmaOp: _KernelEmitter.mma,
    kernel.LoadOp: _KernelEmitter.load,
    kernel.CpAsyncOp: _KernelEmitter.cp_async,
    kernel.CpAsyncCommitOp: _KernelEmitter.cp_async_commit,
    kernel.CpAsyncWaitOp: _KernelEmitter.cp_async_wait,
    kernel.MBarrierOp: _KernelEmitter.mbarrier,
    kernel.MBarrierInitOp: _KernelEmitter.mbarrier_init,
    kernel.MBarrierArriveExpectTxOp: _KernelEmitter.mbarrier_arrive_expect_tx,
    kernel.MBarrierWaitOp: _KernelEmitter.mbarrier_wait,
    kernel.TmaLoadOp: _KernelEmitter.tma_load,
    kernel.StoreOp: _KernelEmitter.store,
    kernel.ForOp: _KernelEmitter.for_,
    affine.ApplyOp: _KernelEmitter.apply,
    scf.IfOp: _KernelEmitter.if_,
    arith.CmpiOp: _KernelEmitter.cmpi,
    arith.CmpfOp: _KernelEmitter.cmpf,
    arith.SelectOp: _KernelEmitter.select,
    arith.NegfOp: _KernelEmitter.negf,
    arith.BitcastOp: _KernelEmitter.bitcast,
}  # type: ignore[assignment]
