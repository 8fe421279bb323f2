"""Warp-level matrix multiply-accumulate on tensor cores: the one table every level shares.

``%d0, %d1, %d2, %d3 = tile.mma m16n8k8 tf32x3 a(%a0, ..) b(%b0, %b1) c(%c0, ..) : f32``
(``kernel.mma`` after ``materialize``) is PTX's ``mma.sync.aligned.m16n8k8.row.col.f32.
tf32.tf32.f32``: the 32 lanes of a warp together multiply a 16 x 8 matrix ``A`` by an
8 x 8 ``B`` and add a 16 x 8 ``C``. No lane holds a whole operand: each holds a few of its
elements in registers (a *fragment*), at places the PTX ISA fixes. With ``g = lane / 4``
and ``t = lane % 4`` (``FRAGMENTS``)::

    A (16 x 8, [m][k])  a0 (g, t)     a1 (g + 8, t)   a2 (g, t + 4)    a3 (g + 8, t + 4)
    B ( 8 x 8, [k][n])  b0 (t, g)     b1 (t + 4, g)
    C, D (16 x 8)       c0 (g, 2t)    c1 (g, 2t + 1)  c2 (g + 8, 2t)   c3 (g + 8, 2t + 1)

So a lane's four results are a 2 x 2 cross product (rows ``g, g + 8``, columns ``2t,
2t + 1``): a register tile whose rows and columns the lane's position in its warp picks.
That is how the matmul schedule uses it (``passes/tile/mma_contract.py``).

Precision (``PRECISIONS``):

* ``tf32``: the tensor core reads each operand's top 19 bits (sign, 8 exponent, 10
  mantissa bits: truncation), products exact, sums in fp32: about 1e-3 relative. Not
  fp32's meaning; only on request.
* ``tf32x3``: each operand is split ``x = hi + lo`` (``hi`` is ``x`` rounded to tf32 by
  adding half a tf32 ulp to its bits and letting the tensor core drop the low 13; ``lo =
  x - hi`` exactly, read truncated) and ``D = a_lo b_hi + a_hi b_lo + a_hi b_hi + C`` (the
  ``lo * lo`` term is below fp32's precision). About fp32's accuracy at three tensor-core
  products; it is what PyTorch's fp32 attention runs on (CUTLASS's ``OpMultiplyAddFastF32``).
  As there, an infinite operand gives NaN (``lo = inf - inf``), and a finite one within
  half a tf32 ulp of fp32's largest rounds ``hi`` to infinity. The emulation sums each
  product exactly and rounds once; the tensor core's own additions are coarser (a long
  K accumulated in place drifted to 3e-5 on the H100, README results, session 42), which
  is why the emitter keeps each K chunk's products in accumulators of their own.

``mma_arrays`` is the operation on numpy arrays of lanes (the interpreters'), built from
``FRAGMENTS`` so that the emulation, the emitter's register order and the pass that loads
the fragments read one table.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, StringAttr
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    prop_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

SHAPES = ("m16n8k8",)
"""Tensor-core shapes the op takes (fp32 operands as tf32)."""

PRECISIONS = ("tf32", "tf32x3")

WARP = 32

FRAGMENTS: dict[str, tuple[tuple[tuple[int, int, int], tuple[int, int, int]], ...]] = {
    # Per register: (row, column), each ``(coefficient of g, coefficient of t, offset)``.
    "a": (
        ((1, 0, 0), (0, 1, 0)),
        ((1, 0, 8), (0, 1, 0)),
        ((1, 0, 0), (0, 1, 4)),
        ((1, 0, 8), (0, 1, 4)),
    ),
    "b": (((0, 1, 0), (1, 0, 0)), ((0, 1, 4), (1, 0, 0))),
    "c": (
        ((1, 0, 0), (0, 2, 0)),
        ((1, 0, 0), (0, 2, 1)),
        ((1, 0, 8), (0, 2, 0)),
        ((1, 0, 8), (0, 2, 1)),
    ),
}
"""The m16n8k8 tf32 fragment layouts of the PTX ISA (``C`` is ``D``'s too)."""

OPERAND_SHAPES = {"a": (16, 8), "b": (8, 8), "c": (16, 8)}

LANE_FLOPS = 2 * 16 * 8 * 8 // WARP
"""A lane's share of one m16n8k8 product's FLOPs (``2 M N K`` over the warp): 64."""


def fragment_place(operand: str, register: int, lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) in ``operand``'s matrix of ``register`` of each ``lane``."""
    g, t = lane // 4, lane % 4
    (rg, rt, ro), (cg, ct, co) = FRAGMENTS[operand][register]
    return rg * g + rt * t + ro, cg * g + ct * t + co


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def tf32_truncate(x: np.ndarray) -> np.ndarray:
    """What the tensor core reads of an fp32 register: its top 19 bits."""
    return (_bits(x) & np.uint32(0xFFFFE000)).view(np.float32)


def split_tf32x3(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)`` as the tensor core reads them: ``hi`` rounded to tf32 (half an ulp
    added to the bits, then truncated), ``lo = x - hi`` (exact in fp32) truncated."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = ((_bits(x) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
        lo = (x - hi).astype(np.float32)
    return hi, tf32_truncate(lo)


def _matrix(operand: str, registers: list[np.ndarray]) -> np.ndarray:
    """Assemble ``operand``'s matrices from its registers, each ``[..., 32]`` lanes."""
    lane = np.arange(WARP)
    rows, cols = OPERAND_SHAPES[operand]
    out = np.zeros((*registers[0].shape[:-1], rows, cols), dtype=np.float64)
    for r, value in enumerate(registers):
        row, col = fragment_place(operand, r, lane)
        out[..., row, col] = value
    return out


def mma_arrays(
    a: list[np.ndarray], b: list[np.ndarray], c: list[np.ndarray], precision: str
) -> list[np.ndarray]:
    """``D = A B + C`` per warp: each register an array ``[..., 32]`` over a warp's lanes
    (leading dimensions: warps); returns ``D``'s four registers the same way, fp32."""
    if precision == "tf32":
        terms = [(tf32_truncate(np.stack(a)), tf32_truncate(np.stack(b)))]
    else:
        a_hi, a_lo = split_tf32x3(np.stack(a))
        b_hi, b_lo = split_tf32x3(np.stack(b))
        terms = [(a_lo, b_hi), (a_hi, b_lo), (a_hi, b_hi)]
    total = _matrix("c", [np.asarray(v, dtype=np.float64) for v in c])
    for x, y in terms:
        total = total + _matrix("a", list(x.astype(np.float64))) @ _matrix(
            "b", list(y.astype(np.float64))
        )
    lane = np.arange(WARP)
    out = []
    for r in range(4):
        row, col = fragment_place("c", r, lane)
        out.append(total[..., row, col].astype(np.float32))
    return out


# --- the op, at the tile and the kernel level ---------------------------------------------

REGISTERS = {name: len(places) for name, places in FRAGMENTS.items()}


class MmaBase(IRDLOperation):
    """``%d0, .., %d3 = <level>.mma m16n8k8 tf32x3 a(%a0, ..) b(%b0, %b1) c(%c0, ..) : f32``.

    Each operand and result is one lane's register of a fragment (the module docstring's
    table); every lane of the warp must run it together (a whole-warp op, as a shuffle)."""

    a = var_operand_def(Float32Type)
    b = var_operand_def(Float32Type)
    c = var_operand_def(Float32Type)
    d = var_result_def(Float32Type)
    shape = prop_def(StringAttr)
    precision = prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    def __init__(self, a, b, c, precision: str = "tf32x3", shape: str = "m16n8k8"):
        super().__init__(
            operands=[list(a), list(b), list(c)],
            result_types=[[Float32Type()] * REGISTERS["c"]],
            properties={"shape": StringAttr(shape), "precision": StringAttr(precision)},
        )

    def verify_(self) -> None:
        name = self.name
        if self.shape.data not in SHAPES:
            raise VerifyException(f"{name}: shape {self.shape.data} is not one of {SHAPES}")
        if self.precision.data not in PRECISIONS:
            raise VerifyException(
                f"{name}: precision {self.precision.data} is not one of {PRECISIONS}"
            )
        for operand, values in (("a", self.a), ("b", self.b), ("c", self.c)):
            if len(values) != REGISTERS[operand]:
                raise VerifyException(
                    f"{name}: {operand} is a fragment of {REGISTERS[operand]} registers a "
                    f"lane, not {len(values)}"
                )
        if len(self.d) != REGISTERS["c"]:
            raise VerifyException(f"{name}: d is a fragment of {REGISTERS['c']} registers")
        threads = self.block_threads()
        if threads is not None and threads % WARP:
            raise VerifyException(
                f"{name}: the kernel's {threads} threads per block are not whole warps of "
                f"{WARP}; a tensor-core product needs every lane of a warp"
            )

    def block_threads(self) -> int | None:
        """The enclosing kernel's threads per block, None while not yet known (each level's
        op says how its kernel counts them)."""
        raise NotImplementedError

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.shape.data} {self.precision.data}")
        for label, values in (("a", self.a), ("b", self.b), ("c", self.c)):
            printer.print_string(f" {label}(")
            printer.print_list(values, printer.print_ssa_value)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : f32")

    @classmethod
    def parse(cls, parser: Parser):
        shape = parser.parse_identifier()
        precision = parser.parse_identifier()
        groups = []
        for label in ("a", "b", "c"):
            parser.parse_keyword(label)
            groups.append(
                parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, parser.parse_unresolved_operand
                )
            )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_keyword("f32")
        f32 = Float32Type()
        resolved = [parser.resolve_operands(g, [f32] * len(g), parser.pos) for g in groups]
        op = cls(*resolved, precision=precision, shape=shape)
        op.attributes.update(attrs)
        return op
