"""Part IV at another scale: every page of chapters 8 and 9 runs to the end with NCBOOK_SCALE=gpu, every section
showing the gpu result where one is cached (tirer_layerwise is) and falling back to the shipped cpu one, named,
where none is; every assertion checked on whichever result is shown. Chapter 7 shows its two gpu results
(edge_of_stability, trained_ntk) beside the cpu ones where both are cached, and says where they are not."""

from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

BOOK = Path(__file__).resolve().parents[1] / "book"


@pytest.mark.slow
@pytest.mark.parametrize("chapter", sorted(p.stem for p in BOOK.glob("ch0[89]_*.md")))
def test_part_four_runs_at_the_gpu_scale_with_what_is_cached(chapter, monkeypatch):
    monkeypatch.setenv("NCBOOK_SCALE", "gpu")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = jupytext.read(BOOK / f"{chapter}.md")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    shown = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("scale shown: gpu" in t for t in shown)


@pytest.mark.slow
def test_chapter_7_without_the_gpu_results_says_they_were_not_run(tmp_path, monkeypatch):
    """Chapter 7 shows the edge of stability at the gpu scale where both results are cached; without them (a results
    folder that lacks one) it runs to the end and says so in one line."""
    import shutil

    results = tmp_path / "results"
    shutil.copytree(BOOK.parent / "results", results)
    for path in (results / "trained_ntk").glob("gpu.*"):
        path.unlink()
    monkeypatch.setenv("NCBOOK_RESULTS", str(results))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = jupytext.read(BOOK / "ch07_conditioning.md")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    shown = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "edge_of_stability and trained_ntk: not run at the gpu scale" in shown
    assert "0.0002" not in shown
