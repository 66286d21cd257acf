"""The student edition: the book without the solutions of its exercises, as HTML and as notebooks.

    python scripts/student_edition.py          # or: make student

Writes a copy of the book's sources with every solution removed to ``_build/student/src`` (the chapters as
notebooks that keep the outputs of every remaining cell: ``_build/student/src/book/ch*.ipynb``, with their MyST
twins) and builds it with Jupyter Book into ``_build/student/_build/html``. The exercises stay, numbered as in the
full book. The default build (``make book``) keeps the solutions, folded.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "student"
FENCE = re.compile(r"^(:{3,})\{(solution|solution-start|solution-end)\}")


def strip_solutions(text: str) -> str:
    """MyST text without its solutions: every ``:::{solution}`` block, and every gated solution from
    ``:::{solution-start}`` to the fence that closes ``:::{solution-end}`` (code cells included)."""
    lines, out, i = text.splitlines(keepends=True), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        colons, kind = m.group(1), m.group(2)
        if kind == "solution-end":
            raise ValueError(f"line {i + 1}: solution-end without solution-start")
        end_kind = "solution" if kind == "solution" else "solution-end"
        j = i + 1
        if end_kind == "solution-end":           # skip to the solution-end directive
            while j < len(lines) and not (FENCE.match(lines[j]) and FENCE.match(lines[j]).group(2) == "solution-end"):
                j += 1
            if j == len(lines):
                raise ValueError(f"line {i + 1}: solution-start without solution-end")
            j += 1
        while j < len(lines) and lines[j].rstrip("\n") != colons:     # the closing fence
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: {kind} block never closed by {colons!r}")
        i = j + 1
        while out and i < len(lines) and not out[-1].strip() and not lines[i].strip():   # one blank line, not two
            i += 1
    return "".join(out)


def student_notebook(md: Path):
    """A chapter without its solutions, with the outputs of the executed notebook for every cell that remains."""
    stripped = jupytext.reads(strip_solutions(md.read_text()), fmt="md:myst")
    executed = jupytext.read(md.with_suffix(".ipynb"))
    return jupytext.combine.combine_inputs_with_outputs(stripped, executed, fmt="md:myst")


def write_sources(out: Path = OUT / "src") -> Path:
    """The book's sources, solutions removed, under ``out``."""
    if out.exists():
        shutil.rmtree(out)
    (out / "book").mkdir(parents=True)
    for name in ("_toc.yml", "references.bib", "jupytext.toml"):
        shutil.copy(ROOT / name, out / name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] += " (student edition)"
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    shutil.copytree(ROOT / "book" / "_ext", out / "book" / "_ext")
    (out / "_assets").symlink_to(ROOT / "_assets", target_is_directory=True)
    for page in sorted((ROOT / "book").glob("*.md")):
        if page.stem.startswith("ch"):
            nb = student_notebook(page)
            jupytext.write(nb, out / "book" / f"{page.stem}.ipynb")
            (out / "book" / page.name).write_text(strip_solutions(page.read_text()))
        else:
            (out / "book" / page.name).write_text(strip_solutions(page.read_text()))
    return out


def main() -> int:
    src = write_sources()
    jb = Path(sys.executable).with_name("jupyter-book")          # installed beside this Python, as `make` uses it
    rc = subprocess.run([str(jb), "build", str(src), "--path-output", str(OUT), "-W", "-n", "--keep-going"]).returncode
    if rc == 0:
        print(f"student edition: {OUT / '_build' / 'html' / 'index.html'}; notebooks in {src / 'book'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
