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
import threading
import time
from collections.abc import Callable
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


GRACE_S = 60.0
"""How long a run stopped by SIGINT has to exit before it is killed: it ends the step it is taking and writes a
checkpoint there (``train.stop_on_signals``); checkpoints are written atomically, so the last whole one stands
either way."""


def run_one(run: Run, device: str, left_s: float, root: Path | None = None, python: str = sys.executable,
            cmd: list[str] | None = None, env: dict[str, str] | None = None,
            stop: Callable[[], str] | None = None) -> str:
    """``python -m ncbook run`` of one result (or ``cmd``) in a process of its own session (its progress and messages
    shown as it goes; a signal to this process's group does not reach it, this process forwards one), stopped by one
    SIGINT when ``left_s`` seconds have passed, when ``stop()`` (polled every second) gives a reason, or when this
    process is interrupted: it writes a checkpoint at the end of its current step and exits (it is killed if it has
    not exited :data:`GRACE_S` later; then its last checkpoint stands).
    "made", "stopped at the budget", "stopped <reason>" or "failed (...; its message: ...)"."""
    cmd = cmd or [python, "-m", "ncbook", "run", run.name, "--scale", run.scale, "--device", device]
    env = os.environ | (env or {}) | ({"NCBOOK_RESULTS": str(root)} if root is not None else {})
    deadline = time.monotonic() + max(left_s, 0.001)
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, start_new_session=True)
    tail: list[str] = []
    reader = threading.Thread(target=_echo, args=(proc.stderr, tail), daemon=True)
    reader.start()
    why = ""
    try:
        while True:
            try:
                proc.wait(timeout=max(min(1.0, deadline - time.monotonic()), 0.001))
                break
            except subprocess.TimeoutExpired:
                why = "at the budget" if time.monotonic() >= deadline else stop() if stop is not None else ""
                if why:
                    _stop(proc)
                    break
    except KeyboardInterrupt:               # run --all interrupted: the run stops as it would at its budget
        _stop(proc)
        raise
    finally:
        reader.join(timeout=5)
    if why:
        return f"stopped {why}"
    if proc.returncode == 0:
        return "made"
    said = next((line for line in reversed(tail) if line.strip()), "")
    return f"failed ({exit_description(proc.returncode)}" + (f"; its message: {said.strip()}" if said else "") + ")"


def _echo(stream, tail: list[str]) -> None:
    """Copy a child's stderr to ours as it comes (progress bars included), keeping its last lines (a failure's
    message, for the ledger)."""
    pending = ""
    while chunk := os.read(stream.fileno(), 4096):
        out = getattr(sys.stderr, "buffer", None)
        if out is not None:
            out.write(chunk)
        else:
            sys.stderr.write(chunk.decode(errors="replace"))
        sys.stderr.flush()
        pending += chunk.decode(errors="replace")
        *lines, pending = pending.replace("\r", "\n").split("\n")
        tail.extend(line for line in lines if line.strip())
        del tail[:-20]
    if pending.strip():
        tail.append(pending)


def _stop(proc: subprocess.Popen) -> None:
    """One SIGINT; killed if it has not exited within :data:`GRACE_S`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
