"""The experiment runner: running an experiment of :mod:`ncbook.registry` into the results cache, loading a verified
result, and verifying them all.

A result's key hashes its configuration and the code its run function reaches (``ncbook.codehash``: every ncbook
function, class and constant it calls or uses, without comments or docstrings)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock, Timeout

from . import cache
from .data import check_data_files
from .registry import RUNTIME_SETTINGS, SCALES, get_experiment
from .train import CAPTURE_FALLBACK_ENV, capture_path, capture_requested


@dataclass(frozen=True)
class Run:
    """One experiment at one scale with its overrides, planned once: the configuration (built and checked by
    :meth:`of`), the result's tag and key, and the command that makes it. ``overrides`` are the settings that change
    the result; ``runtime`` the ones that only say where the data is (:data:`~ncbook.registry.RUNTIME_SETTINGS`),
    which the configuration uses but the tag and key leave out."""

    name: str
    scale: str
    overrides: dict
    config: Any
    tag: str
    key: str
    runtime: dict = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, scale: str = "cpu", **overrides) -> Run:
        """Plan a run; an unknown experiment, scale or setting, or a setting its configuration refuses, raises
        ValueError (KeyError for the experiment) before any work. A setting given at its scale's default value is
        no override: one computation has one tag and one key."""
        exp = get_experiment(name)
        settings = exp.settings(scale, overrides)
        cfg = exp.config(scale, **settings)
        default = exp.scales[scale]
        computed = {k: v for k, v in settings.items() if k not in RUNTIME_SETTINGS and v != getattr(default, k)}
        runtime = {k: v for k, v in settings.items() if k in RUNTIME_SETTINGS}
        return cls(name, scale, computed, cfg, str(cache.Tag.of(scale, computed)), exp.key(cfg), runtime)

    @property
    def command(self) -> str:
        return regen_command(self.name, self.scale, self.overrides)

    def checkpoint(self, root: Path | None = None) -> Path:
        """Where the run saves its checkpoint (multi-part runs add ``.<part>`` before the suffix); a killed run
        resumes from it when the same command is run again, with the same configuration and code (both in the key)."""
        return cache.results_dir(root) / ".checkpoints" / f"{self.name}--{self.tag}--{self.key}.pt"


def run_and_cache(name: str, scale: str, device: str = "cpu", progress: bool = True, root: Path | None = None,
                  **overrides) -> Path:
    """Run one experiment at one scale and store its result (with provenance) in the cache."""
    return execute(Run.of(name, scale, **overrides), device, progress, root)


def execute(run: Run, device: str = "cpu", progress: bool = True, root: Path | None = None) -> Path:
    """Run a planned :class:`Run` and store its result (with provenance) in the cache; the manifest's path. Two runs
    of one result at once are refused (:func:`lock`)."""
    dataset = getattr(run.config, "dataset", None)
    if dataset in ("mnist", "fashion-mnist", "cifar10") and not getattr(run.config, "download", False):
        check_data_files(dataset, run.config.data_root, True)       # a missing or broken file, before any work
    ckpt = run.checkpoint(root)
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    locks = cache.results_dir(root) / ".locks"
    locks.mkdir(exist_ok=True)
    with lock(locks / f"{ckpt.stem}.lock", run):
        return _execute(run, ckpt, device, progress, root)


@contextlib.contextmanager
def lock(path: Path, run: Run):
    """Hold an exclusive lock on ``path`` while a run works (``filelock``: an flock on Unix, a msvcrt lock on
    Windows, released by the system when the process ends, however it ends); if another process holds it, refuse with
    CacheError naming that process (its pid, in ``<path>.pid``) instead of doing the same work twice."""
    owner = path.with_name(path.name + ".pid")
    guard = FileLock(path, timeout=0)
    try:
        guard.acquire()
    except Timeout:
        who = owner.read_text().strip() if owner.is_file() else ""
        raise cache.CacheError(f"{run.name} ({run.tag}) is being computed right now by another process "
                               f"({who or 'pid unknown'}): wait for it to finish, or stop it; "
                               "a stopped run resumes from its checkpoint", "busy") from None
    try:
        owner.write_text(f"pid {os.getpid()}")
        yield
    finally:                 # the lock file stays (deleting it would let two processes lock two files of one name)
        owner.write_text("")
        guard.release()


def _execute(run: Run, ckpt: Path, device: str, progress: bool, root: Path | None) -> Path:
    left = _readable_checkpoints(ckpt)
    if left and progress:
        print(f"{run.name}: resuming from the checkpoint{'s' * (len(left) > 1)} of a stopped run: "
              f"{', '.join(p.name for p in left)}", file=sys.stderr)
    earlier_s, segments, known = stopped_segments(ckpt) if left else (0.0, 0, True)
    started = time.time()
    _write_clock(ckpt, {"earlier_s": earlier_s, "segments": segments, "started": started})
    t0 = time.perf_counter()
    try:
        with MachineLoad() as load:
            arrays = get_experiment(run.name).run(run.config, device=device, progress=progress, checkpoint=ckpt)
    except FloatingPointError:              # diverged: nothing is stored, and no checkpoint resumes the blow-up
        _remove([*_parts(ckpt), clock_path(ckpt)])
        raise
    except BaseException:                   # stopped (Ctrl-C, a budget's SIGINT) or failed: the clock keeps its time
        _close_clock(ckpt, earlier_s, segments, started)
        raise
    prov = cache.provenance(device, list(getattr(run.config, "seeds", [])), earlier_s + time.perf_counter() - t0,
                            regen_command(run.name, run.scale, run.overrides | run.runtime) + f" --device {device}")
    if segments:                            # resumed: the wall time is that of every segment (stopped_segments)
        prov["segments"] = segments + 1
    if not known:
        prov["wall_time_partial"] = True    # resumed from checkpoints without a clock: earlier segments not counted
    if load.samples:
        prov["load"] = load.summary()
    if capture_requested():                 # NCBOOK_CAPTURE=1: the training steps were compiled (train.compiled_step)
        prov["captured_steps"] = True
        prov["capture_path"] = capture_path(device)
    if why := os.environ.get(CAPTURE_FALLBACK_ENV, "").strip():     # made eagerly after a captured run failed (relay)
        prov["capture_fallback"] = why[:500]
    extra = {"base_scale": run.scale, "overrides": run.overrides} | ({"runtime": run.runtime} if run.runtime else {})
    manifest = cache.save(run.name, run.tag, get_experiment(run.name).computed(run.config), run.key, arrays, prov,
                          root, extra=extra)
    _remove([*_parts(ckpt), clock_path(ckpt)])
    return manifest


class MachineLoad:
    """What ran beside a run: the machine's one-minute load average, read when the run starts, every ``every_s``
    seconds while it runs and when it ends (none where the system has no load average)."""

    def __init__(self, every_s: float = 60.0):
        self.every_s = every_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="machine-load")

    def _read(self) -> None:
        with contextlib.suppress(OSError, AttributeError):     # no os.getloadavg (Windows) or none readable
            self.samples.append(os.getloadavg()[0])

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self._read()

    def __enter__(self) -> MachineLoad:
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def summary(self) -> dict:
        """The mean and the largest reading, and the machine's CPUs: on an idle 2-CPU machine a one-thread run
        reads about 1; each other busy thread beside it adds about 1."""
        return {"mean_1min": round(sum(self.samples) / len(self.samples), 2), "max_1min": round(max(self.samples), 2),
                "readings": len(self.samples), "cpus": os.cpu_count()}


def clock_path(ckpt: Path) -> Path:
    """The clock of a stopped run, beside its checkpoints (and carried with them by the relay): the wall seconds and
    the number of its stopped segments, and the start of the segment in progress."""
    return ckpt.with_suffix(".clock.json")


def _write_clock(ckpt: Path, clock: dict) -> None:
    cache.atomic_write(clock_path(ckpt), lambda tmp: tmp.write_text(json.dumps(clock)))


def stopped_segments(ckpt: Path) -> tuple[float, int, bool]:
    """(seconds, number) of the stopped segments whose checkpoints a run resumes, each counted from its start to its
    newest checkpoint (the work carried forward; what came after it is done again, and counted, in the next), and
    whether they are known: False for checkpoints that came without a clock. A segment that was killed before it
    could stop its clock is counted here, from its start to the newest checkpoint."""
    try:
        clock = json.loads(clock_path(ckpt).read_text())
        earlier_s, segments = float(clock["earlier_s"]), int(clock["segments"])
        started = float(clock["started"]) if "started" in clock else None
        if not (0 <= earlier_s < float("inf") and segments >= 0 and (started is None or abs(started) < float("inf"))):
            raise ValueError("not a clock")
    except (OSError, ValueError, KeyError, TypeError):      # none, or not a clock: not known
        return 0.0, 0, False
    if started is not None:
        earlier_s, segments = _counted(ckpt, earlier_s, segments, started)
    return earlier_s, segments, True


def _counted(ckpt: Path, earlier_s: float, segments: int, started: float) -> tuple[float, int]:
    """The clock with the segment that started at ``started`` (seconds since the epoch) added, up to the run's newest
    checkpoint; unchanged if it wrote none."""
    newest = max((p.stat().st_mtime for p in _parts(ckpt)), default=started)
    return (earlier_s + newest - started, segments + 1) if newest > started else (earlier_s, segments)


def _close_clock(ckpt: Path, earlier_s: float, segments: int, started: float) -> None:
    """Stop the clock of a stopped run (removed where no checkpoint resumes it)."""
    if not _parts(ckpt):
        clock_path(ckpt).unlink(missing_ok=True)
        return
    earlier_s, segments = _counted(ckpt, earlier_s, segments, started)
    _write_clock(ckpt, {"earlier_s": earlier_s, "segments": segments})


def run_point(run: Run, device: str, progress: bool = False, threads: int | None = None) -> tuple[str, float]:
    """One run of the command line or one point of a sweep: (manifest path, wall seconds). It lives here, not in
    ``__main__``, because a sweep's spawned workers must import it by name."""
    if threads is not None:       # a worker of a sweep: its share of the CPU threads
        torch.set_num_threads(threads)
        exit_with_parent()
    t0 = time.perf_counter()
    path = execute(run, device, progress)
    return str(path), time.perf_counter() - t0


def exit_with_parent(poll_s: float = 1.0) -> None:
    """In a sweep's worker process: exit as soon as the process that started it is gone (a killed ``sweep`` would
    otherwise leave its workers computing, each holding its memory)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def checkpoint_path(name: str, scale: str, root: Path | None = None, **overrides) -> Path:
    """:meth:`Run.checkpoint` of ``Run.of(name, scale, **overrides)``."""
    return Run.of(name, scale, **overrides).checkpoint(root)


def _parts(ckpt: Path) -> list[Path]:
    """The run's checkpoint and those of its parts (``train.part_checkpoint``)."""
    return sorted(ckpt.parent.glob(ckpt.stem + "*.pt"))


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _readable_checkpoints(ckpt: Path) -> list[Path]:
    """The checkpoints a stopped run left for this configuration and code; an unreadable one is refused by name
    rather than failing deep inside the run."""
    parts = _parts(ckpt)
    for part in parts:
        try:
            torch.load(part, weights_only=True)
        except Exception as err:  # torch raises several types for a truncated or foreign file
            why = (str(err).splitlines() or [""])[0][:200]
            raise cache.CacheError(f"checkpoint {part} cannot be read ({type(err).__name__}: {why}); delete it "
                                   "and run the same command again (that part restarts from step 0)") from None
    return parts


def cached_current(run: Run, root: Path | None = None) -> Path | None:
    """The manifest of a stored result that is intact and current for this run's configuration and code, else
    None."""
    try:
        cache.check(run.name, run.tag, run.key, root)
    except cache.CacheError:
        return None
    return cache.paths(run.name, run.tag, root)[1]


def regen_command(name: str, scale: str, overrides: dict) -> str:
    """The command that regenerates one cached result."""
    sets = "".join(f" --set {k}={_cli_value(v)}" for k, v in sorted(overrides.items()))
    return f"python -m ncbook run {name} --scale {scale}{sets}"


def _cli_value(v) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, list | tuple) else str(v)


def described_run(name: str, tag: str, manifest: dict) -> Run:
    """The run a stored result's manifest describes (experiment, base scale, overrides), checked against the
    result's name and tag and against the configuration the manifest records: CacheError if any disagrees (an
    edited or moved manifest), or if the run no longer exists."""
    stem = cache.Tag.parse(tag)
    regen = regen_command(name, stem.scale, dict(stem.overrides))
    scale, overrides = manifest.get("base_scale", tag), manifest.get("overrides", {})
    if manifest["experiment"] != name:
        raise cache.CacheError(f"{name}/{tag}: its manifest names experiment {manifest['experiment']!r} (moved or "
                               f"edited?). Regenerate it with `{regen}`")
    try:
        run = Run.of(name, scale, **overrides)
    except (KeyError, ValueError, TypeError) as err:     # an experiment or a setting that no longer exists
        raise cache.CacheError(f"{name}/{tag}: {err}. Regenerate it with `{regen}`", "stale") from None
    if run.tag != tag:
        raise cache.CacheError(f"{name}/{tag}: its manifest describes the result {run.tag} (scale {scale!r}, "
                               f"overrides {overrides}). Regenerate it with `{run.command}`")
    recorded = json.loads(cache.canonical_json(manifest["config"]))
    if recorded != json.loads(cache.canonical_json(get_experiment(name).computed(run.config))):
        raise cache.CacheError(f"{name}/{tag}: the configuration in its manifest is not the one its key was made "
                               f"from (edited?). Regenerate it with `{run.command}`")
    return run


def check_stored(name: str, tag: str, root: Path | None = None) -> dict:
    """Check one stored result (a scale, or a scale with overrides) against its checksums, the key the current
    configuration and code give, the run and configuration it records (:func:`described_run`), and its arrays
    (each must load without pickling): its manifest, or CacheError saying what is wrong and how to regenerate it."""
    stem = cache.Tag.parse(tag)
    manifest = cache.read_manifest(name, tag, root, regen_command(name, stem.scale, dict(stem.overrides)))
    run = described_run(name, tag, manifest)
    cache.load(name, tag, run.key, root, run.command)              # key, checksums, arrays
    return manifest


def stored_tags(root: Path | None = None) -> list[tuple[str, str]]:
    """(experiment, tag) of every stored result, in file order; the runner's own folders (:data:`RUNNER_FOLDERS`:
    a stopped run's clock is JSON too) hold none."""
    return [(p.parent.name, p.stem) for p in sorted(cache.results_dir(root).glob("*/*.json"))
            if p.parent.name not in RUNNER_FOLDERS]


RUNNER_FOLDERS = (".checkpoints", ".locks")
"""The runner's own folders in a results folder: stopped runs' checkpoints and clocks, and the runs' lock files."""


def verify(root: Path | None = None) -> list[tuple[str, str, str]]:
    """Check every stored result: (experiment, tag, "ok" or the problem), in file order, then every anomaly of the
    folder (:func:`anomalies`) as (path, "", problem)."""
    rows = []
    for name, tag in stored_tags(root):
        try:
            check_stored(name, tag, root)
            rows.append((name, tag, "ok"))
        except cache.CacheError as err:
            rows.append((name, tag, str(err)))
    return rows + [(str(path), "", problem) for path, problem in anomalies(root)]


def anomalies(root: Path | None = None) -> list[tuple[Path, str]]:
    """What in the results folder is not a stored result: the folder missing or empty, symbolic links, temporary
    files of interrupted writes, data files that no manifest lists (a deleted manifest, an interrupted save), and any
    other file. The checkpoints of stopped runs (``.checkpoints/``), the runs' lock files (``.locks/``) and README
    files are expected."""
    root = cache.results_dir(root)
    if not root.is_dir():
        return [(root, "the results folder is missing: set NCBOOK_RESULTS to the results/ of the book's source (a "
                       "clone or ncbook-source.zip) or to a folder of your own, or run the experiments")]
    out, listed = [], set()
    tags = stored_tags(root)
    for name, tag in tags:
        try:
            listed |= {root / name / f for f in cache.read_manifest(name, tag, root)["files"]}
        except cache.CacheError:
            pass                                    # verify's row for this result says what is wrong with it
    if not listed and not tags:
        out.append((root, "the results folder holds no results"))
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in RUNNER_FOLDERS or path.name == "README.md" and not path.is_symlink():
            continue
        if path.is_symlink():
            out.append((path, "a symbolic link: results are plain files inside the folder (remove it)"))
        elif path.is_dir():
            if len(rel.parts) > 1:
                out.append((path, "an unexpected folder (results are <experiment>/<tag>.json + .npz)"))
        elif path.name.endswith(".tmp"):
            out.append((path, "a temporary file of an interrupted write (delete it)"))
        elif path.suffix == ".npz" and path not in listed:
            out.append((path, "a data file that no manifest lists (a deleted manifest or an interrupted save): "
                              "delete it, or run the experiment again"))
        elif path.suffix not in (".json", ".npz") or len(rel.parts) != 2:
            out.append((path, "an unexpected file"))
    return out


def shipped_cost(root: Path | None = None) -> dict[tuple[str, str], tuple[float, int]]:
    """(wall time in seconds from the manifest, bytes on disk of .npz + .json) of every stored result; a result
    assembled from stored pieces (:func:`ncbook.pieces.assemble`) costs no time of its own: its manifest's wall time
    is its pieces', counted with them."""
    out = {}
    for name, tag in stored_tags(root):
        try:
            manifest = cache.read_manifest(name, tag, root)
            prov = manifest["provenance"]
            wall = 0.0 if prov.get("assembled_from") else float(prov["wall_time_s"])
        except (cache.CacheError, KeyError, TypeError, ValueError):    # unreadable: `verify` and `list` say so
            continue
        folder, manifest_path = cache.paths(name, tag, root)
        files = [manifest_path] + [folder / f for f in manifest["files"] if f == Path(f).name]
        out[(name, tag)] = (wall, sum(p.stat().st_size for p in files if p.is_file() and not p.is_symlink()))
    return out


def get(name: str, scale: str = "cpu", root: Path | None = None, **overrides) -> dict[str, np.ndarray]:
    """Load a result verified as :func:`verify` does (:func:`check_stored`); a missing, stale, corrupted or edited
    one raises CacheError with the command that makes it (results are made only by the runner, never as a side
    effect of reading)."""
    run = Run.of(name, scale, **overrides)
    try:
        arrays, manifest = cache.load(name, run.tag, run.key, root, run.command)
        described_run(name, run.tag, manifest)                 # what `verify` checks besides
        return arrays
    except cache.CacheError as err:
        raise cache.CacheError(f"{err} (experiment {name!r}, scale {scale!r})", err.kind) from None


def cached_scales(name: str, root: Path | None = None, **overrides) -> list[str]:
    """The scales at which a current result of ``name`` (with ``overrides``) is stored, in registry order."""
    return [scale for scale in get_experiment(name).scales
            if cached_current(Run.of(name, scale, **overrides), root) is not None]


BOOK_SCALE_VARIABLE = "NCBOOK_SCALE"
"""The environment variable that picks the scale the chapters of Part IV show (default ``cpu``)."""


def book_scale() -> str:
    """The scale the chapters show: ``$NCBOOK_SCALE`` or ``cpu``; ValueError for a scale no experiment has."""
    scale = os.environ.get(BOOK_SCALE_VARIABLE, "cpu")
    if scale not in SCALES:
        raise ValueError(f"{BOOK_SCALE_VARIABLE}={scale!r} is not a scale; choose one of {', '.join(SCALES)}")
    return scale


def book_scale_of(*names: str, root: Path | None = None) -> str:
    """The scale a figure reading all of ``names`` shows: :func:`book_scale` where every one of them is cached and
    current, else ``cpu`` (so that one figure never mixes scales)."""
    scale = book_scale()
    return scale if all(scale in cached_scales(n, root) for n in names) else "cpu"


def book_result(name: str, root: Path | None = None, **overrides) -> tuple[dict[str, np.ndarray], object]:
    """A chapter's result and its configuration at :func:`book_scale`. When that scale is not ``cpu`` and its
    result is not cached in ``root`` (default: the results folder), say so on one line (with the command that makes
    it) and fall back to the shipped ``cpu`` result; a missing or stale ``cpu`` result is an error, as with
    :func:`get`."""
    run = Run.of(name, book_scale(), **overrides)
    if run.scale != "cpu":
        try:
            return get(name, run.scale, root, **overrides), run.config
        except cache.CacheError as err:
            print(f"{name}: no current {run.scale} result ({err.kind}: make it with `{run.command}`); "
                  "showing the cpu result")
            run = Run.of(name, "cpu", **overrides)
    return get(name, "cpu", root, **overrides), run.config

