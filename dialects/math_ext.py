"""Scalar math that upstream ``math``/``arith`` (as xDSL 0.74 defines them) cannot say.

torch's elementwise ops need a few functions with no exact formula in the upstream ops:

* ``math_ext.remf``: C's ``fmod`` (the remainder of the division truncated toward zero,
  exact). MLIR has it as ``arith.remf``; xDSL does not. ``a - trunc(a / b) * b`` is not
  exact once the quotient is large, and torch's fmod, remainder and floor division are
  built on the exact one.
* ``math_ext.erfc``: ``1 - erf(x)`` without the cancellation (``1 - erf(4)`` is 0 in f32,
  erfc(4) is 1.5e-8). MLIR has ``math.erfc``; xDSL does not.
* ``math_ext.erfinv``, ``math_ext.lgamma``, ``math_ext.erfcx`` (``exp(x^2) * erfc(x)``):
  special functions CUDA's math library has (``erfinvf``, ``lgammaf``, ``erfcxf``) and
  that no short formula of upstream ops computes to float32 accuracy.

Each takes and returns one float type, as the upstream float math ops do, and is Pure, so
fusion, DCE and the interpreters treat it like ``math.erf``. The numpy meaning is in
``interpreters/scalar.py``, the CUDA spelling in ``backends/cuda/emit.py``.
"""

from __future__ import annotations

from xdsl.dialects.math import (
    FloatingPointLikeBinaryMathOperation,
    FloatingPointLikeUnaryMathOperation,
)
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure, SameOperandsAndResultType


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryMathOperation):
    """``lhs - trunc(lhs / rhs) * rhs``, computed exactly (C's ``fmod``): the result has
    the sign of ``lhs``; NaN when ``rhs`` is 0 or ``lhs`` infinite."""

    name = "math_ext.remf"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """The complementary error function, ``1 - erf(x)`` to full relative precision."""

    name = "math_ext.erfc"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class ErfinvOp(FloatingPointLikeUnaryMathOperation):
    """The inverse error function on [-1, 1] (±inf at ±1, NaN outside)."""

    name = "math_ext.erfinv"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class LgammaOp(FloatingPointLikeUnaryMathOperation):
    """``log(|gamma(x)|)`` (+inf at the poles 0, -1, -2, ...)."""

    name = "math_ext.lgamma"

    traits = traits_def(Pure(), SameOperandsAndResultType())


@irdl_op_definition
class ErfcxOp(FloatingPointLikeUnaryMathOperation):
    """The scaled complementary error function ``exp(x^2) * erfc(x)``, without the
    overflow of the product for large x (where it tends to ``1 / (x sqrt(pi))``)."""

    name = "math_ext.erfcx"

    traits = traits_def(Pure(), SameOperandsAndResultType())


MathExt = Dialect("math_ext", [RemFOp, ErfcOp, ErfinvOp, LgammaOp, ErfcxOp])
