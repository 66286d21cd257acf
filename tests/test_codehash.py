"""A result's key hashes exactly the code it runs (ncbook.codehash): comments, docstrings and formatting change no
key; a real change in a function makes stale exactly the results whose run reaches it."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ncbook.codehash import normal_form_of, reachable
from ncbook.registry import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
KEYS = """import json, sys; sys.path.insert(0, sys.argv[1])
from ncbook.codehash import code_hash; from ncbook.registry import EXPERIMENTS
print(json.dumps({name: code_hash(exp.run) for name, exp in EXPERIMENTS.items()}))"""


def keys_of(*package_parents: Path) -> list[dict[str, str]]:
    """Each copy's result keys, from fresh interpreters run side by side (each import of ncbook takes seconds)."""
    procs = [subprocess.Popen([sys.executable, "-c", KEYS, str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=p) for p in package_parents]
    outs = [proc.communicate() for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in outs]
    return [json.loads(out) for out, _ in outs]


def edit(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def with_comments_and_docstrings(source: str) -> str:
    """Every def/class line followed by a comment line, every docstring reworded, blank lines doubled."""
    lines = source.split("\n")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            i, col = body[0].lineno - 1, body[0].col_offset
            quote = lines[i][col:col + 3]
            lines[i] = lines[i][:col + 3] + "Reworded. " + lines[i][col + 3:] if quote in ('"""', "'''") else lines[i]
    out = []
    for line in lines:
        out.append(line)
        stripped = line.strip()
        if re.match(r"(async )?(def|class) ", stripped) and stripped.endswith(":"):
            out.append(" " * (len(line) - len(line.lstrip())) + "    # a comment that changes nothing")
        elif not stripped:
            out.append("")
    return "\n".join(out)


def with_statement_in(name: str):
    """An edit that adds a statement at the top of function ``name``'s body (after its docstring)."""
    def change(source: str) -> str:
        fn = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)
        lines = source.split("\n")
        after = fn.body[0].end_lineno
        lines.insert(after, " " * fn.body[0].col_offset + "_changed = 1")
        return "\n".join(lines)
    return change


def test_normal_form_ignores_comments_docstrings_and_layout():
    a = 'def f(x, y=2):\n    """Doc."""\n    # why\n    return x + y\n'
    b = 'def f(x,\n      y = 2):\n    """Other doc, longer."""\n\n    return (x +\n            y)  # sum\n'
    c = 'def f(x, y=2):\n    """Doc."""\n    return x - y\n'
    assert normal_form_of(a) == normal_form_of(b) != normal_form_of(c)


def test_reachable_code_is_what_the_run_uses():
    names = {n for n, _ in reachable(EXPERIMENTS["tirer_blur"].run)}
    assert {"run_blurred_classes", "blur_classes", "class_stats", "MLP", "BlurredClasses"} <= names
    assert "gd_with_sharpness" not in names and "plot_blur" not in names      # not run, only drawn
    assert "gd_with_sharpness" in {n for n, _ in reachable(EXPERIMENTS["edge_of_stability"].run)}
    assert "_shift_project" in names                     # a numba kernel counts by its Python source
    consts = dict(reachable(EXPERIMENTS["jacot_bounds"].run))      # two constants, one int object: both counted
    assert consts["SHIFT_BLOCK"] == "SHIFT_BLOCK=256" and consts["LANCZOS_MIN_DIM"] == "LANCZOS_MIN_DIM=256"


def test_comments_keep_every_key_and_a_real_change_stales_exactly_its_users(tmp_path: Path):
    stages = [tmp_path / str(k) for k in range(5)]        # each stage: the previous one plus one edit
    shutil.copytree(ROOT / "ncbook", stages[0] / "ncbook", ignore=shutil.ignore_patterns("__pycache__"))
    edits = [lambda pkg: [edit(path, with_comments_and_docstrings) for path in pkg.glob("*.py")],  # anywhere
             lambda pkg: edit(pkg / "stability.py", with_statement_in("gd_with_sharpness")),      # a real change
             lambda pkg: edit(pkg / "data.py", with_statement_in("blur_classes")),     # used by one experiment only
             lambda pkg: edit(pkg / "metrics.py", with_statement_in("_shift_project"))]   # inside the numba kernel
    for previous, stage, change in zip(stages, stages[1:], edits):
        shutil.copytree(previous / "ncbook", stage / "ncbook")
        change(stage / "ncbook")
    before, commented, after, final, kernel = keys_of(*stages)

    runs = {exp.run for exp in EXPERIMENTS.values()}           # jacot_resnet_fig1 and _head share their run function
    assert len(before) == len(EXPERIMENTS) and len(set(before.values())) == len(runs)
    assert commented == before
    assert {n for n in before if after[n] != before[n]} == {"edge_of_stability", "trained_ntk"}
    assert {n for n in after if final[n] != after[n]} == {"tirer_blur"}
    measured = {n for n, exp in EXPERIMENTS.items() if "class_stats" in {f for f, _ in reachable(exp.run)}}
    assert len(measured) >= 10 and {n for n, k in kernel.items() if k != final[n]} == measured
