"""Write the 'made with' and 'wall time' columns of results/README.md's table, and its totals sentence (between
``<!-- totals -->`` and ``<!-- /totals -->``), from the manifests' provenance.

    python scripts/results_table.py          # rewrite the two columns in place
    python scripts/results_table.py --check  # fail if they differ, or a row and a result do not pair up

One source of truth: the manifest records how each result was made; the table only repeats it. The 'what' column
is written by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ncbook.claims import beside, resumes

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "results" / "README.md"


def made_with(provenance: dict) -> str:
    """The command, the machine (threads and CPU model, or the accelerator), what ran beside it where recorded, and
    the commit of one manifest."""
    if provenance["device"] == "cpu":
        threads = provenance["cpu_threads"]
        machine = f"{threads} thread{'s' if threads != 1 else ''}, {provenance['cpu_model']}"
    else:
        machine = f"{provenance['device_name']} (torch {provenance['torch_version']})"
    return f"`{provenance['command']}`, {machine}{beside(provenance)}, at {provenance['git_commit'][:7]}"


def wall_time(provenance: dict) -> str:
    """Seconds, rounded, with a thousands separator, and how a run made in segments was resumed."""
    pieces = len(provenance.get("assembled_from") or ())
    return f"{round(provenance['wall_time_s']):,} s" + (f", its {pieces} pieces' sum" if pieces else
                                                       resumes(provenance))


def manifests() -> dict[str, dict]:
    """Every shipped result's provenance, by `<experiment>/<tag>` (not the runner's own folders, `.checkpoints`
    and `.locks`, which a run in progress fills)."""
    return {f"{path.parent.name}/{path.stem}": json.loads(path.read_text())["provenance"]
            for path in sorted((ROOT / "results").glob("*/*.json")) if not path.parent.name.startswith(".")}


TOTALS = ("<!-- totals -->", "<!-- /totals -->")


def totals(provenances: dict[str, dict]) -> str:
    """The totals sentence: how many results at each scale and their recorded wall time, from the manifests."""
    by_scale: dict[str, list[float]] = {}
    for name, prov in provenances.items():     # an assembled result's time is its pieces', counted with them
        by_scale.setdefault(name.split("/")[1].split("--")[0], []).append(
            0.0 if prov.get("assembled_from") else prov["wall_time_s"])
    parts = [f"{len(times)} at the `{scale}` scale, {sum(times) / 3600:.2f} h of recorded wall time"
             for scale, times in sorted(by_scale.items())]
    assembled = sum(bool(p.get("assembled_from")) for p in provenances.values())
    return (f"{len(provenances)} shipped results: " + "; ".join(parts)
            + (f" ({assembled} assembled from pieces shipped beside them, whose time is counted once, with the "
               "pieces)" if assembled else "") + ".")


def rewrite(text: str, provenances: dict[str, dict]) -> tuple[str, list[str]]:
    """The README with the two columns and the totals sentence rewritten, and the problems found (rows without a
    result and back, no totals markers)."""
    start, end = TOTALS
    if start in text and end in text:
        text = text[:text.index(start) + len(start)] + totals(provenances) + text[text.index(end):]
    lines, seen, problems = [], set(), []
    for line in text.splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) == 4:
            name = cells[0].removeprefix("| ").strip("`")
            if name not in provenances:
                problems.append(f"results/README.md lists `{name}`, which is not a shipped result")
            else:
                seen.add(name)
                cells[2], cells[3] = made_with(provenances[name]), wall_time(provenances[name]) + " |"
                line = " | ".join(cells)
        lines.append(line)
    problems += [f"results/README.md has no row for the shipped result `{name}`"
                 for name in provenances if name not in seen]
    if start not in text or end not in text:
        problems.append(f"results/README.md has no totals sentence ({start} ... {end})")
    return "\n".join(lines) + "\n", problems


def main(argv: list[str]) -> int:
    text = README.read_text()
    new, problems = rewrite(text, manifests())
    if "--check" in argv and new != text:
        problems.append("results/README.md's table does not say how the results were made: "
                        "run `python scripts/results_table.py`")
    elif "--check" not in argv:
        README.write_text(new)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
