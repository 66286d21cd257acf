"""scripts/check_variants.py: a chapter executed under an arithmetic variant is compared with its committed text,
the variant's settings reach the kernel, and a digit that moves is reported with its cell."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import check_variants  # noqa: E402

pytestmark = pytest.mark.slow       # starts Jupyter kernels: `pytest --runslow`

CODE = """import os, torch
print(os.environ.get("OMP_NUM_THREADS"), os.environ.get("ATEN_CPU_CAPABILITY"))
print("took 3.2 s")"""


def committed(tmp_path: Path, printed: str) -> Path:
    """A one-cell notebook whose committed output is ``printed``, split in two stream chunks as a kernel may."""
    cell = nbformat.v4.new_code_cell(CODE)
    head, tail = printed.split("\n", 1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=head + "\n"),
                    nbformat.v4.new_output("stream", name="stdout", text=tail)]
    path = tmp_path / "ch99.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    return path


def test_a_variant_reaches_the_kernel_and_a_moved_value_is_reported(tmp_path):
    nb = committed(tmp_path, "1 default\ntook 0.4 s\n")           # timings are sanitised, as nbval does
    assert check_variants.run_chapter(nb, "sse") == []
    diffs = check_variants.run_chapter(nb, "avx2")                  # four threads, ATen's AVX2 kernels
    assert len(diffs) == 1 and diffs[0].startswith("avx2: ch99.ipynb cell 0:")
    assert "'stdout: 1 default'" in diffs[0] and "'stdout: 4 avx2'" in diffs[0]


def test_every_variant_changes_a_code_path_and_none_is_the_default():
    for name, env in check_variants.VARIANTS.items():
        assert {"MKL_CBWR", "OPENBLAS_CORETYPE"} <= set(env), name
        assert env["OMP_NUM_THREADS"] != "2", f"{name}: two threads is what nbval as configured runs"
