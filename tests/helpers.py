"""Helpers shared by the tests of the papers' formulas and bounds (``test_bounds.py``, ``test_ufm.py``,
``test_stability.py``), which follow one standard:

* a value is checked against an independent computation (numpy's SVD, autograd, or numbers derived by hand), so
  that a constant off by 0.1% fails;
* a bound is checked where it is tight (attained, or nearly, by a constructed case or an adversarial search), so
  that a bound made twice as strong fails; where no tight case exists the test says so and checks the value.

``scripts/mutation_check.py`` checks that these tests do fail for such mutations.
"""

from pathlib import Path

import numpy as np
import torch

EPS = np.finfo(np.float64).eps


def rounding(n: int = 10, cond: float = 1.0) -> float:
    """Relative tolerance between two float64 evaluations of one quantity: the first-order error bound n eps cond of a
    backward-stable computation with n rounded operations per result and condition number cond, times 4 for the
    constant such bounds leave out. Closed-form scalars here take n = 10 (a dozen operations)."""
    return 4 * n * cond * EPS


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def stored_data(root, name: str, tag: str):
    """The data file (.npz) of a stored result, as its manifest names it."""
    import json

    from ncbook import cache

    folder = root / name
    return folder / cache.data_file(json.loads((folder / f"{tag}.json").read_text()))


def execute_notebook(python, path, cwd, env: dict) -> tuple[int, str]:
    """Run the notebook at ``path`` in place, in a kernel of interpreter ``python`` started in ``cwd`` with ``env``
    (what the notebook computed is written back even when a cell fails); returns the exit code and stderr's tail."""
    import subprocess

    script = ("import sys, nbformat; from nbclient import NotebookClient\n"
              "nb = nbformat.read(sys.argv[1], as_version=4)\n"
              "try:\n    NotebookClient(nb, timeout=600, resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
              "finally:\n    nbformat.write(nb, sys.argv[1])\n")
    run = subprocess.run([str(python), "-c", script, str(path), str(cwd)], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=900)
    return run.returncode, run.stderr[-3000:]


def scale_cases(cut, leave_out=()) -> list:
    """(experiment, scale) of every gpu and paper configuration, once each as ``cut(name, scale)`` overrides it: a
    paper scale that cuts to the gpu scale's configuration runs once, its id naming both ("name-gpu+paper")."""
    import pytest

    from ncbook.registry import EXPERIMENTS

    seen: dict[tuple[str, str], list[str]] = {}
    for name, exp in EXPERIMENTS.items():
        for scale in ("gpu", "paper"):
            if scale in exp.scales and name not in leave_out:
                seen.setdefault((name, repr(exp.config(scale, **cut(name, scale)))), []).append(scale)
    return [pytest.param(name, scales[0], id=f"{name}-{'+'.join(scales)}") for (name, _), scales in seen.items()]


def toc_chapters() -> dict[Path, list[Path]]:
    """The book's chapters (their MyST sources) in the toc's order, each with its pages (Part IV: a hub and a page per
    figure); exercises are numbered per chapter across its pages, as sphinx-exercise numbers them."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    toc, out = yaml.safe_load((root / "_toc.yml").read_text()), {}
    for part in toc["parts"]:
        for chapter in part.get("chapters", []):
            hub = root / Path(chapter["file"]).with_suffix(".md")
            if hub.name.startswith("ch"):
                out[hub] = [root / Path(s["file"]).with_suffix(".md") for s in chapter.get("sections", [])]
    return out
