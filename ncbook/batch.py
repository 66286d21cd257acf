"""A GPU session in one command: ``python -m ncbook run --all --scale gpu --budget-min 8`` runs every result of
that scale that is not current, cheapest first (by :mod:`ncbook.cost`'s estimate on the device), each in a process
of its own, stops the one running when the budget is spent (its last checkpoint stays, so the same command in the
next session resumes it), and packs the results it made into one ``.tar.gz`` that ``python -m ncbook import``
takes in on another machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import cache, cost
from .registry import EXPERIMENTS
from .runner import Run, cached_current


@dataclass(frozen=True)
class Step:
    """One result of the batch: its experiment, its estimated seconds on the device, and what became of it (made,
    current, stopped at the budget, not started, failed: the last line the run printed)."""

    experiment: str
    estimate_s: float
    status: str


def pending(scale: str, device: str, names: list[str] | None = None,
            root: Path | None = None) -> list[tuple[Run, float]]:
    """Every experiment of ``names`` (default all) with a ``scale`` whose result is not current in ``root``, with its
    estimated seconds on ``device``, cheapest first."""
    out = []
    for name in names or list(EXPERIMENTS):
        if scale not in EXPERIMENTS[name].scales:
            continue
        run = Run.of(name, scale)
        if cached_current(run, root) is None:
            out.append((run, cost.seconds(cost.estimate(run.config), device)))
    return sorted(out, key=lambda r: (r[1], r[0].name))


def run_one(run: Run, device: str, left_s: float, root: Path | None = None, python: str = sys.executable,
            cmd: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    """``python -m ncbook run`` of one result (or ``cmd``) in a process of its own (its progress and messages shown
    as it goes), stopped by SIGINT (then killed, if it has not stopped a minute later) when ``left_s`` seconds have
    passed: "made", "stopped at the budget ..." or "failed ..."."""
    cmd = cmd or [python, "-m", "ncbook", "run", run.name, "--scale", run.scale, "--device", device]
    env = os.environ | (env or {}) | ({"NCBOOK_RESULTS": str(root)} if root is not None else {})
    proc = subprocess.Popen(cmd, env=env)
    try:
        proc.wait(timeout=max(left_s, 0.001))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return "stopped at the budget (its last checkpoint resumes with the same command)"
    return "made" if proc.returncode == 0 else f"failed ({exit_description(proc.returncode)}; its message is above)"


def exit_description(returncode: int) -> str:
    """A child's exit in words: "exit status 1", or "killed by SIGABRT" for a crash (a negative return code)."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def run_all(scale: str, device: str, budget_s: float, names: list[str] | None = None, root: Path | None = None,
            python: str = sys.executable) -> list[Step]:
    """Run every pending result of ``scale`` (:func:`pending`) within ``budget_s`` seconds of wall time."""
    deadline = time.monotonic() + budget_s
    steps = []
    for run, estimate in pending(scale, device, names, root):
        left = deadline - time.monotonic()
        status = run_one(run, device, left, root, python) if left > 0 else "not started: the budget is spent"
        steps.append(Step(run.name, estimate, status))
    return steps


def pack(steps: list[Step], scale: str, archive: Path, root: Path | None = None) -> Path | None:
    """The results the batch made, as ``results/<experiment>/<manifest and data>`` in one ``.tar.gz`` (written
    atomically; None if it made none)."""
    made = [s.experiment for s in steps if s.status == "made"]
    if not made:
        return None

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as tar:
            for name in made:
                folder, manifest = cache.paths(name, scale, root)
                for f in [manifest.name, *cache.read_manifest(name, scale, root)["files"]]:
                    tar.add(folder / f, arcname=f"results/{name}/{f}")

    cache.atomic_write(archive, write)
    return archive
