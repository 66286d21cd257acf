"""The package's import graph (every ``from . import`` and ``from .m import``, at module level or inside a
function) has no cycle and no arrow that goes back up: each module imports only from floors below its own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ncbook"
FLOORS = [
    {"cache", "codehash", "data", "metrics", "nets"},          # ground: import nothing from the package
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


def imports_of(module: str) -> set[str]:
    """The ncbook modules ``module`` imports, anywhere in its source."""
    out = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").startswith("ncbook")):
            name = (node.module or "").removeprefix("ncbook").lstrip(".")
            if name:
                out.add(name.split(".")[0])
            else:                       # from . import m: a module, or a name of the package's __init__
                out |= {a.name for a in node.names if (PACKAGE / f"{a.name}.py").is_file()}
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("ncbook.")}
    return out - {module}


def graph() -> dict[str, set[str]]:
    return {p.stem: imports_of(p.stem) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}


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
