"""Every chapter's first code cell, derived from the book's one repository setting (``repository`` in _config.yml).

    python scripts/bootstrap.py          # rewrite the cell in every chapter's .md and .ipynb
    python scripts/bootstrap.py --check  # fail if a chapter's cell does not match _config.yml

The cell lets a chapter run where ncbook is not installed (Colab, a Binder built without it, a downloaded
notebook): it clones the repository at the book's branch or tag into ~/.cache/ncbook (or $NCBOOK_HOME), results
included, and installs ncbook from that clone. Where ncbook is importable (the repository's environment) it does
nothing; inside a clone without the environment it only puts the clone on the path. With no repository URL set it
says so in one line. The launch buttons (Colab, Binder) read the same setting; with no URL, none is rendered.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TAGS = ["remove-cell", "bootstrap"]   # hidden in the HTML book, where nothing needs installing

TEMPLATE = '''# Outside the book's repository (Colab, a downloaded notebook) this installs ncbook and its cached results
# at the book's version; in the repository's environment it does nothing. Written by scripts/bootstrap.py.
import importlib.util, os, shutil, subprocess, sys, zipfile
REPOSITORY, VERSION, ARCHIVE = {url}, {branch}, "ncbook-source.zip"
home = os.path.join(os.path.expanduser(os.environ.get("NCBOOK_HOME", "~/.cache/ncbook")), VERSION)
if importlib.util.find_spec("ncbook") is None and os.path.isfile(os.path.join("..", "ncbook", "__init__.py")):
    sys.path.insert(0, os.path.abspath(".."))                       # a clone or the book's code, not installed
elif importlib.util.find_spec("ncbook") is None and os.path.isfile(ARCHIVE):      # the book's code, beside it
    with zipfile.ZipFile(ARCHIVE) as z:                             # unpack beside, then rename: never half a copy
        shutil.rmtree(home + ".partial", ignore_errors=True)
        z.extractall(home + ".partial")
    shutil.rmtree(home, ignore_errors=True)
    os.replace(os.path.join(home + ".partial", "ncbook-source"), home)
    os.rmdir(home + ".partial")
    sys.path.insert(0, home)
elif importlib.util.find_spec("ncbook") is None and REPOSITORY:
    if not os.path.isdir(home):                                     # clone beside, then rename: never half a clone
        shutil.rmtree(home + ".partial", ignore_errors=True)
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", VERSION, REPOSITORY,
                        home + ".partial"], check=True)
        os.replace(home + ".partial", home)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-e", home], check=True)
    sys.path.insert(0, home)
elif importlib.util.find_spec("ncbook") is None:
    raise RuntimeError("ncbook is not installed: download ncbook-source.zip from the 'Run this chapter yourself' box "
                       "of the page this notebook came from, put it next to this notebook, and run this cell again")'''


NOTE = """:::{{admonition}} Run this chapter yourself
:class: tip
:name: run-{stem}

This page is a Jupyter notebook that runs on the book's package, `ncbook`, and its cached results. The book's code
travels with it: download <a href="../ncbook-source.zip" download>ncbook-source.zip</a> (the package, every chapter
as a notebook, the results, the Makefile; its checksum: <a href="../ncbook-source.zip.sha256">sha256</a>), unpack
it, run `make install`, then `make lab` and open `book/{stem}.md`. Or download this page as a notebook (the download
button above) and put `ncbook-source.zip` next to it: its first cell unpacks the package from there{where}.{online}
:::"""
"""What every chapter's first markdown cell ends with: how to run the notebook (a downloaded one included)."""

_NOTE = re.compile(r":::\{admonition\} Run this chapter yourself\n.*?\n:::", re.S)


def note_source(url: str, stem: str) -> str:
    """The how-to-run note of chapter ``stem`` for a repository URL ("" while the book has none)."""
    where = f", or clones it from {url}" if url else ""
    online = " Or open it in Colab or Binder (the launch buttons above): its first cell installs ncbook." if url else ""
    return NOTE.format(stem=stem, where=where, online=online)


def with_note(markdown: str, note: str) -> str:
    """A first markdown cell's text with the how-to-run note at its end (replacing an older one)."""
    if _NOTE.search(markdown):
        return _NOTE.sub(lambda _: note, markdown, count=1)
    return markdown.rstrip("\n") + "\n\n" + note


def repository(config: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """The public repository's URL ("" while the book has none) and the branch or tag the book is read at."""
    repo = yaml.safe_load(config.read_text()).get("repository") or {}
    return str(repo.get("url") or ""), str(repo.get("branch") or "main")


def cell_source(url: str, branch: str) -> str:
    """The bootstrap cell for a repository URL and a branch or tag."""
    return TEMPLATE.format(url=json.dumps(url), branch=json.dumps(branch))


_MD_CELL = re.compile(r"```\{code-cell\} ipython3\n:tags: \[remove-cell, bootstrap\]\n\n.*?\n```\n\n", re.S)


def with_cell_md(text: str, source: str, note: str | None = None) -> str:
    """A chapter's MyST source with its bootstrap cell set to ``source`` (inserted before the first code cell)
    and, with ``note``, the first markdown cell ending with it."""
    if note is not None:
        first = text.index("```{code-cell}")
        head = text[:first].rstrip("\n")
        start = head.index("\n---\n", 4) + 5 if head.startswith("---\n") else 0      # after the front matter
        text = head[:start] + with_note(head[start:], note) + "\n\n" + text[first:]
    cell = f"```{{code-cell}} ipython3\n:tags: [{', '.join(TAGS)}]\n\n{source}\n```\n\n"
    if _MD_CELL.search(text):
        return _MD_CELL.sub(lambda _: cell, text, count=1)
    first = text.index("```{code-cell}")
    return text[:first] + cell + text[first:]


def with_cell_ipynb(nb: dict, source: str, note: str | None = None) -> dict:
    """A chapter's notebook (JSON) with its bootstrap cell set to ``source`` (inserted before the first code cell)
    and, with ``note``, its first markdown cell ending with it."""
    cells = nb["cells"]
    if note is not None:
        md = next(c for c in cells if c["cell_type"] == "markdown")
        md["source"] = with_note("".join(md["source"]), note).splitlines(keepends=True)
    for cell in cells:
        if cell["cell_type"] == "code" and "bootstrap" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = source.splitlines(keepends=True)
            return nb
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    cells.insert(first, {"cell_type": "code", "execution_count": None, "id": "bootstrap",
                         "metadata": {"tags": TAGS}, "outputs": [], "source": source.splitlines(keepends=True)})
    return nb


def chapters() -> list[Path]:
    return sorted((ROOT / "book").glob("ch*.md"))


def main(check: bool) -> int:
    url, branch = repository()
    source = cell_source(url, branch)
    stale = []
    for md in chapters():
        ipynb = md.with_suffix(".ipynb")
        text, nb = md.read_text(), json.loads(ipynb.read_text())
        note = note_source(url, md.stem)
        new_text = with_cell_md(text, source, note)
        new_nb = with_cell_ipynb(copy.deepcopy(nb), source, note)
        if new_text != text or new_nb != nb:
            stale.append(md.name)
            if not check:
                md.write_text(new_text)
                ipynb.write_text(json.dumps(new_nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    if check and stale:
        print(f"the bootstrap cell or how-to-run note of {', '.join(stale)} does not match _config.yml's "
              "repository setting: "
              "run `python scripts/bootstrap.py`")
        return 1
    print(f"bootstrap cell {'checked' if check else 'written'}: {len(chapters())} chapters"
          + (f" ({len(stale)} updated)" if stale and not check else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
