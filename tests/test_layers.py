"""The folder is the architecture (docs/architecture.md): every module of osbench_analysis belongs to
one layer, a layer imports only from layers below it (module level and inside functions alike), no two
modules import each other in a circle, and no module is longer than a reader can hold."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "osbench_analysis"

#: bottom to top: a module may import from its own layer or any layer listed before it
LAYERS = (
    ("foundation", {"__init__", "errors", "paths", "formatting", "forwarding", "_probes", "_probes_test"}),
    ("catalog", {"catalog"}),
    ("hosts", {"hosts"}),
    ("store", {"store"}),
    ("stats", {"stats"}),
    ("reference", {"reference"}),
    ("plots", {"plots"}),
    ("worker", {"worker"}),
    ("environments", {"environments"}),
    ("measure", {"measure"}),
    ("analysis", {"analysis"}),
    ("report", {"report"}),
    ("explore", {"explore"}),
    ("fleet", {"fleet"}),
    ("front ends", {"cli", "notebook", "notebook_format", "papermill_run"}),
)
RANK = {top: i for i, (_, tops) in enumerate(LAYERS) for top in tops}
MAX_LINES = 600


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every osbench_analysis module this one imports, wherever the import statement stands."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def layer_of(module: str) -> str:
    top = module.split(".")[1] if "." in module else "__init__"
    return top


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return {m: imported(m, p, known) for m, p in known.items()}


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_every_module_has_a_layer(graph):
    unplaced = sorted({layer_of(m) for m in graph} - set(RANK))
    assert not unplaced, f"add these to LAYERS (and docs/architecture.md): {unplaced}"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_imports_only_go_down(graph):
    upward = [f"{m} ({LAYERS[RANK[layer_of(m)]][0]}) imports {d} ({LAYERS[RANK[layer_of(d)]][0]})"
              for m, deps in graph.items() for d in deps if RANK[layer_of(d)] > RANK[layer_of(m)]]
    assert not upward, "\n".join(upward)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_no_import_circles(graph):
    # A package's __init__ naming its own children (re-exports, the environments' registrations) is how a
    # package is assembled, not an import of another module's logic: those edges are left out.
    edges = {m: {d for d in deps if not (m + "." in d + "." and d.startswith(m + "."))} for m, deps in graph.items()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_the_checker_sees_imports_inside_functions(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from osbench_analysis.report import paper\n    return paper\n")
    known = {"osbench_analysis.report.paper": path, "osbench_analysis.catalog.m": path}
    assert imported("osbench_analysis.catalog.m", path, known) == {"osbench_analysis.report.paper"}


def test_no_module_a_reader_cannot_hold():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these (at most {MAX_LINES} lines a module): {long}"


def test_the_user_facing_packages_forward_to_their_main_module():
    from osbench_analysis import analysis, explore, fleet
    from osbench_analysis.analysis import pipeline
    from osbench_analysis.explore import questions
    from osbench_analysis.fleet import run

    assert analysis.analyze is pipeline.analyze and explore.samples is questions.samples
    assert fleet.fleet_run is run.fleet_run
    with pytest.raises(AttributeError, match="'osbench_analysis.analysis' has no attribute 'no_such_name'"):
        analysis.no_such_name
