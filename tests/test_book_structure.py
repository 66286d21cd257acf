"""The book's sources: the Results index lists every numbered statement, every figure of a chapter is numbered,
captioned and described, and every line of code and printed text a page shows fits its code column (what the
rendered page shows is checked in test_browser.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncbook.compare import WRAP

from helpers import toc_chapters  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.glob("ch*.md"))


TOC = toc_chapters()
HUBS = list(TOC)
"""Each chapter's first page: the chapter itself, or the hub of a chapter that has pages."""


def chapter_text(hub: Path) -> str:
    """A chapter's whole text: its hub and its pages, in the toc's order."""
    return "".join(p.read_text() for p in [hub, *TOC[hub]])
KINDS = "definition|assumption|theorem|proposition|lemma|corollary"


def test_results_index_lists_every_statement_of_the_book():
    index = (BOOK / "results_index.md").read_text()
    listed = set(re.findall(r"\{prf:ref\}`([^`]+)`", index.split("## Every statement of the book")[1]))
    stated = {label for md in CHAPTERS
              for label in re.findall(rf":::\{{prf:(?:{KINDS})\}}[^\n]*\n:label: (\S+)", md.read_text())}
    assert stated and stated == listed, f"missing: {sorted(stated - listed)}, stale: {sorted(listed - stated)}"
    for md in CHAPTERS:                             # each with the title its chapter gives it
        for title, label in re.findall(rf":::\{{prf:(?:{KINDS})\}} ?([^\n]*)\n:label: (\S+)", md.read_text()):
            if title:
                assert f"{{prf:ref}}`{label}` ({title})" in index, f"the index lists {label} without {title!r}"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_cell_has_a_number_a_caption_and_alt_text(md: Path):
    text = md.read_text()
    for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S):
        draws = "SliderFigure(" in cell or re.search(r"\bplot_\w+\(", cell)
        if not draws:
            continue
        assert "name: fig-" in cell and "caption: |" in cell, f"{md.stem}: a figure without a number or caption"
        assert re.search(r"\balt(:|=\(?\s*\")", cell), f"{md.stem}: a figure without alt text"
        name = re.search(r"name: (fig-[\w-]+)", cell).group(1)
        assert f"{{numref}}`{name}`" in text, f"{md.stem}: the text never refers to {name} by number"


def shown_lines(notebook: dict) -> list[tuple[int, str, str]]:
    """(cell, "code" or "output", line) of every line of code and printed text a chapter's page shows: code not
    tagged remove-cell/remove-input, stream and plain-text outputs not tagged remove-output (HTML and images aside)."""
    out = []
    for i, cell in enumerate(notebook["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code" or "remove-cell" in tags:
            continue
        if "remove-input" not in tags:
            out += [(i, "code", line) for line in "".join(cell["source"]).splitlines()]
        if "remove-output" in tags:
            continue
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o.get("output_type") == "stream":
                text = o["text"]
            elif "text/plain" in data and not any(k.startswith(("text/html", "image/")) for k in data):
                text = data["text/plain"]
            else:
                continue
            out += [(i, "output", line) for line in "".join(text).splitlines()]
    return out


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_line_of_code_and_output_fits_the_code_column(md: Path):
    notebook = json.loads(md.with_suffix(".ipynb").read_text())
    wide = [f"cell {i} {kind}: {len(line)} characters: {line.strip()[:50]}"
            for i, kind, line in shown_lines(notebook) if len(line) > WRAP]
    assert not wide, (f"{md.stem}: {len(wide)} lines wider than the {WRAP} characters the page's code column shows "
                      f"(run scripts/format_chapters.py; print tables narrower): {wide[:3]}")


def test_a_wide_line_fails_the_width_check():
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n", "y" * (WRAP + 1)],
                           "outputs": [{"output_type": "stream", "name": "stdout", "text": ["z" * (WRAP + 1)]}]},
                          {"cell_type": "code", "metadata": {"tags": ["remove-cell"]}, "source": ["w" * 200],
                           "outputs": []}]}
    wide = [(i, kind) for i, kind, line in shown_lines(notebook) if len(line) > WRAP]
    assert wide == [(0, "code"), (0, "output")]


def test_the_toc_lists_every_chapter_and_page_once():
    assert sorted([*HUBS, *(p for pages in TOC.values() for p in pages)]) == CHAPTERS


@pytest.mark.parametrize("md", HUBS, ids=lambda p: p.stem)
def test_chapters_open_with_objectives_and_end_with_a_summary_before_the_exercises(md: Path):
    """A chapter opens with its objectives and ends with a summary, then its exercises; a chapter with pages (Part
    IV) ends its hub with the summary, and each of its pages with the exercises on that page, where it has any."""
    text = md.read_text()
    head, first_section = text.split("\n## ", 1)
    assert ":::{admonition} Objectives and prerequisites" in head and "**Prerequisites:**" in head
    sections = re.findall(r"^## (.+)$", text, re.M)
    if TOC[md]:
        assert sections[-1] == "Summary", sections[-3:]
        assert any("\n## Exercises\n" in p.read_text() for p in TOC[md]), md.stem
        for page in TOC[md]:
            own = re.findall(r"^## (.+)$", page.read_text(), re.M)
            assert ":::{exercise}" not in page.read_text() or own[-1] == "Exercises", (page.stem, own[-3:])
    else:
        assert sections[-2:] == ["Summary", "Exercises"], sections[-3:]
    summary = text.split("\n## Summary\n", 1)[1].split("\n## Exercises", 1)[0]
    # a hub's summary is generated from the claims data (issue 73: tables, never typed); a chapter's, points
    assert summary.count("\n- ") >= 2 or (TOC[md] and "```{code-cell}" in summary), md.stem
    book = "".join(p.read_text() for p in CHAPTERS)
    for label in re.findall(r"\{prf:ref\}`([^`]+)`", summary):     # the summary cites statements of the book
        assert f":label: {label}\n" in book, f"{md.stem}: the summary cites {label}, stated nowhere"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_has_a_difficulty(md: Path):
    """Every exercise of a page says how hard it is; every chapter (with its pages) has exercises."""
    titles = re.findall(r"^:::\{exercise\}(.*)$", md.read_text(), re.M)
    assert all(t.strip() in ("basic", "intermediate", "advanced") for t in titles), titles
    assert md not in TOC or re.search(r"^:::\{exercise\}", chapter_text(md), re.M), md.stem


def test_the_instructors_page_covers_every_chapter():
    page = (BOOK / "instructors.md").read_text()
    path = page.split("## Reading path", 1)[1].split("\n## ", 1)[0]
    labels = [re.search(r"^\((ch-[\w-]+)\)=", md.read_text(), re.M).group(1) for md in HUBS]
    assert all(f"{{ref}}`{label}`" in path for label in labels)
    assert "## A two-week module" in page and "## A four-week course" in page


@pytest.mark.parametrize("md", [*CHAPTERS, BOOK / "index.md"], ids=lambda p: p.stem)
def test_captions_name_panels_by_their_order_not_their_place(md: Path):
    """On a phone a figure's panels stand one under another (ncbook.plotting.phone_layout), so "left", "right",
    "top" and "bottom" would point at the wrong panel: captions count panels instead (a paper's "Fig. 4 (top row)"
    names the paper's figure and may stay)."""
    captions = re.findall(r"caption: \|\n(.*?)\n(?:\S|  \w)", md.read_text(), re.S)
    captions += re.findall(r":::\{chapter-figure\}.*?\n:name: .*?\n(.*?)\n:::", md.read_text(), re.S)
    for caption in captions:
        place = re.search(r"(?<!\d )(?:\b(?:Left|Right|Top|Bottom|Middle):|\((?:left|right|top|bottom)\b|"
                          r"\b(?:left|right|middle|top|bottom) (?:panel|one)\b)", caption)
        assert not place, f"{md.stem}: a caption names a panel by its place ({place.group(0)!r}): say which panel"


def _reading_minutes(text: str) -> int:
    """A chapter's prose (code cells left out) at 50 words a minute, rounded to 5 minutes (the instructors' page)."""
    import re

    words = len(re.sub(r"```.*?```", "", text, flags=re.S).split())
    return 5 * round(words / 50 / 5)


def test_the_instructors_plan_states_reading_and_exercise_times_as_the_chapters_have_them():
    """Issue 62, point 5: the per-chapter table of the instructors' page gives each chapter's reading time (its prose
    at 50 words a minute) and its exercises with 10 / 25 / 45 minutes for basic / intermediate / advanced, in the
    chapter's order; the four-week plan gives every exercise a session; the split chapters' halves add up."""
    import re

    text = (BOOK / "instructors.md").read_text()
    for n, path in enumerate(HUBS, start=1):
        chapter = chapter_text(path)
        levels = re.findall(r":::\{exercise\} (\w+)", chapter)
        minutes = {"basic": 10, "intermediate": 25, "advanced": 45}
        cells = ", ".join(f"{n}.{i} ({minutes[lv]})" for i, lv in enumerate(levels, start=1))
        row = f"| {n} | {_reading_minutes(chapter)} min | {cells} |"
        assert row in text, row
    four = text[text.index("## A four-week course"):text.index("Every exercise is in one session")]
    given = set(re.findall(r"\b(\d\.\d) \(\d+\)", four))
    every = {f"{n}.{i}" for n, p in enumerate(HUBS, start=1)
             for i in range(1, len(re.findall(r":::\{exercise\}", chapter_text(p))) + 1)}
    assert every <= given, sorted(every - given)
    ch1 = (BOOK / "ch01_metrics.md").read_text()
    cut = ch1.index("## Why not a $d\\times d$ pseudo-inverse in float32")
    assert (_reading_minutes(ch1[:cut]), _reading_minutes(ch1[cut:])) == (55, 35)
    ch4 = (BOOK / "ch04_near_collapse.md").read_text()
    cut = ch4.index("## What the blocks mean for collapse")
    assert (_reading_minutes(ch4[:cut]), _reading_minutes(ch4[cut:])) == (45, 15)
    assert "chapter 1 to its float32 section (55)" in text and "the rest of chapter 1 (35)" in text
    assert "chapter 4 to what the blocks mean (45)" in text and "the rest of chapter 4 (15)" in text


READINGS = {
    "chapter 1 to its float32 section": ("ch01_metrics", None, "## Why not a $d\\times d$ pseudo-inverse in float32"),
    "the rest of chapter 1": ("ch01_metrics", "## Why not a $d\\times d$ pseudo-inverse in float32", None),
    "chapter 2": ("ch02_ufm", None, None), "chapter 3": ("ch03_depth", None, None),
    "chapter 4 to what the blocks mean": ("ch04_near_collapse", None, "## What the blocks mean for collapse"),
    "the rest of chapter 4": ("ch04_near_collapse", "## What the blocks mean for collapse", None),
    "chapter 5": ("ch05_balanced", None, None), "chapter 6": ("ch06_gd_phases", None, None),
    "chapter 6 to its second phase": ("ch06_gd_phases", None, "## Phase 2"),
    "the rest of chapter 6": ("ch06_gd_phases", "## Phase 2", None), "chapter 7": ("ch07_conditioning", None, None),
    "the hub of chapter 8 or of chapter 9": (("ch08_jacot_experiments", None, None),
                                             ("ch09_tirer_experiments", None, None)),
    "the page of the figure your project redoes: chapter 8's Fig. 2 or chapter 9's Table 1": (
        ("ch08_jacot_fig_2", None, None), ("ch09_tirer_table_1", None, None)),
}
"""Each reading the instructors' plans name, as the part of a page it is: (page, from heading, to heading); a
reading with a choice ("8 or 9") names one part per choice."""


def _part_minutes(page: str, start: str | None, end: str | None) -> int:
    text = (BOOK / f"{page}.md").read_text()
    return _reading_minutes(text[text.index(start) if start else 0:text.index(end) if end else len(text)])


def readings(cell: str) -> list[tuple[str, str, str]]:
    """What a session's cell asks to read: (phrase, minutes, minutes of the second choice or ""), every item after
    "*read*" ("chapter 2 (30), chapter 3 (55)")."""
    if "*read*" not in cell:
        return []
    return re.findall(r"\s*(.+?) \((\d+)(?: or (\d+))?\)(?:[,;]|$)", cell.split("*read*", 1)[1])


def plan_weeks(text: str) -> list[list[tuple[str, list[tuple[int, int]], list[tuple[int, int]]]]]:
    """The weeks of a plan on the instructors' page: per week its rows (session number or "home", the reading
    minutes, the exercise minutes), each minutes entry a pair (the first choice's, the second's: "45 or 25")."""
    def pairs(cell: str, pattern: str) -> list[tuple[int, int]]:
        out = []
        for item in re.split(r", (?![^(]*\))", cell):
            found = [int(m) for m in re.findall(pattern, item)]
            if found:
                out.append((found[0], found[-1]) if " or " in item else (found[0], found[0]))
        return out

    weeks = [[]]
    for line in text.splitlines():
        if line.startswith("**Week") and weeks[-1]:
            weeks.append([])
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if len(cells) == 3 and (cells[0].isdigit() or cells[0] == "home"):
            reading = [(a, b) for _, a, b in readings(cells[1])]
            if cells[0] == "home":
                reading = re.findall(r"problems? .*?\((\d+)\)()", cells[1])
            weeks[-1].append((cells[0], [(int(a), int(b or a)) for a, b in reading],
                              pairs(cells[2].split("*then*")[-1], r"\d\.\d \((\d+)\)")))
    return weeks


def test_the_plans_weeks_fit():
    """Issue 76, point 3: in both plans every reading's minutes are the named part's prose at 50 words a minute; each
    session reads something and does at most 45 minutes of exercises; each week's reading is within 20% of every
    other week's, for either choice of paper; homework rows carry the week's problem."""
    text = (BOOK / "instructors.md").read_text()
    for line in text.splitlines():
        for phrase, a, b in readings(line.split(" | ")[1] if line.count(" | ") == 2 else ""):
            assert phrase in READINGS, f"the plan reads {phrase!r}, which tests/test_book_structure.py cannot measure"
            parts = READINGS[phrase] if isinstance(READINGS[phrase][0], tuple) else (READINGS[phrase],)
            assert [_part_minutes(*part) for part in parts] == [int(a)] + ([int(b)] if b else []), phrase
    module = text[text.index("## A two-week module"):text.index("## A four-week course")]
    four = text[text.index("## A four-week course"):text.index("Every exercise is in one session")]
    rows = [r for r in module.splitlines() if re.match(r"\| \d \|", r)]
    plans = {"two-week": [plan_weeks("\n".join(rows[:3]))[0], plan_weeks("\n".join(rows[3:]))[0]],
             "four-week": plan_weeks(four)}
    assert [len(w) for w in plans["four-week"]] == [4, 4, 4, 4]
    for name, weeks in plans.items():
        for choice in (0, 1):
            totals = []
            for week in weeks:
                for session, reading, exercises in week:
                    if session != "home":
                        assert reading, f"{name} plan, session {session}: no reading time"
                        assert sum(e[choice] for e in exercises) <= 45, f"{name} plan, session {session}"
                totals.append(sum(r[choice] for s, rs, _ in week if s != "home" for r in rs))
            assert max(totals) <= 1.2 * min(totals), f"{name} plan, weekly reading {totals}"
    homework = [w[-1] for w in plans["four-week"]]
    assert all(s == "home" and r for s, r, _ in homework), "every week of the four-week course has its problem"


def code_cell_tags(md: Path) -> list[tuple[list[str], bool]]:
    """The tags of each code cell of a chapter, in order (from ``:tags:`` or its YAML options), and whether the cell
    is part of an exercise's solution."""
    out, text = [], md.read_text()
    solutions = [(m.start(), text.index(":::{solution-end}", m.start()))
                 for m in re.finditer(r":::\{solution-start\}", text)]
    for m in re.finditer(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S):
        found = re.match(r"(?::tags: \[([^\]]*)\]|---\n(?:.*\n)*?tags: \[([^\]]*)\](?:.*\n)*?---)", m.group(1))
        tags = [t.strip() for t in (found.group(1) or found.group(2)).split(",")] if found else []
        out.append((tags, any(a < m.start() < b for a, b in solutions)))
    return out


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_the_import_cell_and_part_four_code_are_folded(md: Path):
    """Issue 62: a chapter opens with prose, not its imports (the first cell a reader would see is folded), and Part
    IV's code is folded by default (its outputs, tables and figures stay in view); a solution's code is not folded
    twice (the solution is)."""
    shown = [(tags, solution) for tags, solution in code_cell_tags(md) if "remove-cell" not in tags]
    assert "hide-input" in shown[0][0], f"{md.stem}: the import cell is not folded"
    assert not [tags for tags, solution in shown if solution and "hide-input" in tags], \
        f"{md.stem}: a solution's code is folded inside the folded solution"
    if md.stem.startswith(("ch08", "ch09")):
        unfolded = sum("hide-input" not in tags and "remove-input" not in tags for tags, solution in shown
                       if not solution)
        assert unfolded == 0, f"{md.stem}: {unfolded} code cells of Part IV are not folded"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_slider_figure_is_in_the_current_format(md: Path):
    """The page's print layout (book/_ext/static/ncbook.js) reads each control's data (a slider or a two-value toggle:
    ``.ncsf-control``); a notebook executed before that format keeps its data on the range input and breaks the print
    edition ("undefined" is not valid JSON): every slider figure must carry its data on its controls."""
    nb = json.loads(md.with_suffix(".ipynb").read_text())
    pages = ["".join(out.get("data", {}).get("text/html", ""))
             for cell in nb["cells"] for out in cell.get("outputs", [])]
    for page in (p for p in pages if 'class="ncsf"' in p):
        controls = re.findall(r'<(?:label|div) class="ncsf-control[^"]*"[^>]*>', page)
        assert controls and all("data-labels=" in c for c in controls), f"{md.stem}: a slider figure in the old format"
        assert not re.search(r'<input class="ncsf-range"[^>]*data-labels', page), md.stem


def h200_minutes() -> dict[str, float]:
    """Each experiment's full wall time in minutes on the one H200 of benchmarks/README.md's table: predicted, or
    made where it was not separable."""
    text = (Path(__file__).resolve().parents[1] / "benchmarks" / "README.md").read_text(encoding="utf-8")
    table = text[text.index("**On one NVIDIA H200"):]
    table = table[:table.index("\n\n", table.index("| figure"))]
    minutes: dict[str, float] = {}
    for row in table.splitlines():
        names = re.findall(r"`(\w+)`", row.split("|")[1]) if row.startswith("| `") else []
        if predicted := re.search(r"predicted ([\d.]+) min", row):
            minutes[names[0]] = float(predicted.group(1))
        elif made := re.search(r"made in (\d+) s and (\d+) s", row):
            minutes.update({n: int(s) / 60 for n, s in zip(names, made.groups())})
    return minutes


def test_the_pages_say_how_long_the_gpu_scale_took_on_the_h200():
    """The front page, the glossary, the instructors' page and docs/details.md say what the H200 measured of the gpu
    scale (they had said "about 10 minutes each", which three experiments exceed by far)."""
    minutes = h200_minutes()
    over = sorted(m for m in minutes.values() if m > 10)
    words = {3: "three", 8: "eight", 11: "eleven"}
    timed, late, met = words[len(minutes)], words[len(over)], words[len(minutes) - len(over)]
    span = f"predicted at {round(over[0])} minutes to {round(over[-1] / 60)} hours"
    page = {p: " ".join((BOOK.parent / p).read_text(encoding="utf-8").split())
            for p in ("book/index.md", "book/glossary.md", "book/instructors.md", "docs/details.md")}
    assert f"{met} of the {timed} experiments timed met and {late} did not ({span}" in page["book/index.md"]
    assert f"one H200: predicted at {round(minutes['jacot_mlp'])} minutes" in page["book/index.md"]
    for p in ("book/glossary.md", "docs/details.md"):
        assert f"{late} of the {timed} experiments timed are {span}" in page[p], p
    assert "hours for the longest" in page["book/instructors.md"] and round(over[-1] / 60) >= 2
    old = r"sized to (about )?10 minutes|for about ten minutes per experiment|MNIST-5k, about 10|GPU in about ten"
    assert not any(re.search(old, text) for text in page.values())          # the old wording, gone


def test_the_normalisation_statements_credit_the_right_code_and_the_papers_model():
    """Issue 76, statements 3 and 4: Papyan et al.'s code trained with cross-entropy only and Zhu et al.'s uses
    `nn.MSELoss`; Tirer et al.'s model (1) states the book's normalisation of the square loss, only their experiments
    leave theirs unstated (the Results index said "the paper does not state its own")."""
    table = " ".join((BOOK / "ch09_tirer_table_1.md").read_text().split())
    assert "Papyan et al. (who trained with cross-entropy only) and Zhu et al., whose code uses PyTorch's" in table
    index = " ".join((BOOK / "results_index.md").read_text().split())
    assert "the paper's model states it; its experiments do not say which they used" in index
    assert "does not state its own" not in index
