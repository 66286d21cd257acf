"""GPU sessions that add up: a relay across fresh machines (issues 61 and 75).

A lent GPU machine is bare every time: the working tree comes over (with the ignored folders it is told to carry),
only what is written under ``$OUT`` comes back, and a session has minutes. So one session is one command,

    python3 -m ncbook relay --state .gpu-state --out "$OUT" --scale gpu --budget-min 8 --benchmark

that starts from the state folder the previous session's ``$OUT`` became (carried in as ``.gpu-state``), and writes
the next state to ``--out``, five files at most (:data:`FILES`), each within :data:`MAX_FILE` bytes:

- ``results.tar.gz``: every result of the plan that is current (made here, finished late, or carried in), for
  ``python -m ncbook import`` at home and for the next session;
- ``checkpoints.tar.gz``: the checkpoints of the runs not yet made, their tensors moved to the CPU, so that they
  load on any device, with their clocks (the wall time of the stopped segments, so that the manifest of a result made
  over several sessions counts them all: :func:`ncbook.runner.stopped_segments`); a run whose checkpoints do not fit
  is recorded, and never started again where it cannot finish;
- ``relay.json``: the plan's ledger: the commit, each session's device, budget and, per run, its status, seconds
  spent and the step its checkpoint was at when the session started and ended; the measured full wall times per
  device kind; the cuts;
- ``bench.json``: ``benchmarks/bench_gpu.py``'s figures, one slot per device kind, each made once and carried after;
- ``log.txt``: what the session said (the session script's lines first).

``$OUT`` is a valid next state at every instant (issue 75): the carried state is put there first, so the worst ending
returns what came in; every result made, checkpoint written (packed within a second of the child writing it) and
ledger change lands there atomically as it happens, and the log line by line. SIGINT or SIGTERM stop the running run
at the end of the step it is taking, with a checkpoint there (``train.stop_on_signals``), which is carried, and end
the session with its state and log written, exit status 128 + the signal. A
carried file that cannot be read (a truncated archive, a malformed or hand-edited ledger, a cut along a setting the
run has not, a checkpoint that does not load or belongs to no run of the plan at this commit, a malformed benchmark)
is refused in one line naming it and why, and the rest is carried on. One deadline, ``--budget-min`` from
``--started`` (the session script's start), covers the benchmark (at most :data:`BENCH_SHARE` of it), the runs and the
packing (:data:`PACK_S` kept for the last).

The plan runs a carried checkpoint first, then the rest cheapest first by the best estimate there is (a full wall
time measured on this device kind, then the measured time of its sibling pieces, then the benchmark of this kind's
prediction, then :mod:`ncbook.cost`'s). A run longer than a session that can be cut (:mod:`ncbook.pieces`: per seed,
per setting) is cut, along one setting after another, until every piece fits a session; the cut is recorded in the
ledger and kept by every later session, and the whole is assembled from its pieces once they are all made (until
then the pieces travel as results). A run that would not finish in the time left is started all the same where its
checkpoint can be carried (a session never idles): it is stopped right after a checkpoint when the next would not
come before the deadline, at the deadline otherwise (less than one checkpoint interval lost). One that cannot be cut
and whose checkpoint is too large to carry (by its parameters, :func:`ncbook.cost.checkpoint_bytes`, or as measured)
waits for a session long enough to finish it. A run that fails with captured steps (``NCBOOK_CAPTURE=1``: a compile
failure) is run again with the eager step, and its manifest says which it used.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zlib
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


LEDGER_FIELDS = {"sessions": list, "full_s": dict, "spent_s": dict, "uncarried": dict, "cuts": dict, "lost_s": dict}
"""The ledger's fields and their types; a carried ledger without one gets it empty, one of the wrong type is
refused."""


def fresh_ledger() -> dict:
    return {k: t() for k, t in LEDGER_FIELDS.items()}


def check_ledger(ledger: Any) -> dict:
    """The ledger with every field of :data:`LEDGER_FIELDS` (missing ones empty); ValueError naming what is wrong."""
    if not isinstance(ledger, dict):
        raise ValueError(f"it holds a {type(ledger).__name__}, not a ledger (an object)")
    for k, t in LEDGER_FIELDS.items():
        if not isinstance(ledger.get(k, t()), t):
            raise ValueError(f"its {k!r} is a {type(ledger[k]).__name__}, not a {t.__name__}")
    for key, setting in ledger.get("cuts", {}).items():
        if not isinstance(setting, str):
            raise ValueError(f"its cut of {key} is {setting!r}, not a setting's name")
    for k in ("full_s",):
        for kind, rows in ledger.get(k, {}).items():
            if not isinstance(rows, dict) or not all(isinstance(v, (int, float)) for v in rows.values()):
                raise ValueError(f"its {k!r} of {kind} is not a table of seconds")
    for k in ("spent_s", "uncarried", "lost_s"):
        if not all(isinstance(v, (int, float)) for v in ledger.get(k, {}).values()):
            raise ValueError(f"its {k!r} is not a table of numbers")
    return fresh_ledger() | ledger


def read_ledger(state: Path | None, say=print) -> dict:
    """The carried ledger, or a fresh one; a ledger that cannot be read (malformed JSON, a field of the wrong type) is
    refused in one line and a fresh one started (the carried results and checkpoints still come in)."""
    path = None if state is None else Path(state) / LEDGER
    if path is None or not path.is_file():
        return fresh_ledger()
    try:
        return check_ledger(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        say(f"carried {LEDGER} refused ({str(err).splitlines()[0]}): a fresh ledger is started; the measured times "
            "and cuts it held are lost, the carried results and checkpoints are not")
        return fresh_ledger()


def bench_slots(bench: Any) -> dict[str, dict]:
    """A benchmark file as its slots, one per device kind (``{"kinds": {kind: bench_gpu.py's output}}``); a file
    from before the slots (one output) is its kind's slot; anything else is no slot."""
    if not isinstance(bench, dict):
        return {}
    if isinstance(bench.get("kinds"), dict):
        return {k: v for k, v in bench["kinds"].items() if isinstance(v, dict)}
    if "experiments" in bench or "gpu" in bench:
        return {bench.get("gpu") or "cpu": bench}
    return {}


def read_bench(state: Path | None, say=print) -> dict[str, dict]:
    """The carried benchmark slots (:func:`bench_slots`); a file that cannot be read is refused in one line."""
    path = None if state is None else Path(state) / BENCH
    if path is None or not path.is_file():
        return {}
    try:
        slots = bench_slots(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        say(f"carried {BENCH} refused ({str(err).splitlines()[0]}): the benchmark is run again where there is time")
        return {}
    if not slots:
        say(f"carried {BENCH} refused (no benchmark in it): the benchmark is run again where there is time")
    return slots


BENCH_KEYS = ("experiment", "predicted_s")
"""The fields of a row of ``benchmarks/bench_gpu.py``'s ``experiments`` that the relay reads: one schema, tested on
the script's own output (``tests/test_relay.py``)."""


def bench_seconds(slot: dict, name: str) -> float | None:
    """The benchmark's predicted full wall time of experiment ``name`` at its scale's defaults, or None."""
    for row in slot.get("experiments", []):
        if isinstance(row, dict) and row.get(BENCH_KEYS[0]) == name and isinstance(row.get(BENCH_KEYS[1]),
                                                                                  (int, float)):
            return float(row[BENCH_KEYS[1]])
    return None


def restore(state: Path | None, root: Path | None = None, say=print, plan_keys: set[str] | None = None) -> None:
    """Bring a carried state in: its results (checked as ``import`` checks them; each one refused named, with why) and
    its checkpoints (only ``.pt`` files that load and the runs' ``.clock.json``, into the results folder's
    ``.checkpoints``; with ``plan_keys``, a checkpoint of no run of the plan at this code, another commit's, is
    dropped and named). A carried archive that cannot be read (truncated, not an archive) is refused in one line;
    the rest still comes in."""
    if state is None or not Path(state).is_dir():
        return
    if (Path(state) / RESULTS).is_file():
        try:
            outcomes, _ = import_results(Path(state) / RESULTS, root)
            refused = [o for o in outcomes if o.status not in ("imported", "unchanged")]
            say(f"carried results: {len(outcomes) - len(refused)} of {len(outcomes)} in"
                + "".join(f"; {o.experiment}/{o.tag} {o.status}: {o.detail}" for o in refused))
        except (ImportProblem, tarfile.TarError, EOFError, OSError, zlib.error) as err:
            say(f"carried {RESULTS} refused ({str(err).splitlines()[0] or type(err).__name__}): its results are "
                "made again")
    if (Path(state) / CHECKPOINTS).is_file():
        into = cache.results_dir(root) / ".checkpoints"
        into.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(Path(state) / CHECKPOINTS, "r:gz") as tar:
                members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith((".pt", ".clock.json"))
                           and "/" not in m.name]
                extract(tar, into, members)
        except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
            say(f"carried {CHECKPOINTS} refused ({str(err).splitlines()[0] or type(err).__name__}): the runs it "
                "held start again from their beginning")
            return
        kept = 0
        for m in members:
            f = into / m.name
            if not m.name.endswith(".pt"):
                continue
            key = m.name.removesuffix(".pt").split("--")[-1].split(".")[0]
            why = ""
            if plan_keys is not None and key not in plan_keys:
                why = "it is of no run of the plan at this commit (another commit's code or configuration)"
            else:
                try:
                    step = torch.load(f, weights_only=True, map_location="cpu").get("step")
                except Exception as err:                     # a damaged file: whatever torch raises, said
                    why = f"it does not load ({type(err).__name__})"
            if why:
                f.unlink(missing_ok=True)
                say(f"carried checkpoint {m.name} dropped: {why}")
            else:
                kept += 1
                say(f"carried checkpoint {m.name}: at step {step}")
        say(f"carried checkpoints: {kept} in")


def estimate(unit: Unit, ledger: dict, bench: dict, kind: str, device: str,
             share: tuple[float, str] | None = None) -> tuple[float, str]:
    """Seconds the unit still needs on this device kind, and whence: a full wall time measured here, less what was
    spent on it; else ``share`` (a piece's share of its whole's estimate, or of a measured sibling's, :func:`cut`);
    else the benchmark of this device kind's prediction (``bench``: a slot of :func:`bench_slots`, for the experiment
    at its scale's defaults); else the cost model's; at least as long as it once ran unfinished where its checkpoint
    was then lost."""
    run = unit.run
    full = ledger["full_s"].get(kind, {}).get(f"{unit.name}/{run.tag}")
    if full is not None:
        return max(full - ledger["spent_s"].get(run.key, 0.0), 0.0), "measured"
    if share is not None:
        return _left(ledger, run.key, share[0]), share[1]
    predicted = bench_seconds(bench, unit.name) if not unit.overrides else None
    if predicted is not None:
        return _left(ledger, run.key, predicted), "benchmark"
    return _left(ledger, run.key, _seconds(run, device)), "cost model"


def _left(ledger: dict, key: str, total: float) -> float:
    """An estimated total less what was spent on the run, but no less than it once ran unfinished before its
    checkpoint was lost."""
    return max(total - ledger["spent_s"].get(key, 0.0), ledger.get("lost_s", {}).get(key, 0.0), 0.0)


def unit_of(run: Run) -> Unit:
    return Unit(run.name, run.scale, run.overrides)


def _seconds(run: Run, device: str) -> float:
    return cost.seconds(cost.estimate(run.config), device)


def cut(unit: Unit, est: float, whence: str, picture: Picture, kind: str, device: str,
        session_s: float) -> list[tuple[Unit, float, str]]:
    """The unit, or its pieces where it was cut or is to be cut (longer than ``session_s``, no checkpoint of its own to
    resume, a setting to cut along: :func:`ncbook.pieces.settings_to_cut`), each with its estimate: measured; else
    scaled from its measured siblings (their measured seconds per second of the cost model's); else its share of the
    unit's by the cost model. A new cut is recorded in the ledger's ``cuts``."""
    run, ledger = unit.run, picture.ledger
    if picture.current(run):                         # made (a piece assembled here or carried in): nothing below it
        return [(unit, est, whence)]
    setting = ledger["cuts"].get(run.key)                       # checked when the ledger came in (check_cuts)
    if setting is None and est > session_s and not picture.resumable(run):
        setting = next(iter(settings_to_cut(run)), None)
        if setting is not None:
            ledger["cuts"][run.key] = setting
    if setting is None:
        return [(unit, est, whence)]
    whole, parts, out = _seconds(run, device), picture.pieces(run), []
    measured = [(ledger["full_s"].get(kind, {}).get(f"{p.name}/{p.tag}"), _seconds(p, device)) for p in parts]
    rates = [m / c for m, c in measured if m is not None and c > 0]
    for p in parts:
        if rates:
            share = (sum(rates) / len(rates) * _seconds(p, device), "measured on its sibling pieces")
        else:
            share = (est * _seconds(p, device) / whole, whence.removesuffix(", its share") + ", its share")
        out += cut(unit_of(p), *estimate(unit_of(p), ledger, {}, kind, device, share), picture, kind, device,
                   session_s)
    return out


def plan(picture: Picture, bench: dict, kind: str, device: str,
         session_s: float = float("inf")) -> list[tuple[Unit, float, str, bool]]:
    """The units of the picture not current yet, cut where they are longer than ``session_s`` (:func:`cut`), each
    with its estimate, whence, and whether a checkpoint resumes it: the resumed first, then cheapest first."""
    out = []
    for u in picture.units:
        if not picture.current(u.run):
            for leaf, est, whence in cut(u, *estimate(u, picture.ledger, bench, kind, device), picture, kind, device,
                                         session_s):
                if not picture.current(leaf.run):
                    out.append((leaf, est, whence, picture.resumable(leaf.run)))
    return sorted(out, key=lambda p: (not p[3], p[1], p[0].name))


def command(unit: Unit, device: str, python: str = sys.executable) -> list[str]:
    """``python -m ncbook run`` of one unit."""
    sets = [a for k, v in sorted(unit.overrides.items()) for a in ("--set", f"{k}={_cli_value(v)}")]
    flags = ["-S"] if sys.flags.no_site else []            # a bare machine's python, as this one was started
    return [python, *flags, "-m", "ncbook", "run", unit.name, "--scale", unit.scale, "--device", device, *sets]


def cpu_checkpoints(files: list[Path], into: Path) -> list[Path]:
    """Copies of checkpoint files with every tensor on the CPU (loadable on any device), in ``into``; a file the run
    removed meanwhile (it finished, or replaced it with a later one) is left out."""
    out = []
    for f in files:
        try:
            when = f.stat()                                                 # when it was written: the run's clock
            state = torch.load(f, weights_only=True, map_location="cpu")
        except FileNotFoundError:
            continue
        dest = into / f.name
        torch.save(state, dest)
        os.utime(dest, ns=(when.st_atime_ns, when.st_mtime_ns))
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


PACK_S = 20.0
"""Seconds a session keeps at its end for its last packing (it packs as it goes: this is for the last change); a
tenth of a session shorter than 200 s."""

BENCH_SHARE = 0.25
"""The most of a session's time its benchmark may take (it runs once per device kind)."""


class _Signals:
    """SIGINT and SIGTERM during a session: noted (``received``), so that the running child is stopped at a step
    boundary with a checkpoint and the session writes its state and ends within seconds; a second one, at once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.before: dict[int, Any] = {}

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signum

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.before[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self.before.items():
            signal.signal(sig, handler)

    @property
    def name(self) -> str:
        return signal.Signals(self.received).name if self.received is not None else ""


class _Out:
    """The next state in ``out``, valid at every instant: each file written atomically as it changes, the log line by
    line as it is said."""

    def __init__(self, out: Path) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)            # a log begun by the session script is kept (its lines)

    def say(self, text: str) -> None:
        print(text, flush=True)
        with open(self.out / LOG, "a") as f:
            f.write(text + "\n")

    def json(self, name: str, data: Any) -> None:
        cache.atomic_write(self.out / name, lambda tmp: tmp.write_text(json.dumps(data, indent=1)))


def plan_keys(units: list[Unit], cuts: dict) -> set[str]:
    """The keys of the plan's runs at this code: its units and, where they were cut, every piece below (the cuts
    checked first, :func:`check_cuts`)."""
    return {n.run.key for u in units for n in _tree(u.run, cuts)}


def _tree(run: Run, cuts: dict) -> list[Unit]:
    """The run and, where it was cut, every piece below it."""
    out = [unit_of(run)]
    if run.key in cuts:
        out += [n for p in pieces(run, cuts[run.key]) for n in _tree(p, cuts)]
    return out


class Picture:
    """The relay's one picture of the state (issue 75, point 7): the plan's units, the ledger (cuts, measured and spent
    seconds, what could not be carried), and, read once per run, whether each run of the plan's tree (its units and,
    along the cuts, their pieces) is current and how far its checkpoints are. Planning (:func:`plan`, :func:`cut`),
    packing and the log read it; only what a session does changes it, each change by reading again the runs it
    touched: a run's end and an assembly (:meth:`ran`: that run, or the assembled unit's tree). The checkpoint
    files of the run under way are the one thing read live (the child writes them)."""

    def __init__(self, units: list[Unit], ledger: dict, root: Path | None = None) -> None:
        self.units, self.ledger, self.root = units, ledger, root
        self._current: dict[str, bool] = {}
        self._steps: dict[str, int | None] = {}
        self._resumable: dict[str, bool] = {}
        self._pieces: dict[tuple[str, str], list[Run]] = {}

    def current(self, run: Run) -> bool:
        """Is the run's result stored and current (read once)?"""
        if run.key not in self._current:
            self._current[run.key] = cached_current(run, self.root) is not None
        return self._current[run.key]

    def resumable(self, run: Run) -> bool:
        """Has the run checkpoints to resume from (read once)?"""
        if run.key not in self._resumable:
            self._resumable[run.key] = bool(checkpoints_of(run, self.root))
        return self._resumable[run.key]

    def step(self, run: Run) -> int | None:
        """How far the run's checkpoints are (None: none; read once)."""
        if run.key not in self._steps:
            self._steps[run.key] = checkpoint_step(run, self.root)
        return self._steps[run.key]

    def pieces(self, run: Run) -> list[Run]:
        """The pieces of a run that was cut (along its cut in the ledger)."""
        key = (run.key, self.ledger["cuts"][run.key])
        if key not in self._pieces:
            self._pieces[key] = pieces(run, key[1])
        return self._pieces[key]

    def nodes(self, unit: Unit) -> list[Unit]:
        """What stands for the unit now: itself if it is current or was not cut, else its pieces' (recursively)."""
        run = unit.run
        if run.key not in self.ledger["cuts"] or self.current(run):
            return [unit]
        return [n for p in self.pieces(run) for n in self.nodes(unit_of(p))]

    def done(self) -> int:
        """How many of the plan's units are current."""
        return sum(self.current(u.run) for u in self.units)

    def ran(self, run: Run) -> None:
        """A run ended (made, stopped or failed) or was assembled from its pieces: read it again."""
        for read in (self._current, self._steps, self._resumable):
            read.pop(run.key, None)


def check_cuts(units: list[Unit], ledger: dict, say) -> None:
    """Refuse, in one line each, the carried cuts of the plan's runs along a setting they cannot be cut along (a
    hand-edited ledger), and drop those of no run of the plan (another commit's code or configuration)."""
    known: set[str] = set()

    def walk(run: Run) -> None:
        known.add(run.key)
        setting = ledger["cuts"].get(run.key)
        if setting is None:
            return
        if setting not in settings_to_cut(run):
            say(f"{run.name} ({run.tag}): the carried cut along {setting!r} is refused: it can be cut along "
                f"{', '.join(settings_to_cut(run)) or 'nothing'}")
            del ledger["cuts"][run.key]
            return
        for p in pieces(run, setting):
            walk(p)
    for u in units:
        walk(u.run)
    stray = [k for k in ledger["cuts"] if k not in known]
    for k in stray:
        del ledger["cuts"][k]
    if stray:
        say(f"carried cuts of no run of the plan at this commit dropped: {len(stray)}")


def benchmark(cmd: list[str], kind: str, limit_s: float, say) -> dict | None:
    """Run the benchmark (``cmd`` writes its JSON to the path appended as ``--json``) within ``limit_s`` seconds:
    its figures, or None; its output goes to the log where it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.json"
        say(f"benchmark of {kind}: at most {limit_s:.0f} s")
        try:
            done = subprocess.run([*cmd, "--budget-s", f"{max(limit_s - 30, 1):.0f}", "--json", str(path)],
                                  capture_output=True, text=True, timeout=limit_s)
            text, ok = done.stdout + done.stderr, done.returncode == 0
        except subprocess.TimeoutExpired as err:         # what it printed before it was stopped
            text, ok = "".join(x.decode(errors="replace") if isinstance(x, bytes) else x or ""
                               for x in (err.stdout, err.stderr)), False
        try:
            figures = json.loads(path.read_text()) if path.is_file() else None
        except ValueError:
            figures = None
        if not ok or figures is None:
            say(f"benchmark of {kind}: {'stopped early' if figures else 'failed'}; its output:")
            for line in text.strip().splitlines()[-30:]:
                say(f"    {line}")
        if figures is not None:
            rows = sum(bench_seconds(figures, r.get(BENCH_KEYS[0], "")) is not None
                       for r in figures.get("experiments", []) if isinstance(r, dict))
            say(f"benchmark of {kind}: {rows} experiment(s) measured, kept in {BENCH} for the next sessions")
        return figures


def session(units: list[Unit], state: Path | None, out: Path, device: str, budget_s: float,
            root: Path | None = None, python: str = sys.executable, bench: dict | None = None,
            bench_cmd: list[str] | None = None, started: float | None = None) -> dict:
    """One session of the relay (module docstring): restore ``state``, put it into ``out`` at once, run the plan
    within ``budget_s`` seconds counted from ``started`` (a ``time.time()``; default now: the session script's start,
    so that the wheels, the benchmark, the runs and the packing share one deadline), packing every change into
    ``out`` as it happens; SIGINT or SIGTERM stop the running child at a step boundary with a checkpoint and end the
    session with its state written. The session's entry of the ledger (``entry["signal"]``: the signal that ended
    it, if one did)."""
    w = _Out(out)
    say = w.say
    end = (started if started is not None else time.time()) + budget_s - min(PACK_S, budget_s / 10)
    left = lambda: end - time.time()                                                    # noqa: E731
    kind = device_kind(device)
    entry: dict[str, Any] = {"device": kind, "budget_s": budget_s, "commit": cache.git_commit(), "runs": []}
    with _Signals() as sig:
        ledger = read_ledger(state, say)
        slots = read_bench(state, say) | (bench_slots(bench) if bench else {})
        before = ledger.get("commit")
        if before and before != entry["commit"]:
            say(f"the carried state was made at {before[:12]}, this is {entry['commit'][:12]}: a result or "
                "checkpoint whose code or configuration changed is refused by its key")
        check_cuts(units, ledger, say)
        restore(state, root, say, plan_keys(units, ledger["cuts"]))
        ledger["commit"] = entry["commit"]
        ledger["sessions"].append(entry)
        picture = Picture(units, ledger, root)                  # what was carried in, read once

        def save(results: bool = True) -> None:
            w.json(LEDGER, ledger)
            if slots:
                w.json(BENCH, {"kinds": slots})
            _pack(picture, out, say, results=results)
        try:
            save()
            _assemble(picture, say)
            if kind not in slots and bench_cmd and not sig.received:
                figures = benchmark(bench_cmd, kind, min(BENCH_SHARE * budget_s, max(left(), 1.0)), say)
                if figures is not None:
                    slots[kind] = figures
                    save(results=False)
            elif kind in slots:
                say(f"the carried benchmark of {kind} is used")
            # captured steps where the benchmark of this kind found them faster (an explicit NCBOOK_CAPTURE wins)
            capture = ({CAPTURE_ENV: "1" if slots[kind]["capture_pays"] else "0"}
                       if CAPTURE_ENV not in os.environ and "capture_pays" in slots.get(kind, {}) else {})
            _work(picture, slots.get(kind, {}), kind, device, python, budget_s, left, sig, entry, say, save,
                  capture)
        finally:
            entry["signal"] = sig.name
            _assemble(picture, say)
            save()
            done = picture.done()
            say(f"the plan: {done} of {len(units)} results current; bring {out} home and carry it as the next state"
                + (f" (the session was stopped by {sig.name})" if sig.received else ""))
            nxt = plan(picture, slots.get(kind, {}), kind, device, budget_s) if done < len(units) else []
            if nxt:
                u, est, whence, resumed = nxt[0]
                step = picture.step(u.run) if resumed else None
                say(f"the next session starts with {u.name} ({u.run.tag}): "
                    + (f"resumed at step {step}, " if resumed else "") + f"about {est:.0f} s ({whence})")
    return entry


def _work(picture: Picture, bench, kind, device, python, budget_s, left, sig, entry, say, save,
          capture: dict[str, str]) -> None:
    """The runs of one session (:func:`session`), in the plan's order, while there is time and no signal; a run cut
    into pieces here is said, with why."""
    ledger = picture.ledger
    before = dict(ledger["cuts"])
    todo = plan(picture, bench, kind, device, budget_s)
    for key, setting in ledger["cuts"].items():
        if key not in before:
            run = next(n.run for u in picture.units for n in _tree(u.run, ledger["cuts"]) if n.run.key == key)
            est, whence = estimate(unit_of(run), ledger, bench, kind, device)
            say(f"{run.name} ({run.tag}): cut along {setting} into {len(picture.pieces(run))} pieces: about "
                f"{est:.0f} s ({whence}), more than a session of {budget_s:.0f} s")
    for unit, est, whence, resumed in todo:
        run = unit.run
        row = {"result": f"{unit.name}/{run.tag}", "key": run.key, "estimate_s": round(est, 1), "whence": whence,
               "start_step": picture.step(run)}
        entry["runs"].append(row)
        carried = run.key not in ledger["uncarried"] and cost.checkpoint_bytes(run.config) <= MAX_FILE
        if sig.received:
            row["status"] = f"not started: the session was stopped by {sig.name}"
        elif left() <= 1:
            row["status"] = "not started: the session's time is spent"
        elif est > left() and run.key in ledger["uncarried"]:
            row["status"] = (f"not started: needs {est:.0f} s, {left():.0f} s left, and its checkpoint "
                             f"({ledger['uncarried'][run.key]} bytes) cannot be carried")
        elif est > left() and not resumed and not carried:
            size = cost.checkpoint_bytes(run.config)
            row["status"] = (f"not started: needs {est:.0f} s, {left():.0f} s left in this session of {budget_s:.0f}"
                             f" s, it cannot be cut further, and its checkpoints (about {size / 2**20:.0f} MiB by "
                             f"its parameters) cannot be carried: it needs a session of its own of "
                             f"{math.ceil(est / 60)} minutes")
        else:
            _run(unit, est, whence, resumed, row, picture, kind, device, python, left, sig, say, save, capture)
        row.setdefault("end_step", row["start_step"])
        say(f"{row['result']}: {row['status']}")
        save()


def _run(unit, est, whence, resumed, row, picture: Picture, kind, device, python, left, sig, say, save,
         capture: dict[str, str]) -> None:
    """One run of a session, its row of the ledger filled in: started or resumed, stopped (at which step, with which
    checkpoint), failed (its message) or made; its new checkpoints packed into ``out`` as they are written; the
    picture reads the run again when it ends."""
    run, ledger, root = unit.run, picture.ledger, picture.root
    at = row["start_step"]
    say(f"{'resuming' if resumed else 'starting'} {unit.name} ({run.tag})"
        + (f" at step {at}" if at is not None else "")
        + f": about {est:.0f} s ({whence}), {left():.0f} s left"
        + ("" if est <= left() else ": it stops at its last checkpoint before the deadline"))
    seen = {f: f.stat().st_mtime_ns for f in checkpoints_of(run, root)}
    written: list[float] = [time.monotonic()]                   # when it started, then each new checkpoint

    def stop() -> str:
        """Packs a new checkpoint of the running child into ``out`` at once; a reason to stop it: a signal, or a
        checkpoint just written where the next would not come before the deadline (stopped there, nothing lost)."""
        if sig.received:
            return f"by {sig.name}"
        now = {f: f.stat().st_mtime_ns for f in checkpoints_of(run, root) if f.exists()}
        if not now or now == seen:
            return ""
        seen.clear()
        seen.update(now)
        save(results=False)
        written.append(time.monotonic())
        interval = written[-1] - written[-2]
        return "at its last checkpoint, the next not due before the deadline" if left() < 1.2 * interval else ""
    t0 = time.monotonic()
    status = run_one(run, device, left(), root, python, command(unit, device, python), env=capture or None,
                     stop=stop)
    captured = capture.get(CAPTURE_ENV, "1" if capture_requested() else "0") == "1"
    if status.startswith("failed") and captured and left() > 1 and not sig.received:
        # a compile failure or a crash of the compiled code (the run is a process of its own, so a crash
        # ends only it): run again eagerly, the failure recorded in the ledger and the result's provenance
        why = f"the captured run {status.split(';')[0].removesuffix(')')})"   # "... failed (killed by SIGABRT)"
        say(f"{unit.name}: {why}; again with the eager step (NCBOOK_CAPTURE=0)")
        status = run_one(run, device, left(), root, python, command(unit, device, python),
                         env={CAPTURE_ENV: "0", CAPTURE_FALLBACK_ENV: why}, stop=stop)
        row.update(eager_fallback=True, captured_failure=why)
    spent = time.monotonic() - t0
    ledger["spent_s"][run.key] = ledger["spent_s"].get(run.key, 0.0) + spent
    picture.ran(run)
    row["end_step"] = picture.step(run)
    if picture.current(run):                          # made, even if it finished as the budget ended
        status = "made"
        ledger["full_s"].setdefault(kind, {})[row["result"]] = round(ledger["spent_s"].pop(run.key), 1)
    elif status.startswith("stopped"):
        files = [f.name for f in checkpoints_of(run, root)]
        status += (f" at step {row['end_step']}, checkpoint {', '.join(files)}: the next session resumes it there"
                   if files else ", before its first checkpoint: the next session starts it again")
    row.update(status=status, spent_s=round(spent, 1))


def _assemble(picture: Picture, say) -> None:
    """Every cut unit whose pieces are all made, assembled (:func:`ncbook.pieces.assemble_tree`)."""
    cuts = picture.ledger["cuts"]
    for u in picture.units:
        run = u.run
        if run.key not in cuts or picture.current(run):
            continue
        try:
            made = assemble_tree(run, cuts, picture.root)   # the whole, or the pieces of it that are complete
            for n in _tree(run, cuts):
                picture.ran(n.run)
            if made:
                say(f"{u.name} ({run.tag}): assembled from its pieces along {cuts[run.key]}")
        except Exception as err:        # whatever it is (pieces that do not fit together...), the session still
            say(f"{u.name} ({run.tag}): its pieces were not assembled: {err}")      # packs its state: said, kept


def _pack(picture: Picture, out: Path, say, results: bool = True) -> None:
    """The current results (a cut unit's made pieces until it is assembled; with ``results``) and the runs'
    checkpoints (on the CPU) into ``out``, each within :data:`MAX_FILE`, each written atomically: a file is replaced
    only by a whole one, and never by nothing while there is something to carry."""
    units = [n for u in picture.units for n in picture.nodes(u)]
    if results:
        _pack_results(units, picture, out, say)
    _pack_checkpoints(units, picture, out, say)


def _pack_results(units: list[Unit], picture: Picture, out: Path, say) -> None:
    results, root = [], picture.root
    for u in units:
        run = u.run
        if picture.current(run):
            folder, manifest = cache.paths(run.name, run.tag, root)
            results += [(folder / f, f"results/{run.name}/{f}")
                        for f in [manifest.name, *cache.read_manifest(run.name, run.tag, root)["files"]]]
    if not results:
        return
    with tempfile.TemporaryDirectory() as tmp:
        if _tar(Path(tmp) / RESULTS, results) > MAX_FILE:
            say(f"the results came to more than {MAX_FILE} bytes and were not packed: bring them home in parts")
        else:
            _move(Path(tmp) / RESULTS, out / RESULTS)


def _move(src: Path, dest: Path) -> None:
    """``src`` to ``dest`` atomically (a copy beside ``dest``, then a rename)."""
    cache.atomic_write(dest, lambda tmp: shutil.copyfile(src, tmp))


def _pack_checkpoints(units: list[Unit], picture: Picture, out: Path, say) -> None:
    ledger, root = picture.ledger, picture.root
    with tempfile.TemporaryDirectory() as tmp:
        files: list[tuple[Path, str]] = []
        for u in units:
            run = u.run
            mine = checkpoints_of(run, root)                         # read live: the running child writes them
            if not mine or picture.current(run):
                continue
            cpu = cpu_checkpoints(mine, Path(tmp))
            size = sum(f.stat().st_size for f in cpu)
            if size > MAX_FILE:
                if ledger["uncarried"].get(run.key) == size:          # said when it was found
                    continue
                ledger["uncarried"][run.key] = size
                lost = ledger.setdefault("lost_s", {})                  # its time so far was spent for nothing,
                lost[run.key] = max(lost.get(run.key, 0.0), ledger["spent_s"].pop(run.key, 0.0))  # and it needs more
                say(f"{u.name} ({run.tag}): its checkpoint ({size} bytes) is too large to carry; this session's work "
                    "on it is lost, and it is not started again where it cannot finish")
                continue
            files += [(f, f.name) for f in cpu]
            clock = clock_path(run.checkpoint(root))                  # its wall time so far, copied as it is now
            try:
                shutil.copy2(clock, Path(tmp) / clock.name)
                files.append((Path(tmp) / clock.name, clock.name))
            except FileNotFoundError:
                pass
        if not files:
            (out / CHECKPOINTS).unlink(missing_ok=True)          # nothing left to resume: every run made
        elif _tar(Path(tmp) / CHECKPOINTS, files) > MAX_FILE:
            say(f"the checkpoints came to more than {MAX_FILE} bytes together and were not packed")
        else:
            _move(Path(tmp) / CHECKPOINTS, out / CHECKPOINTS)
