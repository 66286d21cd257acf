"""scripts/format_chapters.py: a chapter's shown code is formatted to the page's 88 columns, a long trailing comment
moves above its line, hidden cells and metadata are left alone, and --check reports what it would change."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import format_chapters  # noqa: E402

CHAPTER = """# A chapter

```{code-cell} ipython3
---
mystnb:
  figure:
    name: fig-x
---
x = dict(alpha = 1)
```

```{code-cell} ipython3
:tags: [remove-cell]

y=[1,2]      # hidden: left as it is
```

```{code-cell} ipython3
total = first_argument_of_some_length + second_argument_of_some_length + 1    # what it adds up
label = "a string that the formatter cannot split because it is one literal, longer than eighty-eight"
```
"""


def test_format_then_check_is_clean_and_leaves_hidden_cells_and_metadata(tmp_path):
    md = tmp_path / "ch99.md"
    md.write_text(CHAPTER)
    problems = format_chapters.format_chapter(md, check=True)
    assert md.read_text() == CHAPTER                                   # --check writes nothing
    assert sum("not formatted" in p for p in problems) == 2            # the two shown cells, not the hidden one
    assert any("characters (at most 88)" in p for p in problems)       # the long literal is reported
    format_chapters.format_chapter(md, check=False)
    text = md.read_text()
    assert "x = dict(alpha=1)" in text and "    name: fig-x\n---\n" in text
    assert "y=[1,2]      # hidden: left as it is" in text
    assert "# what it adds up\ntotal = first_argument_of_some_length + second_argument_of_some_length + 1\n" in text
    again = format_chapters.format_chapter(md, check=True)
    assert again and all("characters (at most 88)" in p for p in again)  # only the literal is left, by hand


def test_the_books_chapters_are_formatted():
    problems = [p for md in sorted((ROOT / "book").glob("ch*.md")) for p in format_chapters.format_chapter(md, True)]
    assert not problems, problems[:3]


def test_bad_input_is_one_line_naming_what_to_fix(tmp_path):
    unclosed, broken = tmp_path / "ch98.md", tmp_path / "ch97.md"
    unclosed.write_text("```{code-cell} ipython3\nx = 1\n")
    broken.write_text("```{code-cell} ipython3\nx = 1 +\n```\n")
    for md, says in ((unclosed, "never closes"), (broken, "fix its code")):
        with pytest.raises(SystemExit) as e:
            format_chapters.format_chapter(md, check=True)
        assert says in str(e.value) and md.name in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(SystemExit, match="not a chapter's MyST source"):
        format_chapters.main([str(tmp_path / "missing.md")])
