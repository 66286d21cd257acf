"""Part IV at another scale: chapters 8 and 9 run to the end with NCBOOK_SCALE=gpu, every section showing the gpu
result where one is cached (some are: tirer_layerwise, collapse_picture, edge_of_stability) and falling back to the
shipped cpu one, named, where none is; every assertion checked on whichever result is shown."""

from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

BOOK = Path(__file__).resolve().parents[1] / "book"


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["ch08_jacot_experiments", "ch09_tirer_experiments"])
def test_part_four_runs_at_the_gpu_scale_with_what_is_cached(chapter, monkeypatch):
    monkeypatch.setenv("NCBOOK_SCALE", "gpu")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = jupytext.read(BOOK / f"{chapter}.md")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    shown = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("scale shown: gpu" in t for t in shown)
