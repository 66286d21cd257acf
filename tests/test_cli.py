"""The command line on the `tiny` scale: run, list, verify, sweep (processes and submitit's local executor)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import ncbook.train
from ncbook import cache
from ncbook.__main__ import main

from helpers import stored_data

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from check_variants import VARIANTS  # noqa: E402  (the CPUs the book is checked on, defined once)

pytestmark = pytest.mark.slow       # the command line, in this process and in subprocesses: `pytest --runslow`


@pytest.fixture
def results(tmp_path, monkeypatch):
    root = tmp_path / "results"
    monkeypatch.setattr(cache, "RESULTS_DIR", root)
    monkeypatch.setenv("NCBOOK_RESULTS", str(root))         # for the worker processes of a sweep
    return root


def test_run_list_verify(results, capsys):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0
    assert stored_data(results, "jacot_mlp", "tiny").exists()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    assert ["jacot_mlp", "tiny", "cached"] in [r[:3] for r in rows]
    assert ["jacot_mlp", "cpu", "not", "cached"] in [r[:4] for r in rows]
    assert "FLOPs" in out and "est. cpu" in out                          # a cost estimate for every scale
    paper = next(r for r in rows if r[:2] == ["jacot_mlp", "paper"])
    assert paper[2:4] == ["not", "cached"] and paper[5] == "P" and paper[-1] in ("h", "days")
    assert main(["verify"]) == 0
    assert "1 of 1 stored results verified" in capsys.readouterr().out
    stored_data(results, "jacot_mlp", "tiny").write_bytes(b"garbage")
    assert main(["verify"]) == 1
    assert re.search(r"tiny\.\w+\.npz is corrupted", capsys.readouterr().out)


def test_run_with_overrides_and_seeds(results):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--seeds", "3",
                 "--set", "steps=20"]) == 0
    assert stored_data(results, "jacot_mlp", "tiny--seeds=(3,),steps=20").exists()
    assert main(["verify"]) == 0


def test_bad_requests_fail_clearly(results):
    with pytest.raises(SystemExit, match="has no setting 'speed'"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "speed=3"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="no CUDA device"):
            main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cuda"])
    with pytest.raises(SystemExit, match="must be cpu, cuda, cuda:N or auto, got 'gpu'"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "gpu"])
    with pytest.raises(SystemExit, match="no CUDA device|numbered from 0"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", f"cuda:{torch.cuda.device_count()}"])


@pytest.mark.parametrize("executor", ["process", "submitit-local"])
def test_sweep_lands_every_point_in_the_cache(results, tmp_path, executor, capsys):
    assert main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "steps=10,20",
                 "--workers", "2", "--executor", executor, "--log-dir", str(tmp_path / "logs")]) == 0
    manifests = sorted((results / "jacot_mlp").glob("*.json"))
    assert [p.name for p in manifests] == ["tiny--steps=10.json", "tiny--steps=20.json"]
    assert main(["verify"]) == 0
    threads = {json.loads(p.read_text())["provenance"]["cpu_threads"] for p in manifests}
    assert threads == {max(1, torch.get_num_threads() // 2)}     # two at once share the cores, not each take all


def test_missing_full_dataset_names_the_fix(results, tmp_path):
    with pytest.raises(SystemExit, match="--set download=True"):
        main(["run", "jacot_mlp", "--scale", "paper", "--device", "cpu", "--set", f"data_root={tmp_path}"])
    assert not (results / "jacot_mlp").exists()


def test_settings_are_checked_against_their_types_before_any_work(results):
    with pytest.raises(SystemExit, match="takes a whole number, not 'abc'"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "steps=abc"])
    with pytest.raises(SystemExit, match="takes a number, not 'x'"):
        main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "lr=0.1,x"])
    with pytest.raises(SystemExit, match="--workers and --timeout-min must be >= 1, got 0"):
        main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "lr=0.1", "--workers", "0"])
    with pytest.raises(SystemExit, match="invalid settings for jacot_mlp"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "seeds=()"])
    with pytest.raises(SystemExit, match="repeats a seed"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--seeds", "1", "1"])
    with pytest.raises(SystemExit, match="one result per seed"):
        main(["run", "linear_head", "--scale", "tiny", "--device", "cpu", "--seeds", "1", "2"])
    with pytest.raises(SystemExit, match="invalid settings for jacot_mlp: invalid TrainConfig: lr must be > 0"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "lr=-1"])
    with pytest.raises(SystemExit, match=r"invalid settings for linear_head: lr must be > 0 \(got -1.0\)"):
        main(["run", "linear_head", "--scale", "tiny", "--device", "cpu", "--set", "lr=-1"])   # before the run
    assert not results.exists() or not list(results.glob("*/*.json"))


def test_an_int_for_a_float_setting_names_the_same_result(results):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "lr=1"]) == 0
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "lr=1.0"]) == 0
    assert [p.name for p in (results / "jacot_mlp").glob("*.json")] == ["tiny--lr=1.0.json"]


def test_a_current_result_is_not_run_again_unless_forced(results, capsys):
    assert main(["run", "linear_head", "--scale", "tiny", "--device", "cpu", "--seeds", "3"]) == 0
    manifest = results / "linear_head" / "tiny--seed=3.json"
    first, first_file = manifest.read_text(), manifest.stat().st_ino
    assert main(["run", "linear_head", "--scale", "tiny", "--device", "cpu", "--seeds", "3"]) == 0
    assert "already cached and current" in capsys.readouterr().out
    assert manifest.read_text() == first                    # the provenance (date, wall time) was not rewritten
    assert manifest.stat().st_ino == first_file
    assert main(["run", "linear_head", "--scale", "tiny", "--device", "cpu", "--seeds", "3", "--force"]) == 0
    assert "already cached" not in capsys.readouterr().out
    # rewritten (atomically: a new file replaces the old one); comparing the text instead fails when the rerun has
    # the same date to the second and the same wall time, as it can on a fast machine
    assert manifest.stat().st_ino != first_file


def test_a_sweep_keeps_its_cached_points(results, capsys):
    assert main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "steps=10"]) == 0
    before = (results / "jacot_mlp" / "tiny--steps=10.json").read_text()
    capsys.readouterr()
    assert main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "steps=10,20"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()]
    assert ["steps=10", "cached"] in rows and ["steps=20", "ok"] in rows
    assert (results / "jacot_mlp" / "tiny--steps=10.json").read_text() == before


def test_an_unreadable_checkpoint_is_named_not_loaded(results):
    from ncbook.runner import checkpoint_path

    ckpt = checkpoint_path("jacot_mlp", "tiny")
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit, match=r"jacot_mlp stopped: checkpoint .*jacot_mlp--tiny--\w+\.pt cannot be read"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"])
    assert not (results / "jacot_mlp").exists()
    ckpt.unlink()
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0


def test_a_stopped_run_resumes_from_the_command_line_to_the_same_result(results, tmp_path, kill_at_step, capsys,
                                                                         monkeypatch):
    import numpy as np

    restore = kill_at_step(ncbook.train, 40, "momentum_step")
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 130      # Ctrl-C: one line, no trace
    assert "run: interrupted" in capsys.readouterr().err
    restore()
    assert not (results / "jacot_mlp").exists()                          # nothing half-written
    assert main(["list"]) == 0
    assert "1 checkpoint file(s) of stopped runs" in capsys.readouterr().out
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0
    assert "resuming from the checkpoint" in capsys.readouterr().err
    assert not list((results / ".checkpoints").iterdir())                # cleaned up once stored
    resumed = np.load(stored_data(results, "jacot_mlp", "tiny"))
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path / "uninterrupted")
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0
    fresh = np.load(stored_data(tmp_path / "uninterrupted", "jacot_mlp", "tiny"))
    assert sorted(resumed.files) == sorted(fresh.files)
    for k in fresh.files:
        np.testing.assert_array_equal(resumed[k], fresh[k])


def test_list_and_verify_report_a_broken_manifest_instead_of_crashing(results, capsys):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "steps=20"]) == 0
    assert main(["list"]) == 0
    rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()]
    assert ["jacot_mlp", "tiny--steps=20", "cached"] in rows             # a sweep point is listed too
    (results / "jacot_mlp" / "tiny--steps=20.json").write_text("{not json")
    assert main(["list"]) == 0
    rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()]
    assert ["jacot_mlp", "tiny--steps=20", "corrupted"] in rows
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "jacot_mlp/tiny--steps=20: manifest " in out
    assert "tiny--steps=20.json is malformed: it is not valid JSON" in out
    assert "`python -m ncbook run jacot_mlp --scale tiny --set steps=20`" in out


def test_a_process_sweep_from_the_real_command_line(results):
    """`python -m ncbook sweep`, as a user types it: the spawned workers must import the run function by name (one
    defined in ``__main__`` cannot be, which calling ``main()`` in-process would not show)."""
    env = {**os.environ, "NCBOOK_RESULTS": str(results), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "ncbook", "sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu",
                           "--grid", "steps=10,20", "--workers", "2"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (results / "jacot_mlp").glob("*.json")) == ["tiny--steps=10.json",
                                                                             "tiny--steps=20.json"]


def test_list_notes_shows_every_experiments_assumptions(capsys):
    assert main(["list", "--notes"]) == 0
    out = capsys.readouterr().out
    from ncbook.registry import EXPERIMENTS, SCALES

    assert SCALES == ("tiny", "cpu", "gpu", "paper")
    assert all("[gpu] " in out and "gpu" in exp.notes and "paper" in exp.notes for exp in EXPERIMENTS.values())
    for name, exp in EXPERIMENTS.items():
        assert f"{name}: {exp.description}" in out
        assert all(note in out for note in exp.notes.values())
    assert "  [cpu vs paper] λt 2.1 (1.6; matched); per class 50 (5,000; ours / paper = 0.01)" in out  # resnet_fig1
    assert out.count("vs paper]") == 2 * len(EXPERIMENTS)                # cpu and gpu, each against the paper
    with pytest.raises(SystemExit):
        main(["run", "jacot_mlp", "--scale", "huge"])             # the choices come from the registry


READ_RESULT = """
import hashlib, numpy as np
from ncbook.runner import get
r = get("jacot_mlp", "tiny")
print(hashlib.sha256(b"".join(np.ascontiguousarray(r[k]).tobytes() for k in sorted(r))).hexdigest())
print(f"final loss {r['loss'][..., -1].mean():.6f}, NC1 {np.nanmean(r['nc1_trace_ratio'][..., -1, :]):.6e}")
"""

def test_a_result_made_on_one_cpu_verifies_and_reads_the_same_on_another(results):
    """A result made under one arithmetic variant of scripts/check_variants.py (an old CPU, one thread) verifies
    under another (MKL's AVX2 branch, four threads) and loads the same arrays, so a chapter prints the same text from
    it: nothing in the key or the check depends on the machine that made it."""
    def python(variant, *args):
        env = {**os.environ, **VARIANTS[variant], "NCBOOK_RESULTS": str(results), "TQDM_DISABLE": "1"}
        out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    python("sse", "-m", "ncbook", "run", "jacot_mlp", "--scale", "tiny", "--device", "cpu")
    manifest = json.loads((results / "jacot_mlp" / "tiny.json").read_text())
    assert manifest["provenance"]["cpu_threads"] == 1                 # made under the old-CPU variant
    assert "1 of 1 stored results verified" in python("avx2", "-m", "ncbook", "verify")
    assert python("avx2", "-c", READ_RESULT) == python("sse", "-c", READ_RESULT)


def test_version_and_a_missing_results_folder_say_one_line(monkeypatch, capsys):
    """Issue 51, point 3: --version prints the package's version; without a results folder list and verify say in one
    line what to set (exit 2), instead of a traceback."""
    from ncbook import __main__ as cli
    from ncbook import __version__

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"ncbook {__version__}"
    monkeypatch.setattr(cli.cache, "RESULTS_DIR", None)
    for command in ("list", "verify"):
        assert cli.main([command]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith(f"{command}: ncbook has no results folder: set "
                                                             "NCBOOK_RESULTS"), err


def test_list_says_a_missing_results_folder_as_verify_does(results, capsys):
    """Issue 59: with NCBOOK_RESULTS at a folder that is not there, list said "0 stored results" (exit 0) where verify
    says the folder is missing; now both say it, and both exit 1; issue 75: list says it alone, without first
    printing a table of nothing, and says what to set."""
    assert not results.exists()
    assert main(["list"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"list: {results}: the results folder is missing: set NCBOOK_RESULTS to the results/ "
                                "of the book's source (a clone or ncbook-source.zip) or to a folder of your own, or "
                                "run the experiments"]
    assert main(["verify"]) == 1 and "the results folder is missing" in capsys.readouterr().out


def test_a_setting_of_the_wrong_type_is_named_with_the_option_in_one_line(results):
    """Issues 59 and 75: `--set lr=abc` printed "MLPCollapse.lr is <class 'float'>: ...", then "takes a float;
    expected float" (and "a int"); now the option as typed, the setting, its type in words and the value refused."""
    for argv, says in [(["run", "jacot_mlp", "--set", "lr=abc"], "--set lr=abc: MLPCollapse.lr takes a number, "
                                                                 "not 'abc'"),
                       (["run", "jacot_mlp", "--set", "steps=abc"], "--set steps=abc: MLPCollapse.steps takes a "
                                                                    "whole number, not 'abc'"),
                       (["run", "jacot_mlp", "--set", "seeds=a"], "--set seeds=a: MLPCollapse.seeds takes a tuple "
                                                                  "of whole numbers, not 'a'"),
                       (["sweep", "jacot_mlp", "--grid", "lr=0.1,x"], "--grid lr=0.1,x: MLPCollapse.lr takes a "
                                                                      "number, not 'x'")]:
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--scale", "tiny", "--device", "cpu"])
        assert str(stop.value) == says and "<class" not in str(stop.value)
