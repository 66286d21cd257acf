"""ncbook beyond its clone: the wheel, installed where only its declared core dependencies exist, computes the
metrics; a module of an extra says which extra to install; an installed ncbook has no results folder of its own;
the licences, the citation and the changelog agree with the package."""

import ast
import datetime
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import venv
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def closure(requirements: list[str]) -> set[str]:
    """The installed distributions these requirements need, transitively (extras and markers honoured)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        dist = md.distribution(req.name)
        name = dist.metadata["Name"].lower().replace("_", "-")
        assert str(dist.version) in req.specifier or not req.specifier, f"{name} {dist.version} does not meet {req}"
        if name in seen:
            continue
        seen.add(name)
        todo += [Requirement(r) for r in dist.requires or []]
    return seen


def core_site(target: Path) -> Path:
    """A folder holding, as links into this environment, exactly the distributions ncbook's core dependencies need
    (package folders, modules, shared libraries and their metadata): a site-packages without the book's
    requirements, built in seconds instead of installing torch again."""
    target.mkdir()
    for name in sorted(closure(PROJECT["dependencies"])):
        dist = md.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = Path(dist.locate_file(top))
            if source.exists() and not (target / top).exists() and top != "__pycache__" and not top.endswith(".pth"):
                (target / top).symlink_to(source)
    return target


def package_source(source: Path) -> Path:
    """A copy of what the package is built from (the build leaves nothing in the clone): ncbook/, tests/, the
    licences, pyproject.toml, README.md and MANIFEST.in."""
    for folder in ("ncbook", "tests"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in PROJECT["license-files"] + ["pyproject.toml", "README.md", "MANIFEST.in"]:
        shutil.copy(ROOT / name, source / name)
    return source


@pytest.mark.slow
def test_the_wheel_installs_alone_and_computes_the_metrics(tmp_path: Path):
    source, wheels = package_source(tmp_path / "source"), tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(wheels)],
                   check=True, cwd=tmp_path)
    [wheel] = wheels.glob("ncbook-*.whl")
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    site = next((env / "lib").glob("python3.*/site-packages"))
    (site / "core.pth").write_text(str(core_site(tmp_path / "core")) + "\n")
    python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True)
    check = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "check"], capture_output=True,
                           text=True)
    assert check.returncode == 0, f"the installed wheel's dependencies are not met: {check.stdout}"
    script = textwrap.dedent("""
        import json, torch, ncbook
        from ncbook import bounds, cache, metrics, ufm
        assert "site-packages" in ncbook.__file__, ncbook.__file__
        out = {"results_dir": str(cache.RESULTS_DIR)}
        K, n, d = 4, 25, 6
        g = torch.Generator().manual_seed(0)
        means = torch.randn(K, d, generator=g, dtype=torch.float64)
        y = torch.arange(K).repeat_interleave(n)
        Z = means[y] + 0.1 * torch.randn(K * n, d, generator=g, dtype=torch.float64)
        out["nc1"] = metrics.nc1_trace_ratio(Z, y)
        out["nc2"] = metrics.nc2_condition_number(Z, y)
        try:
            cache.results_dir()
        except cache.CacheError as err:
            out["no_results"] = str(err)
        for module in ("ncbook.plotting", "ncbook.interactive", "ncbook.data", "ncbook.runner"):
            try:
                __import__(module)
            except ImportError as err:
                out[module] = str(err)
        print(json.dumps(out))
    """)
    env_vars = {k: v for k, v in os.environ.items() if k not in ("NCBOOK_RESULTS", "PYTHONPATH")}
    run = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env_vars)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["results_dir"] == "None" and "set NCBOOK_RESULTS" in out["no_results"]
    assert 0 < out["nc1"] < 0.1 and out["nc2"] >= 1
    # the advice names the wheel it came from: 'ncbook[extra]' alone would look on PyPI, where ncbook is not
    assert out["ncbook.plotting"] == ("ncbook.plotting needs matplotlib, PIL, ipywidgets, part of ncbook's 'figures' "
                                      f"extra: pip install 'ncbook[figures] @ {wheel.as_uri()}'")
    assert out["ncbook.interactive"] == out["ncbook.plotting"].replace("plotting", "interactive")
    assert f"'train' extra: pip install 'ncbook[train] @ {wheel.as_uri()}'" in out["ncbook.data"]
    assert "'train' extra" in out["ncbook.runner"]            # the runner reads data: the same one line
    # the console command: --version and --help work in the core install, a command names the extra in one line
    command = env / "bin" / "ncbook"
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, env=env_vars)
    assert version.returncode == 0 and version.stdout.strip() == f"ncbook {PROJECT['version']}", version.stderr
    helped = subprocess.run([str(command), "--help"], capture_output=True, text=True, env=env_vars)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: ncbook") and not helped.stderr
    listed = subprocess.run([str(command), "list"], capture_output=True, text=True, env=env_vars)
    assert listed.returncode == 2 and len(listed.stderr.splitlines()) == 1 and "'train' extra" in listed.stderr
    assert (site / "ncbook" / "py.typed").is_file()           # type checkers read the annotations
    # a stranger's script type-checks against the installed ncbook: right uses pass, the two wrong ones are caught
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import torch
        from ncbook import hooks, metrics
        Z, y = torch.randn(100, 8), torch.arange(10).repeat(10)
        nc1: float = metrics.nc1_trace_ratio(Z, y)
        coherence: float = metrics.coherence(Z, y, global_mean="class_means")
        classes: int = metrics.class_stats(Z, y).num_classes
        route: str = hooks.plan(10, 512)
        wrong: str = metrics.nc1_trace_ratio(Z, y)
        metrics.coherence(Z, y, global_mean="median")
    """))
    checked = subprocess.run([sys.executable, "-m", "mypy", "--python-executable", str(python), "--follow-imports",
                              "silent", "--cache-dir", str(tmp_path / "mypy"), str(script)], capture_output=True,
                             text=True, cwd=tmp_path)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, checked.stdout
    assert "user_script.py:9:" in errors[0] and '"float", variable has type "str"' in errors[0]
    assert "user_script.py:10:" in errors[1] and "Literal['median']" in errors[1]


def test_dependencies_are_ranges_and_every_import_is_declared():
    """No pins in the package's metadata (the book's requirements.txt pins; the library does not), and every
    third-party module ncbook imports belongs to a core dependency or to an extra."""
    declared = PROJECT["dependencies"] + [r for extra in PROJECT["optional-dependencies"].values() for r in extra]
    assert not [r for r in declared if "==" in r], "pinned dependencies in pyproject.toml"
    provides = {"scikit-learn": "sklearn", "pillow": "PIL", "myst-nb": "myst_nb"}
    names = {provides.get(Requirement(r).name, Requirement(r).name) for r in declared}
    imported = set()
    for path in (ROOT / "ncbook").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in ("ncbook", "IPython",
                                                                                         "matplotlib_inline")}
    assert third_party <= names, f"imported but not declared: {sorted(third_party - names)}"


def test_licences_citation_and_changelog_agree_with_the_package():
    assert "MIT License" in (ROOT / "LICENSE").read_text() and PROJECT["license"] == "MIT"
    assert "CC BY 4.0" in (ROOT / "LICENSE-TEXT.md").read_text()
    assert set(PROJECT["license-files"]) == {"LICENSE", "LICENSE-TEXT.md"}
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    # the required keys of the Citation File Format 1.2.0 and the types it prescribes
    assert cff["cff-version"] == "1.2.0" and isinstance(cff["message"], str) and isinstance(cff["title"], str)
    assert cff["type"] in ("software", "dataset") and cff["authors"]
    for person in cff["authors"] + [a for ref in cff["references"] for a in ref["authors"]]:
        assert "name" in person or {"family-names", "given-names"} <= set(person), person
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}                                  # SPDX identifiers
    version = PROJECT["version"]
    assert cff["version"] == version and datetime.date.fromisoformat(cff["date-released"])
    assert all(ref["type"] and ref["title"] and isinstance(ref["year"], int) for ref in cff["references"])
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", changelog, re.M)
    assert "## [Unreleased]" in changelog and versions, "the changelog has no Unreleased section or no version"
    assert versions[0] == (version, cff["date-released"]), "the newest version of the changelog is not the package's"
    readme = (ROOT / "README.md").read_text()
    assert "CITATION.cff" in readme and "CC BY 4.0" in readme and "MIT" in readme
    assert len(readme.splitlines()) <= 120, "the README is a front door: at most 120 lines (detail in docs/)"
    footer = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
    assert "CC BY 4.0" in footer and "MIT" in footer


def test_the_project_urls_are_the_books_repository_or_none():
    """The package's URLs come from the one setting of the book's public repository (``_config.yml``): none while it
    is unset (no invented address), that repository once it is."""
    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    urls = PROJECT.get("urls", {})
    if not repository:
        assert not urls, f"pyproject names URLs {urls} but _config.yml's repository.url is unset"
    else:
        assert urls.get("Repository") == repository and urls.get("Issues") == repository.rstrip("/") + "/issues"


@pytest.mark.slow
def test_the_source_distributions_tests_run(tmp_path: Path):
    """The sdist holds ncbook/ (with py.typed) and the tests of its library modules with every helper they import;
    unpacked, `pytest tests` runs them against the sdist's own ncbook and they pass. The tests that need the book's
    repository (results, chapters, scripts) are not shipped half."""
    import tarfile

    from ncbook.transfer import extract

    source = package_source(tmp_path / "source")
    subprocess.run([sys.executable, "-c", "from setuptools import build_meta; build_meta.build_sdist('dist')"],
                   check=True, cwd=source, capture_output=True)
    [sdist] = (source / "dist").glob("ncbook-*.tar.gz")
    with tarfile.open(sdist) as tar:
        extract(tar, tmp_path / "unpacked", tar.getmembers())       # on every Python (no filters before 3.11.4)
    [root] = (tmp_path / "unpacked").iterdir()
    shipped = sorted(p.name for p in (root / "tests").iterdir())
    assert (root / "ncbook" / "py.typed").is_file() and "test_metrics.py" in shipped and "naive.py" in shipped
    env = {k: v for k, v in os.environ.items() if k not in ("NCBOOK_RESULTS",)} | {"PYTHONPATH": str(root)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and str(root) in subprocess.run(
        [sys.executable, "-c", "import ncbook; print(ncbook.__file__)"], cwd=root, env=env, capture_output=True,
        text=True).stdout
