"""What an experiment costs before it runs: floating-point operations from its configuration, and a time from the
current device's measured matrix-product rate. ``python -m ncbook list`` prints both for every experiment and scale.

The count is of the matrix products (linear layers and convolutions; elementwise work is left out): a training step
of a network costs three forward passes (forward, input gradient, weight gradient), a record one forward pass over
the data, a Hessian-vector product about five. MLPs are counted from their widths, convolutional backbones by
running them once on the ``meta`` device (shapes only) under PyTorch's FLOP counter. The time divides the count by
the rate the device reaches on one large product, and adds, for every optimiser step and layer, the overhead of
a step of a tiny network measured on the device: the two ends, arithmetic-bound and overhead-bound. Mid-sized layers
and elementwise work make real runs slower; ``tests/test_cost.py`` compares the estimate at the fixed rates of the
machine that made the shipped results (:data:`REFERENCE_CPU`) with the wall times they record, and
``benchmarks/bench_cost.py`` the estimate at this machine's rates, measured now."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .experiments import CollapsePicture, EdgeOfStability, GDPhases, HeadBounds, HeadDepth, MLPCollapse
from .nets import resnet_backbone
from .reproduce import (
    BlurredClasses,
    HeadDepthSweep,
    LayerwiseTraining,
    NonlinearDepthSweep,
    ResNetHeadDepth,
    WeightDecayAblation,
)

TRAIN_PASSES = 3          # forward, input gradient, weight gradient
HVP_PASSES = 5            # a Hessian-vector product by double back-propagation
DATASETS = {              # samples in the full training set and the shape of one input
    "digits": (1797, (1, 8, 8)),
    "mnist5k": (5000, (1, 28, 28)),
    "mnist": (60000, (1, 28, 28)),
    "cifar10": (50000, (3, 32, 32)),
}


def num_samples(dataset: str, per_class: int | None) -> int:
    """Training-set size of an experiment's data (``per_class`` balanced samples of 10 classes, or all)."""
    full = DATASETS[dataset][0]
    return full if per_class is None else min(full, 10 * per_class)


def input_dim(dataset: str) -> int:
    return math.prod(DATASETS[dataset][1])


def mlp_flops(widths) -> int:
    """Forward FLOPs of one sample through dense layers of these widths: 2 sum_l d_l d_(l-1)."""
    return 2 * sum(a * b for a, b in zip(widths[:-1], widths[1:]))


@functools.cache
def backbone_flops(depth: int, width: int, shape: tuple[int, int, int]) -> int:
    """Forward FLOPs of one sample through :func:`ncbook.nets.resnet_backbone`: 2 k_h k_w (C_in / groups) C_out H_out
    W_out per convolution and 2 d_in d_out per linear layer, as torch's ``FlopCounterMode`` counts them (a test
    checks) without its import of torch's compiler, seconds long. Built on the meta device, run on one sample of
    uninitialised CPU memory (only the shapes count): the meta device's batch norm goes through torch's Python
    decompositions, 2 s on a process's first call against 0.05 s."""
    total = []

    def count(module, _inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k_h, k_w = module.kernel_size
            total.append(2 * k_h * k_w * module.in_channels // module.groups * output[0].numel())
        elif isinstance(module, torch.nn.Linear):
            total.append(2 * module.in_features * output[0].numel())

    with torch.device("meta"):
        net, _ = resnet_backbone(depth, shape[0], width)
    net = net.to_empty(device="cpu").eval()
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d | torch.nn.Linear):
            m.register_forward_hook(count)
    with torch.no_grad():
        net(torch.zeros(1, *shape))
    return sum(total)


@dataclass(frozen=True)
class Cost:
    """FLOPs of a run, its layer-steps (optimiser steps times layers, models trained together counted once: what the
    per-operation overhead scales with) and the float type it computes in."""

    flops: float
    layer_steps: float = 0.0
    dtype: str = "float32"

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.layer_steps + other.layer_steps, self.dtype)

    def times(self, k: int) -> Cost:
        return Cost(k * self.flops, k * self.layer_steps, self.dtype)

    def as_dtype(self, dtype: str) -> Cost:
        return Cost(self.flops, self.layer_steps, dtype)


def _training(widths, copies: int, steps: int, batch: int, records: int, n: int, together: bool = True) -> Cost:
    """``copies`` MLPs of ``widths`` trained ``steps`` steps on batches of ``batch``, recorded ``records`` times on all
    ``n`` samples; trained together (one step for all) or one after another."""
    flops = copies * mlp_flops(widths) * (TRAIN_PASSES * steps * batch + records * n)
    return Cost(flops, (1 if together else copies) * steps * (len(widths) - 1))


def _mlp_collapse(c: MLPCollapse) -> Cost:
    n = num_samples(c.dataset, c.per_class)
    widths = (input_dim(c.dataset), *c.widths[1:])
    copies = len(c.weight_decays) * len(c.seeds)
    return _training(widths, copies, c.steps, c.batch_size or n, c.steps // c.record_every, n).as_dtype(c.dtype)


def _head(c: HeadDepth | HeadBounds) -> Cost:
    n = num_samples(c.dataset, c.per_class)
    return sum((_training((input_dim(c.dataset), *c.relu_widths, *(c.head_width,) * (d - 1), 10),
                          len(c.weight_decays), c.steps, n, c.steps // c.record_every, n) for d in c.depths),
               Cost(0.0)).as_dtype(c.dtype)


def _gd(c: GDPhases | EdgeOfStability) -> Cost:
    n = num_samples("digits", c.per_class)
    records = c.steps // c.every
    if isinstance(c, GDPhases):       # one model at a time
        return _training(c.widths, len(c.lrs) * len(c.weight_decays), c.steps, n, records, n, False).as_dtype(
            "float64")
    hvps = Cost(records * c.power_iters * HVP_PASSES * n * mlp_flops(c.widths),
                records * c.power_iters * (len(c.widths) - 1))
    return (_training(c.widths, 1, c.steps, n, records, n) + hvps).times(len(c.lrs)).as_dtype("float64")


def _head_depth_sweep(c: HeadDepthSweep) -> Cost:
    n, d = num_samples(c.dataset, c.per_class), input_dim(c.dataset)
    copies = len(c.weight_decays) * len(c.seeds)
    return sum((_training((d, *(c.width,) * (c.num_nonlinear + depth - 1), 10), copies, c.steps, c.batch_size or n,
                          c.steps // c.record_every, n) for depth in c.depths), Cost(0.0))


def _nonlinear_depth_sweep(c: NonlinearDepthSweep) -> Cost:
    n, d = num_samples(c.dataset, c.per_class), input_dim(c.dataset)
    return sum((_training((d, *(c.width,) * (depth + c.num_linear - 1), 10), len(c.seeds), c.steps,
                          c.batch_size or n, c.steps // c.record_every, n).times(len(c.lrs)) for depth in c.depths),
               Cost(0.0))


def _epochs(fwd: float, layers: int, copies: int, epochs: int, batch: int, record_every: int, n: int) -> Cost:
    """``copies`` networks trained one after another, ``epochs`` passes over ``n`` samples in batches of ``batch``."""
    return Cost(copies * fwd * n * (TRAIN_PASSES * epochs + epochs // record_every),
                copies * epochs * math.ceil(n / batch) * layers)


def _resnet_head(c: ResNetHeadDepth) -> Cost:
    n, shape = num_samples(c.dataset, c.per_class), DATASETS[c.dataset][1]
    bb, dim = backbone_flops(c.resnet_depth, c.resnet_width, shape), 4 * c.resnet_width
    copies = len(c.seeds) * len(c.weight_decays)
    return sum((_epochs(bb + mlp_flops((dim, *(c.head_width,) * (c.num_nonlinear + depth - 1), 10)),
                        c.resnet_depth + c.num_nonlinear + depth,
                        copies, c.epochs, c.batch_size, c.record_every_epochs, n) for depth in c.depths), Cost(0.0))


def _layerwise(c: LayerwiseTraining) -> Cost:
    n, d = num_samples(c.dataset, c.per_class), input_dim(c.dataset)
    total = Cost(0.0)
    for k in range(1, c.num_layers + 1):     # k blocks forward; the new block and the classifier backward
        fwd = mlp_flops((d, *(c.width,) * k, 10))
        trained = mlp_flops((c.width if k > 1 else d, c.width, 10))
        steps = c.epochs * math.ceil(n / c.batch_size)
        total += Cost(c.epochs * n * (fwd + (TRAIN_PASSES - 1) * trained) + n * fwd, steps * (k + 1))
    return total.times(len(c.seeds))


def _tirer_sgd(c: WeightDecayAblation | BlurredClasses, settings: int) -> Cost:
    n, shape = num_samples(c.dataset, c.per_class), DATASETS[c.dataset][1]
    if c.arch == "resnet18":                       # one network at a time
        return _epochs(backbone_flops(18, 64, shape) + 2 * 512 * 10, 19, settings * len(c.seeds), c.epochs,
                       c.batch_size, c.record_every_epochs, n)
    widths = (math.prod(shape), *c.hidden, 10)     # the settings of a seed trained together
    steps = c.epochs * math.ceil(n / c.batch_size)
    return _training(widths, settings, steps, c.batch_size, c.epochs // c.record_every_epochs, n).times(len(c.seeds))


def _collapse_picture(c: CollapsePicture) -> Cost:
    n = 3 * c.per_class
    return _training((784, *c.hidden, 3), 1, c.checkpoints[-1], n, len(c.checkpoints), n).as_dtype("float64")


ESTIMATORS: dict[type, Callable[[Any], Cost]] = {
    CollapsePicture: _collapse_picture,
    MLPCollapse: _mlp_collapse,
    HeadDepth: _head,
    HeadBounds: _head,
    GDPhases: _gd,
    EdgeOfStability: _gd,
    HeadDepthSweep: _head_depth_sweep,
    NonlinearDepthSweep: _nonlinear_depth_sweep,
    ResNetHeadDepth: _resnet_head,
    LayerwiseTraining: _layerwise,
    WeightDecayAblation: lambda c: _tirer_sgd(c, 5 * len(c.losses)),
    BlurredClasses: lambda c: _tirer_sgd(c, len(c.weight_decays_last)),
}


def mlp_weights(widths) -> int:
    """The weights of a bias-free MLP of these widths: sum_l d_l d_(l-1)."""
    return sum(a * b for a, b in zip(widths[:-1], widths[1:]))


@functools.cache
def backbone_values(depth: int, width: int, channels: int) -> int:
    """The parameters and batch-norm statistics of :func:`ncbook.nets.resnet_backbone` (built on the meta device)."""
    with torch.device("meta"):
        net, _ = resnet_backbone(depth, channels, width)
    return sum(t.numel() for t in (*net.parameters(), *net.buffers()))


def _resnet_heads(c: ResNetHeadDepth) -> list[int]:
    bb = backbone_values(c.resnet_depth, c.resnet_width, DATASETS[c.dataset][1][0])
    return [bb + mlp_weights((4 * c.resnet_width, *(c.head_width,) * (c.num_nonlinear + d - 1), 10))
            for d in c.depths for _ in range(len(c.seeds) * len(c.weight_decays))]


def _tirer_models(c: WeightDecayAblation | BlurredClasses, settings: int) -> list[int]:
    shape = DATASETS[c.dataset][1]
    one = backbone_values(18, 64, shape[0]) + 512 * 10 if c.arch == "resnet18" else mlp_weights(
        (math.prod(shape), *c.hidden, 10))
    return [one] * (settings * len(c.seeds))


MODELS: dict[type, Callable[[Any], list[int]]] = {
    CollapsePicture: lambda c: [mlp_weights((784, *c.hidden, 3))],
    MLPCollapse: lambda c: [mlp_weights((input_dim(c.dataset), *c.widths[1:]))] * (len(c.seeds) * len(
        c.weight_decays)),
    HeadDepth: lambda c: [mlp_weights((input_dim(c.dataset), *c.relu_widths, *(c.head_width,) * (d - 1), 10))
                          for d in c.depths for _ in c.weight_decays],
    GDPhases: lambda c: [mlp_weights(c.widths)] * (len(c.lrs) * len(c.weight_decays)),
    EdgeOfStability: lambda c: [mlp_weights(c.widths)] * len(c.lrs),
    HeadDepthSweep: lambda c: [mlp_weights((input_dim(c.dataset), *(c.width,) * (c.num_nonlinear + d - 1), 10))
                               for d in c.depths for _ in range(len(c.seeds) * len(c.weight_decays))],
    NonlinearDepthSweep: lambda c: [mlp_weights((input_dim(c.dataset), *(c.width,) * (d + c.num_linear - 1), 10))
                                    for d in c.depths for _ in range(len(c.lrs) * len(c.seeds))],
    ResNetHeadDepth: _resnet_heads,
    LayerwiseTraining: lambda c: [],                 # it saves no checkpoint: a stopped run starts again
    WeightDecayAblation: lambda c: _tirer_models(c, 5 * len(c.losses)),
    BlurredClasses: lambda c: _tirer_models(c, 1 + len(c.weight_decays_last)),
}
MODELS[HeadBounds] = MODELS[HeadDepth]


def checkpoint_bytes(cfg: Any) -> int:
    """The bytes of a stopped run's checkpoints when every model of it has one (a finished part keeps its checkpoint
    until the result is stored): each model's weights (and a ResNet's batch-norm statistics), twice with a momentum
    buffer, in the run's float type; histories and biases left out."""
    values = sum(MODELS[type(cfg)](cfg))
    float_bytes = 8 if getattr(cfg, "dtype", "float32") == "float64" or isinstance(cfg, GDPhases) else 4
    return values * float_bytes * (2 if getattr(cfg, "momentum", 0.0) else 1)


def estimate(cfg: Any) -> Cost:
    """The FLOPs of running one configuration (:data:`ESTIMATORS` by its type)."""
    if type(cfg) not in ESTIMATORS:
        raise TypeError(f"no cost estimate for {type(cfg).__name__}; add one to ncbook.cost.ESTIMATORS")
    return ESTIMATORS[type(cfg)](cfg)


@functools.cache
def matmul_rate(device: str = "cpu", dtype: str = "float32", size: int = 1024) -> float:
    """FLOP/s of one ``size`` x ``size`` matrix product on ``device``: the best of a few timed repeats."""
    a = torch.randn(size, size, dtype=getattr(torch, dtype), device=device)
    best = math.inf
    for _ in range(5):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        a @ a
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return 2 * size ** 3 / best


@functools.cache
def layer_step_seconds(device: str = "cpu", layers: int = 6, width: int = 16, batch: int = 32) -> float:
    """The overhead of one layer in one optimiser step on ``device``: a step of a small ``layers``-layer MLP (all
    per-operation overhead, almost no arithmetic), divided by ``layers``; the best of a few timed repeats."""
    net = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)]).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
    x, best = torch.randn(batch, width, device=device), math.inf
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(20):
            opt.zero_grad()
            net(x).square().sum().backward()
            opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / 20)
    return best / layers


REFERENCE_GPU = {"name": "one H200-class data-centre GPU", "float32": 3e13, "float64": 3e13, "layer_step": 5e-5}
"""The rates the ``gpu`` scale is sized with (no GPU was at hand to measure them): float32 and float64 products at
3e13 FLOP/s, about half an H200's 67 TFLOP/s peak without TF32, and 50 microseconds per layer and step, about ten
kernel launches. ``python -m ncbook list --device cuda`` measures the real rates on a GPU."""


REFERENCE_CPU = {"name": "the 2-core machine the shipped results were made on, one thread", "float32": 2.0e11,
                 "float64": 1.07e11, "layer_step": 4.7e-5}
"""That machine's rates, measured once (2026-12-04, idle, ``torch.set_num_threads(1)``: :func:`matmul_rate` and
:func:`layer_step_seconds`; ``benchmarks/bench_cost.py`` measures them again beside these): fixed numbers, so that
``tests/test_cost.py`` compares the estimates with the recorded wall times of the same machine whatever machine
runs the test and however busy it is."""


def reference_seconds(cost: Cost, ref: dict = REFERENCE_GPU) -> float:
    """:func:`seconds` at the fixed rates of ``ref`` (:data:`REFERENCE_GPU`, :data:`REFERENCE_CPU`) instead of
    measured ones."""
    return cost.flops / ref[cost.dtype] + cost.layer_steps * ref["layer_step"]


def rates_file(device: str = "cpu") -> Path:
    """Where this machine's measured rates on ``device`` are kept: the user's cache folder (``XDG_CACHE_HOME``, else
    ``~/.cache``), one file per device, CPU model, torch version and thread count, so that a change of any of them
    measures again."""
    from .cache import cpu_description

    what = json.dumps([device, cpu_description().get("cpu_model", ""), torch.__version__, torch.get_num_threads()])
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncbook"
    return root / f"rates-{hashlib.sha256(what.encode()).hexdigest()[:16]}.json"


@functools.cache
def device_rates(device: str = "cpu") -> dict:
    """This machine's float32 and float64 product rates and per-layer step overhead on ``device``
    (:func:`matmul_rate`, :func:`layer_step_seconds`), measured once and kept (:func:`rates_file`), so that
    ``python -m ncbook list`` answers in about a second; where the cache cannot be read or written, measured now."""
    path = rates_file(device)
    try:
        rates = json.loads(path.read_text())
        if all(isinstance(rates.get(k), float) and rates[k] > 0 for k in ("float32", "float64", "layer_step")):
            return rates
    except (OSError, ValueError):
        pass
    rates = {"float32": matmul_rate(device, "float32"), "float64": matmul_rate(device, "float64"),
             "layer_step": layer_step_seconds(device)}
    try:
        from .cache import atomic_write
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: tmp.write_text(json.dumps(rates)))
    except OSError:
        pass
    return rates


def seconds(cost: Cost, device: str = "cpu") -> float:
    """An estimate of the run's time: its FLOPs at the device's large-product rate for its float type, plus its
    layer-steps at the per-layer step overhead (:func:`device_rates`, measured once on this machine). Small layers and
    elementwise work make real runs slower."""
    return reference_seconds(cost, device_rates(device))


def human(x: float, unit: str = "") -> str:
    """1.2e15 -> '1.2 P', 2.3e17 -> '230 P' (SI prefixes, two significant digits), for the columns of ``list``."""
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{float(f'{x / scale:.2g}'):g} {prefix}{unit}"
    return f"{float(f'{x:.2g}'):g} {unit}"


def duration(s: float) -> str:
    """Seconds as '40 s', '12 min', '3.5 h' or '4.2 days'."""
    def two(x: float) -> str:
        return f"{float(f'{x:.2g}'):g}"

    if s < 90:
        return f"{two(s)} s"
    if s < 5400:
        return f"{two(s / 60)} min"
    if s < 3 * 86400:
        return f"{two(s / 3600)} h"
    return f"{two(s / 86400)} days"
