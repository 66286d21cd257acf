"""Exercises that check themselves (ncbook.exercises): the book's reference answers pass, wrong answers fail with a
one-line message naming the exercise, unanswered ones say what to do; the student edition and its handout keep the
answer and check cells, and a student notebook runs with no answer, with the reference answers and with a wrong one.
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

import jupytext
import nbformat
import pytest

from ncbook import exercises

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import student_edition  # noqa: E402

from helpers import execute_notebook, toc_chapters  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))

WRONG = {                                     # a plausible mistake for each checked exercise
    "ex-ch1-two-classes": 0.5,
    "ex-ch1-float32": 1e-6,                   # the error without the offset
    "ex-ch1-streaming": 0.123,
    "ex-ch2-scaling": lambda lam_W, lam_H, n: (lam_W, lam_H),      # n forgotten
    "ex-ch3-lam-h-zero": True,
    "ex-ch3-implicit": 1,
    "ex-ch4-full-F": [0.99, 1.0],
    "ex-ch5-kernel": {"1 - NC3": 1, "eps2": 1, "kernel mass": 2},
    "ex-ch6-lambda-trade": 1.0,
    "ex-ch7-depth": 144,
    "ex-ch7-eos-bound": [1.0, 2.0, 3.0],
    "ex-ch8-average": [1.0, 1.0, 1.0, 1.0, 1.0],
    "ex-ch9-per-class": [[0.0] * 3] * 4,
}


def exercise_numbers() -> dict[str, str]:
    """Every exercise label -> the number the book gives it (chapter.position, as sphinx-exercise numbers them)."""
    out = {}
    for hub, pages in toc_chapters().items():
        chapter = int(hub.stem[2:4])
        labels = re.findall(r":::\{exercise\}.*\n:label: ([\w-]+)", "".join(p.read_text() for p in [hub, *pages]))
        out |= {label: f"{chapter}.{i}" for i, label in enumerate(labels, 1)}
    return out


def test_every_check_names_its_exercise_by_the_books_number():
    numbers = exercise_numbers()
    assert len(exercises.CHECKS) == 13
    for label, c in exercises.CHECKS.items():
        assert numbers.get(label) == c.number, f"{label}: the check says {c.number}, the book {numbers.get(label)}"


def test_every_exercise_with_a_computed_solution_checks_itself():
    gated = set()
    for md in CHAPTERS:
        gated |= set(re.findall(r":::\{solution-start\} ([\w-]+)", md.read_text()))
    assert gated - set(exercises.CHECKS) == set()


@pytest.mark.parametrize("label", sorted(exercises.CHECKS))
def test_a_wrong_answer_fails_in_one_line_and_none_says_what_to_do(label, capsys):
    c = exercises.CHECKS[label]
    with pytest.raises(exercises.WrongAnswer, match=rf"^Exercise {re.escape(c.number)}, not yet right: ") as e:
        exercises.check(label, WRONG[label])
    assert "\n" not in str(e.value) and e.value._render_traceback_() == [f"✗ {e.value}"]
    with pytest.raises(exercises.WrongAnswer, match="expected"):          # the wrong kind of answer, still one line
        exercises.check(label, "seven")
    exercises.check(label, None)
    assert capsys.readouterr().out.startswith(f"Exercise {c.number}: no answer yet. Set `answer`")


def test_an_unknown_exercise_is_refused():
    with pytest.raises(ValueError, match="no check for exercise 'ex-nope'"):
        exercises.check("ex-nope", 1)


def test_close_and_equal_say_what_is_wrong():
    assert exercises.close(1.0 + 1e-12, 1.0, 1e-9) is None
    assert "off by 10.0%" in exercises.close(1.1, 1.0, 1e-9)
    assert "expected 3 numbers" in exercises.close(1.0, [1.0, 2.0, 3.0], 1e-9)
    assert "NaN" in exercises.close(float("nan"), 1.0, 1e-9)
    assert exercises.equal(2, 2, "") is None and "whole number" in exercises.equal(2.0, 2, "")
    assert "True or False" in exercises.equal(0, False, "") and exercises.equal(False, False, "") is None


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_the_books_reference_answers_pass_in_the_executed_chapter(md: Path):
    """In the executed notebook (what nbval re-runs) every check cell follows its answer cell and printed a tick."""
    nb = jupytext.read(md.with_suffix(".ipynb"))
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    labels = re.findall(r'exercises\.check\("([\w-]+)", answer\)', md.read_text())
    chapters = toc_chapters()
    if md in chapters:                  # a chapter, with its pages: every check of its exercises is on one of them
        everywhere = re.findall(r'exercises\.check\("([\w-]+)", answer\)',
                                "".join(p.read_text() for p in [md, *chapters[md]]))
        assert len(everywhere) == sum(label.startswith(f"ex-ch{int(md.stem[2:4])}-") for label in exercises.CHECKS)
    assert len(checks) == len(labels)
    for cell, label in zip(checks, labels):
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text == f"✓ Exercise {exercises.CHECKS[label].number}: right.\n", (label, cell.outputs)
        assert "hide-input" in cell.metadata["tags"]


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_notebooks_ask_for_answers_and_with_the_reference_run_the_books_code(md: Path):
    """The student edition keeps each answer cell (emptied, saying what to put there) and check cell (unfolded, no
    output); filled with the reference answers, its code is the full chapter's code, which nbval runs."""
    full = jupytext.read(md.with_suffix(".ipynb"))
    student = student_edition.student_notebook(md)
    answers = [c for c in student.cells if "answer" in c.metadata.get("tags", [])]
    checks = [c for c in student.cells if "check" in c.metadata.get("tags", [])]
    assert len(answers) == len(checks) == md.read_text().count("exercises.check(")
    for a, c in zip(answers, checks):
        label = re.search(r'"([\w-]+)"', c.source).group(1)
        ex = exercises.CHECKS[label]
        *ask, last = a.source.split("\n")
        assert " ".join(line.removeprefix("# ") for line in ask) == f"Exercise {ex.number}, your answer: {ex.asks}"
        assert last == "answer = None" and max(len(line) for line in ask) <= 46
        assert not c.outputs and "hide-input" not in c.metadata["tags"] + a.metadata["tags"]

    filled = student_edition.student_notebook(md, student_edition.reference_answers(md.read_text()))

    def code(nb) -> str:
        src = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        return re.sub(r"\n+", "\n", re.sub(r"(?m)^# .*$", "", src))

    assert code(filled) == code(full)


def _run(nb_path: Path, cwd: Path, env: dict[str, str]) -> nbformat.NotebookNode:
    """Execute a notebook in a kernel started with ``env``; returns it, with the exit code and stderr in metadata."""
    rc, stderr = execute_notebook(sys.executable, nb_path, cwd, env)
    nb = nbformat.read(nb_path, as_version=4)
    nb.metadata["_rc"], nb.metadata["_stderr"] = rc, stderr
    return nb


@pytest.mark.slow
def test_the_handout_holds_what_a_student_needs_and_its_exercises_check_themselves(tmp_path: Path):
    """`make student`'s handout, built here into a temporary folder: the student notebooks, the package, the results,
    what installs them, a README, and the same as a zip. Chapter 5 run from it, with ncbook imported from the
    handout itself: as handed out (every check says it has no answer yet), with the reference answers (every check
    ticks) and with a wrong answer (its check fails in one line saying what is wrong)."""
    src = student_edition.write_sources(tmp_path / "src")
    archive = student_edition.handout(src, tmp_path / "ncbook-student")
    out = tmp_path / "ncbook-student"
    for name in ("README.md", "requirements.txt", "pyproject.toml", "Makefile", "jupytext.toml",
                 "ncbook/exercises.py", "results/jacot_bounds"):
        assert (out / name).exists(), name
    assert sorted(p.name for p in (out / "book").glob("*.ipynb")) == sorted(md.with_suffix(".ipynb").name
                                                                           for md in CHAPTERS)
    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
    assert {f"ncbook-student/{p.relative_to(out)}" for p in out.rglob("*") if p.is_file()} <= names
    assert not any("{solution" in p.read_text() for p in (out / "book").glob("*.md"))

    env = {k: v for k, v in os.environ.items() if k != "NCBOOK_RESULTS"} | {"PYTHONPATH": str(out),
                                                                            "TQDM_DISABLE": "1"}
    md = ROOT / "book" / "ch05_balanced.md"
    where = nbformat.v4.new_code_cell("import ncbook; print(ncbook.__file__)")
    runs = {"as handed out": student_edition.student_notebook(md),
            "reference": student_edition.student_notebook(md, student_edition.reference_answers(md.read_text())),
            "wrong": student_edition.student_notebook(md, {"ex-ch5-kernel": "answer = {'1 - NC3': 1, 'eps2': 1, "
                                                                             "'kernel mass': 2}"})}
    results = {}
    for name, nb in runs.items():
        nb.cells.append(where)
        path = out / "book" / f"run-{name.replace(' ', '-')}.ipynb"
        nbformat.write(nb, path)
        results[name] = _run(path, out / "book", env)
    checks = {name: [c for c in nb.cells if "check" in c.metadata.get("tags", [])] for name, nb in results.items()}

    nb = results["as handed out"]
    assert nb.metadata["_rc"] == 0, nb.metadata["_stderr"]
    assert nb.cells[-1].outputs[0]["text"].strip() == str(out / "ncbook" / "__init__.py")
    assert [c.outputs[0]["text"].split(":")[0] for c in checks["as handed out"]] == ["Exercise 5.3"]
    assert "no answer yet" in checks["as handed out"][0].outputs[0]["text"]
    nb = results["reference"]
    assert nb.metadata["_rc"] == 0, nb.metadata["_stderr"]
    assert checks["reference"][0].outputs[0]["text"] == "✓ Exercise 5.3: right.\n"
    nb = results["wrong"]
    assert nb.metadata["_rc"] != 0
    error = checks["wrong"][0].outputs[0]
    assert error["output_type"] == "error" and error["ename"] == "WrongAnswer"
    assert error["traceback"] == ["✗ Exercise 5.3, not yet right: 1 - NC3 does not grow like leak^1: print it for "
                                  "the three leaks and compare."]


def test_the_instructors_page_lists_the_checked_exercises_and_the_rest():
    page = (ROOT / "book" / "instructors.md").read_text()
    section = page.split("## Exercises that check themselves")[1].split("\n## ")[0]
    table = re.findall(r"^\| (\d\.\d) \|", section, re.M)
    assert table == [c.number for c in exercises.CHECKS.values()]
    rest = re.search(r"The other \w+ ask for a proof or an explanation \(([\d., \n]+)\)", section).group(1)
    assert sorted(re.findall(r"\d\.\d", rest)) == sorted(set(exercise_numbers().values()) - set(table))
