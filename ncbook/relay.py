"""GPU sessions that add up: a relay across fresh machines (issue 61).

A lent GPU machine is bare every time: the working tree comes over (with the ignored folders it is told to carry),
only what is written under ``$OUT`` comes back, and a session has minutes. So one session is one command,

    python3 -m ncbook relay --state .gpu-state --out "$OUT" --scale gpu --budget-min 9

that starts from the state folder the previous session's ``$OUT`` became (carried in as ``.gpu-state``), and writes
the next state to ``--out``, five files at most (:data:`FILES`), each within :data:`MAX_FILE` bytes:

- ``results.tar.gz``: every result of the plan that is current at the end (made here, finished late, or carried
  in), for ``python -m ncbook import`` at home and for the next session;
- ``checkpoints.tar.gz``: the checkpoints of the runs the budget stopped, their tensors moved to the CPU, so that they
  load on any device, with their clocks (the wall time of the stopped segments, so that the manifest of a result made
  over several sessions counts them all: :func:`ncbook.runner.stopped_segments`); a run whose checkpoints do not fit
  is recorded, and never started again where it cannot finish;
- ``relay.json``: the plan's ledger: each session's device, budget and, per run, its status, seconds spent and the
  step its checkpoint was at when the session started and ended; the measured full wall times per device kind;
- ``bench.json``: ``benchmarks/bench_gpu.py``'s figures, made once per device kind and carried after that;
- ``log.txt``: what the session printed.

The plan runs a carried checkpoint first, then the rest cheapest first by the best estimate there is (a full wall
time measured on this device kind, then the benchmark's prediction, then :mod:`ncbook.cost`'s). A run longer than a
session that can be cut (:mod:`ncbook.pieces`: per seed, per setting) is cut, along one setting after another, until
every piece fits a session, each piece's estimate its share of the whole's by the cost model; the cut is recorded
in the ledger and kept by every later session, and the whole is assembled from its pieces once they are all made
(until then the pieces travel as results). A run that fits a session but not the time left waits for the next; one
longer than any session that cannot be cut runs on, its checkpoint carried, unless its checkpoint is too large to
carry (by its parameters, :func:`ncbook.cost.checkpoint_bytes`, or as measured when one was not carried): then it
waits for a session long enough to finish it. A run that fails with captured steps (``NCBOOK_CAPTURE=1``: a
compile failure) is run again with the eager step, and its manifest says which it used.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import cache, cost
from .batch import run_one
from .pieces import assemble_tree, pieces, settings_to_cut
from .registry import EXPERIMENTS
from .runner import Run, _cli_value, cached_current, clock_path
from .train import CAPTURE_ENV, CAPTURE_FALLBACK_ENV, capture_requested
from .transfer import ImportProblem, extract, import_results

RESULTS, CHECKPOINTS, LEDGER, BENCH, LOG = "results.tar.gz", "checkpoints.tar.gz", "relay.json", "bench.json", "log.txt"
FILES = (RESULTS, CHECKPOINTS, LEDGER, BENCH, LOG)
"""What a session writes to ``--out``: the next session's state, and what comes home."""

MAX_FILE = 16 * 2**20
"""The largest file a session may bring back (the device tool's limit: 8 files of 16 MiB)."""


@dataclass(frozen=True)
class Unit:
    """One result of the plan: an experiment at a scale with its overrides (:class:`~ncbook.runner.Run`)."""

    name: str
    scale: str
    overrides: dict

    @property
    def run(self) -> Run:
        return Run.of(self.name, self.scale, **self.overrides)


def plan_units(scale: str, plan: Path | None = None) -> list[Unit]:
    """The plan: every experiment that has ``scale`` at its defaults, or the units listed in ``plan`` (a JSON list of
    ``{"name", "scale", "overrides"}``; tuples as lists)."""
    if plan is None:
        return [Unit(name, scale, {}) for name in EXPERIMENTS if scale in EXPERIMENTS[name].scales]
    items = json.loads(Path(plan).read_text())
    return [Unit(u["name"], u.get("scale", scale), {k: tuple(v) if isinstance(v, list) else v
                                                     for k, v in u.get("overrides", {}).items()}) for u in items]


def device_kind(device: str) -> str:
    """The name the measured rates are filed under: the GPU's name, or "cpu"."""
    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu"


def checkpoints_of(run: Run, root: Path | None = None) -> list[Path]:
    """The run's checkpoint files (its own and its parts'), those that exist (its clock is packed beside them)."""
    ckpt = run.checkpoint(root)
    return sorted(ckpt.parent.glob(f"{ckpt.stem}*.pt")) if ckpt.parent.is_dir() else []


def checkpoint_step(run: Run, root: Path | None = None) -> int | None:
    """How far the run's checkpoints are: the sum of their steps (None: no checkpoint)."""
    files = checkpoints_of(run, root)
    if not files:
        return None
    return sum(int(torch.load(f, weights_only=True, map_location="cpu").get("step", 0)) for f in files)


def read_ledger(state: Path | None) -> dict:
    """The carried ledger, or a fresh one."""
    path = None if state is None else Path(state) / LEDGER
    if path is not None and path.is_file():
        return {"cuts": {}} | json.loads(path.read_text())
    return {"sessions": [], "full_s": {}, "spent_s": {}, "uncarried": {}, "cuts": {}}


def restore(state: Path | None, root: Path | None = None, say=print) -> None:
    """Bring a carried state in: its results (checked as ``import`` checks them) and its checkpoints (only ``.pt``
    files, and the runs' ``.clock.json``, into the results folder's ``.checkpoints``)."""
    if state is None or not Path(state).is_dir():
        return
    if (Path(state) / RESULTS).is_file():
        try:
            outcomes, _ = import_results(Path(state) / RESULTS, root)
            say(f"carried results: {sum(o.status in ('imported', 'unchanged') for o in outcomes)} of {len(outcomes)} "
                "in")
        except ImportProblem as err:
            say(f"carried results not read: {err}")
    if (Path(state) / CHECKPOINTS).is_file():
        into = cache.results_dir(root) / ".checkpoints"
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(Path(state) / CHECKPOINTS, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith((".pt", ".clock.json"))
                       and "/" not in m.name]
            extract(tar, into, members)
        say(f"carried checkpoints: {len(members)} file(s)")


def estimate(unit: Unit, ledger: dict, bench: dict, kind: str, device: str,
             share: tuple[float, str] | None = None) -> tuple[float, str]:
    """Seconds the unit still needs on this device kind, and whence: a full wall time measured here, less what was
    spent on it; else ``share`` (a piece's share of its whole's estimate, :func:`cut`); else the benchmark's
    prediction (for the experiment at its scale's defaults); else the cost model's; at least as long as it once ran
    unfinished where its checkpoint was then lost."""
    run = unit.run
    full = ledger["full_s"].get(kind, {}).get(f"{unit.name}/{run.tag}")
    if full is not None:
        return max(full - ledger["spent_s"].get(run.key, 0.0), 0.0), "measured"
    if share is not None:
        return _left(ledger, run.key, share[0]), share[1]
    if not unit.overrides and (bench.get("gpu") or "cpu") == kind:          # the benchmark of this device kind
        for row in bench.get("experiments", []):
            if row.get("name") == unit.name:
                return _left(ledger, run.key, float(row["predicted_s"])), "benchmark"
    return _left(ledger, run.key, _seconds(run, device)), "cost model"


def _left(ledger: dict, key: str, total: float) -> float:
    """An estimated total less what was spent on the run, but no less than it once ran unfinished before its
    checkpoint was lost."""
    return max(total - ledger["spent_s"].get(key, 0.0), ledger.get("lost_s", {}).get(key, 0.0), 0.0)


def unit_of(run: Run) -> Unit:
    return Unit(run.name, run.scale, run.overrides)


def _seconds(run: Run, device: str) -> float:
    return cost.seconds(cost.estimate(run.config), device)


def cut(unit: Unit, est: float, whence: str, ledger: dict, kind: str, device: str, session_s: float,
        root: Path | None = None) -> list[tuple[Unit, float, str]]:
    """The unit, or its pieces where it was cut or is to be cut (longer than ``session_s``, no checkpoint of its own to
    resume, a setting to cut along: :func:`ncbook.pieces.settings_to_cut`), each with its estimate: measured, or its
    share of the unit's by the cost model. A new cut is recorded in ``ledger["cuts"]``."""
    run = unit.run
    if cached_current(run, root) is not None:        # made (a piece assembled here or carried in): nothing below it
        return [(unit, est, whence)]
    setting = ledger["cuts"].get(run.key)
    if setting is None and est > session_s and not checkpoints_of(run, root):
        setting = next(iter(settings_to_cut(run)), None)
        if setting is not None:
            ledger["cuts"][run.key] = setting
    if setting is None:
        return [(unit, est, whence)]
    whole, out = _seconds(run, device), []
    for p in pieces(run, setting):
        share = (est * _seconds(p, device) / whole, whence.removesuffix(", its share") + ", its share")
        out += cut(unit_of(p), *estimate(unit_of(p), ledger, {}, kind, device, share), ledger, kind, device,
                   session_s, root)
    return out


def plan(units: list[Unit], ledger: dict, bench: dict, kind: str, device: str, root: Path | None = None,
         session_s: float = float("inf")) -> list[tuple[Unit, float, str, bool]]:
    """The units not current yet, cut where they are longer than ``session_s`` (:func:`cut`), each with its
    estimate, whence, and whether a checkpoint resumes it: the resumed first, then cheapest first."""
    out = []
    for u in units:
        if cached_current(u.run, root) is None:
            for leaf, est, whence in cut(u, *estimate(u, ledger, bench, kind, device), ledger, kind, device,
                                         session_s, root):
                if cached_current(leaf.run, root) is None:
                    out.append((leaf, est, whence, bool(checkpoints_of(leaf.run, root))))
    return sorted(out, key=lambda p: (not p[3], p[1], p[0].name))


def command(unit: Unit, device: str, python: str = sys.executable) -> list[str]:
    """``python -m ncbook run`` of one unit."""
    sets = [a for k, v in sorted(unit.overrides.items()) for a in ("--set", f"{k}={_cli_value(v)}")]
    flags = ["-S"] if sys.flags.no_site else []            # a bare machine's python, as this one was started
    return [python, *flags, "-m", "ncbook", "run", unit.name, "--scale", unit.scale, "--device", device, *sets]


def cpu_checkpoints(files: list[Path], into: Path) -> list[Path]:
    """Copies of checkpoint files with every tensor on the CPU (loadable on any device), in ``into``."""
    out = []
    for f in files:
        state = torch.load(f, weights_only=True, map_location="cpu")
        dest = into / f.name
        torch.save(state, dest)
        os.utime(dest, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns))    # when it was written: the run's clock
        out.append(dest)
    return out


def _tar(path: Path, files: list[tuple[Path, str]]) -> int:
    """Write ``files`` (path, name inside) as a .tar.gz at ``path`` atomically; its size."""
    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as tar:
            for f, arcname in files:
                tar.add(f, arcname=arcname)
    cache.atomic_write(path, write)
    return path.stat().st_size


def session(units: list[Unit], state: Path | None, out: Path, device: str, budget_s: float,
            root: Path | None = None, python: str = sys.executable, bench: dict | None = None) -> dict:
    """One session of the relay (module docstring): restore ``state``, run the plan within ``budget_s`` seconds,
    write the next state to ``out``; the session's entry of the ledger."""
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    ledger = read_ledger(state)
    restore(state, root, say)
    _assemble(units, ledger, root, say)
    kind = device_kind(device)
    bench = bench or {}
    deadline = time.monotonic() + budget_s
    entry: dict[str, Any] = {"device": kind, "budget_s": budget_s, "runs": []}
    for unit, est, whence, resumed in plan(units, ledger, bench, kind, device, root, budget_s):
        run, left = unit.run, deadline - time.monotonic()
        row = {"result": f"{unit.name}/{run.tag}", "key": run.key, "estimate_s": round(est, 1), "whence": whence,
               "start_step": checkpoint_step(run, root)}
        if left <= 1:
            row["status"] = "not started: the budget is spent"
        elif est > left and run.key in ledger["uncarried"]:
            row["status"] = (f"not started: needs {est:.0f} s, {left:.0f} s left, and its checkpoint "
                             f"({ledger['uncarried'][run.key]} bytes) cannot be carried")
        elif left < est <= budget_s and not resumed:
            row["status"] = f"not started: needs {est:.0f} s, {left:.0f} s left; it fits the next session"
        elif est > left and not resumed and (size := cost.checkpoint_bytes(run.config)) > MAX_FILE:
            row["status"] = (f"not started: needs {est:.0f} s, more than this session's {budget_s:.0f} s, it cannot be "
                             f"cut further, and its checkpoints (about {size / 2**20:.0f} MiB by its parameters) "
                             f"cannot be carried: it needs a session of its own of {math.ceil(est / 60)} minutes")
        else:
            say(f"{'resuming' if resumed else 'starting'} {unit.name} ({run.tag}): about {est:.0f} s ({whence}), "
                f"{left:.0f} s left")
            t0 = time.monotonic()
            status = run_one(run, device, left, root, python, command(unit, device, python))
            if status.startswith("failed") and capture_requested() and deadline - time.monotonic() > 1:
                # a compile failure or a crash of the compiled code (the run is a process of its own, so a crash
                # ends only it): run again eagerly, the failure recorded in the ledger and the result's provenance
                why = f"the captured run {status.split(';')[0].removesuffix(')')})"   # "... failed (killed by SIGABRT)"
                say(f"{unit.name}: {why}; again with the eager step (NCBOOK_CAPTURE=0)")
                status = run_one(run, device, deadline - time.monotonic(), root, python,
                                 command(unit, device, python), env={CAPTURE_ENV: "0", CAPTURE_FALLBACK_ENV: why})
                row.update(eager_fallback=True, captured_failure=why)
            spent = time.monotonic() - t0
            ledger["spent_s"][run.key] = ledger["spent_s"].get(run.key, 0.0) + spent
            if cached_current(run, root) is not None:         # made, even if it finished as the budget ended
                status = "made"
                ledger["full_s"].setdefault(kind, {})[row["result"]] = round(ledger["spent_s"].pop(run.key), 1)
            row.update(status=status, spent_s=round(spent, 1))
        row["end_step"] = checkpoint_step(run, root)
        entry["runs"].append(row)
        say(f"{row['result']}: {row['status']}")
    _assemble(units, ledger, root, say)
    _pack(units, ledger, out, root, say)
    ledger["sessions"].append(entry)
    cache.atomic_write(out / LEDGER, lambda tmp: tmp.write_text(json.dumps(ledger, indent=1)))
    if bench:
        cache.atomic_write(out / BENCH, lambda tmp: tmp.write_text(json.dumps(bench, indent=1)))
    done = sum(cached_current(u.run, root) is not None for u in units)
    say(f"the plan: {done} of {len(units)} results current; bring {out} home and carry it as the next state")
    (out / LOG).write_text("\n".join(lines) + "\n")
    return entry


def _assemble(units: list[Unit], ledger: dict, root: Path | None, say) -> None:
    """Every cut unit whose pieces are all made, assembled (:func:`ncbook.pieces.assemble_tree`)."""
    for u in units:
        run = u.run
        if run.key not in ledger["cuts"] or cached_current(run, root) is not None:
            continue
        try:
            if assemble_tree(run, ledger["cuts"], root):
                say(f"{u.name} ({run.tag}): assembled from its pieces along {ledger['cuts'][run.key]}")
        except Exception as err:        # whatever it is (pieces that do not fit together...), the session still
            say(f"{u.name} ({run.tag}): its pieces were not assembled: {err}")      # packs its state: said, kept


def nodes(unit: Unit, cuts: dict, root: Path | None = None) -> list[Unit]:
    """What stands for the unit now: itself if it is current or was not cut, else its pieces' (recursively)."""
    run = unit.run
    if run.key not in cuts or cached_current(run, root) is not None:
        return [unit]
    return [n for p in pieces(run, cuts[run.key]) for n in nodes(unit_of(p), cuts, root)]


def _pack(units: list[Unit], ledger: dict, out: Path, root: Path | None, say) -> None:
    """The current results (a cut unit's made pieces until it is assembled) and the stopped runs' checkpoints (on
    the CPU) into ``out``, each within :data:`MAX_FILE`."""
    units = [n for u in units for n in nodes(u, ledger["cuts"], root)]
    results = []
    for u in units:
        run = u.run
        if cached_current(run, root) is not None:
            folder, manifest = cache.paths(run.name, run.tag, root)
            results += [(folder / f, f"results/{run.name}/{f}")
                        for f in [manifest.name, *cache.read_manifest(run.name, run.tag, root)["files"]]]
    for stale in (out / RESULTS, out / CHECKPOINTS):
        stale.unlink(missing_ok=True)
    if results and _tar(out / RESULTS, results) > MAX_FILE:
        (out / RESULTS).unlink()
        say(f"the results came to more than {MAX_FILE} bytes and were not packed: bring them home in parts")
    with tempfile.TemporaryDirectory() as tmp:
        files: list[tuple[Path, str]] = []
        for u in units:
            run = u.run
            mine = checkpoints_of(run, root)
            if not mine or cached_current(run, root) is not None:
                continue
            cpu = cpu_checkpoints(mine, Path(tmp))
            size = sum(f.stat().st_size for f in cpu)
            if size > MAX_FILE:
                ledger["uncarried"][run.key] = size
                lost = ledger.setdefault("lost_s", {})                  # its time so far was spent for nothing,
                lost[run.key] = max(lost.get(run.key, 0.0), ledger["spent_s"].pop(run.key, 0.0))  # and it needs more
                say(f"{u.name} ({run.tag}): its checkpoint ({size} bytes) is too large to carry; this session's work "
                    "on it is lost, and it is not started again where it cannot finish")
                continue
            files += [(f, f.name) for f in cpu]
            files += [(c, c.name) for c in [clock_path(run.checkpoint(root))] if c.is_file()]  # its wall time so far
        if files and _tar(out / CHECKPOINTS, files) > MAX_FILE:
            (out / CHECKPOINTS).unlink()
            say(f"the checkpoints came to more than {MAX_FILE} bytes together and were not packed")
