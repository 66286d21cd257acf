"""The student edition: the book without the solutions of its exercises, as HTML and as notebooks.

    python scripts/student_edition.py          # or: make student

Writes a copy of the book's sources with every solution removed to ``_build/student/src`` (the chapters as
notebooks that keep the outputs of every remaining cell: ``_build/student/src/book/ch*.ipynb``, with their MyST
twins) and builds it with Jupyter Book into ``_build/student/_build/html``. The exercises stay, numbered as in the
full book; an exercise that checks itself (``ncbook.exercises``) keeps its answer cell, emptied to ``answer = None``
under a line saying what to put there, and its check cell, unfolded and without the book's output. The default build
(``make book``) keeps the solutions and the reference answers, folded.

Then it packs the handout, everything a student needs to run the exercises away from the repository:
``_build/student/ncbook-student/`` and the same as ``_build/student/ncbook-student.zip`` (the student notebooks in
``book/``, the package, the shipped results, requirements.txt, pyproject.toml, the Makefile for ``make install`` and
``make lab``, and a README saying how).

Where the book's site has been built (``make book`` builds both), the student edition's HTML and the handout are
published with it: ``_build/html/student/`` and ``_build/html/ncbook-student.zip``, linked from the instructors'
page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import source_archive  # noqa: E402

from ncbook.exercises import CHECKS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "student"
FENCE = re.compile(r"^(:{3,})\{(solution|solution-start|solution-end)\}")
# an exercise's answer cell and check cell, as the chapters write them (folded in the book)
ANSWER = re.compile(r"```\{code-cell\} ipython3\n:tags: \[answer, hide-input\]\n\n(?P<answer>.*?)```\n\n"
                    r"```\{code-cell\} ipython3\n:tags: \[check, hide-input\]\n\n"
                    r"exercises\.check\(\"(?P<label>[\w-]+)\", answer\)\n```", re.S)
CODE = re.compile(r"```\{code-cell\} ipython3\n(?::tags: [^\n]*\n)?\n?(.*?)```", re.S)
HANDOUT = OUT / "ncbook-student"


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


def reference_answers(text: str) -> dict[str, str]:
    """Exercise label -> what a student who solved it would put in its answer cell: the code cells of the book's
    solution, then the book's answer cell."""
    out = {}
    for m in ANSWER.finditer(text):
        label = m.group("label")
        start = text.find(f"{{solution-start}} {label}")
        code = []
        if start >= 0:
            end = text.index(":::{solution-end}", start)
            code = [c.strip("\n") for c in CODE.findall(text[start:end])]
        out[label] = "\n\n".join([*code, m.group("answer").strip("\n")])
    return out


def student_answers(text: str, fill: dict[str, str] | None = None) -> str:
    """MyST text whose answer cells hold ``answer = None`` (or ``fill[label]``) under a line saying what to put there,
    and whose answer and check cells are no longer folded."""
    def cell(m: re.Match) -> str:
        label = m.group("label")
        if label not in CHECKS:
            raise ValueError(f"the answer cell of {label!r} has no check in ncbook.exercises.CHECKS")
        c = CHECKS[label]
        body = (fill or {}).get(label, "answer = None")
        ask = "\n".join(textwrap.wrap(f"Exercise {c.number}, your answer: {c.asks}", 44,   # 44: whole on a phone
                                       initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False))
        return (f"```{{code-cell}} ipython3\n:tags: [answer]\n\n{ask}\n"
                f"{body}\n```\n\n```{{code-cell}} ipython3\n:tags: [check]\n\n"
                f"exercises.check(\"{label}\", answer)\n```")
    return ANSWER.sub(cell, text)


def student_text(text: str) -> str:
    """A chapter's MyST text as the student edition has it: no solutions, answer cells emptied."""
    return student_answers(strip_solutions(text))


def student_notebook(md: Path, fill: dict[str, str] | None = None):
    """A chapter without its solutions, with the outputs of the executed notebook for every cell that remains except
    the answers and checks (the student's to run); ``fill``: label -> code for answer cells (tests)."""
    stripped = jupytext.reads(student_answers(strip_solutions(md.read_text()), fill), fmt="md:myst")
    executed = jupytext.read(md.with_suffix(".ipynb"))
    nb = jupytext.combine.combine_inputs_with_outputs(stripped, executed, fmt="md:myst")
    for c in nb.cells:
        if c.cell_type == "code" and {"answer", "check"} & set(c.metadata.get("tags", [])):
            c.outputs, c.execution_count = [], None
    return nb


EDITION_INSTRUCTORS = {
    "This book keeps the solutions, folded under each exercise. For students the same site publishes them without:":
        "This is the student edition: no solution is in it, in its pages, their downloads or its archives (the full "
        "book keeps them folded under each exercise). What it is, and what a course hands out:",
    '<a href="../student/index.html">student/index.html</a>':     # its links as they resolve from the edition
        '<a href="../index.html">its front page</a>',
    'href="../ncbook-student.zip"': 'href="../../ncbook-student.zip"',
    'href="../ncbook-student-source.zip': 'href="../ncbook-source.zip',
}
"""What the instructors' page says differently in the student edition, phrase by phrase."""


def instructors_text(text: str) -> str:
    """The instructors' page as the student edition has it (:data:`EDITION_INSTRUCTORS`); a phrase the page no longer
    holds is an error, so that an edit of the page cannot leave the edition saying what the full book says."""
    for old, new in EDITION_INSTRUCTORS.items():
        if old not in text:
            raise ValueError(f"book/instructors.md no longer holds {old!r}: update EDITION_INSTRUCTORS")
        text = text.replace(old, new)
    return text


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
            (out / "book" / page.name).write_text(student_text(page.read_text()))
        else:
            text = strip_solutions(page.read_text())
            if page.name == "instructors.md":
                text = instructors_text(text)
            (out / "book" / page.name).write_text(text)
    return out


HANDOUT_README = """# ncbook, student handout

The chapters of *Neural collapse, derived and reproduced* without the solutions, with the package `ncbook` and the
cached results they load, and the problem set your course may grade (`book/problem_set.md`). Exercises marked with an
answer cell check themselves: put your answer in the cell `answer = None`, run the check cell below it, and it says
whether you are right, or what is wrong.

    make install      # a virtual environment in .venv with everything (Python 3.11; a few minutes)
    make lab          # JupyterLab on book/: open a chapter, Run All, then work through its exercises

Without make: `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt`, then
`.venv/bin/jupyter lab book/` from this folder. The `.md` files are the chapters as MyST text, which JupyterLab opens
as notebooks (jupytext, set up by `make install`); where `.ipynb` twins come with them, they hold the book's outputs.
Only `make install` and `make lab` of the Makefile apply here.
"""


def handout(src: Path, out: Path = HANDOUT) -> Path:
    """The folder a student takes away and its zip archive beside it; returns the archive. It holds what the book's
    code archive holds (``book/_ext/source_archive.py``: the package, the shipped results, what installs them, the
    chapters as MyST), here with the student chapters, their executed notebooks, and a README for students."""
    if out.exists():
        shutil.rmtree(out)
    pages = {f"book/{p.name}": p for p in (src / "book").glob("ch*.ipynb")}
    for name, path in {**source_archive.source_files(src, ROOT), **pages}.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, out / name)
    (out / "README.md").write_text(HANDOUT_README)
    return Path(shutil.make_archive(str(out), "zip", root_dir=out.parent, base_dir=out.name))


SITE = ROOT / "_build" / "html"
"""The book's site, which publishes the student edition beside it (``student/``) and the handout."""


def publish(html: Path, archive: Path, site: Path = SITE) -> None:
    """Copy the student edition's HTML to ``site/student/`` and its handout beside the book's archives (each
    replaced whole: a copy is made beside it, then renamed)."""
    tmp = site / "student.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(html, tmp)
    shutil.rmtree(site / "student", ignore_errors=True)
    tmp.rename(site / "student")
    shutil.copyfile(archive, site / (archive.name + ".partial"))
    (site / (archive.name + ".partial")).replace(site / archive.name)


def main() -> int:
    src = write_sources()
    for stale in (OUT / "_build" / "html").glob(f"{source_archive.STUDENT_ARCHIVE}*"):
        stale.unlink()           # the edition's own archive is its code (ncbook-source.zip); an older build wrote one
    jb = Path(sys.executable).with_name("jupyter-book")          # installed beside this Python, as `make` uses it
    rc = subprocess.run([str(jb), "build", str(src), "--path-output", str(OUT), "-W", "-n", "--keep-going"]).returncode
    if rc == 0:
        archive = handout(src)
        print(f"student edition: {OUT / '_build' / 'html' / 'index.html'}; notebooks in {src / 'book'}")
        print(f"handout for students: the folder {HANDOUT}, and the same as {archive}")
        if SITE.is_dir():
            publish(OUT / "_build" / "html", archive)
            print(f"both published with the book: {SITE / 'student'} and {SITE / archive.name}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
