"""The command line on the `tiny` scale: run, list, verify, sweep (processes and submitit's local executor)."""

import pytest
import torch

from ncbook import cache
from ncbook.__main__ import main


@pytest.fixture
def results(tmp_path, monkeypatch):
    root = tmp_path / "results"
    monkeypatch.setattr(cache, "RESULTS_DIR", root)
    monkeypatch.setenv("NCBOOK_RESULTS", str(root))         # for the worker processes of a sweep
    return root


def test_run_list_verify(results, capsys):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu"]) == 0
    assert (results / "jacot_mlp" / "tiny.npz").exists()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    assert ["jacot_mlp", "tiny", "cached"] in [r[:3] for r in rows]
    assert ["jacot_mlp", "cpu", "not", "cached"] in [r[:4] for r in rows]
    assert main(["verify"]) == 0
    assert "1 of 1 shipped results verified" in capsys.readouterr().out
    (results / "jacot_mlp" / "tiny.npz").write_bytes(b"garbage")
    assert main(["verify"]) == 1
    assert "tiny.npz is corrupted" in capsys.readouterr().out


def test_run_with_overrides_and_seeds(results):
    assert main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--seeds", "3",
                 "--set", "steps=20"]) == 0
    assert (results / "jacot_mlp" / "tiny--seeds=(3,),steps=20.npz").exists()
    assert main(["verify"]) == 0


def test_bad_requests_fail_clearly(results):
    with pytest.raises(SystemExit, match="has no setting 'speed'"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--set", "speed=3"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="no CUDA device"):
            main(["run", "jacot_mlp", "--scale", "tiny", "--device", "cuda"])


@pytest.mark.parametrize("executor", ["process", "submitit-local"])
def test_sweep_lands_every_point_in_the_cache(results, tmp_path, executor, capsys):
    assert main(["sweep", "jacot_mlp", "--scale", "tiny", "--device", "cpu", "--grid", "steps=10,20",
                 "--workers", "2", "--executor", executor, "--log-dir", str(tmp_path / "logs")]) == 0
    assert sorted(p.name for p in (results / "jacot_mlp").glob("*.json")) == ["tiny--steps=10.json",
                                                                             "tiny--steps=20.json"]
    assert main(["verify"]) == 0


def test_missing_full_dataset_names_the_fix(results, tmp_path):
    with pytest.raises(SystemExit, match="--set download=True"):
        main(["run", "jacot_mlp", "--scale", "paper", "--device", "cpu", "--set", f"data_root={tmp_path}"])
    assert not (results / "jacot_mlp").exists()
