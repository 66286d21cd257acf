"""The package's import graph (every ``from . import`` and ``from .m import``, at module level or inside a
function) has no cycle and no arrow that goes back up: each module imports only from floors below its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ncbook"
FLOORS = [
    {"cache", "codehash", "data", "metrics", "nets", "words"},  # ground: import nothing from the package
    {"train", "ufm", "hooks"},
    {"bounds"},
    {"stability"},
    {"experiments", "reproduce"},                             # the code that produces results
    {"registry", "cost"},                                     # configuration as data, its cost
    {"runner", "scaling"},                                    # results run and loaded; what governs them
    {"compare", "transfer", "batch", "pieces"},               # results read, brought in, batched, cut in pieces
    {"claims", "relay"},                                      # the claims and the verdict rule; the GPU relay
    {"exercises"},                                            # the exercises' answers, recomputed to check them
    {"plotting"},
    {"interactive", "__main__"},
]


CLAIMS_FLOORS = [
    {"rule", "views"},                                        # the verdict rule; what a claim reads from the arrays
    {"verdicts"},                                             # a claim's verdict over its runs, and the tallies
    {"regime"},                                               # a claim evaluated on the runs in its regime
    {"jacot"},                                                # each paper's claims as data
    {"tirer"},
    {"reading"},                                              # the claims read on the stored results
    {"provenance"},                                           # how each result was made, in words
    {"render"},                                               # the claims tables as HTML
]
"""The floors of the package ncbook/claims/ (issue 73: one module per concern), the same rule inside it."""


def sources(module: str, package: Path = PACKAGE) -> list[Path]:
    """The source files of ``module``: its .py file, or every file of its folder (a package)."""
    file = package / f"{module}.py"
    return [file] if file.is_file() else sorted((package / module).glob("*.py"))


def imports_of(module: str, package: Path = PACKAGE) -> set[str]:
    """The modules of ``package`` that ``module`` imports, anywhere in its source (a subpackage's files reach the
    package's modules with ``..``; their imports of each other are its own graph, :func:`claims_graph`)."""
    out = set()
    for path in sources(module, package):
        up = 0 if path.parent == package else 1             # a file of a subpackage: one more dot to the package
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level == 1 + up or (node.module or "").startswith("ncbook")):
                name = (node.module or "").removeprefix("ncbook").lstrip(".")
                if name:
                    out.add(name.split(".")[0])
                else:                   # from . import m: a module, or a name of the package's __init__
                    out |= {a.name for a in node.names
                            if (package / f"{a.name}.py").is_file() or (package / a.name).is_dir()}
            elif isinstance(node, ast.Import):
                out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("ncbook.")}
    return out - {module}


def graph() -> dict[str, set[str]]:
    modules = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    return {m: imports_of(m) for m in modules + [p.parent.name for p in PACKAGE.glob("*/__init__.py")]}


def claims_graph() -> dict[str, set[str]]:
    """The imports of ncbook/claims/'s modules of each other."""
    package = PACKAGE / "claims"
    return {p.stem: imports_of(p.stem, package) for p in package.glob("*.py") if p.stem != "__init__"}


def test_every_module_has_a_floor():
    assert set(graph()) == set().union(*FLOORS)


def test_no_import_goes_up_or_sideways_into_a_cycle():
    floor = {m: i for i, group in enumerate(FLOORS) for m in group}
    wrong = [f"{m} (floor {floor[m]}) imports {d} (floor {floor[d]})"
             for m, deps in graph().items() for d in deps if floor[d] >= floor[m]]
    assert not wrong, "; ".join(sorted(wrong))


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph, or None (depth-first search)."""
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_cycle():
    assert find_cycle(graph()) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]     # the check can fail


def test_the_layout_table_of_docs_details_lists_every_module_on_its_floor():
    """docs/details.md's "Layout" table (issue 59: hooks, transfer and batch were missing) has one row per floor, in
    order, naming exactly that floor's modules."""
    import re

    text = (PACKAGE.parent / "docs" / "details.md").read_text()
    table = text[text.index("## Layout"):].split("\n\n")[2]
    rows = [line.split("|")[2] for line in table.splitlines()[2:]]
    named = [set(re.findall(r"`(\w+)`", re.sub(r"\([^()]*(?:\([^()]*\)[^()]*)*\)", "", row))) for row in rows]
    assert named == FLOORS


def test_the_claims_package_has_floors_and_small_modules():
    """ncbook/claims/ (issue 73): every module on a floor, no import up or sideways, none over about 500 lines."""
    floor = {m: i for i, group in enumerate(CLAIMS_FLOORS) for m in group}
    edges = claims_graph()
    assert set(edges) == set(floor)
    wrong = [f"{m} imports {d}" for m, deps in edges.items() for d in deps if floor[d] >= floor[m]]
    assert not wrong and find_cycle(edges) is None, wrong
    sizes = {p.name: len(p.read_text().splitlines()) for p in (PACKAGE / "claims").glob("*.py")}
    assert max(sizes.values()) <= 500, sizes
