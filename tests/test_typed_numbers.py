"""Words that cannot drift (issue 73): a number about our runs on a summarising page is pasted, never typed.

Two checks. :func:`typed_numbers` finds every number left in a page's prose once glue roles, other roles, math,
code, links, bold titles (the papers' own figure titles) and figure, table and section labels are taken out; a page
listed in :data:`PAGES` must have none but those of :data:`ALLOWED`, each with why it may stay. And every value such a
page pastes (``{glue:text}`` from chapters 8 and 9) is recomputed here from the shipped arrays, by the claims data,
and must equal what the chapter stored, which is what the page shows.

Pages covered: the Results index's Part IV section, the front page's Part IV paragraph, and every page of Part IV
(:data:`PART_IV`, whole: prose, captions, exercises). A Part IV page's own pasted values are recomputed by running its
notebook (make test's nbval stage runs every page and compares every output, glued values included, with the
stored ones; :func:`test_the_values_a_page_pastes_are_recomputed_from_the_arrays_and_follow_them` shows one follow
a changed array).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from ncbook import claims
from ncbook.registry import get_experiment

BOOK = Path(__file__).resolve().parents[1] / "book"

PAGES = {"results_index.md": ("## Figures and tables of the papers", "## Every statement of the book"),
         "index.md": ("Part I sets up the measurements.", "Where a paper's statement is wrong")}
"""Each page checked, with the headings its checked part starts at and ends before."""

ALLOWED: dict[str, str] = {"± 1 sd": "the width of a figure's band (one standard deviation), a definition"}
"""Numbers that may stay typed on a checked page (the text around them -> why). The papers' constants are set as
mathematics or quoted in the papers' words, which :func:`prose` leaves out."""

PART_IV = sorted(p.name for p in BOOK.glob("ch0[89]_*.md"))
"""Every page of Part IV: the hubs of chapters 8 and 9 and their pages per figure, checked whole."""

CHAPTERS = {"Jacot": "ch08_jacot_experiments", "Tirer": "ch09_tirer_experiments"}

_SKIPPED = [
    r"\{[\w:-]+\}`[^`]*`",                                   # a role: {glue:text}`...`, {numref}`...`, {ref}`...`
    r"\$\$.*?\$\$", r"\$[^$]*\$",                            # math
    r"`[^`]*`",                                              # code
    r"\[[^\]]*\]\([^)]*\)",                                  # a link
    r"\*\*[^*]*\*\*",                                        # a bold title: the paper's figure and its title
    r"\b(?:Figs?|Figures?|Tables?|Secs?|Sections?|App|Appendix|Thm|Theorem|Eq|eq|Prop|Lemma|Cor)\.?"
    r"\s*[A-Z]?\d+(?:\.\d+)*(?:\s*\([a-z]\))?"
    r"(?:\s*(?:,|and|/)\s*[A-Z]?\d+(?:\s*\([a-z]\))?)*",   # a figure, table or section label: "Figs. 4c and 5c"
    r"\b[Cc]hapters?\s+\d+(?:\s*(?:,|and)\s*\d+)*",            # a chapter: "chapters 8 and 9"
]
_NUMBER = re.compile(r"(?<![\w.\-/])\d[\d,]*(?:\.\d+)?%?(?![\w\-])")


def prose(text: str) -> str:
    """``text`` without what may hold numbers that are not about our runs (:data:`_SKIPPED`)."""
    for pattern in _SKIPPED:
        text = re.sub(pattern, " ", text, flags=re.S)
    return text


def typed_numbers(text: str, allowed: dict[str, str] = ALLOWED) -> list[str]:
    """The numbers typed into the prose of ``text``, each with the words around it; none from :data:`ALLOWED`."""
    for phrase in allowed:
        text = text.replace(phrase, " ")
    flat = " ".join(prose(text).split())
    return [flat[max(m.start() - 30, 0):m.end() + 30] for m in _NUMBER.finditer(flat)]


def page_prose(text: str) -> str:
    """A chapter page's prose and its figures' captions: without its front matter, its code cells (their captions
    kept), its how-to-run note, its headings (the papers' figure names), list markers, the papers' words in quotes
    and references to the rule's points."""
    captions = "\n".join(re.findall(r"caption: \|\n((?:      .*\n)+)", text))
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"```\{code-cell\}.*?\n```", " ", text, flags=re.S)
    text = re.sub(r":::\{admonition\} Run this chapter yourself.*?\n:::", " ", text, flags=re.S)
    text = re.sub(r"^#+ .*$", " ", text, flags=re.M)
    text = re.sub(r"^\s*\d+\. ", " ", text, flags=re.M)
    text = re.sub(r'"[^"]{0,300}"', " ", text + "\n" + captions)
    return re.sub(r"\b[Pp]oints? \d+", " ", text)


def checked_part(page: str) -> str:
    text = (BOOK / page).read_text()
    start, end = PAGES[page]
    return text[text.index(start):text.index(end)]


def pasted_keys(text: str) -> list[tuple[str, str]]:
    """Every (notebook, key) that ``text`` pastes from another page."""
    return re.findall(r"\{glue:text\}`(\w+)\.ipynb::([\w.-]+)(?::\w*)?`", text)      # path::key:format


def stored_glue(chapter: str) -> dict[str, str]:
    """The values chapter ``chapter`` glued when it was executed (what the built page shows)."""
    out = {}
    for cell in json.loads((BOOK / f"{chapter}.ipynb").read_text())["cells"]:
        for o in cell.get("outputs", []):
            book = o.get("metadata", {}).get("scrapbook", {})
            if book.get("name"):                 # a str's repr, under glue's mime prefix (display=False)
                out[book["name"]] = ast.literal_eval("".join(o["data"][book["mime_prefix"] + "text/plain"]))
    return out


def recomputed(paper: str, results: dict | None = None) -> dict[str, str]:
    """Every figure summary of ``paper``'s claims table, from the shipped arrays (or ``results``)."""
    results = results if results is not None else claims.cached_results(paper, "cpu")
    if paper == "Jacot":
        rows = claims.jacot_claims(results, "cpu")
    else:
        rows = claims.tirer_claims(results, get_experiment("tirer_wd_ablation").config("cpu").losses,
                                   get_experiment("tirer_blur").config("cpu").blurred, "cpu")
    return claims.figure_summaries(paper, rows)


def stale(paper: str, results: dict | None = None) -> list[str]:
    """The keys whose stored value differs from the one the arrays give now."""
    stored, now = stored_glue(CHAPTERS[paper]), recomputed(paper, results)
    summaries = {k for k in stored if k.startswith(f"{paper.lower()}-")}      # the page's other values: not these
    return sorted(k for k in now if stored.get(k) != now[k]) + sorted(summaries - set(now))


@pytest.mark.parametrize("page", list(PAGES))
def test_no_number_about_our_runs_is_typed(page):
    found = typed_numbers(checked_part(page))
    assert not found, f"{page}: numbers typed into the prose (paste them with glue): {found}"


def test_a_planted_number_is_found_and_labels_math_and_roles_are_not():
    part = checked_part("results_index.md")
    planted = part.replace("Every ablation row is judged", "Every ablation row is judged on 9 of 30 runs and", 1)
    assert planted != part and [f for f in typed_numbers(planted) if "9 of 30" in f]
    assert typed_numbers("NC1 0.76 to 0.19 in 6 of 6 runs, 42% of them, 1,000 epochs") != []
    assert len(typed_numbers("NC1 0.76 to 0.19 in 6 of 6 runs, 42% of them, 1,000 epochs")) == 6
    assert typed_numbers("Figs. 4c and 5c, Fig. 2 (right), Table 1, App. E.1, $\\lambda_W=5\\cdot10^{-5}$, "
                         "{numref}`fig-2`, `ch08::k`, **Fig. 1 (ResNet20 with 3 ReLU)**, CIFAR-10, MNIST-5k, "
                         "ResNet18") == []


@pytest.mark.parametrize("paper", list(CHAPTERS))
def test_every_pasted_summary_is_the_one_the_arrays_give(paper):
    """Recomputed from the shipped arrays by the claims data, not read from the notebook: each summary the chapter
    stored (and the Results index pastes) is the current one, and every key the Results index pastes exists."""
    assert not stale(paper), f"{CHAPTERS[paper]}.ipynb's glued summaries are stale: re-execute it"
    keys = {k for page in PAGES for nb, k in pasted_keys(checked_part(page)) if nb == CHAPTERS[paper]}
    assert keys and keys <= set(stored_glue(CHAPTERS[paper])), keys - set(stored_glue(CHAPTERS[paper]))


def test_a_changed_array_makes_the_pasted_summary_stale():
    """The recomputation reads the arrays: a result whose runs all stop fitting changes Fig. 4's summary."""
    results = claims.cached_results("Jacot", "cpu")
    name = claims.FIG4_POOLED                                                # what Fig. 4's rows read
    changed = dict(results[name])
    changed["train_error"] = changed["train_error"] * 0 + 0.5            # no seed fits any more
    assert "jacot-fig-4" in stale("Jacot", results | {name: changed})
    assert not stale("Jacot", results)


@pytest.mark.parametrize("page", PART_IV)
def test_no_number_about_our_runs_is_typed_in_part_iv(page):
    """Issue 73, point 2: a page of Part IV (its prose, captions and exercises) holds no typed number outside a glue
    role, math, code, a quotation of the paper, a cross-reference or a label."""
    found = typed_numbers(page_prose((BOOK / page).read_text()))
    assert not found, f"{page}: numbers typed into the prose (paste them with glue): {found}"


def test_a_number_planted_in_a_part_iv_page_is_found():
    text = (BOOK / "ch08_jacot_fig_2.md").read_text()
    anchor = "The claims table reads the longer run"
    planted = text.replace(anchor, "The 8,000-step run, 19 of 30 fitting: the claims table reads the longer run", 1)
    assert planted != text
    found = typed_numbers(page_prose(planted))
    assert len(found) == 3 and not typed_numbers(page_prose(text)), found
    caption = text.replace("± 1 sd over seeds, at the weight decay", "± 1 sd over 3 seeds, at the weight decay", 1)
    assert caption != text and len(typed_numbers(page_prose(caption))) == 1        # a caption is prose too


@pytest.mark.parametrize("page", PART_IV)
def test_every_key_a_part_iv_page_pastes_it_glues(page):
    """A page's {glue:text} keys are glued by its own notebook (or named with the notebook they come from)."""
    text = (BOOK / page).read_text()
    own = set(re.findall(r"\{glue:text\}`([\w.-]+)(?::[^`]*)?`", text))
    stored = stored_glue(page.removesuffix(".md"))
    assert own <= set(stored), f"{page}: pasted but not glued (re-execute it): {sorted(own - set(stored))}"


def _glue_after_running(page: str, first: str = "") -> dict[str, str]:
    """The values chapter ``page`` glues when its notebook runs now, with ``first`` run before it."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(BOOK / f"{page}.ipynb", as_version=4)
    if first:
        nb.cells.insert(0, nbformat.v4.new_code_cell(first))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}).execute()
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            book = o.get("metadata", {}).get("scrapbook", {})
            if book.get("name"):
                out[book["name"]] = ast.literal_eval("".join(o["data"][book["mime_prefix"] + "text/plain"]))
    return out


@pytest.mark.slow
def test_the_values_a_page_pastes_are_recomputed_from_the_arrays_and_follow_them():
    """Issue 73, point 2: a Part IV page's pasted values are what its notebook computes from the arrays now (make
    test's nbval stage does this for every page: it re-executes each notebook and compares every output, the glued
    values among them, with the stored ones the built page shows), and they follow the arrays: with every NC1 of the
    results scaled by 1.5 before the page runs, its NC1 values change and nothing else does."""
    page = "ch09_tirer_fig_2"
    assert _glue_after_running(page) == stored_glue(page)
    scaled = ("import ncbook.runner as _runner\n_get = _runner.get\n"
              "def _scaled(*args, **kwargs):\n"
              "    out = dict(_get(*args, **kwargs))\n"
              "    out['nc1_pinv'] = out['nc1_pinv'] * 1.5\n"
              "    return out\n"
              "_runner.get = _scaled")
    changed = _glue_after_running(page, scaled)
    moved = {k for k in stored_glue(page) if changed[k] != stored_glue(page)[k]}
    assert moved == {"lw_nc1_cpu", "lw_nc1_gpu"}, moved
