"""``python -m ncbook import``: results made in another process under another Python come in checked; every bad one
is refused on one line and leaves the results folder as it was."""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ncbook import cache
from ncbook.__main__ import main
from ncbook.runner import get

from helpers import stored_data

pytestmark = pytest.mark.slow       # a run in a subprocess of another Python: `pytest --runslow`

ROOT = Path(__file__).resolve().parents[1]


def other_python() -> str:
    """A venv beside the repository whose Python is another version than this one (`make install PYTHON=...`
    makes one), else this interpreter (another process all the same)."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    for exe in sorted(ROOT.glob(".venv*/bin/python")):
        out = subprocess.run([str(exe), "-c", "import sys, torch; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip() != here:
            return str(exe)
    return sys.executable


@pytest.fixture(scope="module")
def made_elsewhere(tmp_path_factory) -> Path:
    """``out/results/jacot_mlp/tiny.*``, made by ``python -m ncbook run`` in another process (another Python where
    there is one), as a GPU machine returns its results under $OUT."""
    out = tmp_path_factory.mktemp("elsewhere") / "out"
    env = {**os.environ, "NCBOOK_RESULTS": str(out / "results"), "TQDM_DISABLE": "1"}
    run = subprocess.run([other_python(), "-m", "ncbook", "run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"],
                         env=env, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return out


@pytest.fixture
def results(tmp_path, monkeypatch):
    root = tmp_path / "results"
    monkeypatch.setattr(cache, "RESULTS_DIR", root)
    root.mkdir()
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def tar_of(folder: Path, into: Path) -> Path:
    archive = into / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="out")
    return archive


def test_a_result_made_under_another_python_imports_and_verifies(made_elsewhere, results, tmp_path, capsys):
    made = json.loads((made_elsewhere / "results" / "jacot_mlp" / "tiny.json").read_text())
    assert main(["import", str(tar_of(made_elsewhere, tmp_path))]) == 0
    assert "jacot_mlp   tiny    imported" in capsys.readouterr().out
    manifest = json.loads((results / "jacot_mlp" / "tiny.json").read_text())
    assert manifest["provenance"] == made["provenance"] and manifest["key"] == made["key"]
    assert manifest["imported"][0]["from"] == "results.tar.gz"
    assert main(["verify"]) == 0 and "1 of 1 stored results verified" in capsys.readouterr().out
    elsewhere = get("jacot_mlp", "tiny", made_elsewhere / "results")
    here = get("jacot_mlp", "tiny")
    assert sorted(here) == sorted(elsewhere) and all(here[k].tobytes() == elsewhere[k].tobytes() for k in here)
    before = snapshot(results)                                   # again, from the folder: nothing to do
    assert main(["import", str(made_elsewhere)]) == 0
    assert "unchanged" in capsys.readouterr().out and snapshot(results) == before


def damaged(made_elsewhere: Path, tmp_path: Path, how: str) -> Path:
    """A copy of the results made elsewhere, damaged one way."""
    copy = tmp_path / how / "out"
    shutil.copytree(made_elsewhere, copy)
    folder = copy / "results" / "jacot_mlp"
    manifest_path = folder / "tiny.json"
    manifest = json.loads(manifest_path.read_text())
    data = stored_data(copy / "results", "jacot_mlp", "tiny")
    if how == "corrupted":
        data.write_bytes(data.read_bytes()[:-8] + b"\0" * 8)
    elif how == "stale":
        manifest["key"] = "0" * 16
    elif how == "edited":
        manifest["config"]["lr"] = 1.0
    elif how == "malformed":
        del manifest["files"]
    elif how == "missing":
        data.unlink()
    elif how == "pickled":
        buf = io.BytesIO()
        import numpy as np

        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        data.write_bytes(buf.getvalue())
        manifest["files"] = {data.name: hashlib.sha256(data.read_bytes()).hexdigest()}
    if how != "corrupted" and how != "missing":
        manifest_path.write_text(json.dumps(manifest))
    return copy


@pytest.mark.parametrize("how, says", [("corrupted", "is corrupted"), ("stale", "is stale"),
                                       ("edited", "not the one its key was made from"), ("malformed", "malformed"),
                                       ("missing", "is missing"), ("pickled", "not a readable .npz")])
def test_a_bad_result_is_refused_on_one_line_and_leaves_the_folder_as_it_was(made_elsewhere, results, tmp_path,
                                                                            capsys, how, says):
    ok = damaged(made_elsewhere, tmp_path, "none")
    assert main(["import", str(ok)]) == 0                          # a current result is here already
    (results / "other").mkdir()
    before = snapshot(results)
    capsys.readouterr()
    assert main(["import", str(tar_of(damaged(made_elsewhere, tmp_path, how), tmp_path))]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("jacot_mlp"))
    assert "refused" in line and says in line, out
    assert "Traceback" not in out and "0 of 1 results imported or already here; 1 refused" in out
    assert snapshot(results) == before


def test_another_current_result_is_kept_unless_replace(made_elsewhere, results, tmp_path, capsys):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0     # made here
    mine = json.loads((results / "jacot_mlp" / "tiny.json").read_text())
    theirs = damaged(made_elsewhere, tmp_path, "other")
    manifest_path = theirs / "results" / "jacot_mlp" / "tiny.json"
    manifest = json.loads(manifest_path.read_text())              # another current result of the same tag: same
    data = stored_data(theirs / "results", "jacot_mlp", "tiny")    # key and arrays, rewritten as another file
    import numpy as np

    with np.load(data) as npz:
        arrays = {k: npz[k] for k in npz.files}
    data.unlink()
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    (data.parent / f"tiny.{digest[:12]}.npz").write_bytes(buf.getvalue())
    manifest["files"] = {f"tiny.{digest[:12]}.npz": digest}
    manifest_path.write_text(json.dumps(manifest))
    before = snapshot(results)
    assert main(["import", str(theirs)]) == 0
    assert "kept" in capsys.readouterr().out and snapshot(results) == before
    assert main(["import", str(theirs), "--replace"]) == 0
    assert "imported" in capsys.readouterr().out
    assert sorted(p.name for p in (results / "jacot_mlp").iterdir()) == sorted(["tiny.json", f"tiny.{digest[:12]}.npz"])
    assert json.loads((results / "jacot_mlp" / "tiny.json").read_text())["key"] == mine["key"]
    assert main(["verify"]) == 0


def test_what_is_not_results_is_refused_in_one_line(results, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../../escape/jacot_mlp/tiny.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    (tmp_path / "truncated.tar.gz").write_bytes(evil.read_bytes()[:20])
    for path, says in [(tmp_path / "nowhere", "does not exist"), (tmp_path / "empty", "holds no results"),
                       (tmp_path / "notes.txt", "neither a folder nor a .tar.gz"),
                       (evil, "not a readable .tar.gz"), (tmp_path / "truncated.tar.gz", "not a readable")]:
        with pytest.raises(SystemExit) as err:
            main(["import", str(path)])
        assert says in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert not (tmp_path.parent / "escape").exists() and snapshot(results) == {}
    linked = tmp_path / "linked.tar.gz"
    target = tmp_path / "target.json"
    target.write_text("{}")
    with tarfile.open(linked, "w:gz") as tar:
        info = tarfile.TarInfo("out/jacot_mlp/tiny.json")
        info.type, info.linkname = tarfile.SYMTYPE, str(target)
        tar.addfile(info)
    with pytest.raises(SystemExit) as err:
        main(["import", str(linked)])
    assert "holds no results" in str(err.value)
    assert snapshot(results) == {}


def without_filters(monkeypatch) -> None:
    """This Python made to behave as one before 3.11.4 (Debian 12's 3.11.2): no ``tarfile.data_filter``, and
    ``extractall`` refuses the ``filter`` keyword."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)      # (absent already before 3.11.4)
    extractall = tarfile.TarFile.extractall

    def old_extractall(self, path=".", members=None, *, numeric_owner=False, **kwargs):
        if kwargs:
            raise TypeError(f"TarFile.extractall() got an unexpected keyword argument {next(iter(kwargs))!r}")
        return extractall(self, path, members, numeric_owner=numeric_owner)

    monkeypatch.setattr(tarfile.TarFile, "extractall", old_extractall)


def unpacked(archive: Path, into: Path) -> tuple[str, dict[str, tuple[int, bytes]]]:
    """What ``unpack`` makes of ``archive``: its error line (or ""), and every path it wrote with its mode and bytes."""
    from ncbook.transfer import ImportProblem, unpack
    into.mkdir(parents=True)
    try:
        said = "; ".join(unpack(archive, into))
    except ImportProblem as err:
        said = str(err).replace(str(archive), "ARCHIVE")
    return said, {str(p.relative_to(into)): (p.stat().st_mode & 0o7777, p.read_bytes() if p.is_file() else b"")
                  for p in sorted(into.rglob("*"))}


def test_every_python_unpacks_and_refuses_the_same_members(made_elsewhere, results, tmp_path, monkeypatch, capsys):
    """Where tarfile has no extraction filters (Python before 3.11.4), `import` still takes a good archive, and every
    archive comes out member for member as the ``data`` filter makes it: the same files, modes and bytes, the same
    refusals. Fails where `import` passes ``filter=`` to a Python that has none."""
    def member(tar, name, mode=0o644, data=b"{}", kind=tarfile.REGTYPE):
        info = tarfile.TarInfo(name)
        info.mode, info.type, info.size = mode, kind, len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

    cases = {"escape": [("out/../../x.json",)], "absolute": [("/out/abs.json",)], "setuid": [("out/s", 0o4777)],
             "private": [("out/p", 0o400)], "run": [("out/r", 0o700)],
             "through": [("out/d", 0o755, b"", tarfile.DIRTYPE), ("out/d/../../../y",)],
             "link": [("out/l", 0o777, b"", tarfile.SYMTYPE), ("out/ok.json",)]}
    archives = {}
    for name, members in cases.items():
        archives[name] = tmp_path / f"{name}.tar.gz"
        with tarfile.open(archives[name], "w:gz") as tar:
            for m in members:
                member(tar, *m)
    with_filter = {name: unpacked(a, tmp_path / "with" / name) for name, a in archives.items()}
    assert "would land outside" in with_filter["escape"][0] and with_filter["escape"][1] == {}
    assert with_filter["setuid"][1]["out/s"][0] == 0o755 and with_filter["private"][1]["out/p"][0] == 0o600
    assert "out/abs.json" in with_filter["absolute"][1] and "out/ok.json" in with_filter["link"][1]
    without_filters(monkeypatch)
    assert {name: unpacked(a, tmp_path / "without" / name) for name, a in archives.items()} == with_filter
    assert main(["import", str(tar_of(made_elsewhere, tmp_path))]) == 0
    assert "jacot_mlp   tiny    imported" in capsys.readouterr().out and main(["verify"]) == 0
    assert not [p for p in tmp_path.rglob("*") if p.name in ("x.json", "y")]
