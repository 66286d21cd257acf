"""Training: gradient descent (full batch or minibatch, optional momentum) on the MSE or cross-entropy loss with
weight decay per parameter group, step learning-rate drops, NC metrics recorded along the way, divergence
detection, and checkpoints from which a killed run resumes to the identical result.

The loss convention, stated once for the whole package. Every objective is

    C_lambda(theta) = data_loss(Z_L, Y) + sum_l (lambda_l / 2) ||W_l||_F^2,

and ``weight_decay`` always means lambda in it (never PyTorch's "decoupled" variant). The square loss is
(1/2) ||Z_L - Y||_F^2 summed over the samples (``reduction="sum"``, the form of Jacot et al.'s theorems, used by
the GD experiments of :mod:`ncbook.stability` that check them) or averaged over the N samples (``"mean"``,
PyTorch's form, used by every trainer here). The two are one objective: (lambda, lr) under "mean" is
(N lambda, lr / N) under "sum", step for step.
"""

from __future__ import annotations

import math
import os
import signal
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from . import metrics
from .cache import atomic_write
from .nets import MLP, Ensemble


def bars_enabled(enabled: bool = True) -> bool:
    """Whether to show progress bars: not when ``enabled`` is False or the environment sets TQDM_DISABLE=1 (as
    `make execute` and `make test` do, so that executed notebooks hold no progress-bar widgets)."""
    return enabled and os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


def progress_bar(iterable, enabled: bool = True, **kwargs):
    """A tqdm progress bar over ``iterable`` when :func:`bars_enabled`, else ``iterable`` itself."""
    return tqdm(iterable, **kwargs) if bars_enabled(enabled) else iterable


def run_steps(steps: int, update: Callable[[int], None], measure: Callable[[int], None],
              measured: Callable[[int], bool] = lambda step: True, start: int = 0,
              save: Callable[[int], object] | None = None, save_every: int = 500, progress: bool = True,
              desc: str = "train") -> None:
    """The loop of every trainer and GD experiment in ncbook: at each step from ``start`` to ``steps``, first
    ``measure(step)`` where ``measured(step)`` (record metrics, check for divergence), then, before the last step,
    ``update(step)`` (one optimisation step) and, every ``save_every`` updates, ``save(step + 1)`` (a checkpoint from
    which the loop restarts with ``start = step + 1``). The progress bar counts updates, so it completes."""
    bar = tqdm(total=steps, initial=start, desc=desc, leave=False, disable=not bars_enabled(progress))
    for step in range(start, steps + 1):
        if measured(step):
            measure(step)
        if step == steps:
            break
        update(step)
        bar.update()
        if save is not None and (step + 1) % save_every == 0:
            save(step + 1)
        stop_here(step + 1, save)
    bar.close()


class Stopped(KeyboardInterrupt):
    """A run stopped where it was asked to (:func:`stop_on_signals`): by which signal, at which step, and whether
    its checkpoint was written there."""

    def __init__(self, signum: int, step: int, saved: bool) -> None:
        self.signal, self.step, self.saved = signal.Signals(signum), step, saved
        super().__init__(f"stopped by {self.signal.name} at step {step}" + (
            ", its checkpoint written there" if saved else " (a run without checkpoints starts again)"))


_STOP_SIGNALS: list[int] = []
"""The signals received since :func:`stop_on_signals` (empty: run on)."""


def stop_on_signals() -> None:
    """Make SIGINT and SIGTERM stop a run at the end of the step it is taking, with a checkpoint there
    (:func:`stop_here`), so that nothing it computed is lost; a second signal interrupts at once. Installed by
    ``python -m ncbook run`` for one result (what the relay and ``run --all`` start); in a notebook Ctrl-C
    interrupts as always."""
    def asked(signum: int, frame: Any) -> None:
        if _STOP_SIGNALS:
            raise KeyboardInterrupt
        _STOP_SIGNALS.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, asked)


def stop_here(step: int, save: Callable[[int], object] | None) -> None:
    """After each update of :func:`run_steps`: if a stop was asked for (:func:`stop_on_signals`), write the
    checkpoint of ``step`` and raise :class:`Stopped` (a resumed run ends with the identical result). Where a run
    stops is not what it computes: ``codehash.EXECUTION_PATHS``, in no result's key."""
    if not _STOP_SIGNALS:
        return
    if save is not None:
        save(step)
    raise Stopped(_STOP_SIGNALS[0], step, save is not None)


def save_checkpoint(path: Path, state: dict) -> None:
    """Write a checkpoint (tensors, numbers, lists and dicts of them) atomically."""
    atomic_write(Path(path), lambda tmp: torch.save(state, tmp))


def part_checkpoint(checkpoint: Path | None, part: str) -> Path | None:
    """The checkpoint of one part of a multi-part run, beside the run's own (the runner removes them all once the
    result is stored)."""
    return None if checkpoint is None else checkpoint.with_suffix(f".{part}.pt")


def load_checkpoint(path: Path | None) -> dict | None:
    """The checkpoint at ``path``, or None if there is none; loaded with ``weights_only=True``, never unpickled."""
    if path is None or not Path(path).exists():
        return None
    return torch.load(path, weights_only=True)


class ShuffledEpochs:
    """The minibatches of SGD as PyTorch's ``DataLoader(shuffle=True)`` draws them: each epoch is a fresh random
    permutation of the N samples cut into ceil(N / batch_size) batches (the last one smaller), so every sample is
    used exactly once per epoch. Epoch e's permutation depends only on (seed, e), so a resumed run draws the same
    batches without saving any generator state, and every device draws the same ones: it is drawn on the host once
    per epoch and copied to ``device`` without waiting (from pinned memory on a GPU), so a step reads nothing back."""

    def __init__(self, num_samples: int, batch_size: int | None, seed: int, device: torch.device | str = "cpu"):
        self.num_samples, self.seed, self.device = num_samples, seed, torch.device(device)
        self.batch_size = num_samples if batch_size is None else min(batch_size, num_samples)
        self.per_epoch = math.ceil(num_samples / self.batch_size)
        self._epoch, self._perm = -1, torch.empty(0, dtype=torch.long)

    def permutation(self, epoch: int) -> torch.Tensor:
        """Epoch ``epoch``'s order of the samples, on the device."""
        if epoch != self._epoch:
            # torch's CPU generator keeps only 32 bits of its seed: NumPy's SeedSequence mixes (seed, epoch) into them
            gen = torch.Generator().manual_seed(int(np.random.SeedSequence([self.seed, epoch]).generate_state(1)[0]))
            perm = torch.randperm(self.num_samples, generator=gen)
            if self.device.type == "cuda":
                perm = perm.pin_memory()
            self._epoch, self._perm = epoch, perm.to(self.device, non_blocking=True)
        return self._perm

    def batch(self, step: int) -> torch.Tensor:
        """The sample indices of SGD step ``step`` (0-based), on the device."""
        epoch, b = divmod(step, self.per_epoch)
        return self.permutation(epoch)[b * self.batch_size:(b + 1) * self.batch_size]


@dataclass(frozen=True)
class TrainConfig:
    """How to train: ``steps`` GD steps of size ``lr`` (times ``lr_drop_factor`` after each fraction of training
    listed in ``lr_drops``), weight decay ``weight_decay`` on the feature layers and ``weight_decay_last`` on the last
    layer (None: the same), full batch if ``batch_size`` is None, else minibatches in full shuffled passes over the
    data (:class:`ShuffledEpochs`), metrics every ``record_every`` steps and at the steps listed in ``record_at``."""

    steps: int
    lr: float
    weight_decay: float
    weight_decay_last: float | None = None
    loss: Literal["mse", "ce"] = "mse"
    batch_size: int | None = None
    momentum: float = 0.0
    lr_drops: tuple[float, ...] = ()
    lr_drop_factor: float = 0.1
    record_every: int = 50
    record_at: tuple[int, ...] = ()
    optimizer: Literal["sgd", "adam"] = "sgd"

    def __post_init__(self):
        problems = []
        if self.steps < 1:
            problems.append(f"steps must be >= 1 (got {self.steps})")
        if not self.lr > 0:
            problems.append(f"lr must be > 0 (got {self.lr})")
        for name in ("weight_decay", "weight_decay_last"):
            v = getattr(self, name)
            if v is not None and not v >= 0:
                problems.append(f"{name} (lambda) must be >= 0 (got {v})")
        if self.loss not in ("mse", "ce"):
            problems.append(f"loss must be 'mse' or 'ce' (got {self.loss!r})")
        if self.batch_size is not None and self.batch_size < 1:
            problems.append(f"batch_size must be >= 1 or None for full batch (got {self.batch_size})")
        if not 0 <= self.momentum < 1:
            problems.append(f"momentum must be in [0, 1) (got {self.momentum})")
        if any(not 0 < f < 1 for f in self.lr_drops):
            problems.append(f"lr_drops are fractions of training in (0, 1) (got {self.lr_drops})")
        if self.optimizer not in ("sgd", "adam"):
            problems.append(f"optimizer must be 'sgd' or 'adam' (got {self.optimizer!r})")
        if self.record_every < 1:
            problems.append(f"record_every must be >= 1 (got {self.record_every})")
        if problems:
            raise ValueError("invalid TrainConfig: " + "; ".join(problems))

    def records(self, step: int) -> bool:
        """Whether metrics are recorded at this step: every record_every steps, at record_at, and at the end."""
        return step % self.record_every == 0 or step in self.record_at or step == self.steps

    def lr_at(self, step: int) -> float:
        """Learning rate at a step: lr times lr_drop_factor for every drop point already passed."""
        return self.lr * self.lr_drop_factor ** sum(step >= round(f * self.steps) for f in self.lr_drops)

    def decay_of(self, layer: int, num_layers: int) -> float:
        """The weight decay lambda_l of layer ``layer`` (0-based) of ``num_layers``."""
        last = self.weight_decay if self.weight_decay_last is None else self.weight_decay_last
        return last if layer == num_layers - 1 else self.weight_decay


@dataclass
class History:
    """Metrics recorded at ``steps``; ``layers[name][r][l]`` is the value at record r for layer l+1 (for the
    penultimate-layer metrics nc3_* one value, and for nc1_per_class one value per class)."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    train_error: list[float] = field(default_factory=list)
    layers: dict[str, list[list[float]]] = field(default_factory=dict)

    def series(self, name: str, layer: int = -1) -> np.ndarray:
        """Values of metric ``name`` at layer ``layer`` (python index into the layers) over the recorded steps."""
        return np.array([row[layer] for row in self.layers[name]])

    def final(self, name: str, layer: int = -1) -> float:
        """Value of metric ``name`` at layer ``layer`` at the last recorded step."""
        return float(self.layers[name][-1][layer])


def one_hot_targets(labels: torch.Tensor, num_classes: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Targets Y with Y[i, y_i] = 1 and 0 elsewhere (the MSE targets of both papers)."""
    return torch.nn.functional.one_hot(labels, num_classes).to(dtype)


def square_loss(outputs: torch.Tensor, targets: torch.Tensor,
                reduction: Literal["mean", "sum"] = "mean") -> torch.Tensor:
    """(1/2) ||Z_L - Y||_F^2, summed over the samples or averaged over them (the convention in the module
    docstring; Jacot et al. Sec. 4 write the sum)."""
    total = 0.5 * ((outputs - targets) ** 2).sum()
    return total / len(targets) if reduction == "mean" else total


def data_loss(outputs: torch.Tensor, labels: torch.Tensor, kind: str = "mse",
              targets: torch.Tensor | None = None) -> torch.Tensor:
    """The trainers' data loss: MSE :func:`square_loss` against one-hot targets (``targets`` if given: made once,
    since ``one_hot`` reads the labels back to the host), averaged; CE: mean cross-entropy."""
    if kind == "ce":
        return torch.nn.functional.cross_entropy(outputs, labels)
    if targets is None:
        targets = one_hot_targets(labels, outputs.shape[1], outputs.dtype)
    return square_loss(outputs, targets)


def weight_penalty(weights: list[torch.Tensor], weight_decay: float) -> torch.Tensor | float:
    """(lambda / 2) sum_l ||W_l||_F^2, the regulariser of C_lambda (Jacot et al. Sec. 4) for one lambda."""
    return 0.5 * weight_decay * sum((W * W).sum() for W in weights)


PER_LAYER_METRICS = ("nc1_trace_ratio", "nc1_pinv", "nc2_condition_number", "nc2_etf_distance", "balancedness",
                     "negativity")
"""The metrics :func:`layer_metrics` records for every layer (the others: one value, or one per class)."""


def layer_metrics(features: list[torch.Tensor], weights: list[torch.Tensor | None], labels: torch.Tensor,
                  num_classes: int | None = None,
                  preactivations: list[torch.Tensor | None] | None = None) -> dict[str, list[float]]:
    """Per layer: NC1 (trace ratio and pseudo-inverse), NC2 (condition number of the class means, and distance of
    their Gram to the simplex ETF), balancedness of consecutive weights and negativity of the ReLU's input (Jacot
    et al. Sec. 6; Tirer et al. Sec. 6). For the penultimate features and the last weights: NC3 (mean cosine, and
    ETF distance of W Mc, Tirer et al. App. E.2) and the per-class NC1 (K values, Tirer et al. App. E.2).

    ``weights[l]`` produces ``features[l]`` (None for a layer without one, e.g. a backbone's output). A metric that
    is undefined at this point of training (dead ReLU features, all class means equal, a linear layer's
    negativity) is recorded as NaN instead of stopping the run."""
    with torch.no_grad():
        K = num_classes or int(labels.max()) + 1
        out: dict[str, list[float]] = {name: [] for name in PER_LAYER_METRICS}
        pre = preactivations or [None] * len(features)
        for i, Z in enumerate(features):
            s = metrics.class_stats(Z, labels, K)
            out["nc1_trace_ratio"].append(_or_nan(metrics.nc1_trace_ratio, s))
            out["nc1_pinv"].append(_or_nan(metrics.nc1_pinv, s))
            out["nc2_condition_number"].append(metrics.nc2_condition_number(s) if Z.shape[1] >= K else math.nan)
            out["nc2_etf_distance"].append(_or_nan(metrics.nc2_etf_distance, s))
            nxt = weights[i + 1] if i + 1 < len(weights) else None
            out["balancedness"].append(math.nan if nxt is None or weights[i] is None else
                                       _or_nan(metrics.balancedness, nxt, weights[i]))
            out["negativity"].append(math.nan if pre[i] is None else _or_nan(metrics.negativity, pre[i]))
        if len(features) >= 2:
            H, W = features[-2], weights[-1]
            out["nc3_cosine"] = [_or_nan(metrics.nc3_cosine, H, labels, W)]
            out["nc3_etf_distance"] = [_or_nan(metrics.nc3_etf_distance, H, W, labels)]
            per_class = _or_nan(lambda: [float(v) for v in metrics.nc1_per_class(H, labels)])
            out["nc1_per_class"] = per_class if isinstance(per_class, list) else [math.nan] * K
        return out


def _or_nan(metric, *args):
    """The metric, or NaN where it is undefined (the metrics raise ValueError for that)."""
    try:
        return metric(*args)
    except ValueError:
        return math.nan


def _record(hist: History, outputs: torch.Tensor, loss: torch.Tensor, step: int, labels: torch.Tensor,
            features: list[torch.Tensor], weights: list[torch.Tensor | None],
            preactivations: list[torch.Tensor | None] | None = None) -> None:
    hist.steps.append(step)
    hist.loss.append(loss.item())
    hist.train_error.append(float((outputs.argmax(1) != labels).double().mean()))
    for name, vals in layer_metrics(features, weights, labels, preactivations=preactivations).items():
        hist.layers.setdefault(name, []).append(vals)


DIVERGENCE_FACTOR = 1e4
"""A run has diverged when its loss is not finite or exceeds this multiple of its value at step 0 (the shipped runs
never exceed 1.3 times it; a blown-up run passes 10^4 within a few steps)."""

CHECK_EVERY = 256
"""Steps between two readings of a :class:`DivergenceWatch` when no record or checkpoint reads it sooner."""


def check_divergence(loss: torch.Tensor, step: int, lr: float, initial: torch.Tensor | float | None = None,
                     params=()) -> None:
    """Stop a diverged run, naming the step and the cause: the loss is NaN or infinite or above
    :data:`DIVERGENCE_FACTOR` times ``initial`` (its value at step 0), or a parameter is NaN or infinite. It reads
    the device, so the trainers call it at records only (between records, :class:`DivergenceWatch` checks)."""
    if not bool(torch.isfinite(loss).all()):
        raise FloatingPointError(f"loss became {loss.tolist()} at step {step}: the run diverged; lower the learning "
                                 f"rate (lr={lr:g}) or the initialisation scale")
    if initial is not None:
        limit = DIVERGENCE_FACTOR * torch.as_tensor(initial, dtype=loss.dtype, device=loss.device).clamp_min(1e-8)
        if bool((loss > limit).any()):
            worst = float((loss / limit).max()) * DIVERGENCE_FACTOR
            raise divergence_error(step, worst, lr)
    for i, p in enumerate(params):
        if not bool(torch.isfinite(p).all()):
            raise FloatingPointError(f"parameter {i} became non-finite at step {step}: the run diverged; lower the "
                                     f"learning rate (lr={lr:g})")


def divergence_error(step: int, times: float, lr: float) -> FloatingPointError:
    """The error of a run whose loss at ``step`` was ``times`` its initial value (NaN or inf: not finite)."""
    if not math.isfinite(times):
        return FloatingPointError(f"loss became {times} at step {step}: the run diverged; lower the learning rate "
                                  f"(lr={lr:g}) or the initialisation scale")
    return FloatingPointError(f"loss at step {step} is {times:.3g} times its initial value (limit "
                              f"{DIVERGENCE_FACTOR:g}): the run diverged; lower the learning rate (lr={lr:g})")


class DivergenceWatch:
    """The divergence check of a training loop, kept on the device so that no step waits for the host (issue 49):
    :meth:`see` compares each step's loss with :data:`DIVERGENCE_FACTOR` times its initial value without reading it
    back, remembering on the device the first step that failed and by how much; :meth:`check` reads that once (at
    records, before checkpoints, and every :data:`CHECK_EVERY` steps) and stops the run naming that step, as
    :func:`check_divergence` would have at the step itself. A NaN or infinite loss fails (its ratio is not <= 1)."""

    def __init__(self, lr_at: Callable[[int], float]):
        self.lr_at = lr_at
        self.initial: torch.Tensor | None = None
        self.first: torch.Tensor | None = None  # the first failing step (-1: none), set with times by start()
        self.times: torch.Tensor | None = None  # its loss / initial loss

    def start(self, initial: torch.Tensor) -> None:
        """Set the reference: each model's loss at step 0 (a tensor on the device, one value per model)."""
        self.initial = initial.detach().reshape(-1).clamp_min(1e-8)
        self.first = torch.full((), -1, dtype=torch.long, device=initial.device)
        self.times = torch.zeros((), dtype=initial.dtype, device=initial.device)

    def see(self, loss: torch.Tensor, step: int) -> None:
        """Compare this step's loss (one value per model) with the limit, on the device."""
        if self.initial is None or self.first is None or self.times is None:
            return
        times = (loss.detach().reshape(-1) / self.initial).amax()           # NaN if any loss is NaN
        failed = (times <= DIVERGENCE_FACTOR).logical_not_() & (self.first < 0)
        self.first = torch.where(failed, step, self.first)
        self.times = torch.where(failed, times, self.times)
        if step % CHECK_EVERY == CHECK_EVERY - 1:
            self.check()

    def check(self) -> None:
        """Read the watch (one read) and stop the run if a step since the start failed."""
        if self.first is None or self.times is None:
            return
        first, times = torch.stack([self.first.double(), self.times.double()]).tolist()
        if first >= 0:
            raise divergence_error(int(first), times, self.lr_at(int(first)))


def _initial(hists: list[History], now: torch.Tensor) -> torch.Tensor | None:
    """Each model's loss at step 0 (its first record), shaped like ``now``; None before the first record."""
    if not hists[0].loss:
        return None
    return torch.tensor([h.loss[0] for h in hists], dtype=now.dtype, device=now.device).reshape(now.shape)


def momentum_step(params: list[torch.Tensor], grads: list[torch.Tensor], velocity: list[torch.Tensor], lr: float,
                  momentum: float) -> None:
    """One step of SGD with heavy-ball momentum in torch.optim.SGD's form, v <- m v + g, p <- p - lr v (v starts at
    zero, so the first step is v = g), with foreach ops and no optimiser object: the same floats as torch.optim.SGD
    (a test checks it), for less per-step overhead."""
    if momentum == 0:
        torch._foreach_add_(params, grads, alpha=-lr)
        return
    torch._foreach_mul_(velocity, momentum)
    torch._foreach_add_(velocity, grads)
    torch._foreach_add_(params, velocity, alpha=-lr)


CAPTURE_ENV = "NCBOOK_CAPTURE"
"""Set to 1 to compile the training steps of :func:`train_ensemble` and :func:`train_module` (issue 49); off by
default until the compiled steps have been measured on a GPU (``benchmarks/bench_gpu.py`` times them beside the eager
ones)."""


CAPTURE_FALLBACK_ENV = "NCBOOK_CAPTURE_FALLBACK"
"""Set by the relay when it runs a result again with the eager step after its captured run failed: why it failed
(the runner writes it into the result's provenance, ``capture_fallback``)."""


def capture_requested() -> bool:
    """Whether the environment asks for compiled training steps (:data:`CAPTURE_ENV` = 1)."""
    return os.environ.get(CAPTURE_ENV, "").lower() in ("1", "true", "yes")


CPU_COMPILE_OPTIONS = {"layout_optimization": False, "fx_graph_cache": False}
"""TorchInductor's options for a step compiled on the CPU (issue 72; docs/details.md, "The captured step on the CPU").

- ``layout_optimization``: on the CPU it makes every convolution of a graph channels-last (torch/_inductor/graph.py:
  "for cpu backend and mkldnn enabled, we always use channels_last"), where the eager step runs them channels-first;
  and in torch 2.14.1 oneDNN's AVX2 kernel for the weight gradient of a 1x1 convolution of stride 2 on channels-last
  input with fewer than 8 input channels (``jit_avx2_1x1_convolution_bwd_weights``) writes outside its buffer: a
  ResNet's shortcut from 4 to 8 channels corrupted the heap on a CPU with AVX2 and without AVX-512
  (``scripts/repro_onednn_avx2.py``). Off, the captured step calls oneDNN with the eager step's layouts: the same
  primitives, shapes and formats, in the same order (compared with ``ONEDNN_VERBOSE``).
- ``fx_graph_cache``: its key leaves out the vector instruction set TorchInductor writes C++ for (which
  ``ATEN_CPU_CAPABILITY`` chooses), so a graph cached under one (16-lane AVX-512 code) was compiled and run under
  another (8-lane AVX2, or scalar): a heap corruption, a compile error or a diverged loss. Off (and with it the
  AOT-autograd cache, which needs it), each process writes its own C++, and the compiled-code cache, whose key holds
  the compiler's flags, is still used."""


def compiled_step(step: Callable, static: list[torch.Tensor]) -> Callable:
    """``step`` compiled whole (``fullgraph=True``: a graph break is an error, not a silent slow path); on CUDA in
    mode "reduce-overhead", which replays it as a CUDA graph, the tensors ``static`` (weights, buffers, data) marked
    as staying at one address so that the graph updates them in place instead of copying them; on the CPU with
    :data:`CPU_COMPILE_OPTIONS` (the eager step's memory layouts: no channels-last convolutions)."""
    cuda = static[0].device.type == "cuda"
    if cuda:
        for t in static:
            torch._dynamo.mark_static_address(t)
    # torch.compile keeps its graphs per code object: a copy of the code gives this training a cache of its own, so
    # the trainings of one process do not add up to its recompile limit (each compiles once per learning rate and
    # batch shape)
    own = types.FunctionType(step.__code__.replace(), step.__globals__, step.__name__, step.__defaults__,
                             step.__closure__)
    if cuda:
        return torch.compile(own, fullgraph=True, dynamic=False, mode="reduce-overhead")
    return torch.compile(own, fullgraph=True, dynamic=False, options=dict(CPU_COMPILE_OPTIONS))


def capture_path(device: str) -> str:
    """How :func:`compiled_step` compiles a step on ``device``, in words, for a result's provenance."""
    if torch.device(device).type == "cuda":
        return "torch.compile (TorchInductor), fullgraph, reduce-overhead: replayed as CUDA graphs"
    options = ", ".join(f"{k}={v}" for k, v in sorted(CPU_COMPILE_OPTIONS.items()))
    return f"torch.compile (TorchInductor), fullgraph, on the CPU with {options} (the eager step's layouts; issue 72)"


def train(model: MLP, x: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig, seed: int = 0,
          checkpoint: Path | None = None, checkpoint_every: int = 500, progress: bool = True) -> History:
    """Train ``model`` in place according to ``cfg`` and return the recorded metric history
    (:func:`train_ensemble` with one model; see it for checkpoints and resuming)."""
    ens = Ensemble([model])
    [hist] = train_ensemble(ens, x, labels, [cfg], seed, checkpoint, checkpoint_every, progress)
    trained = ens.model(0)
    with torch.no_grad():
        for p, q in zip(model.parameters(), trained.parameters()):
            p.copy_(q)
    return hist


def train_ensemble(ens: Ensemble, x: torch.Tensor, labels: torch.Tensor, cfgs: list[TrainConfig], seed: int = 0,
                   checkpoint: Path | None = None, checkpoint_every: int = 500,
                   progress: bool = True, capture: bool | None = None) -> list[History]:
    """Train the M models of ``ens`` together, model m under ``cfgs[m]`` (the configurations may differ only in
    their weight decays): equivalent, to float rounding, to M separate runs, in one vectorised step each. The step
    differentiates the data loss alone and adds the penalty's gradient lambda_ml W_ml itself: the same floats
    autograd would add (a test checks the weights are bit-identical), for far less elementwise work. Each model's loss
    is checked for divergence every step on the device (:class:`DivergenceWatch`, read at records), the weights
    whenever metrics are recorded; nothing is read back between records. The update is :func:`momentum_step`.

    With ``checkpoint`` set, the weights, momentum buffers and histories are saved atomically every
    ``checkpoint_every`` steps (tensors and numbers only, loaded with ``weights_only=True``); started again with the
    same checkpoint path, a killed run resumes and ends with exactly the result of an uninterrupted run.

    The step is one function of tensors (gradients by ``torch.func.grad``, no read back), which ``torch.compile``
    takes whole: with ``capture`` (default: :func:`capture_requested`) it is compiled, on CUDA with CUDA graphs
    (:func:`compiled_step`), and gives the eager step's weights to float rounding (a test checks it on the CPU).
    """
    capture = capture_requested() if capture is None else capture
    if len(cfgs) != len(ens):
        raise ValueError(f"need one TrainConfig per model: {len(cfgs)} configs for {len(ens)} models")
    if any(c.optimizer != "sgd" for c in cfgs):
        raise ValueError("train_ensemble runs (momentum) SGD; use train_module for Adam")
    shared = {k for k in asdict(cfgs[0]) if k not in ("weight_decay", "weight_decay_last")}
    if any(asdict(c)[k] != asdict(cfgs[0])[k] for c in cfgs for k in shared):
        raise ValueError("models trained together must share every setting but the weight decays")
    cfg, M, N = cfgs[0], len(cfgs), len(labels)
    params = ens.parameters()
    velocity = [torch.zeros_like(p) for p in params] if cfg.momentum else []    # the momentum buffers
    decay_grad = [torch.empty_like(W) for W in ens.weights]   # lambda_ml W_ml, written in place every step
    batches = ShuffledEpochs(N, cfg.batch_size, seed, x.device)
    watch = DivergenceWatch(cfg.lr_at)
    hists, start = [History() for _ in range(M)], 0
    if (state := load_checkpoint(checkpoint)) is not None:
        with torch.no_grad():
            for p, saved in zip(params, state["parameters"]):
                p.copy_(saved)
            for v, saved in zip(velocity, state["velocity"]):
                v.copy_(saved)
        hists, start = [History(**h) for h in state["histories"]], int(state["step"])
    L = len(ens.weights)
    decay = torch.tensor([[c.decay_of(i, L) for i in range(L)] for c in cfgs], dtype=x.dtype, device=x.device)

    layer_decay = [decay[:, i].reshape(M, 1, 1) for i in range(L)]     # lambda_ml, broadcast over W_ml
    targets = one_hot_targets(labels, ens.weights[-1].shape[1], x.dtype)    # once: one_hot reads labels back

    def fit(out: torch.Tensor, yb: torch.Tensor, tb: torch.Tensor) -> torch.Tensor:
        """Per-model data loss, shape (M,), against labels ``yb`` (CE) or their one-hot rows ``tb`` (MSE)."""
        if cfg.loss == "ce":
            return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[2]), yb.repeat(M),
                                                     reduction="none").reshape(M, -1).mean(1)
        return 0.5 * ((out - tb) ** 2).sum((1, 2)) / len(yb)

    def objective(out: torch.Tensor) -> torch.Tensor:
        """Per-model regularised loss on all samples, shape (M,): data loss plus sum_l (lambda_ml / 2) ||W_ml||^2."""
        norms = torch.stack([(W ** 2).sum((1, 2)) for W in ens.weights], dim=1)
        return fit(out, labels, targets) + 0.5 * (decay * norms).sum(1)

    def measure(step: int) -> None:
        watch.check()
        with torch.no_grad():
            feats, pre = ens.forward_features(x, preactivations=True)
            full = objective(feats[-1])
            check_divergence(full, step, cfg.lr_at(step), _initial(hists, full), ens.parameters())
            if watch.initial is None:
                initial = _initial(hists, full)
                watch.start(full if initial is None else initial)
            for m, hist in enumerate(hists):
                _record(hist, feats[-1][m], full[m], step, labels, [f[m] for f in feats],
                        [W[m] for W in ens.weights], [None if p is None else p[m] for p in pre])

    def total(ps: list[torch.Tensor], xb: torch.Tensor, yb: torch.Tensor, tb: torch.Tensor):
        """The summed data loss at weights ``ps`` (the models share no parameter: each gets its own gradient), and
        the per-model losses beside it."""
        losses = fit(ens.forward_features(xb, params=ps)[-1], yb, tb)
        return losses.sum(), losses

    def sgd_step(idx: torch.Tensor | None, lr: float) -> torch.Tensor:
        """One update of every model on the samples ``idx`` (None: all), in place; the per-model batch losses. Only
        tensor operations, no read back: one graph for ``torch.compile`` (:func:`compiled_step`)."""
        xb, yb, tb = (x, labels, targets) if idx is None else (x.index_select(0, idx), labels.index_select(0, idx),
                                                               targets.index_select(0, idx))
        grads, losses = torch.func.grad(total, has_aux=True)(params, xb, yb, tb)
        with torch.no_grad():   # the penalty's gradient lambda_ml W_ml, the very term autograd would have added
            for W, lam, dW in zip(ens.weights, layer_decay, decay_grad):
                torch.mul(W, lam, out=dW)
            torch._foreach_add_(grads[:L], decay_grad)
            momentum_step(params, grads, velocity, lr, cfg.momentum)
        return losses

    run_step = compiled_step(sgd_step, params + velocity + decay_grad + [x, labels, targets]) if capture else sgd_step
    full_batch = cfg.batch_size is None or cfg.batch_size >= N
    static_idx = None if full_batch else torch.empty(batches.batch_size, dtype=torch.long, device=x.device)

    def update(step: int) -> None:
        idx = None if full_batch else batches.batch(step)
        if capture and idx is not None and static_idx is not None and len(idx) == len(static_idx):
            idx = static_idx.copy_(idx)          # one address for every full batch: a graph replays it
        watch.see(run_step(idx, cfg.lr_at(step)), step)

    def save(step: int) -> None:
        assert checkpoint is not None                    # (save is passed to run_steps only then)
        watch.check()
        save_checkpoint(checkpoint, {"step": step, "parameters": [p.detach() for p in params], "velocity": velocity,
                                     "histories": [asdict(h) for h in hists]})

    run_steps(cfg.steps, update, measure, cfg.records, start, None if checkpoint is None else save, checkpoint_every,
              progress, f"train lambda={cfg.weight_decay:g}" if M == 1 else f"train {M} models together")
    return hists


class Measured(Protocol):
    """What :func:`train_module` needs of a network besides ``nn.Module``'s methods (as
    :class:`~ncbook.nets.BackboneHead` and :class:`~ncbook.nets.BlockMLP` have): the outputs of its measured layers,
    their weights (None where a layer has none) and the classifier's parameters."""

    @property
    def weights(self) -> list[torch.Tensor | None]: ...

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]: ...

    def last_layer_parameters(self) -> list[nn.Parameter]: ...


def _features_in_batches(model: nn.Module, x: torch.Tensor, batch: int):
    """Every measured layer's features (and pre-activations, if the model has them) on all of ``x``, in eval mode."""
    feats, pres = [], []
    preactivations = getattr(model, "preactivations", None)
    for i in range(0, len(x), batch):
        feats.append(cast(Measured, model).forward_features(x[i:i + batch]))
        if preactivations is not None:
            pres.append(preactivations(x[i:i + batch]))
    cat = [torch.cat(parts) for parts in zip(*feats)]
    pre = [None if parts[0] is None else torch.cat(parts) for parts in zip(*pres)] if pres else None
    return cat, pre


def train_module(model: nn.Module, x: torch.Tensor, labels: torch.Tensor, cfg: TrainConfig, seed: int = 0,
                 checkpoint: Path | None = None, checkpoint_every: int = 500, progress: bool = True,
                 eval_batch: int = 1000, capture: bool | None = None) -> History:
    """Minibatch SGD (momentum optional) or Adam on any network with ``forward_features``, ``weights`` and
    ``last_layer_parameters`` (e.g. :class:`~ncbook.nets.BackboneHead`): weight decay ``cfg.weight_decay`` on every
    parameter that requires a gradient but the last layer's, ``cfg.weight_decay_last`` on those (PyTorch's coupled
    L2 weight decay, biases and batch norm included, as in Tirer et al. App. E). Metrics are recorded in eval mode on
    the whole of ``x``. Checkpoints and resuming as in :func:`train_ensemble`.

    With ``capture`` (default: :func:`capture_requested`) a minibatch's forward pass and loss are compiled whole
    (:func:`compiled_step`; the backward pass with them, on CUDA both replayed as CUDA graphs), once per batch shape;
    the optimiser's update stays eager (a few fused ``foreach`` launches on CUDA). It ends at the eager run's weights
    to float rounding (a test checks it on the CPU)."""
    capture = capture_requested() if capture is None else capture
    net = cast(Measured, model)
    last = {id(p) for p in net.last_layer_parameters()}
    params = [p for p in model.parameters() if p.requires_grad]
    wd_last = cfg.weight_decay if cfg.weight_decay_last is None else cfg.weight_decay_last
    groups: list[dict[str, Any]] = [{"params": [p for p in params if id(p) not in last],
                                     "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if id(p) in last], "weight_decay": wd_last}]
    groups = [g for g in groups if g["params"]]
    opt: torch.optim.Optimizer
    if cfg.optimizer == "adam":
        opt = torch.optim.Adam(groups, lr=cfg.lr)
    else:
        opt = torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    hist, start, N = History(), 0, len(labels)
    batches = ShuffledEpochs(N, cfg.batch_size, seed, x.device)
    watch = DivergenceWatch(cfg.lr_at)
    classifier = cast(torch.Tensor, net.weights[-1])
    targets = one_hot_targets(labels, classifier.shape[0], x.dtype)    # once: one_hot reads labels back
    if (state := load_checkpoint(checkpoint)) is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        hist, start = History(**state["history"]), int(state["step"])

    def measure(step: int) -> None:
        watch.check()
        model.eval()
        with torch.no_grad():
            feats, pre = _features_in_batches(model, x, eval_batch)
            full = data_loss(feats[-1], labels, cfg.loss) + sum(weight_penalty(g["params"], g["weight_decay"])
                                                                for g in groups)
            check_divergence(full, step, cfg.lr_at(step), _initial([hist], full), params)
            if watch.initial is None:
                initial = _initial([hist], full)
                watch.start(full if initial is None else initial)
            _record(hist, feats[-1], full, step, labels, feats, net.weights, pre)

    def batch_loss(xb: torch.Tensor, yb: torch.Tensor, tb: torch.Tensor) -> torch.Tensor:
        """The data loss of one minibatch (in train mode): what a captured step compiles."""
        return data_loss(model(xb), yb, cfg.loss, tb)

    loss_of = compiled_step(batch_loss, [*params, *model.buffers()]) if capture else batch_loss

    def update(step: int) -> None:
        model.train()
        idx = batches.batch(step)
        opt.zero_grad(set_to_none=True)      # first: a captured step's last gradients are gone before it replays
        loss = loss_of(x[idx], labels[idx], targets[idx])
        watch.see(loss, step)
        for group in opt.param_groups:
            group["lr"] = cfg.lr_at(step)
        loss.backward()
        opt.step()

    def save(step: int) -> None:
        assert checkpoint is not None                    # (save is passed to run_steps only then)
        watch.check()
        save_checkpoint(checkpoint, {"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                     "history": asdict(hist)})

    run_steps(cfg.steps, update, measure, cfg.records, start, None if checkpoint is None else save, checkpoint_every,
              progress, f"train {type(model).__name__}")
    model.eval()
    return hist
