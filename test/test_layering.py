"""The package's import structure: no cycles, and no import from a lower level to a higher
one. Read from the sources (every ``import`` statement, those inside functions too), so a
lazy import cannot hide a dependency.

Levels, lowest first: the leaves (``deplodock.target``, ``deplodock.errors``: nothing of
deplodock's), the dialects, then the passes and the frontend, then the backends, then the
tools (pipeline, API, CLI). A dialect imports only dialects and leaves (the tile dialect
not the kernel one, which is below it in the pipeline); a pass no frontend, backend or
tool; a backend no frontend.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "deplodock": ROOT / "tools",
    "deplodock.bench": ROOT / "bench",
    "deplodock.dialects": ROOT / "dialects",
    "deplodock.frontends": ROOT / "frontends",
    "deplodock.backends": ROOT / "backends",
    "deplodock.passes": ROOT / "passes",
}
LEAVES = {"deplodock.target", "deplodock.errors"}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The deplodock modules ``name`` imports (a name imported from a package that is a
    module of its own counts as that module)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" for a in node.names] + [module]
            targets = [t for t in targets if t in modules] or [module]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("deplodock") and target != name:
                found.add(target)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _level(module: str) -> str:
    if module in LEAVES:
        return "leaf"
    part = module.split(".")[1] if "." in module else ""
    # the package root's modules and the benchmark harness (deplodock.bench) are tools
    return part if part in ("dialects", "passes", "frontends", "backends") else "tools"


def test_the_modules_are_found(graph) -> None:
    assert {"deplodock.dialects.tile", "deplodock.passes.tile.mark_unroll"} <= graph.keys()
    assert "deplodock.dialects.tma" in graph["deplodock.dialects.tile"]


FORBIDDEN = {
    "leaf": {"dialects", "passes", "frontends", "backends", "tools"},
    "dialects": {"passes", "frontends", "backends", "tools"},
    "passes": {"frontends", "backends", "tools"},
    "backends": {"frontends", "tools"},
}


def test_no_import_goes_up_a_level(graph) -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if _level(target) in FORBIDDEN.get(_level(module), ())
    ]
    wrong += [
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("deplodock.dialects.tile")
        for target in targets
        if target.startswith("deplodock.dialects.kernel")
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle(graph) -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles
