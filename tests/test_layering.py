"""The layering of docs/architecture.md ("Dependencies point inward"), checked on the source
rather than trusted.

A walker reads every module under src/kairos with `ast` (imports inside functions and under
`if TYPE_CHECKING:` count too, since they are still dependencies) and builds the graph of
module -> module edges inside the package. The tests then assert that no system imports another,
that the shared layer imports no system, that runtimes do not import simulators or paper
experiments, and that the graph has no cycles.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

SYSTEMS = frozenset({"andes", "orloj", "salus", "fluid", "auxo", "venn", "fl"})
# The one exception to "no system imports another": both federated-learning systems build on fl.
MAY_IMPORT = {"auxo": frozenset({"fl"}), "venn": frozenset({"fl"})}
# The cohorts-as-jobs integration: Auxo's cohorts register as jobs with Venn's resource
# manager (in the simulator, and on the Venn service over HTTP). The dependency points from the
# application to the resource manager it runs on (Venn never imports Auxo: the cycle test holds
# it), and only these three modules may cross, so the rest of Auxo stays Venn-free (checked
# below).
MODULE_MAY_IMPORT = {
    "kairos.auxo.venn_jobs": frozenset({"venn"}),
    "kairos.auxo.venn_service_jobs": frozenset({"venn"}),
    "kairos.auxo.experiments.venn_cohorts": frozenset({"venn"}),
}
# Packages holding a real runtime; every system's `runtime/` package counts as well.
RUNTIME_PACKAGES = ("andes.engine", "andes.server", "andes.client", "venn.service")

Graph = dict[str, set[str]]


def find_modules(src: Path, package: str = "kairos") -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is it a package `__init__`)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _known_prefix(name: str, modules: Iterable[str]) -> str | None:
    """The longest prefix of `name` that is a module (`kairos.x.Name` -> `kairos.x`)."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.AST, module: str, is_pkg: bool) -> Iterator[tuple[str, str | None]]:
    """(module named, imported name or None) for one import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_pkg else module.split(".")[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        for alias in node.names:
            yield base, alias.name


def import_graph(src: Path = SRC, package: str = "kairos") -> Graph:
    """Every module's imports of other modules of `package`.

    `from kairos.x import y` is an edge to `kairos.x.y` when that is a module, and always to
    `kairos.x`: `y` is looked up on the package, so its `__init__` must have run. A submodule that
    reaches a sibling through its own package while that package's `__init__` imports the
    submodule is therefore a cycle; `from kairos.x.y import z` is the way round it. A module's
    import of itself is left out.
    """
    modules = find_modules(src, package)
    graph: Graph = {}
    for module, (path, is_pkg) in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            for base, name in _imported(node, module, is_pkg):
                if base != package and not base.startswith(package + "."):
                    continue
                targets = {_known_prefix(base, modules)}
                if name and f"{base}.{name}" in modules:
                    targets.add(f"{base}.{name}")
                edges |= {t for t in targets if t is not None and t != module}
        graph[module] = edges
    return graph


def system_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SYSTEMS else None


def is_shared(module: str) -> bool:
    """The shared layer is everything that is not a system: `kairos/__init__`, `__main__`, `cli`,
    `cli_utils`, `systems`, `registry`, `sim`, `workloads`, `report`, `experiments`, `runtime`."""
    return system_of(module) is None


def is_runtime(module: str) -> bool:
    rest = module.split(".")[1:]
    if len(rest) >= 2 and rest[0] in SYSTEMS and rest[1] == "runtime":
        return True
    dotted = ".".join(rest)
    return any(dotted == p or dotted.startswith(p + ".") for p in RUNTIME_PACKAGES)


def is_simulation(module: str) -> bool:
    """A system's simulator or one of its paper experiments."""
    rest = module.split(".")[1:]
    return len(rest) >= 2 and rest[0] in SYSTEMS and rest[1] in ("simulator", "experiments")


def edges(graph: Graph) -> Iterator[tuple[str, str]]:
    for source in sorted(graph):
        for target in sorted(graph[source]):
            yield source, target


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is deep enough to worry about recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def cycles(graph: Graph) -> list[list[str]]:
    return [c for c in strongly_connected(graph) if len(c) > 1]


def _cycle_name(component: list[str]) -> str:
    return " <-> ".join(component)


def _report(what: str, found: Iterable[str]) -> str:
    lines = sorted(set(found))
    return f"{len(lines)} {what}:\n  " + "\n  ".join(lines)


GRAPH = import_graph()


def test_the_walker_finds_edges_in_functions_type_checking_and_from_imports(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "demo"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from demo.sub import leaf\nVALUE = 1\n")
    (pkg / "sub" / "leaf.py").write_text("def f():\n    from demo.sub import VALUE\n")
    (pkg / "top.py").write_text(
        "from typing import TYPE_CHECKING\nimport os\n"
        "if TYPE_CHECKING:\n    import demo.sub.leaf\n"
        "def g():\n    from .sub import leaf\n    from demo import sub\n"
    )
    graph = import_graph(tmp_path, "demo")
    assert graph["demo.top"] == {"demo", "demo.sub", "demo.sub.leaf"}
    assert graph["demo.sub"] == {"demo.sub.leaf"}
    assert graph["demo.sub.leaf"] == {"demo.sub"}
    assert cycles(graph) == [["demo.sub", "demo.sub.leaf"]]


def test_the_walker_sees_a_known_edge_of_the_real_package() -> None:
    assert "kairos.fl.requirements" in GRAPH["kairos.venn.manager"]
    assert "kairos.andes.qoe" in GRAPH["kairos.andes.simulator"]


def test_no_system_imports_another() -> None:
    bad = [
        f"{s} -> {t}"
        for s, t in edges(GRAPH)
        if (a := system_of(s))
        and (b := system_of(t))
        and a != b
        and b not in MAY_IMPORT.get(a, frozenset())
        and b not in MODULE_MAY_IMPORT.get(s, frozenset())
    ]
    assert not bad, _report("imports of one system by another", bad)


def test_only_the_cohorts_as_jobs_experiment_reaches_venn_from_auxo() -> None:
    """The exception stays narrow: no Auxo module but the experiment and the service deployment
    use the Venn glue."""
    users = {s for s, t in edges(GRAPH) if t == "kairos.auxo.venn_jobs"}
    assert users == {"kairos.auxo.experiments.venn_cohorts", "kairos.auxo.venn_service_jobs"}


def test_the_shared_layer_imports_no_system() -> None:
    bad = [f"{s} -> {t}" for s, t in edges(GRAPH) if is_shared(s) and system_of(t)]
    assert not bad, _report("imports of a system by the shared layer", bad)


def test_runtimes_do_not_import_simulators_or_experiments() -> None:
    bad = [f"{s} -> {t}" for s, t in edges(GRAPH) if is_runtime(s) and is_simulation(t)]
    assert not bad, _report("imports of a simulator by a runtime", bad)


def test_no_import_cycles() -> None:
    found = {_cycle_name(c): c for c in cycles(GRAPH)}
    bad = [
        f"{name}\n    "
        + ", ".join(
            f"{s} -> {t}" for s in found[name] for t in sorted(GRAPH[s]) if t in found[name]
        )
        for name in list(found)
    ]
    assert not bad, _report("import cycles (members, then the edges among them)", bad)


ROOT = SRC.parent
# An issue's number, or its numbered acceptance items ("must-show 3"): the tracker's words.
ISSUE_REFERENCE = re.compile(r"issue [0-9]+|issue #[0-9]+|must-show", re.IGNORECASE)
# This file holds the pattern and the examples that show it catches something.
THIS_FILE = Path(__file__).resolve()


def _texts() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    yield from sorted(p for p in (SRC / "kairos").rglob("*") if p.suffix in {".py", ".js", ".html"})
    for folder in ("tests", "benchmarks"):
        yield from sorted(p for p in (ROOT / folder).rglob("*.py") if p != THIS_FILE)


def test_code_and_docs_say_what_the_project_is_not_which_issue_made_it() -> None:
    """Issue numbers belong to the tracker: the source, tests and docs describe the system."""
    bad = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in _texts()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE_REFERENCE.search(line)
    ]
    assert not bad, _report("lines naming an issue", bad)


def test_the_issue_number_check_can_fail() -> None:
    assert ISSUE_REFERENCE.search("as measured in Issue #17's run")
    assert ISSUE_REFERENCE.search("(issue 19)")
    assert ISSUE_REFERENCE.search('"""Must-show 3: the chat page shows the streamed text."""')
    assert not ISSUE_REFERENCE.search("the issues a user files")
    assert not ISSUE_REFERENCE.search("the page must show the streamed text")


def test_sources_cite_the_architecture_in_the_repository() -> None:
    """The rules live in docs/architecture.md; nothing points outside the repository for them."""
    assert (ROOT / "docs" / "architecture.md").is_file()
    bad = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _texts()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "ARCHITECTURE.md" in line or "ARCHITECTURE principle" in line
    ]
    assert not bad, _report("citations of an architecture file outside the repository", bad)


# The Andes engine's core path, which reads like a small serving engine; the CPU-specific
# paths live in `engine.cpu` and reach it only through the runner's hook.
ENGINE_CORE = frozenset(
    f"kairos.andes.{m}"
    for m in (
        "scheduler",
        "kv_blocks",
        "engine.engine",
        "engine.runner",
        "engine.model",
        "engine.attention",
        "engine.kv_cache",
        "engine.sampler",
    )
)
CPU_PATHS = "kairos.andes.engine.cpu"


def _reaches(graph: Graph, start: str, target_prefix: str) -> list[str]:
    """The path from `start` to the first module under `target_prefix`, or []."""
    seen, stack = {start}, [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == target_prefix or nxt.startswith(target_prefix + "."):
                return [*path, nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return []


def test_the_engine_core_path_imports_no_cpu_specific_module() -> None:
    assert GRAPH.keys() >= ENGINE_CORE, ENGINE_CORE - GRAPH.keys()
    bad = [" -> ".join(p) for m in sorted(ENGINE_CORE) if (p := _reaches(GRAPH, m, CPU_PATHS))]
    assert not bad, _report("core-path modules reaching the CPU paths", bad)
    # the CPU package plugs into the runner's hook, so it depends on the core, not the reverse
    assert "kairos.andes.engine.runner" in GRAPH[f"{CPU_PATHS}.hook"]


def test_the_core_path_check_follows_imports_transitively() -> None:
    graph: Graph = {"a.core": {"a.util"}, "a.util": {"a.cpu.split"}, "a.cpu.split": set()}
    assert _reaches(graph, "a.core", "a.cpu") == ["a.core", "a.util", "a.cpu.split"]
    assert _reaches(graph, "a.cpu.split", "a.core") == []
