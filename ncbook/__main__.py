"""The command line: ``python -m ncbook {list,run,sweep,verify,import,relay}``.

    python -m ncbook list
    python -m ncbook run jacot_mlp --scale cpu [--device auto] [--seeds 0 1 2] [--set lr=0.01] [--force]
    python -m ncbook run --all --scale gpu --budget-min 8 [--archive out.tar.gz]     # a GPU session
    python -m ncbook sweep jacot_mlp --scale cpu --grid lr=0.01,0.05 --grid steps=100,200 [--workers 2]
                                     [--executor process|submitit-local|slurm] [--force]
    python -m ncbook verify
    python -m ncbook import PATH [--replace]      # results made elsewhere: a folder or a .tar.gz
    python -m ncbook relay --state .gpu-state --out $OUT --budget-min 8   # one session of the GPU relay

``run`` and ``sweep`` skip what is already cached and current (``--force`` runs it again); settings are checked
against the configuration's types and its own checks before any work starts.
"""

from __future__ import annotations

import os
import signal
import sys

# run as a command, an interrupt before main() installs its handler (run --all and the relay stop a run by SIGINT,
# perhaps while it is still importing torch): one line and exit status 130, no traceback
if __name__ == "__main__":
    signal.signal(signal.SIGINT, lambda *_: (print("interrupted while starting: nothing was run", file=sys.stderr),
                                             sys.exit(130)))


def _interrupt_in_a_callback(unraisable) -> None:
    """An interrupt that lands in a C callback (numba compiling, say) cannot propagate: Python would print a traceback
    and carry on. Stop as an interrupt stops, in one line, with the checkpoints as they are (written atomically)."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        print("interrupted: nothing half-written is kept, a stopped run's last checkpoint is", file=sys.stderr,
              flush=True)
        os._exit(130)
    sys.__unraisablehook__(unraisable)


if __name__ == "__main__":
    sys.unraisablehook = _interrupt_in_a_callback

import argparse
import ast
import itertools
import multiprocessing
import shutil
import threading
import types
import typing
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm.auto import tqdm

from . import __version__, cache

try:        # the commands need the 'train' extra; without it --help and --version still work, a command says so
    from . import claims, cost, scaling
    from .registry import EXPERIMENTS, SCALES, conform, get_experiment
    from .runner import (
        Run,
        anomalies,
        cached_current,
        check_stored,
        run_point,
        shipped_cost,
        stored_tags,
        verify,
    )
    from .train import Stopped, stop_on_signals
    MISSING: ImportError | None = None
except ImportError as err:          # ncbook's own one-line message naming the extra to install
    MISSING, EXPERIMENTS, SCALES = err, {}, ()


def resolve_device(device: str) -> str:
    """'auto' means CUDA when available, else CPU; 'cuda' without a GPU is an error with the fix."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cpu" and device != "cuda" and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise SystemExit(f"--device must be cpu, cuda, cuda:N or auto, got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {device}: no CUDA device is available here; use --device cpu (or auto)")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise SystemExit(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                         f"numbered from 0")
    return device


def parse_value(text: str):
    """A command-line value: a Python literal if it parses (1e-3, (0, 1), None), else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_assignments(items: list[str], cfg_type, multi: bool) -> dict:
    """``key=value`` (``--set``) or ``key=v1,v2`` (``--grid``) pairs, checked against the config's fields and their
    types."""
    known = typing.get_type_hints(cfg_type)
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"expected key=value, got {item!r}")
        key, text = item.split("=", 1)
        if key not in known:
            raise SystemExit(f"{cfg_type.__name__} has no setting {key!r}; settings: {', '.join(known)}")
        tuple_field = typing.get_origin(known[key]) is tuple
        texts = text.split(";" if tuple_field else ",") if multi else [text]
        values = []
        for t in texts:
            try:
                values.append(conform(parse_value(t), known[key]))
            except TypeError:
                raise SystemExit(f"--{'grid' if multi else 'set'} {item}: {cfg_type.__name__}.{key} takes "
                                 f"{type_words(known[key])}, not {t!r}") from None
        out[key] = values if multi else values[0]
    return out


def seed_override(exp, cfg_type, seeds: list[int]) -> dict:
    """``--seeds``: the setting ``seeds`` of an experiment trained over several seeds, or ``seed`` of one that makes
    one result per seed."""
    known = typing.get_type_hints(cfg_type)
    if len(set(seeds)) < len(seeds):
        raise SystemExit(f"--seeds {' '.join(map(str, seeds))} repeats a seed: the runs would be identical")
    if "seeds" in known:
        return {"seeds": tuple(seeds)}
    if "seed" in known and len(seeds) == 1:
        return {"seed": seeds[0]}
    if "seed" in known:
        raise SystemExit(f"{exp.name} makes one result per seed: give one --seeds value, or sweep over seeds with "
                         f"`python -m ncbook sweep {exp.name} --grid seed={','.join(map(str, seeds))}`")
    raise SystemExit(f"{exp.name} has no seed setting")


TYPE_WORDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a word", type(None): "None"}


def type_words(tp) -> str:
    """A setting's type in words, for a message: "a number", "a tuple of whole numbers", "a number or None"."""
    if typing.get_origin(tp) is tuple:
        return f"a tuple of {type_words(typing.get_args(tp)[0]).removeprefix('a ')}s"
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(type_words(t) for t in typing.get_args(tp))
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(tp))
    return TYPE_WORDS.get(tp, getattr(tp, "__name__", str(tp)))


def cmd_list(args) -> int:
    if getattr(args, "notes", False):
        for name, exp in EXPERIMENTS.items():
            print(f"{name}: {exp.description}")
            for scale, note in exp.notes.items():
                print(f"  [{scale}] {note}")
            if "paper" in exp.scales:                  # what governs its claims, each scale against the paper's
                for scale in (s for s in exp.scales if s not in ("tiny", "paper")):
                    print(f"  [{scale} vs paper] {scaling.governing_text(name, scale)}")
        return 0
    root = cache.results_dir()
    if not root.is_dir():                          # as verify says it, first and alone: no table of nothing
        print(f"list: {root}: {anomalies()[0][1]}", file=sys.stderr)
        return 1
    shipped, device = shipped_cost(), resolve_device(args.device)
    rows = [("experiment", "scale", "status", "wall time", "size", "FLOPs", f"est. {device}", "claim rows",
             "description")]
    for name, exp in EXPERIMENTS.items():      # every scale, then the stored sweep points and overrides
        for tag in [*exp.scales, *(t for n, t in stored_tags() if n == name and t not in exp.scales)]:
            try:
                check_stored(name, tag)
                status = "cached"
            except cache.CacheError as err:
                status = {"missing": "not cached"}.get(err.kind, err.kind)
            rows.append((name, tag, status, *_cost_columns(shipped, name, tag), *_estimate(name, tag, device),
                         claims.verdicts_reading(name, tag) if status == "cached" else "",
                         exp.description if tag == "tiny" else ""))
    _table(rows)
    print(f"\nFLOPs: the matrix products of training and recording; est. {device}: those at this {device}'s measured "
          "large-product rate plus each step's per-layer overhead (ncbook/cost.py); real runs take 1-6x longer. "
          "Claim rows: the rows of chapters 8 (Jacot) and 9 (Tirer)'s claims tables that this result gives a verdict "
          "(the cpu column, or the column of its scale)")
    total_wall = sum(w for w, _ in shipped.values())
    total_size = sum(b for _, b in shipped.values())
    print(f"{len(shipped)} stored results: {total_wall / 60:.1f} min of recorded wall time, {total_size / 1e6:.2f} MB")
    left = sorted((cache.results_dir() / ".checkpoints").glob("*.pt"))
    if left:
        print(f"{len(left)} checkpoint file(s) of stopped runs in {left[0].parent} "
              f"({sum(f.stat().st_size for f in left) / 1e6:.1f} MB): the same command resumes each run; those made "
              "before a change to its settings or code are never used again and can be deleted")
    return 0


def _estimate(name: str, tag: str, device: str) -> tuple[str, str]:
    """FLOPs and estimated time of one result (a scale, or a scale with overrides), from its configuration."""
    stem = cache.Tag.parse(tag)
    try:
        c = cost.estimate(get_experiment(name).config(stem.scale, **dict(stem.overrides)))
    except (ValueError, TypeError):           # a stored point whose settings no longer exist: verify reports it
        return "", ""
    return cost.human(c.flops), cost.duration(cost.seconds(c, device))


def _cost_columns(cost: dict, name: str, tag: str) -> tuple[str, str]:
    wall, size = cost.get((name, tag), (None, None))
    return "" if wall is None else f"{wall:.0f} s", "" if size is None else f"{size / 1e3:.0f} kB"


def cmd_run(args) -> int:
    if args.all:
        return cmd_run_all(args)
    if args.name is None:
        raise SystemExit("run needs an experiment's name, or --all for every experiment of the scale")
    if args.archive is not None or args.budget_min != float("inf"):
        raise SystemExit("--budget-min and --archive go with --all (one experiment runs to its end, and is cached)")
    exp = get_experiment(args.name)
    cfg_type = exp.config_type(args.scale)
    overrides = parse_assignments(args.set or [], cfg_type, multi=False)
    if args.seeds:
        overrides.update(seed_override(exp, cfg_type, args.seeds))
    try:
        run = Run.of(args.name, args.scale, **overrides)     # every setting checked, before any work
    except ValueError as err:
        raise SystemExit(str(err)) from None
    device = resolve_device(args.device)
    done = cached_current(run)
    if done is not None and not args.force:
        print(f"{args.name} at scale {args.scale} is already cached and current: {done}\n"
              "(add --force to run it again, e.g. on another device)")
        return 0
    if args.scale == "paper" and device == "cpu":
        print(f"note: the paper scale of {args.name} has the paper's own sizes and is meant for a GPU; on a CPU it "
              "may take days (a killed run resumes from its last checkpoint)", file=sys.stderr)
    if threading.current_thread() is threading.main_thread():
        stop_on_signals()            # SIGINT / SIGTERM: a checkpoint at the end of the current step, then stop
    try:
        path, wall = run_point(run, device, progress=True)
    except Stopped as stopped:       # (a relay's deadline or signal, Ctrl-C, kill): one line, the checkpoint kept
        print(f"{args.name}: {stopped}; the same command resumes it", file=sys.stderr)
        return 128 + stopped.signal.value
    except FileNotFoundError as err:
        raise SystemExit(f"{err}\nFrom the command line: add --set data_root=PATH, or --set download=True "
                         "to fetch the data set there once.") from None
    except (ValueError, FloatingPointError, cache.CacheError, OSError) as err:   # bad setting, divergence, bad
        raise SystemExit(f"{args.name} stopped: {err}") from None          # checkpoint, a full or read-only disk
    _table([("experiment", "scale", "device", "wall time", "manifest"),
            (args.name, args.scale, device, f"{wall:.1f} s", path)])
    return 0


def cmd_run_all(args) -> int:
    """``run --all``: every result of the scale that is not current, cheapest first, within ``--budget-min``; the
    results made packed for ``import`` (:mod:`ncbook.batch`)."""
    from . import batch

    if args.name is not None or args.set or args.seeds:
        raise SystemExit("--all runs every experiment at its scale's settings: give no name, --set or --seeds")
    if not args.budget_min > 0:
        raise SystemExit(f"--budget-min must be > 0, got {args.budget_min}")
    device = resolve_device(args.device)
    steps = batch.run_all(args.scale, device, args.budget_min * 60)
    if not steps:
        print(f"every result of scale {args.scale!r} is cached and current: nothing to run")
        return 0
    _table([("experiment", f"est. {device}", "status")]
           + [(s.experiment, cost.duration(s.estimate_s), s.status) for s in steps])
    archive = batch.pack(steps, args.scale, Path(args.archive or f"ncbook-{args.scale}-results.tar.gz"))
    if archive is not None:
        print(f"the results made: {archive} (on another machine: python -m ncbook import {archive.name})")
    left = [s for s in steps if s.status != "made"]
    if left:
        print(f"{len(left)} not made: the same command runs them, resuming a stopped one from its checkpoint")
    return 1 if any(s.status.startswith("failed") for s in steps) else 0


def cmd_relay(args) -> int:
    """``relay``: one session of a GPU relay (:mod:`ncbook.relay`)."""
    import json

    from . import relay

    if not args.budget_min > 0:
        raise SystemExit(f"--budget-min must be > 0, got {args.budget_min}")
    try:
        units = relay.plan_units(args.scale, args.plan)
        runs = [u.run for u in units]                      # every unit checked before any work
        if not runs:
            raise SystemExit(f"relay: the plan has no unit at scale {args.scale!r}")
        bench = json.loads(args.bench.read_text()) if args.bench is not None and args.bench.is_file() else None
    except (OSError, ValueError, KeyError) as err:
        raise SystemExit(f"relay: {err}") from None
    device = resolve_device(args.device)
    bench_cmd = ([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"),
                  "--device", device] if args.benchmark else None)
    entry = relay.session(units, args.state, args.out, device, args.budget_min * 60, bench=bench,
                          bench_cmd=bench_cmd, started=args.started)
    if entry.get("signal"):                         # stopped by SIGINT or SIGTERM: its state is written
        return 128 + int(getattr(signal, entry["signal"]))
    return 1 if any(r["status"].startswith("failed") for r in entry["runs"]) else 0


def cmd_sweep(args) -> int:
    exp = get_experiment(args.name)
    grid = parse_assignments(args.grid or [], exp.config_type(args.scale), multi=True)
    if not grid:
        raise SystemExit("sweep needs at least one --grid key=v1,v2")
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise SystemExit("--executor slurm needs SLURM (its `sbatch` is not on this machine's PATH); use "
                         "--executor process or submitit-local here")
    if args.workers < 1 or args.timeout_min < 1:
        raise SystemExit(f"--workers and --timeout-min must be >= 1, got {args.workers} and {args.timeout_min}")
    points = []
    for vals in itertools.product(*grid.values()):
        point = dict(zip(grid, vals))
        try:
            points.append(Run.of(args.name, args.scale, **point))
        except ValueError as err:
            raise SystemExit(f"invalid sweep point {point}: {err}") from None
    device = resolve_device(args.device)
    rows = [("point", "status", "wall time", "manifest")]
    if not args.force:       # cached, current points are kept, so an interrupted sweep picks up where it stopped
        for p in list(points):
            done = cached_current(p)
            if done is not None:
                rows.append((_label(p.overrides), "cached", "", str(done)))
                points.remove(p)
    bar = tqdm(total=len(points), desc=f"sweep {args.name} ({len(points)} runs)")
    if args.executor == "process":
        # "spawn": forking a process whose OpenMP thread pool is already running deadlocks the children
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(run_point, p, _device_for(device, i),
                                   threads=_thread_share(device, min(args.workers, len(points)))): p
                       for i, p in enumerate(points)}
            for fut in as_completed(futures):
                rows.append(_sweep_row(futures[fut], fut))
                bar.update()
    else:
        import submitit

        executor: submitit.Executor
        if args.executor == "submitit-local":
            executor = submitit.LocalExecutor(folder=args.log_dir)
            executor.update_parameters(timeout_min=args.timeout_min)
        else:
            executor = submitit.AutoExecutor(folder=args.log_dir, cluster="slurm")
            executor.update_parameters(timeout_min=args.timeout_min, slurm_partition=args.partition,
                                       gpus_per_node=1 if device.startswith("cuda") else 0)
        concurrent = len(points) if args.executor == "submitit-local" else 1   # the local executor starts them all
        jobs = [(p, executor.submit(run_point, p, device,
                                    threads=_thread_share(device, concurrent))) for p in points]
        for p, job in jobs:
            rows.append(_sweep_row(p, job))
            bar.update()
    bar.close()
    _table(rows)
    return 0 if all(r[1] in ("ok", "cached") for r in rows[1:]) else 1


def _thread_share(device: str, concurrent: int) -> int | None:
    """On CPU, each of ``concurrent`` runs at once gets an equal share of this process's threads, so that together
    they do not oversubscribe the cores (None: leave the count alone)."""
    import torch

    return max(1, torch.get_num_threads() // concurrent) if device == "cpu" and concurrent > 1 else None


def _device_for(device: str, i: int) -> str:
    """Spread sweep points over the visible GPUs (round robin); CPU stays CPU."""
    if device != "cuda":
        return device
    import torch

    return f"cuda:{i % torch.cuda.device_count()}"


def _label(point: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in point.items())


def _sweep_row(run: Run, fut) -> tuple[str, str, str, str]:
    try:
        path, wall = fut.result()
        return (_label(run.overrides), "ok", f"{wall:.1f} s", path)
    except Exception as err:  # report every failed point, keep the others
        return (_label(run.overrides), f"failed: {err}", "", "")


def cmd_verify(_args) -> int:
    rows = verify()
    results = [r for r in rows if r[1]]
    _table([("experiment", "result", "status")] + results)
    bad = [r for r in results if r[2] != "ok"]
    print(f"{len(results) - len(bad)} of {len(results)} stored results verified" + (f"; {len(bad)} failed" if bad
                                                                                    else ""))
    odd = [r for r in rows if not r[1]]
    for path, _, problem in odd:
        print(f"{path}: {problem}")
    return 1 if bad or odd else 0


def cmd_import(args) -> int:
    from .transfer import ImportProblem, import_results

    try:
        outcomes, skipped = import_results(args.path, replace=args.replace)
    except (ImportProblem, cache.CacheError) as err:
        raise SystemExit(f"import: {err}") from None
    _table([("experiment", "result", "status", "detail")] + [(o.experiment, o.tag, o.status, o.detail)
                                                             for o in outcomes])
    for line in skipped:
        print(f"left out: {line}")
    done = sum(o.status in ("imported", "unchanged") for o in outcomes)
    refused = sum(o.status == "refused" for o in outcomes)
    print(f"{done} of {len(outcomes)} results imported or already here" + (f"; {refused} refused" if refused else "")
          + f" (into {cache.results_dir()})")
    return 1 if refused else 0


def _table(rows: list[tuple]) -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for j, r in enumerate(rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        if j == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    prog = "ncbook" if Path(sys.argv[0]).stem == "ncbook" else "python -m ncbook"     # the console command or -m
    p = argparse.ArgumentParser(prog=prog, description="Run, sweep, list and verify the book's experiments and their "
                                "cached results.")
    p.add_argument("--version", action="version", version=f"ncbook {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="experiments, scales, and whether each result is cached / stale")
    ls.add_argument("--notes", action="store_true", help="instead, each experiment's assumptions and deviations "
                    "from its paper, scale by scale")
    ls.add_argument("--device", default="auto", help="the device the time estimates are for: cpu, cuda, cuda:N or "
                    "auto (default)")
    r = sub.add_parser("run", help="run one experiment at one scale and cache its result")
    s = sub.add_parser("sweep", help="run an experiment over a grid of settings")
    r.add_argument("name", nargs="?", choices=sorted(EXPERIMENTS) or None)
    s.add_argument("name", choices=sorted(EXPERIMENTS) or None)
    r.add_argument("--all", action="store_true", help="every experiment of the scale whose result is not current, "
                   "cheapest first (a GPU session: with --budget-min)")
    r.add_argument("--budget-min", type=float, default=float("inf"), help="with --all: stop the run in progress "
                   "when this many minutes have passed (it resumes from its checkpoint next time)")
    r.add_argument("--archive", default=None, help="with --all: where to pack the results made (default "
                   "ncbook-<scale>-results.tar.gz), for `python -m ncbook import`")
    for q in (r, s):
        q.add_argument("--scale", default="cpu", choices=list(SCALES) or None)
        q.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
        q.add_argument("--force", action="store_true", help="run even where a current result is cached")
    r.add_argument("--seeds", type=int, nargs="+")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one setting (repeatable)")
    s.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="values of one setting (repeatable); "
                   "for tuple settings separate the values with ';', e.g. seeds=(0,1);(2,3)")
    s.add_argument("--workers", type=int, default=1, help="processes for --executor process")
    s.add_argument("--executor", default="process", choices=["process", "submitit-local", "slurm"])
    s.add_argument("--log-dir", default="_build/submitit", help="submitit's folder for logs and pickled jobs")
    s.add_argument("--partition", default=None, help="SLURM partition")
    s.add_argument("--timeout-min", type=int, default=60)
    sub.add_parser("verify", help="check every shipped result: checksums match and the code hash is current")
    im = sub.add_parser("import", help="bring in results made elsewhere (a folder or a .tar.gz), each checked as "
                        "verify checks it; the bad ones are refused, one line each")
    im.add_argument("path", help="a folder of results or a .tar.gz of one (e.g. what a GPU machine returned)")
    im.add_argument("--replace", action="store_true", help="take an imported result where a different current "
                    "result of the same tag is here")
    rl = sub.add_parser("relay", help="one GPU session of a relay across fresh machines: start from --state (the last "
                        "session's --out), run what fits in --budget-min (a longer run cut into pieces that fit), "
                        "write the next state to --out")
    rl.add_argument("--state", type=Path, default=None, help="the folder the last session wrote (carried in)")
    rl.add_argument("--out", type=Path, required=True, help="where this session writes the next state ($OUT)")
    rl.add_argument("--scale", default="gpu", choices=list(SCALES))
    rl.add_argument("--plan", type=Path, default=None, help="a JSON list of units ({name, scale, overrides}); "
                    "default: every experiment at --scale")
    rl.add_argument("--device", default="auto")
    rl.add_argument("--budget-min", type=float, required=True)
    rl.add_argument("--bench", type=Path, default=None, help="the benchmark's figures (bench_gpu.py --json)")
    rl.add_argument("--benchmark", action="store_true", help="run benchmarks/bench_gpu.py first where the state "
                    "carries no benchmark of this device kind (within a quarter of the session)")
    rl.add_argument("--started", type=float, default=None, help="when the session began (seconds since the epoch, "
                    "`date +%%s`): --budget-min counts from then, so that what ran before shares the deadline")
    args = p.parse_args(argv)
    if MISSING is not None:
        print(f"{args.command}: {MISSING}", file=sys.stderr)
        return 2
    if threading.current_thread() is threading.main_thread():
        # interruptible even when started with SIGINT ignored (a background job of a non-interactive shell, as under
        # nohup): run --all stops a run at its budget by SIGINT, and Ctrl-C must reach a foreground one
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return {"list": cmd_list, "run": cmd_run, "sweep": cmd_sweep, "verify": cmd_verify,
                "import": cmd_import, "relay": cmd_relay}[args.command](args)
    except cache.CacheError as err:
        if err.kind != "no-results-dir":
            raise
        print(f"{args.command}: {str(err).replace(', or pass root=', '')}", file=sys.stderr)   # what to set, one line
        return 2
    except KeyboardInterrupt:       # Ctrl-C, or run --all stopping a run at its budget: one line, no traceback
        print(f"{args.command}: interrupted; nothing half-written is kept, a stopped run's last checkpoint is (the "
              "same command resumes it)", file=sys.stderr)
        return 130


def console() -> None:
    """The ``ncbook`` console command: :func:`main`'s exit status."""
    sys.exit(main())


if __name__ == "__main__":
    console()
