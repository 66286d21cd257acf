"""What a GPU session can make: every gpu-scale experiment's rate and predicted full wall time, in one command (run
it on the GPU; it also runs on a CPU, where it takes far longer):

    python benchmarks/bench_gpu.py [--device cuda] [--only jacot_mlp tirer_blur] [--short 20] [--short-epochs 1]
                                   [--budget-s 240] [--json out.json]

For each experiment its gpu configuration runs three times, with all its data, seeds and settings: cut to ``--short``
steps (``--short-epochs`` epochs) and to twice that many units of its length (optimiser steps, epochs, or GD steps),
each recording at its start and end, and the longer again with one more record in the middle. The rate is the difference
of the first two wall times over the difference of the lengths (so setup, data loading and compilation cancel), a
record's cost the difference of the last two, and the prediction is the short run's time plus the rest of the length at
that rate plus the full run's other records at that cost (records of Hessian eigenvalues or of every layer's metrics can
be most of a run). Side by side in the same run: the Jacot-size training step (``bench_training.py``'s case), eager and
captured (compiled whole; on CUDA a CUDA graph), in float32 and float64, against the dense matmul rate of its dtype, and
the gpu scale's ResNet20 and ResNet18 minibatch steps eager and captured, and the full metric suite on N = 50,000,
d = 512, K = 10 against one float32 Gram X^T X (``bench_metrics.py``'s), all measured first. ``--json`` is rewritten
after each figure, so a session cut short keeps what it measured. The targets of issue 49: every experiment <= 10
minutes, all <= 60, the step >= 40% of the matmul rate, the metrics <= 2 Grams. The experiments are timed with the
environment's choice of step (NCBOOK_CAPTURE=1: captured); the ResNet figures say which to choose.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # the repository's ncbook, installed or not

from ncbook import metrics  # noqa: E402
from ncbook.registry import EXPERIMENTS  # noqa: E402

HERE = Path(__file__).resolve().parent


def length_field(cfg) -> str:
    """The field that sets how long a configuration trains."""
    have = {f.name for f in dataclasses.fields(cfg)}
    return next(f for f in ("steps", "epochs", "checkpoints") if f in have)


RECORD_FIELDS = ("record_every", "every", "record_every_epochs")


def cut(cfg, units: int, every: int | None = None):
    """``cfg`` trained for ``units`` of its length, recording at the start and the end (and every ``every``)."""
    field = length_field(cfg)
    have = {f.name for f in dataclasses.fields(cfg)}
    if field == "checkpoints":
        return dataclasses.replace(cfg, checkpoints=tuple(range(0, units + 1, every or units)))
    out = {field: units}
    for name in RECORD_FIELDS:
        if name in have:
            out[name] = every or units
    return dataclasses.replace(cfg, **out)


def records(cfg) -> int | None:
    """How many records the full configuration makes (start and end included); None if it has no record setting."""
    if length_field(cfg) == "checkpoints":
        return len(cfg.checkpoints)
    every = next((getattr(cfg, f) for f in RECORD_FIELDS if hasattr(cfg, f)), None)
    return None if not every else full_length(cfg) // every + 1


def full_length(cfg) -> int:
    field = length_field(cfg)
    return max(cfg.checkpoints) if field == "checkpoints" else getattr(cfg, field)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed_run(name: str, cfg, device: str) -> float:
    sync(device)
    t0 = time.perf_counter()
    EXPERIMENTS[name].run(cfg, device=device, progress=False)
    sync(device)
    return time.perf_counter() - t0


def predict(name: str, device: str, short: int, short_epochs: int = 1) -> dict:
    """Wall times of the gpu configuration cut to ``short`` and ``2 short`` units (``short_epochs`` where the unit
    is an epoch) recording at both ends, and ``2 short`` recording once more in the middle: the rate per unit, the
    cost of one record, and the prediction of the full run with all its records."""
    cfg = EXPERIMENTS[name].config("gpu")
    total = full_length(cfg)
    short = min(short_epochs if length_field(cfg) == "epochs" else short, max(1, total // 2))
    t1, t2, t3 = (timed_run(name, cut(cfg, n, every), device)
                  for n, every in ((short, None), (2 * short, None), (2 * short, short)))
    rate = max(t2 - t1, 1e-9) / short
    record_s = max(t3 - t2, 0.0)
    extra = max((records(cfg) or 2) - 2, 0)
    unit = {"checkpoints": "steps"}.get(length_field(cfg), length_field(cfg))
    return {"experiment": name, "unit": unit, "full": total, "short_s": round(t1, 3), "s_per_unit": rate,
            "record_s": round(record_s, 3), "records": extra + 2,
            "predicted_s": round(t1 + (total - short) * rate + extra * record_s, 1), "separated": t2 - t1 > 0.1 * t1}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_window(train_call: Callable[[int], object], steps: int, warmup: int, begin: Callable[[], None],
              end: Callable[[], None]) -> None:
    """Run a trainer (``train_call(total_steps)``) for ``warmup + steps + 1`` steps, calling ``begin`` before step
    ``warmup`` and ``end`` before step ``warmup + steps``: ``train.run_steps``' ``update`` is wrapped for that and
    put back afterwards. The warm-up steps hold compilation and, on CUDA, a graph's recording."""
    import ncbook.train as train

    loop = train.run_steps

    def wrapped_loop(total, update, *args, **kwargs):
        def wrapped_update(step: int) -> None:
            if step == warmup:
                begin()
            elif step == warmup + steps:
                end()
            update(step)
        return loop(total, wrapped_update, *args, **kwargs)

    train.run_steps = wrapped_loop
    try:
        train_call(warmup + steps + 1)
    finally:
        train.run_steps = loop


def timed_steps(train_call: Callable[[int], object], device: str, steps: int, warmup: int = 10) -> float:
    """Seconds per step of a trainer over ``steps`` steps after ``warmup``, waiting for the device at the two ends
    of the window only (:func:`in_window`)."""
    marks: list[float] = []

    def mark() -> None:
        sync(device)
        marks.append(time.perf_counter())

    in_window(train_call, steps, warmup, mark, mark)
    return (marks[1] - marks[0]) / steps


class _OpCount(TorchDispatchMode):
    """Counts the operations that compute something (views aside): on a GPU, each is a kernel launch."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view and func not in _NO_KERNEL:
            self.ops += 1
        return func(*args, **(kwargs or {}))


_NO_KERNEL = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
              torch.ops.aten.empty_like.default}


def ops_per_step(train_call: Callable[[int], object], steps: int = 3, warmup: int = 1) -> float:
    """Operations per eager step of a trainer (:class:`_OpCount` over ``steps`` steps after ``warmup``): the kernel
    launches a GPU would make, counted on any device."""
    counter, active = _OpCount(), []

    def begin() -> None:
        counter.__enter__()
        active.append(True)

    def end() -> None:
        counter.__exit__(None, None, None)
        active.clear()

    try:
        in_window(train_call, steps, warmup, begin, end)
    finally:
        if active:                      # the trainer failed inside the window: leave no mode behind
            end()
    return counter.ops / steps


def mlp_trainer(widths: list[int], x: torch.Tensor, y: torch.Tensor, capture: bool) -> Callable[[int], None]:
    """``train_ensemble`` training one fresh MLP (seed 0, x's dtype and device) full batch for a given number of
    steps (momentum, weight decay, the divergence check)."""
    import ncbook.train as train
    from ncbook.nets import MLP, Ensemble

    def run(total: int) -> None:
        torch.manual_seed(0)
        ens = Ensemble([MLP(widths, 5).to(device=x.device, dtype=x.dtype)])
        cfg = train.TrainConfig(steps=total, lr=1e-3, weight_decay=1e-3, momentum=0.9, record_every=total)
        train.train_ensemble(ens, x, y, [cfg], progress=False, capture=capture)

    return run


RESNETS = {"ResNet20 (jacot_resnet_head)": (20, 16, 128), "ResNet18 (tirer_blur)": (18, 64, 256)}
"""The gpu scale's ResNets: (depth, width, batch) on 28 x 28 digits."""


def resnet_trainer(depth: int, width: int, batch: int, device: str, capture: bool) -> Callable[[int], None]:
    """``train_module`` training a ResNet with a 256-wide ReLU layer and a linear classifier (float32, SGD, weight
    decay) on random 28 x 28 images in minibatches of ``batch``, for a given number of steps."""
    import ncbook.train as train
    from ncbook.nets import BackboneHead, resnet_backbone

    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(4 * batch, 1, 28, 28, device=device, generator=g)
    y = torch.arange(4 * batch, device=device) % 10

    def run(total: int) -> None:
        torch.manual_seed(0)
        backbone, dim = resnet_backbone(depth, 1, width)
        model = BackboneHead(backbone, dim, [256, 10], 1).to(device)
        cfg = train.TrainConfig(steps=total, lr=1e-3, weight_decay=1e-3, batch_size=batch, record_every=total)
        train.train_module(model, x, y, cfg, progress=False, capture=capture)

    return run


def resnet_steps(device: str, steps: int = 20) -> dict:
    """The gpu scale's ResNet steps (:data:`RESNETS`): operations per eager step, and eager and captured step times
    side by side, what capture buys where a step is many small kernels (a failing capture is reported in one line,
    the eager figure stands)."""
    from ncbook.cost import TRAIN_PASSES, backbone_flops, mlp_flops
    from ncbook.nets import resnet_backbone

    out: dict = {}
    for label, (depth, width, batch) in RESNETS.items():
        dim = resnet_backbone(depth, 1, width)[1]
        flops = TRAIN_PASSES * batch * (backbone_flops(depth, width, (1, 28, 28)) + mlp_flops((dim, 256, 10)))
        figures: dict = {"ops_per_step": ops_per_step(resnet_trainer(depth, width, batch, device, False)),
                         "gflop_per_step": round(flops / 1e9, 2)}
        for name, capture in (("eager", False), ("captured", True)):
            try:
                step_s = timed_steps(resnet_trainer(depth, width, batch, device, capture), device, steps)
                figures[name] = {"step_ms": round(1e3 * step_s, 3), "tflop_per_s": round(flops / step_s / 1e12, 2)}
            except Exception as e:  # noqa: BLE001 -- a capture that fails on this machine is a figure, not a crash
                figures[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        out[label] = figures
    return out


def step_against_matmul(device: str, steps: int = 20) -> dict:
    """ncbook's training step (``train.train_ensemble`` of one model: full batch, momentum, weight decay, the
    divergence check) of the Jacot-size network (9 layers of 256 on N = 5,000) in FLOP/s over the dense matmul rate
    of its dtype, in float32 and float64, eager and captured (``capture=True``: compiled whole, on CUDA replayed as
    a CUDA graph), side by side, each over ``steps`` steps after a warm-up (:func:`timed_steps`), and its operations
    per eager step. A capture that fails is reported in one line, and the eager figure stands. Float64 beside float32
    says what the float64 experiments pay for their precision on this device."""
    bench = _load("bench_training")
    widths, n = [784] + [256] * 8 + [10], 5000
    out: dict = {}
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(n, widths[0], device=device, dtype=dtype,
                        generator=torch.Generator(device=device).manual_seed(0))
        y = torch.arange(n, device=device) % 10

        rate = bench.matmul_flops(device, dtype=dtype)
        figures: dict = {"matmul_flops_per_s": rate, "ops_per_step": ops_per_step(mlp_trainer(widths, x, y, False))}
        for name, capture in (("eager", False), ("captured", True)):
            try:
                step_s = timed_steps(mlp_trainer(widths, x, y, capture), device, steps)
            except Exception as e:  # noqa: BLE001 -- a capture that fails on this machine is a figure, not a crash
                figures[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                continue
            flops = bench.step_flops(widths, n) / step_s
            figures[name] = {"step_ms": round(step_s * 1e3, 3), "step_flops_per_s": flops,
                             "fraction_of_matmul": round(flops / rate, 3)}
        out[str(dtype).removeprefix("torch.")] = figures
    return out


def metrics_against_gram(device: str, n: int = 50_000, d: int = 512, k: int = 10) -> dict:
    """The full metric suite (``metrics.nc_metrics``, NC3 included) over one float32 Gram X^T X."""
    g = torch.Generator(device=device).manual_seed(0)
    X = torch.randn(n, d, device=device, generator=g)
    y = torch.randint(0, k, (n,), device=device, generator=g)
    W = torch.randn(k, d, device=device, generator=g)

    def timed(fn, reps: int = 5) -> float:
        fn()
        sync(device)
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            sync(device)
            best = min(best, time.perf_counter() - t0)
        return best

    gram = timed(lambda: X.T @ X)
    suite = timed(lambda: metrics.nc_metrics(X, y, W, k))
    return {"gram_ms": round(gram * 1e3, 3), "suite_ms": round(suite * 1e3, 3),
            "suite_over_gram": round(suite / gram, 2)}


def capture_pays(step: dict, resnets: dict) -> bool:
    """Whether to train with captured steps (NCBOOK_CAPTURE=1): the captured step ran and was faster than the eager
    one for the float32 Jacot-size MLP and for every ResNet (the steps of the gpu scale's float32 experiments)."""
    pairs = [step["float32"], *resnets.values()]
    return all("step_ms" in p.get("captured", {}) and "step_ms" in p.get("eager", {})
               and p["captured"]["step_ms"] < p["eager"]["step_ms"] for p in pairs)


def _figures(device: str, save) -> tuple[dict, dict, dict]:
    """The step and metric figures, printed and saved as they are made."""
    step = step_against_matmul(device)
    for dtype, figures in step.items():
        print(f"Jacot-size step, {dtype}: {figures['ops_per_step']:.0f} operations", flush=True)
        for name in ("eager", "captured"):
            fig = figures[name]
            print(f"Jacot-size step, {dtype}, {name}: " + (fig["error"] if "error" in fig else
                  f"{fig['step_ms']} ms, {fig['fraction_of_matmul']:.0%} of the {dtype} matmul rate "
                  f"({figures['matmul_flops_per_s'] / 1e12:.2f} TFLOP/s; target >= 40%)"), flush=True)
    save(step=step)
    resnets = resnet_steps(device)
    for label, figures in resnets.items():
        print(f"{label} step, {figures['ops_per_step']:.0f} operations, {figures['gflop_per_step']} GFLOP: "
              + ", ".join(f"{name} " + (figures[name]["error"] if "error" in figures[name] else
                                        f"{figures[name]['step_ms']} ms = {figures[name]['tflop_per_s']} TFLOP/s")
                          for name in ("eager", "captured")), flush=True)
    save(resnet_steps=resnets)
    suite = metrics_against_gram(device)
    print(f"metric suite, N = 50,000, d = 512: {suite['suite_ms']} ms = {suite['suite_over_gram']} Grams "
          f"(one Gram {suite['gram_ms']} ms; target <= 2)", flush=True)
    return step, resnets, suite


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--only", nargs="+", choices=sorted(EXPERIMENTS), default=list(EXPERIMENTS))
    p.add_argument("--short", type=int, default=20, help="steps of the shorter timed run")
    p.add_argument("--short-epochs", type=int, default=1, help="epochs of the shorter timed run, where the unit is "
                   "an epoch")
    p.add_argument("--budget-s", type=float, default=float("inf"), help="time no further experiment once this many "
                   "seconds have passed (they are listed as not timed); the step and metric figures are always made")
    p.add_argument("--json", type=Path, default=None, help="also write every figure here")
    p.add_argument("--experiments-only", action="store_true", help="time the experiments alone, without the step "
                   "and metric figures (minutes on a CPU): what the relay's estimates read")
    args = p.parse_args()
    out = {"device": args.device, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None}

    def save(**figures) -> None:
        """Write what is measured so far (a session cut short keeps it): the step and metric figures first."""
        out.update(figures)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))

    if args.experiments_only:
        step, resnets, suite = {}, {}, {}
    else:
        step, resnets, suite = _figures(args.device, save)
    rows, untimed, start = [], [], time.monotonic()
    capture = capture_pays(step, resnets) if step else False
    if step:
        print(f"captured steps {'faster' if capture else 'not faster (or failed)'}: NCBOOK_CAPTURE={int(capture)}",
              flush=True)
    save(step=step, resnet_steps=resnets, metrics=suite, experiments=rows, not_timed=untimed,
         **({"capture_pays": capture} if step else {}))
    for name in args.only:
        if time.monotonic() - start > args.budget_s:
            untimed.append(name)
            continue
        row = predict(name, args.device, args.short, args.short_epochs)
        rows.append(row)
        save()
        print(f"{name:<22} {row['full']:>8} {row['unit']:<7} {row['s_per_unit'] * 1e3:>10.2f} ms each, "
              f"{row['records']:>4} records of {row['record_s']:.2f} s, predicted {row['predicted_s'] / 60:>7.1f} min"
              + ("" if row["separated"] else " (the two timed runs too close to separate: raise --short)"), flush=True)
    save()
    total = sum(r["predicted_s"] for r in rows)
    print(f"all {len(rows)}: {total / 60:.1f} min predicted (targets: each <= 10 min, all <= 60)"
          + (f"; not timed (--budget-s spent): {', '.join(untimed)}" if untimed else ""))

if __name__ == "__main__":
    main()
