"""decompose: the torch dialect → the tensor (`ten`) dialect.

Each `torch.aten` op becomes ten.map / ten.reduce / ten.index_map ops, one pattern per
ATen op family in `decompositions/` (see `decompositions/common.py` for the shared
building blocks). The function's signature does not change.

An op no pattern handles stays; after the walk, every one left is reported at once, with
the user's source line, as an `UnsupportedOpsError`, so a model shows all the work
missing in one run rather than one op per run.

Provenance: before the walk each torch op's location becomes its `Origin` (its printed
name, ATen overload, module and line; see `deplodock.dialects.torch`), and every ten op a
decomposition emits takes it over (`record_provenance` in `decompositions/common.py`).
Locations print only on demand (`deplo-opt --print-debuginfo`), so the tensor level reads
as before; lift-to-loop turns them into each kernel's `covers` list.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from deplodock.dialects.torch import AtenOp, stamp_origins
from deplodock.errors import UserInputError
from deplodock.passes.torch import decompositions
from deplodock.passes.torch.decompositions.common import Decomposition


def all_decompositions() -> tuple[type[Decomposition], ...]:
    """Every Decomposition in the decompositions package, one module per ATen op family.

    Found by import rather than listed, so adding an op is adding a module.
    """
    package = decompositions.__name__
    for info in pkgutil.iter_modules(decompositions.__path__):
        importlib.import_module(f"{package}.{info.name}")
    found: list[type[Decomposition]] = []
    pending = list(Decomposition.__subclasses__())
    while pending:
        cls = pending.pop(0)
        pending.extend(cls.__subclasses__())
        if not inspect.isabstract(cls) and cls.__module__.startswith(package):
            found.append(cls)
    return tuple(sorted(found, key=lambda c: (c.__module__, c.__name__)))


def supported_targets() -> list[str]:
    """Every ATen overload the pass decomposes, sorted."""
    return sorted(t for d in all_decompositions() for t in d.targets)


def qualified_name(target: str) -> str:
    """`aten.add.Tensor` for an ATen target; other namespaces already carry theirs."""
    return target if target.count(".") >= 2 else f"aten.{target}"


class UnsupportedOpsError(UserInputError):
    """Ops the decomposition cannot lower, listed together with where they came from.

    `entries` holds (qualified target, source or None, reason or None) per op; the
    message shows each distinct entry once, with how often it occurs.
    """

    def __init__(self, ops: Sequence[AtenOp], reasons: Mapping[AtenOp, str]):
        self.entries = [
            (qualified_name(op.overload), op.source_location, reasons.get(op)) for op in ops
        ]
        lines = []
        for (target, source, reason), n in Counter(self.entries).items():
            line = f"  {target}"
            line += f" ({reason})" if reason else ""
            line += f" at {source}" if source else ""
            line += f" [{n} times]" if n > 1 else ""
            lines.append(line)
        s = "" if len(ops) == 1 else "s"
        super().__init__(f"{len(ops)} unsupported op{s}:\n" + "\n".join(lines))


@dataclass(frozen=True)
class Decompose(ModulePass):
    """Rewrite every torch.aten op into ten ops; raise UnsupportedOpsError for the rest."""

    name = "decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stamp_origins(op)
        reasons: dict[AtenOp, str] = {}
        patterns = [d(reasons) for d in all_decompositions()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
        left = [o for o in op.walk() if isinstance(o, AtenOp)]
        if left:
            raise UnsupportedOpsError(left, reasons)
