"""Fail if any chapter's MyST source (.md) and executed notebook (.ipynb) differ in any code or markdown cell.

    python scripts/check_pairing.py

Content and stable metadata only: the notebook is first written as MyST markdown with the repository's
jupytext.toml, so what a kernel or JupyterLab adds on a save (execution times, language_info, collapsed state) is
filtered out exactly as it is from the .md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
from jupytext.compare import compare_notebooks
from jupytext.config import load_jupytext_configuration_file

ROOT = Path(__file__).resolve().parents[1]


def stable(ipynb: Path, config) -> object:
    """The notebook as its .md would store it: the cells, their tags and figure options, the front matter."""
    return jupytext.reads(jupytext.writes(jupytext.read(ipynb), fmt="md:myst", config=config), fmt="md:myst")


def main() -> int:
    failures, pairs = [], 0
    config = load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))
    for md in sorted((ROOT / "book").glob("ch*.md")):
        ipynb = md.with_suffix(".ipynb")
        if not ipynb.exists():
            failures.append(f"{md.relative_to(ROOT)} has no executed twin {ipynb.name}: run `make execute`")
            continue
        pairs += 1
        try:
            compare_notebooks(stable(ipynb, config), jupytext.read(md), fmt="md:myst",
                              allow_expected_differences=False, raise_on_first_difference=True)
        except Exception as err:  # jupytext raises NotebookDifference (and others) with the first difference
            failures.append(f"{md.relative_to(ROOT)} and {ipynb.name} differ: {err}\n  -> run `make execute`")
    for ipynb in sorted((ROOT / "book").glob("ch*.ipynb")):
        if not ipynb.with_suffix(".md").exists():
            failures.append(f"{ipynb.relative_to(ROOT)} has no MyST source {ipynb.with_suffix('.md').name}")
    print("\n".join(failures) or f"{pairs} chapter pair(s) in sync")
    return 1 if failures or not pairs else 0


if __name__ == "__main__":
    sys.exit(main())
