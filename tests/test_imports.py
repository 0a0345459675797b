"""No import cycle inside calibkit, counting imports at module level AND inside functions.

The graph is built from the source with :mod:`ast` (nothing is imported): one node per module
of ``python/calibkit``, one edge per ``import``/``from ... import`` anywhere in the file,
including those inside functions and methods (a lazy import is still a dependency: it only
hides a cycle until the function runs). Importing ``a.b.c`` also runs the ``__init__`` of
``a.b`` and ``a``, so an edge goes to each of those packages too, except the importer's own
ancestors (they are already being imported when the importer runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "python"
PACKAGE = ROOT / "calibkit"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


#: Compiled modules (a .pyi stub and no .py): leaves of the graph.
_EXTENSIONS = {
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in PACKAGE.rglob("*.pyi")
    if not p.with_suffix(".py").exists()
}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _targets(name: str, path: Path, modules: dict[str, Path]):
    """(target module, line) for every import of a calibkit module in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if _is_package(path) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "calibkit":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "calibkit":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in _EXTENSIONS:  # the compiled core imports nothing of calibkit
                    continue
                # "from pkg import submodule" imports the submodule; otherwise the name comes
                # from the module itself
                yield (sub if sub in modules else base), node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """{module: {imported calibkit module: first line}} over every calibkit source file."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for name, path in modules.items():
        own = set(_ancestors(name))
        for target, line in _targets(name, path, modules):
            for t in [*_ancestors(target), target]:
                if t == name or (t in own and t != target) or t not in modules:
                    continue
                graph[name].setdefault(t, line)
    return graph


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan), as lists."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _describe(graph, comp) -> str:
    members = set(comp)
    edges = [f"  {a} -> {b} (line {graph[a][b]})" for a in comp for b in sorted(graph[a])
             if b in members]
    return "\n".join(edges)


def test_graph_sees_module_and_function_level_imports():
    graph = import_graph()
    # module level, relative
    assert "calibkit._validate" in graph["calibkit.binned.metrics"]
    # function level, absolute, and the packages it pulls in
    assert "calibkit.recalibration" in graph["calibkit.analysis.temperature"]
    # a relative import of a submodule ("from . import figures")
    assert "calibkit.analysis.figures" in graph["calibkit.analysis.report"]


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert find_cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_in_calibkit():
    graph = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles inside calibkit:\n" + "\n\n".join(
        _describe(graph, c) for c in cycles)


#: What the independent oracle may import of calibkit: only the exception classes. The oracle
#: must restate no rule of the code it checks, and :mod:`calibkit.errors` holds no rule (no
#: logic at all), only the classes that let the oracle's errors belong to calibkit's one error
#: family (``except calibkit.CalibkitError`` catches them like every public function's).
ORACLE_MAY_IMPORT = {"calibkit.errors"}


@pytest.mark.parametrize("leaf", ["calibkit.reference"])
def test_reference_imports_no_calibkit_module(leaf):
    assert set(import_graph()[leaf]) <= ORACLE_MAY_IMPORT


def test_errors_module_imports_nothing_of_calibkit():
    """calibkit.errors is a leaf: the oracle may import it only because it pulls in no rule."""
    assert import_graph()["calibkit.errors"] == {}


def test_the_engine_does_not_import_its_readings():
    """binned/ (the engine) imports none of the packages that read it (docs/architecture.md)."""
    readings = ("calibkit.trust", "calibkit.scale", "calibkit.recalibration", "calibkit.analysis",
                "calibkit.plots", "calibkit.cli", "calibkit.io")
    bad = {(m, t) for m, targets in import_graph().items() if m.startswith("calibkit.binned")
           for t in targets if t.startswith(readings)}
    assert not bad, sorted(bad)
