"""pow(tensor, number): one `ten.map`. Exponents with an exact cheaper form use it
(x**2 is x*x, x**0.5 is sqrt, x**-0.5 is rsqrt), as torch's kernels do; any other
exponent is math.powf.
"""

from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import SSAValue

from deplodock.dialects.torch import AtenOp
from deplodock.passes.torch.decompositions.common import Body, Decomposition, Emitter, Unsupported

_SPECIAL = {
    1: lambda b, x: x,
    2: lambda b, x: b.binary("mul", x, x),
    3: lambda b, x: b.binary("mul", b.binary("mul", x, x), x),
    0.5: lambda b, x: b.unary(math.SqrtOp, x),
    -0.5: lambda b, x: b.unary(math.RsqrtOp, x),
    -1: lambda b, x: b.binary("div", b.const(1, x.type), x),
}


class Pow(Decomposition):
    targets = ("pow.Tensor_Scalar",)

    def decompose(self, op: AtenOp, emit: Emitter) -> SSAValue:
        exponent = op.arg("exponent")
        if not isinstance(exponent, int | float):
            raise Unsupported(f"exponent {exponent!r} is not a number")
        element = emit.element

        def body(b: Body, x: SSAValue) -> SSAValue:
            x = b.cast(x, element)
            if exponent in _SPECIAL:
                return _SPECIAL[exponent](b, x)
            return b.binary("pow", x, b.const(exponent, element))

        return emit.map([emit.tensor("self")], element, body)
