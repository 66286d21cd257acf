"""Opening, running and saving a chapter in JupyterLab keeps its .md / .ipynb pair in sync and the .md's meaning
unchanged: the save goes through jupytext's contents manager, as JupyterLab's does, with the metadata a kernel and
JupyterLab add."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))


def _meaning(md: Path) -> tuple:
    """What a chapter says: its front matter and every cell's type, source and kept metadata."""
    nb = jupytext.read(md)
    return (nb.metadata.get("kernelspec"), nb.metadata.get("jupytext", {}).get("text_representation"),
            [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells])


def _front_matter(md: Path) -> str:
    return md.read_text().split("\n---\n", 1)[0]


def _save_as_jupyterlab_does(root: Path, name: str) -> None:
    """Open the chapter as a notebook, run it (the kernel's metadata, per-cell execution records, a collapsed
    output) and save it, through jupytext's contents manager with the repository's jupytext.toml."""
    from jupytext import TextFileContentsManager

    cm = TextFileContentsManager(root_dir=str(root))
    nb = cm.get(name)["content"]
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.99.1", "mimetype": "text/x-python",
                                    "codemirror_mode": {"name": "ipython", "version": 3}}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata["execution"] = {"iopub.execute_input": "2026-12-01T00:00:00Z"}
            cell.metadata["collapsed"] = False
    cm.save({"type": "notebook", "format": "json", "content": nb}, name)


@pytest.mark.parametrize("md", CHAPTERS[:3] + CHAPTERS[-1:], ids=lambda p: p.stem)
def test_a_jupyterlab_save_keeps_the_pair_and_the_source(tmp_path: Path, md: Path):
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    (tmp_path / "book").mkdir()
    for path in (md, md.with_suffix(".ipynb")):
        shutil.copy(path, tmp_path / "book" / path.name)
    copy = tmp_path / "book" / md.name
    _save_as_jupyterlab_does(tmp_path, f"book/{md.name}")
    assert _front_matter(copy) == _front_matter(md), "the save changed the front matter"
    assert _meaning(copy) == _meaning(md), "the save changed a cell or its tags / figure options"
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    run = subprocess.run([sys.executable, "scripts/check_pairing.py"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_check_fails_when_a_save_drops_figure_options(tmp_path: Path):
    """The filters matter: with the old cell filter ("tags,-all") a save drops every figure's caption, and the
    meaning check above catches it."""
    md = next(p for p in CHAPTERS if "mystnb:" in p.read_text())
    (tmp_path / "book").mkdir()
    toml = (ROOT / "jupytext.toml").read_text().replace('cell_metadata_filter = "tags,mystnb,-all"',
                                                        'cell_metadata_filter = "tags,-all"')
    assert toml != (ROOT / "jupytext.toml").read_text()
    (tmp_path / "jupytext.toml").write_text(toml)
    for path in (md, md.with_suffix(".ipynb")):
        shutil.copy(path, tmp_path / "book" / path.name)
    _save_as_jupyterlab_does(tmp_path, f"book/{md.name}")
    assert _meaning(tmp_path / "book" / md.name) != _meaning(md)


def test_make_install_sets_jupyterlab_to_open_chapters_as_notebooks():
    """`make install` copies scripts/jupyterlab_overrides.json where this environment's JupyterLab reads its
    settings overrides (<app dir>/settings/overrides.json): .md and MyST files open with jupytext's notebook viewer."""
    import json

    wanted = json.loads((ROOT / "scripts" / "jupyterlab_overrides.json").read_text())
    viewers = wanted["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    assert wanted["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    pytest.importorskip("jupyterlab")
    from jupyterlab.commands import get_app_dir

    installed = Path(get_app_dir()) / "settings" / "overrides.json"
    prefix = Path(sys.prefix).resolve()
    if prefix.parent != ROOT.resolve() or not prefix.name.startswith(".venv"):
        pytest.skip("not running in the repository's environment, which `make install` sets up")
    assert installed.exists(), "run `make install`: it writes JupyterLab's settings overrides"
    assert json.loads(installed.read_text()) == wanted


PARTS = {"theorem": ".jp-MarkdownCell .myst-proof", "exercise": ".jp-MarkdownCell .myst-exercise:not(details)",
         "folded solution": ".jp-MarkdownCell details.myst-exercise:not([open])",
         "figure": ".jp-Cell .jp-OutputArea-output img"}
"""What jupyterlab-myst makes of the book's directives (and a figure output), by CSS selector."""


@pytest.mark.slow
def test_jupyterlab_in_chromium_opens_a_chapter_as_a_notebook_and_saves_the_pair(tmp_path: Path):
    """Live: JupyterLab started by `make lab` exactly as the Makefile writes it (in a copy of the repository's root
    holding one chapter), driven in headless Chromium. A double click on the chapter's .md opens it as a notebook
    (not in the text editor); its theorems, exercises, folded solutions and figures render
    (jupyterlab-myst); its first two cells run; a save keeps the .md's meaning and the pair in sync."""
    import json
    import os
    import signal
    import socket
    import time
    import urllib.request

    sys.path.insert(0, str(ROOT / "scripts"))
    from make_pdf import chromium_path

    exe = chromium_path()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium not found: install it with `apt-get install chromium`")
        pytest.skip("Chromium not found")
    md = next(p for p in CHAPTERS if p.name.startswith("ch02"))
    for name in ("jupytext.toml", "Makefile"):
        shutil.copy(ROOT / name, tmp_path)
    (tmp_path / "book").mkdir()
    for path in (md, md.with_suffix(".ipynb")):
        shutil.copy(path, tmp_path / "book" / path.name)
    md_copy = tmp_path / "book" / md.name
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "ncbook-test"
    config = tmp_path / "jupyter-config"                  # where this server listens; the command is make's own
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"port": port, "ip": "127.0.0.1", "open_browser": False, "allow_root": True},
        "IdentityProvider": {"token": token}}))
    tracker = config / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))        # draw every cell, so each can be waited for
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"), "JUPYTER_CONFIG_DIR": str(config)}
    venv = Path(sys.executable).parent.parent
    server = subprocess.Popen(["make", "-o", "install", "lab", f"VENV={venv}"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(1200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, "`make lab` did not start JupyterLab"
                time.sleep(0.5)
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright

        def step(what: str, wait, *args, **kwargs):
            """Wait on an event of the page (a bound of 10 minutes, which a loaded 2-core machine meets), naming the
            step that was slow if it does not come."""
            try:
                return wait(*args, **kwargs)
            except PlaywrightTimeout:
                pytest.fail(f"JupyterLab: {what} did not happen within {kwargs.get('timeout', 0) / 1000:.0f} s")

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?token={token}")     # make lab's default page: the book's folder
            item = page.locator(".jp-DirListing-item", has_text=md.name)
            step("the file browser listing the chapter", item.wait_for, timeout=600_000)
            item.dblclick()
            panel = page.locator(".jp-NotebookPanel")
            step("the chapter opening as a notebook", panel.wait_for, timeout=600_000)
            assert page.locator(".jp-FileEditor").count() == 0, "the .md opened in the text editor"
            step("its code cells rendering", page.locator(".jp-CodeCell").first.wait_for, timeout=600_000)
            step("three cells rendering", page.wait_for_function,
                 "document.querySelectorAll('.jp-Notebook .jp-Cell').length >= 3", timeout=600_000)
            step("its markdown rendering (jupyterlab-myst)", page.locator(".jp-MarkdownCell .myst").first.wait_for,
                 state="attached", timeout=600_000)
            for name, css in PARTS.items():              # every cell is drawn (windowing off in this test's settings)
                step(f"a {name} rendering (jupyterlab-myst)", page.locator(css).first.wait_for, state="attached",
                     timeout=600_000)
            text = page.locator(".jp-Notebook").inner_text()
            assert ":::{prf:" not in text and ":::{exercise}" not in text, "raw MyST directives in JupyterLab"
            assert "Jupyter news" not in page.locator("body").inner_text(), "JupyterLab's news pop-up appeared"
            page.locator(".jp-Notebook .jp-Cell").first.click()
            for _ in range(3):                                   # the first markdown cell, then two code cells
                page.keyboard.press("Shift+Enter")
            step("the kernel starting and running the first two code cells (imports)", page.wait_for_function,
                 "[...document.querySelectorAll('.jp-InputArea-prompt')].some(p => p.textContent.includes('[2]'))",
                 timeout=600_000)
            before = {f: f.stat().st_mtime_ns for f in (md_copy, md_copy.with_suffix(".ipynb"))}
            page.keyboard.press("Control+s")
            step("the save writing both files of the pair", page.wait_for_function,
                 "document.querySelectorAll('.jp-mod-dirty').length == 0", timeout=600_000)
            for _ in range(6000):                  # the contents manager writes the .md and the .ipynb in turn
                if all(f.stat().st_mtime_ns != t for f, t in before.items()):
                    break
                time.sleep(0.1)
            else:
                pytest.fail("JupyterLab: the save did not write both files of the pair within 10 minutes")
            if os.environ.get("NCBOOK_SCREENSHOTS"):
                page.screenshot(path=os.path.join(os.environ["NCBOOK_SCREENSHOTS"], "jupyterlab.png"))
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)            # make and its JupyterLab; the server waits for its kernel
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    copy = md_copy
    assert _front_matter(copy) == _front_matter(md), "the save changed the front matter"
    assert _meaning(copy) == _meaning(md), "the save changed a cell or its tags / figure options"
    saved = json.loads(copy.with_suffix(".ipynb").read_text())
    assert saved["metadata"]["kernelspec"]["name"] == "python3"
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    run = subprocess.run([sys.executable, "scripts/check_pairing.py"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
