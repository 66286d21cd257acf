"""``python -m ncbook run --all``: every result of a scale that is not current, cheapest first, within a budget,
packed for ``import`` (ncbook.batch)."""

import tarfile

import pytest

from ncbook import batch, cache
from ncbook.__main__ import main
from ncbook.runner import Run, cached_current
from ncbook.transfer import import_results

pytestmark = pytest.mark.slow       # runs in subprocesses: `pytest --runslow`


@pytest.fixture
def results(tmp_path, monkeypatch):
    root = tmp_path / "results"
    monkeypatch.setattr(cache, "RESULTS_DIR", root)
    monkeypatch.setenv("NCBOOK_RESULTS", str(root))
    return root


def test_pending_is_cheapest_first_and_leaves_out_what_is_current(results):
    plan = batch.pending("tiny", "cpu")
    assert [e for _, e in plan] == sorted(e for _, e in plan) and len(plan) == 14
    cheapest = plan[0][0].name
    assert batch.run_one(plan[0][0], "cpu", 600) == "made"
    assert cached_current(Run.of(cheapest, "tiny")) is not None
    assert cheapest not in [r.name for r, _ in batch.pending("tiny", "cpu")]


def test_the_run_in_progress_stops_at_the_budget_and_the_rest_are_not_started(results, tmp_path):
    sleeper = tmp_path / "python"                     # stands in for a run far longer than the budget
    sleeper.write_text("#!/bin/sh\nexec sleep 600\n")
    sleeper.chmod(0o755)
    steps = batch.run_all("tiny", "cpu", budget_s=1.0, names=["jacot_mlp", "linear_head"], python=str(sleeper))
    assert [s.status.split(" (")[0] for s in steps] == ["stopped at the budget", "not started: the budget is spent"]


def test_what_it_makes_is_packed_and_imports_elsewhere(results, tmp_path, capsys):
    names = [r.name for r, _ in batch.pending("tiny", "cpu")][:2]
    steps = batch.run_all("tiny", "cpu", budget_s=600, names=names)
    assert [s.status for s in steps] == ["made", "made"]
    archive = batch.pack(steps, "tiny", tmp_path / "out.tar.gz")
    with tarfile.open(archive) as tar:
        assert sorted({m.name.split("/")[1] for m in tar.getmembers()}) == sorted(names)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outcomes, skipped = import_results(archive, root=elsewhere)
    assert [o.status for o in outcomes] == ["imported", "imported"] and not skipped


def test_the_command_line_refuses_what_it_cannot_do(results):
    for argv, says in [(["run", "--all", "--scale", "tiny", "--budget-min", "0"], "--budget-min must be > 0"),
                       (["run", "jacot_mlp", "--all", "--scale", "tiny"], "give no name"),
                       (["run", "--scale", "tiny"], "run needs an experiment's name"),
                       (["run", "jacot_mlp", "--scale", "tiny", "--budget-min", "3"], "go with --all"),
                       (["run", "jacot_mlp", "--scale", "tiny", "--archive", "x.tar.gz"], "go with --all"),
                       (["relay", "--out", "o", "--scale", "tiny", "--budget-min", "0"], "--budget-min must be > 0")]:
        with pytest.raises(SystemExit, match=says):
            main(argv)


def test_a_run_stopped_by_sigint_says_so_on_one_line_and_keeps_its_checkpoint(results):
    """What ``run --all`` does at its budget: SIGINT to ``python -m ncbook run``. The run stops with one line on
    stderr, no traceback, exit status 130, its checkpoint written at the step it stopped. It waits for the
    checkpoint's file, not a guessed time; one thread, so that a loaded machine's other processes do not slow the
    tiny steps a hundredfold (seen: 14 minutes to the first checkpoint at two threads beside a test run, 2 seconds
    alone)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "ncbook", "run", "jacot_mlp", "--scale", "tiny", "--set", "steps=50000",
           "--set", "record_every=50000"]
    env = os.environ | {"TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    # started with SIGINT ignored, as a background job of a non-interactive shell is (a CI run under nohup, a GPU
    # session's command): the run must still stop (seen: exit 0 after all 50,000 steps, the signal ignored)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 600
        while (not list((results / ".checkpoints").glob("*.pt")) and proc.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before its first checkpoint was seen"
        assert list((results / ".checkpoints").glob("*.pt")), "no checkpoint was written in 10 minutes"
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=300)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines() == [err.strip()], err
    # it ends the step it was taking and writes its checkpoint there (train.stop_on_signals), and says so
    import torch

    [ckpt] = (results / ".checkpoints").glob("*.pt")
    step = torch.load(ckpt, weights_only=True)["step"]
    assert err.strip() == f"jacot_mlp: stopped by SIGINT at step {step}, its checkpoint written there; the same " \
                          "command resumes it", err
