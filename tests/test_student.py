"""The student edition (scripts/student_edition.py): every solution removed, every exercise and every other cell
kept with its outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from student_edition import instructors_text, strip_solutions, student_notebook  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))

TEXT = """Intro.

:::{exercise}
:label: ex-a

Prove it.
:::

:::{solution} ex-a
:class: dropdown

Because.
:::

:::{exercise}
:label: ex-b

Compute it.
:::

:::{solution-start} ex-b
:class: dropdown
:::

By hand:

```{code-cell} ipython3
print(1 + 1)
```

:::{solution-end}
:::

The end.
"""


def test_strip_solutions_removes_both_forms_and_keeps_the_rest():
    out = strip_solutions(TEXT)
    assert "Because" not in out and "print(1 + 1)" not in out and "By hand" not in out
    assert out.count(":::{exercise}") == 2 and "Intro." in out and "The end." in out and "Compute it." in out
    assert "\n\n\n" not in out


@pytest.mark.parametrize("bad,match", [(":::{solution-start} x\n:::\ntext\n", "without solution-end"),
                                       (":::{solution} x\ntext\n", "never closed"),
                                       (":::{solution-end}\n:::\n", "without solution-start")])
def test_strip_solutions_refuses_broken_structure(bad, match):
    with pytest.raises(ValueError, match=match):
        strip_solutions(bad)


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_chapters_keep_exercises_and_outputs_but_no_solution(md: Path):
    import jupytext

    full = jupytext.read(md.with_suffix(".ipynb"))
    student = student_notebook(md)
    text = "".join(c.source for c in student.cells)
    assert "{solution" not in text
    assert text.count(":::{exercise}") == md.read_text().count(":::{exercise}")   # a page may have none (Part IV)
    kept = {c.source: c for c in student.cells if c.cell_type == "code"}
    assert kept and len(kept) <= sum(c.cell_type == "code" for c in full.cells)
    for cell in full.cells:     # every code cell the student keeps has the executed outputs, but the checks
        if cell.cell_type == "code" and cell.source in kept and "check" not in cell.metadata.get("tags", []):
            assert kept[cell.source].get("outputs", []) == cell.get("outputs", [])


def test_the_editions_instructors_page_says_it_is_the_student_edition():
    """The instructors' page in the student edition says it is that edition (not "This book keeps the solutions"), and
    its links resolve there; a phrase the page no longer holds is refused, not silently left."""
    page = (ROOT / "book" / "instructors.md").read_text()
    edition = instructors_text(strip_solutions(page))
    assert "This book keeps the solutions" in page and "This book keeps the solutions" not in edition
    assert "This is the student edition: no solution is in it" in edition
    assert 'href="../student/index.html"' not in edition and 'href="../index.html"' in edition
    with pytest.raises(ValueError, match="no longer holds"):
        instructors_text(page.replace("This book keeps the solutions", "The book keeps the solutions"))
