"""Execute every chapter from its MyST source and write the paired, executed notebook, deterministically.

    python scripts/execute_chapters.py [book/ch01_metrics.md ...]

For each chapter `book/NAME.md` this runs the code in a fresh kernel (cwd `book/`, progress bars off) and writes
`book/NAME.ipynb` with volatile metadata removed: no per-cell timings, no Python patch version, cell ids derived from
the chapter name and their position, so that re-executing unchanged code gives byte-identical notebooks. Live
ipywidgets views are dropped from the saved outputs (they need a kernel; the book and a kernel-less Jupyter show each
slider figure's static HTML instead), so no widget state is stored and no page loads the widget manager.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from ncbook.interactive import STATIC_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stdout (or stderr) outputs: how the kernel chunked a stream is timing, not content."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.get("output_type") == "stream" and prev is not None and prev.get("output_type") == "stream"
                and prev.get("name") == out.get("name")):
            prev["text"] = "".join(prev["text"]) + "".join(out["text"])
        else:
            merged.append(out)
    return merged


def normalise(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Drop volatile metadata and live widget views."""
    for i, cell in enumerate(nb.cells):
        cell.id = hashlib.sha1(f"{name}:cell:{i}".encode()).hexdigest()[:8]
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
            for out in cell.outputs:
                out.get("data", {}).pop(WIDGET_VIEW, None)
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
    for key in ("language_info", "jupytext", "widgets"):
        nb.metadata.pop(key, None)
    return nb


def execute(md: Path) -> Path:
    nb = jupytext.read(md)
    os.environ["TQDM_DISABLE"] = "1"          # inherited by the kernel: no progress-bar widgets in the outputs
    os.environ["PYTHONHASHSEED"] = "0"
    os.environ[STATIC_VARIABLE] = "1"          # slider figures precompute every position for the static book
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", store_widget_state=False,
                            resources={"metadata": {"path": str(md.parent)}})
    client.execute()
    out = md.with_suffix(".ipynb")
    nbformat.write(normalise(nb, md.stem), out)
    return out


def main(paths: list[str]) -> None:
    chapters = [Path(p).resolve() for p in paths] or sorted((ROOT / "book").glob("ch*.md"))
    for md in chapters:
        t0 = time.perf_counter()
        out = execute(md)
        print(f"executed {md.relative_to(ROOT)} -> {out.relative_to(ROOT)} in {time.perf_counter() - t0:.0f} s",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
