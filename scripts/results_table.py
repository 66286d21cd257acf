"""Write the 'made with' and 'wall time' columns of results/README.md's table, and its totals sentence (between
``<!-- totals -->`` and ``<!-- /totals -->``), from the manifests' provenance.

    python scripts/results_table.py          # rewrite the two columns in place
    python scripts/results_table.py --check  # fail if they differ, or a row and a result do not pair up

One source of truth: the manifest records how each result was made; the table only repeats it. The 'what' column
is written by hand, but for the outcome of the runs it describes (between ``<!-- outcome -->`` and
``<!-- /outcome -->``): how many of its runs reached the regime the papers' claims are about, and why the others did
not (``ncbook.claims.regime_runs``), computed from the result's arrays.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ncbook.claims import beside, regime_runs, resumes

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


OUTCOME = ("<!-- outcome -->", "<!-- /outcome -->")


def outcome(name: str) -> str | None:
    """How many runs of the result ``<experiment>/<tag>`` reached their papers' regime at the end (Jacot et al.'s:
    they fit their data; Tirer et al.'s: zero training error), per loss where it has several, and why the others
    did not; None for a result without a training error."""
    manifest = json.loads((ROOT / "results" / f"{name}.json").read_text())
    data = next(iter(manifest["files"]))
    with np.load(ROOT / "results" / name.split("/")[0] / data, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k in ("train_error", "nc2_condition_number")}
    if "train_error" not in arrays:
        return None
    regime = "zero error" if name.startswith("tirer") else "fits"
    losses = tuple(manifest["config"].get("losses") or ()) or (None,)
    parts = []
    for loss in losses:
        k, n, reasons = regime_runs(arrays, regime, loss, losses if loss else None)
        text = (f"{k} of {n} runs " + ("fit" if regime == "fits" else "at zero training error") if n > 1 else
                "its run " + ("fits" if regime == "fits" else "is at zero training error") if k else
                "its run does not " + ("fit" if regime == "fits" else "reach zero training error"))
        text += f" with {loss.upper()}" if loss and len(losses) > 1 else ""
        parts.append(text + (" (the others: " + ", ".join(f"{v} {why}" for why, v in reasons.items()) + ")"
                             if reasons else ""))
    return "; ".join(parts)


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
                found, (start_o, end_o) = outcome(name), OUTCOME
                if found is not None and not (start_o in cells[1] and end_o in cells[1]):
                    problems.append(f"results/README.md's row of `{name}` does not say how its runs ended "
                                    f"({start_o} ... {end_o})")
                elif found is not None:
                    cells[1] = (cells[1][:cells[1].index(start_o) + len(start_o)] + found
                                + cells[1][cells[1].index(end_o):])
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
