"""deplodock's dialects, one module each, and the context that knows them all.

torch (``torch``) → tensor (``ten``) → loop (``loop``) → tile (``tile``) → kernel
(``kernel``); scalar math is upstream ``arith``/``math`` plus the few functions they lack
(``math_ext``), types are builtin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # xDSL loads with a dialect or a context, not with this package
    from xdsl.context import Context


def project_dialects():
    """The project's own dialects, in lowering order, then ``math_ext`` (the scalar math
    upstream math/arith lack: erfc, erfinv, lgamma, erfcx, remf)."""
    from deplodock.dialects.kernel import Kernel
    from deplodock.dialects.loop import Loop
    from deplodock.dialects.math_ext import MathExt
    from deplodock.dialects.tensor import Ten
    from deplodock.dialects.tile import Tile
    from deplodock.dialects.torch import Torch

    return [Torch, Ten, Loop, Tile, Kernel, MathExt]


def make_context() -> Context:
    """A context with the upstream dialects the project uses and its own six."""
    from xdsl.context import Context
    from xdsl.dialects import affine, arith, builtin, func, math, memref, scf

    ctx = Context()
    for dialect in (
        builtin.Builtin,
        func.Func,
        arith.Arith,
        math.Math,
        affine.Affine,
        scf.Scf,
        memref.MemRef,
        *project_dialects(),
    ):
        ctx.load_dialect(dialect)
    return ctx
