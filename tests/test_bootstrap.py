"""Every chapter's first cell (scripts/bootstrap.py) derives from _config.yml's repository setting, and with it a
chapter's first cells run in a fresh virtual environment that has no ncbook; no URL, no launch button."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import bootstrap  # noqa: E402
from page_fixes import launch_buttons_need_a_repository  # noqa: E402

CHAPTERS = bootstrap.chapters()


def _code_cells_md(md: Path) -> list[str]:
    import jupytext

    return [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]


def test_every_chapter_opens_with_the_bootstrap_of_the_config():
    """In the .md and the .ipynb of every chapter, the first code cell is the one _config.yml's repository makes."""
    url, branch = bootstrap.repository()
    source = bootstrap.cell_source(url, branch)
    assert len(CHAPTERS) == 17                  # 9 chapters; Part IV's two have a page per figure besides
    for md in CHAPTERS:
        assert _code_cells_md(md)[0] == source, f"{md.name}: run `python scripts/bootstrap.py`"
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert "".join(first["source"]) == source and first["metadata"]["tags"] == bootstrap.TAGS
    assert bootstrap.main(check=True) == 0


def test_a_changed_setting_is_caught_and_written_into_every_cell(tmp_path):
    """Another URL in the config makes another cell: the check fails on the chapters as they are, and writing the
    cell replaces the old one (never a second copy)."""
    config = tmp_path / "_config.yml"
    config.write_text((ROOT / "_config.yml").read_text().replace('url: ""', 'url: "https://example.org/r.git"'))
    url, branch = bootstrap.repository(config)
    assert (url, branch) == ("https://example.org/r.git", "main")
    new = bootstrap.cell_source(url, branch)
    md = CHAPTERS[0].read_text()
    assert new not in md and '"https://example.org/r.git"' in new
    rewritten = bootstrap.with_cell_md(md, new)
    assert rewritten.count(":tags: [remove-cell, bootstrap]") == 1 and new in rewritten
    nb = bootstrap.with_cell_ipynb(json.loads(CHAPTERS[0].with_suffix(".ipynb").read_text()), new)
    assert sum("bootstrap" in c["metadata"].get("tags", []) for c in nb["cells"]) == 1


def test_no_repository_url_no_launch_button():
    def config(url):
        return SimpleNamespace(html_theme_options={"repository_url": url, "launch_buttons": {"colab_url": "x"}})

    empty, set_ = config(""), config("https://github.com/o/r")
    launch_buttons_need_a_repository(None, empty)
    launch_buttons_need_a_repository(None, set_)
    assert "launch_buttons" not in empty.html_theme_options and "launch_buttons" in set_.html_theme_options


@pytest.mark.slow
def test_a_built_chapter_has_launch_buttons_exactly_when_the_repository_is_set(tmp_path):
    """Issue 62: what the front page says, in a real build: with the repository's address set in _config.yml every
    chapter's page offers Colab and Binder at that address (test_browser: as shipped, with no address, none)."""
    import re

    url = "https://github.com/example/ncbook"
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r'^  url: ""$', config, re.M), "the shipped config sets a repository: update this test"
    config = re.sub(r'^  url: ""$', f'  url: "{url}"', config, flags=re.M).replace(": book/_ext", f": {ROOT}/book/_ext")
    (tmp_path / "_config.yml").write_text(config)
    jb = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jb), "build", str(ROOT), "--config", str(tmp_path / "_config.yml"), "--path-output",
                    str(tmp_path), "-W", "-n", "--keep-going"], check=True, capture_output=True)
    page = (tmp_path / "_build" / "html" / "book" / "ch02_ufm.html").read_text()
    assert "https://colab.research.google.com/github/example/ncbook/blob/main/book/ch02_ufm.ipynb" in page
    assert "https://mybinder.org/v2/gh/example/ncbook/main?urlpath=lab/tree/book/ch02_ufm.ipynb" in page


def _fresh_venv(where: Path) -> Path:
    """A virtual environment without ncbook whose other packages are this environment's (linked, offline)."""
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], check=True)
    view = where / "deps"
    view.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if not entry.name.startswith(("ncbook", "__editable__", "pip")):
            (view / entry.name).symlink_to(entry)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "deps.pth").write_text(str(view) + "\n")
    return python


@pytest.mark.slow
def test_a_chapter_runs_in_a_fresh_venv_through_its_bootstrap(tmp_path):
    """The first cells of chapter 8's page of Figures 1 and 4, the bootstrap pointed at a local clone of the book:
    ncbook is installed from the clone at the branch, its cached results load; a second run clones nothing; in
    this environment the cell does nothing; with no URL it stops with one line."""
    remote, home = tmp_path / "remote", tmp_path / "home"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(remote)], check=True)
    subprocess.run(["git", "-C", str(remote), "checkout", "--quiet", "-b", "book-test"], check=True)
    python = _fresh_venv(tmp_path)
    assert subprocess.run([str(python), "-c", "import ncbook"], cwd=tmp_path, capture_output=True).returncode != 0
    cells = _code_cells_md(ROOT / "book" / "ch08_jacot_figs_1_4.md")
    cell = bootstrap.cell_source(f"file://{remote}", "book-test")
    script = tmp_path / "first_cells.py"
    upto = next(i for i, c in enumerate(cells) if "final training error per seed" in c)    # through Fig. 4's runs
    script.write_text("\n\n".join([cell, *cells[1:upto + 1], "import ncbook; print('ncbook from', ncbook.__file__)"]))
    env = {**os.environ, "NCBOOK_HOME": str(home), "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
           "TQDM_DISABLE": "1", "NCBOOK_SCALE": "cpu"}
    env.pop("NCBOOK_RESULTS", None)
    # no repository set (and nothing installed yet): one line says what to do
    bare = subprocess.run([str(python), "-c", bootstrap.cell_source("", "main")], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert bare.returncode != 0 and "download ncbook-source.zip" in bare.stderr.splitlines()[-1]
    run = subprocess.run([str(python), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "scale shown: cpu" in run.stdout and "final training error per seed" in run.stdout
    assert f"ncbook from {home / 'book-test' / 'ncbook'}" in run.stdout
    assert not (home / "book-test.partial").exists()
    again = subprocess.run([str(python), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout == run.stdout
    # in the repository's environment the cell does nothing
    inside = subprocess.run([sys.executable, "-c", cell], cwd=ROOT / "book",
                            env={**env, "NCBOOK_HOME": str(tmp_path / "x")}, capture_output=True, text=True)
    assert inside.returncode == 0 and not (tmp_path / "x").exists()


def test_binder_builds_the_repository_environment():
    """Binder's files take the pins from requirements.txt (one list of versions) and JupyterLab's settings from the
    file `make install` uses; the Python version is the one the README asks for."""
    binder = ROOT / "binder"
    reqs = [line.strip() for line in (binder / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert "-r ../requirements.txt" in reqs and (binder / reqs[-1].split()[-1]).resolve() == ROOT / "requirements.txt"
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    post = (binder / "postBuild").read_text()
    assert os.access(binder / "postBuild", os.X_OK) and "scripts/jupyterlab_overrides.json" in post
    assert (ROOT / "scripts" / "jupyterlab_overrides.json").exists()
    assert "-e ." in (ROOT / "requirements.txt").read_text()


def test_a_downloaded_notebook_says_in_its_first_markdown_cell_how_to_run_it():
    """Every chapter's .ipynb opens (first markdown cell) with the how-to-run note: the book's code from the site
    (ncbook-source.zip and its checksum), `make install`, the chapter's own path; with a URL in the config it names
    the repository and the launch buttons; writing the note twice leaves one; the first cell's error names the
    archive and where to put it."""
    url, _ = bootstrap.repository()
    for md in CHAPTERS:
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        first = "".join(next(c for c in nb["cells"] if c["cell_type"] == "markdown")["source"])
        assert first.startswith(("(", "#")) and bootstrap.note_source(url, md.stem) in first, md.name
        assert "make install" in first and f"book/{md.stem}.md" in first and 'href="../ncbook-source.zip"' in first
    note = bootstrap.note_source("https://example.org/r.git", "ch01_metrics")
    assert "clones it from https://example.org/r.git" in note and "Colab or Binder" in note
    text = bootstrap.with_cell_md(CHAPTERS[0].read_text(), bootstrap.cell_source("", "main"), note)
    assert text.count("{admonition} Run this chapter yourself") == 1 and note in text
    assert "put it next to this notebook" in bootstrap.TEMPLATE
