"""The experiments of Parts I-III: a typed configuration (instances at the scales ``tiny`` for tests, ``cpu`` for
the results shipped with the book, ``paper`` for the source paper's settings on a GPU, registered in
:mod:`ncbook.runner`) and a run function that returns arrays."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import bounds, data, metrics
from .bounds import kappa, ntk_op_norm, op_norm, product
from .data import load_data
from .nets import MLP, Ensemble, SmoothLeakyReLU, mlp_layer_names, padded_layer_names, portable_default_init_
from .stability import gd_phases, gd_with_sharpness
from .train import History, TrainConfig, part_checkpoint, train, train_ensemble


def check_dtype(dtype: str) -> None:
    """Refuse a training precision other than float32 and float64, in one line."""
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")


class OneSeed:
    """A configuration whose runs all use one ``seed`` (the runner records ``seeds`` in the provenance)."""

    seed: int

    @property
    def seeds(self) -> tuple[int, ...]:
        return (self.seed,)

# ------------------------------------------------------------------------------------------------------------------
# Chapter 1's live demonstration (light: computed when the chapter runs)


@dataclass(frozen=True)
class MLPDemo:
    """Chapter 1's live demonstration: a bias-free MLP (L1 ReLU layers, then L2 linear layers) trained by
    full-batch GD on the regularised MSE loss, on a class-balanced part of the real MNIST-5k, in float64."""

    weight_decay: float = 3e-3
    per_class: int = 50
    widths: tuple[int, ...] = (784, 64, 64, 32, 32, 10)
    num_nonlinear: int = 2
    steps: int = 1500
    lr: float = 0.2
    record_every: int = 50
    seed: int = 0

    def __post_init__(self):
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay (lambda) must be >= 0, got {self.weight_decay}")
        if self.widths[-1] != 10 or self.widths[0] != 784:
            raise ValueError(f"widths must start at 784 (MNIST pixels) and end at 10 classes, got {self.widths}")


@lru_cache(maxsize=32)
def run_mlp_demo(cfg: MLPDemo, progress: bool = True) -> tuple[History, MLP]:
    """Train the network of ``cfg`` (the same network on any CPU for a given seed) and return its metric history and
    the model."""
    X, y = data.mnist5k(per_class=cfg.per_class, seed=cfg.seed, dtype=torch.float64)
    model = MLP(list(cfg.widths), cfg.num_nonlinear).double()
    torch.manual_seed(cfg.seed)           # redrawn from the seed, the same bits on any CPU (= linear_head's, made
    portable_default_init_(model)         # on an FMA CPU)
    hist = train(model, X, y, TrainConfig(steps=cfg.steps, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                          record_every=cfg.record_every), progress=progress)
    return hist, model


# ------------------------------------------------------------------------------------------------------------------
# The first picture (index and Chapter 1): collapse as it happens


@dataclass(frozen=True)
class CollapsePicture(OneSeed):
    """The book's first picture: a bias-free MLP (``num_nonlinear`` ReLU layers, then linear layers) on three MNIST
    digits, trained by full-batch GD on the regularised square loss in float64 (as Chapter 1's demonstration); at
    each of ``checkpoints`` (GD steps) its last hidden layer's features are kept in the plane of their class means."""

    digits: tuple[int, ...] = (0, 1, 7)
    per_class: int = 100
    hidden: tuple[int, ...] = (128, 128, 64)
    num_nonlinear: int = 2
    weight_decay: float = 3e-3
    lr: float = 0.2
    checkpoints: tuple[int, ...] = (0, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3500, 5000)
    seed: int = 0

    def __post_init__(self):
        if len(self.digits) != 3 or len(set(self.digits)) != 3 or not all(0 <= d <= 9 for d in self.digits):
            raise ValueError(f"digits must be three different digits 0-9 (their means span a plane), got {self.digits}")
        if not self.checkpoints or self.checkpoints[0] < 0 or list(self.checkpoints) != sorted(set(self.checkpoints)):
            raise ValueError(f"checkpoints must be increasing GD steps >= 0, got {self.checkpoints}")
        if not 1 <= self.num_nonlinear < len(self.hidden):
            raise ValueError(f"num_nonlinear must be 1..{len(self.hidden) - 1} (the last hidden layer is linear), "
                             f"got {self.num_nonlinear}")


def mean_plane_coordinates(features: torch.Tensor, labels: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Features of three classes in the plane of their centred class means (an orthonormal basis of the span of
    mu_c - mu_G), scaled so that the means' root-mean-square norm is 1, turned so that class 0's mean points up and
    class 1's lies to its left: (N, 2) coordinates of the features and (3, 2) of the class means."""
    means = metrics.class_means(features, labels, 3)
    centred = means - means.mean(0)
    basis = torch.linalg.svd(centred, full_matrices=False).Vh[:2]          # (2, d): the plane of the means
    m, z = centred @ basis.T, (features.double() - means.mean(0)) @ basis.T
    angle = torch.atan2(m[0, 1], m[0, 0])
    c, s = torch.cos(np.pi / 2 - angle), torch.sin(np.pi / 2 - angle)
    turn = torch.stack([torch.stack([c, s]), torch.stack([-s, c])])         # rotation by pi/2 - angle (row vectors)
    m, z = m @ turn, z @ turn
    if m[1, 0] > 0:                                                          # class 1 on the left
        flip = torch.tensor([-1.0, 1.0], dtype=m.dtype, device=m.device)
        m, z = m * flip, z * flip
    scale = m.pow(2).sum(1).mean().sqrt()
    return (z / scale).cpu().numpy(), (m / scale).cpu().numpy()


def run_collapse_picture(cfg: CollapsePicture, device: str = "cpu", progress: bool = True,
                         checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Per checkpoint: the features' and class means' ``mean_plane_coordinates``, NC1 (tr Sigma_W / tr Sigma_B over
    all d directions), the cosines between the centred class means (pairs (0,1), (0,2), (1,2); -1/2 at a simplex),
    and the training error. (A run of minutes: redone, not resumed, so ``checkpoint`` is unused.)"""
    from tqdm.auto import tqdm

    X, y10 = data.mnist5k(per_class=cfg.per_class, seed=cfg.seed, dtype=torch.float64)
    keep = torch.isin(y10, torch.tensor(cfg.digits))
    lookup = torch.full((10,), -1, dtype=torch.long)
    lookup[list(cfg.digits)] = torch.arange(3)                      # class c is the digit cfg.digits[c]
    X, y = X[keep].to(device), lookup[y10[keep]].to(device)
    model = MLP([784, *cfg.hidden, 3], cfg.num_nonlinear).double().to(device)
    torch.manual_seed(cfg.seed)
    portable_default_init_(model)
    out: dict[str, list] = {k: [] for k in ("coords", "mean_coords", "nc1", "mean_cosines", "train_error")}
    done = 0
    for step in tqdm(cfg.checkpoints, desc="collapse picture", disable=not progress):
        if step > done:
            train(model, X, y, TrainConfig(steps=step - done, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                           record_every=step - done), progress=False)
            done = step
        with torch.no_grad():
            feats = model.forward_features(X)
        H = feats[-2]
        z, m = mean_plane_coordinates(H, y)
        means = metrics.class_means(H, y, 3)
        unit = torch.nn.functional.normalize(means - means.mean(0), dim=1)
        cos = unit @ unit.T
        out["coords"].append(z)
        out["mean_coords"].append(m)
        out["nc1"].append(metrics.nc1_trace_ratio(H, y))
        out["mean_cosines"].append([float(cos[0, 1]), float(cos[0, 2]), float(cos[1, 2])])
        out["train_error"].append(float((feats[-1].argmax(1) != y).double().mean()))
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
    arrays.update(steps=np.array(cfg.checkpoints), labels=y.cpu().numpy(), digits=np.array(cfg.digits))
    return arrays


# ------------------------------------------------------------------------------------------------------------------
# Heavy experiments (run through the runner, results cached)


@dataclass(frozen=True)
class MLPCollapse:
    """An MLP of ``num_nonlinear`` ReLU layers and a linear head, trained with the square loss and weight decay,
    the learning rate dropped ten-fold after 80% of training (Jacot et al. Sec. 6, Fig. 1 caption and App. A,
    Fig. 4); one model per (seed, weight decay), all trained together as an ensemble. Records per-layer NC1, NC2,
    NC3, balancedness and the loss."""

    dataset: str = "mnist5k"            # "digits", "mnist5k", or "mnist" (full MNIST from data_root)
    per_class: int | None = 100         # class-balanced subset; None: all
    widths: tuple[int, ...] = (784, 128, 128, 128, 128, 128, 128, 128, 128, 10)
    num_nonlinear: int = 5
    weight_decays: tuple[float, ...] = (1.8e-3,)
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 3000
    lr: float = 0.05
    batch_size: int | None = None
    momentum: float = 0.9
    lr_drops: tuple[float, ...] = (0.8,)
    record_every: int = 100
    dtype: str = "float32"
    data_root: str = "~/data"           # full MNIST (dataset="mnist") is read from here ...
    download: bool = False              # ... and downloaded there only if this is set

    def __post_init__(self):
        if self.dataset not in ("digits", "mnist5k", "mnist"):
            raise ValueError(f"dataset must be 'digits', 'mnist5k' or 'mnist', got {self.dataset!r}")
        if not self.seeds or not self.weight_decays:
            raise ValueError("need at least one seed and one weight decay")
        check_dtype(self.dtype)
        TrainConfig(steps=self.steps, lr=self.lr, weight_decay=min(self.weight_decays),
                    batch_size=self.batch_size, momentum=self.momentum, lr_drops=self.lr_drops,
                    record_every=self.record_every)     # validates the training settings


def run_mlp_collapse(cfg: MLPCollapse, device: str = "cpu", progress: bool = True,
                     checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Train every (seed, weight decay) model of ``cfg`` together as one ensemble.

    Returns arrays indexed [seed, weight decay, record] (loss, train_error) or [seed, weight decay, record, layer].
    """
    dtype = getattr(torch, cfg.dtype)
    X, y = load_data(cfg.dataset, cfg.per_class, 0, device, dtype, cfg.data_root, cfg.download)
    widths = (X.shape[1], *cfg.widths[1:])
    models = []
    for seed in cfg.seeds:
        for _ in cfg.weight_decays:
            torch.manual_seed(seed)
            models.append(MLP(list(widths), cfg.num_nonlinear).to(device=device, dtype=dtype))
    base: dict[str, Any] = dict(steps=cfg.steps, lr=cfg.lr, batch_size=cfg.batch_size, momentum=cfg.momentum,
                lr_drops=cfg.lr_drops, record_every=cfg.record_every)
    cfgs = [TrainConfig(weight_decay=wd, **base) for _ in cfg.seeds for wd in cfg.weight_decays]
    ens = Ensemble(models)
    hists = train_ensemble(ens, X, y, cfgs, seed=cfg.seeds[0], checkpoint=checkpoint,
                           checkpoint_every=max(1, cfg.steps // 20), progress=progress)
    S, W = len(cfg.seeds), len(cfg.weight_decays)
    out = {"steps": np.array(hists[0].steps), "seeds": np.array(cfg.seeds),
           "weight_decays": np.array(cfg.weight_decays),
           "layer_names": np.array(mlp_layer_names(len(widths) - 1, cfg.num_nonlinear))}
    out["loss"] = np.array([h.loss for h in hists]).reshape(S, W, -1)
    out["train_error"] = np.array([h.train_error for h in hists]).reshape(S, W, -1)
    for name in hists[0].layers:
        out[name] = np.array([h.layers[name] for h in hists], dtype=np.float64).reshape(S, W, len(out["steps"]), -1)
    with torch.no_grad():   # the class-mean cosines of every layer of every trained model (Jacot et al. Fig. 1)
        feats = ens.forward_features(X)
        cos = [[_or_nan_gram(f[m], y) for f in feats] for m in range(len(models))]
    out["class_mean_cosines"] = np.array(cos).reshape(S, W, len(feats), *cos[0][0].shape)
    return out


def _or_nan_gram(Z: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    K = int(y.max()) + 1
    try:
        return metrics.class_mean_cosines(Z, y, K)
    except ValueError:          # a dead layer: a zero class mean
        return np.full((K, K), np.nan)


@dataclass(frozen=True)
class HeadDepth(OneSeed):
    """Chapter 1's λ x depth figure: chapter 1's demonstration MLP (ReLU layers ``relu_widths``) with a linear head
    of ``L2`` layers of width ``head_width`` (the last one to the 10 classes), for every ``L2`` in ``depths`` and
    every weight decay, full-batch GD in ``dtype`` (float64 at the cpu scale, float32 at the gpu scale: no check
    reads a value float32 cannot resolve); one ensemble (all weight decays) per depth."""

    depths: tuple[int, ...] = (1, 2, 3, 4)
    weight_decays: tuple[float, ...] = (0.0, 1e-3, 3e-3, 1e-2)
    dataset: str = "mnist5k"
    per_class: int | None = 50          # None: every digit
    relu_widths: tuple[int, ...] = (64, 64)
    head_width: int = 32
    steps: int = 1500
    lr: float = 0.2
    record_every: int = 50
    seed: int = 0
    dtype: str = "float64"
    data_root: str = "~/data"           # full MNIST (dataset="mnist") is read from here ...
    download: bool = False              # ... and downloaded there only if this is set

    def __post_init__(self):
        check_dtype(self.dtype)
        if not self.depths or min(self.depths) < 1:
            raise ValueError(f"depths (number of linear layers) must all be >= 1, got {self.depths}")

    def collapse_config(self, depth: int) -> MLPCollapse:
        """The :class:`MLPCollapse` run behind one depth (with L2 = 3 it is :class:`MLPDemo`'s network)."""
        widths = (784, *self.relu_widths, *(self.head_width,) * (depth - 1), 10)
        return MLPCollapse(dataset=self.dataset, per_class=self.per_class, widths=widths,
                           num_nonlinear=len(self.relu_widths), weight_decays=self.weight_decays, seeds=(self.seed,),
                           steps=self.steps, lr=self.lr, momentum=0.0, lr_drops=(), record_every=self.record_every,
                           dtype=self.dtype, data_root=self.data_root, download=self.download)


def run_head_depth(cfg: HeadDepth, device: str = "cpu", progress: bool = True,
                   checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays indexed [depth, weight decay, record] or [depth, weight decay, record, layer]; layers past a network's
    depth are NaN."""
    runs = []
    for depth in cfg.depths:
        runs.append(run_mlp_collapse(cfg.collapse_config(depth), device, progress,
                                     part_checkpoint(checkpoint, f"L{depth}")))
    out = {"depths": np.array(cfg.depths), "weight_decays": np.array(cfg.weight_decays), "steps": runs[0]["steps"]}
    out["loss"] = np.stack([r["loss"][0] for r in runs])
    out["train_error"] = np.stack([r["train_error"][0] for r in runs])
    out["num_layers"] = np.array([r["nc1_trace_ratio"].shape[-1] for r in runs])
    out["layer_names"] = padded_layer_names([r["layer_names"].tolist() for r in runs])
    for name in runs[0]:
        if runs[0][name].ndim == 4:
            most = max(r[name].shape[-1] for r in runs)
            out[name] = np.stack([np.pad(r[name][0], ((0, 0), (0, 0), (0, most - r[name].shape[-1])),
                                         constant_values=np.nan) for r in runs])
    return out


BOUND_FIELDS = ("eps1", "eps2", "r", "psi", "kappa_linear", "kappa_WL", "nc1", "nc2", "nc3", "bound_nc1",
                "bound_kappa_WL", "bound_kappa_WL_fixed", "bound_nc2", "bound_nc3", "bound_nc3_as_printed",
                "Z_L1_op", "X_op", "lemma_c2_gap", "lemma_c2_bound")
"""The quantities of Theorem 3.1 and Lemma C.2 that :func:`run_head_bounds` stores for every trained network."""


@dataclass(frozen=True)
class HeadBounds(OneSeed):
    """Part III's trained networks: ReLU layers ``relu_widths`` and a linear head of L2 layers (every L2 in
    ``depths``), trained for every weight decay by full-batch GD on the square loss in ``dtype`` (lr dropped
    ten-fold at 80%; float64 at the cpu scale, float32 at the gpu scale), then measured against Theorem 3.1 (Jacot et
    al.) in float64 whatever the training's dtype (:mod:`ncbook.bounds` evaluates the trained weights in float64)."""

    depths: tuple[int, ...] = (2, 3, 4, 5)
    weight_decays: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    dataset: str = "mnist5k"
    per_class: int | None = 50          # None: every digit
    relu_widths: tuple[int, ...] = (64, 64)
    head_width: int = 32
    steps: int = 3000
    lr: float = 0.2
    lr_drops: tuple[float, ...] = (0.8,)
    record_every: int = 100
    seed: int = 0
    dtype: str = "float64"
    data_root: str = "~/data"           # full MNIST (dataset="mnist") is read from here ...
    download: bool = False              # ... and downloaded there only if this is set

    def __post_init__(self):
        check_dtype(self.dtype)
        if not self.depths or min(self.depths) < 2:
            raise ValueError(f"Theorem 3.1 needs linear heads of at least 2 layers, got depths {self.depths}")


def run_head_bounds(cfg: HeadBounds, device: str = "cpu", progress: bool = True,
                    checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Train every (depth, weight decay) network and evaluate Theorem 3.1 on it: arrays [depth, weight decay] for
    each of :data:`BOUND_FIELDS`, plus the training loss and error [depth, weight decay, record]."""

    dtype = getattr(torch, cfg.dtype)
    X, y = load_data(cfg.dataset, cfg.per_class, 0, device, dtype, cfg.data_root, cfg.download)
    out: dict[str, list] = {name: [] for name in (*BOUND_FIELDS, "loss", "train_error")}
    for depth in cfg.depths:
        widths = [X.shape[1], *cfg.relu_widths, *(cfg.head_width,) * (depth - 1), 10]
        models = []
        for _ in cfg.weight_decays:
            torch.manual_seed(cfg.seed)
            models.append(MLP(widths, len(cfg.relu_widths)).to(device=device, dtype=dtype))
        ens = Ensemble(models)
        cfgs = [TrainConfig(steps=cfg.steps, lr=cfg.lr, weight_decay=wd, lr_drops=cfg.lr_drops,
                            record_every=cfg.record_every) for wd in cfg.weight_decays]
        ckpt = part_checkpoint(checkpoint, f"L{depth}")
        hists = train_ensemble(ens, X, y, cfgs, seed=cfg.seed, checkpoint=ckpt,
                               checkpoint_every=max(1, cfg.steps // 10), progress=progress)
        rows: dict[str, list] = {name: [] for name in out}
        for i, hist in enumerate(hists):
            model = ens.model(i)
            th = bounds.theorem_3_1(model, X, y)
            gap, bound = bounds.lemma_c2(model.weights[len(cfg.relu_widths):])
            values = {**{k: getattr(th, k) for k in BOUND_FIELDS[:-2]}, "lemma_c2_gap": gap, "lemma_c2_bound": bound}
            for name in BOUND_FIELDS:
                rows[name].append(values[name])
            rows["loss"].append(hist.loss)
            rows["train_error"].append(hist.train_error)
        for name in out:
            out[name].append(rows[name])
    arrays = {name: np.array(v, dtype=np.float64) for name, v in out.items()}
    arrays.update(depths=np.array(cfg.depths), weight_decays=np.array(cfg.weight_decays),
                  steps=np.array(hists[0].steps))
    return arrays


def _small_digits(cfg, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``cfg.per_class`` digits per class in float64, times ``cfg.input_scale`` (the digits come standardised, to
    std 1; the GD experiments of chapters 6-7 scale them down to std 1/16, which keeps their learning rates stable)."""
    X, y = load_data("digits", cfg.per_class, 0, device, torch.float64)
    return X * cfg.input_scale, y


@dataclass(frozen=True)
class GDPhases(OneSeed):
    """Chapter 6: GD on C_lambda (summed square loss, Jacot et al. Sec. 4) for a network of Assumptions 4.1-4.2 (a
    first layer at least as wide as the data set, pyramidal after, the smoothed leaky ReLU of eq. (7)), for every
    (learning rate, weight decay). In float64 at every scale: chapter 6 checks the one-step recursion of Thm 4.4 to
    a relative residual below 1e-12, and fits the decay of the balancedness D, a difference of two products of size
    ||W||^2, over orders of magnitude that float32 (resolution about 1e-7 of them) would cut short."""

    widths: tuple[int, ...] = (64, 128, 64, 32, 32, 10)
    num_nonlinear: int = 2
    gamma: float = 0.1
    beta: float = 1.0
    per_class: int | None = 10          # None: every digit
    input_scale: float = 1 / 16
    lrs: tuple[float, ...] = (0.005, 0.01)
    weight_decays: tuple[float, ...] = (0.02, 0.05, 0.1)
    steps: int = 8000
    every: int = 50
    seed: int = 0


def run_gd_phases(cfg: GDPhases, device: str = "cpu", progress: bool = True,
                  checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [lr, weight decay, record] (losses, ||grad C_0||^2) and [lr, weight decay, record, pair]
    (balancedness of each pair of linear layers), plus the largest recursion residual."""

    X, y = _small_digits(cfg, device)
    runs = []
    for lr in cfg.lrs:
        row = []
        for wd in cfg.weight_decays:
            torch.manual_seed(cfg.seed)
            model = MLP(list(cfg.widths), cfg.num_nonlinear, activation=SmoothLeakyReLU(cfg.gamma, cfg.beta))
            row.append(gd_phases(model.double().to(device), X, y, lr, wd, cfg.steps, cfg.every, progress,
                                 part_checkpoint(checkpoint, f"lr{lr:g}-wd{wd:g}")))
        runs.append(row)
    out = {name: np.array([[r[name] for r in row] for row in runs]) for name in runs[0][0] if name != "step"}
    out.update(step=runs[0][0]["step"], lrs=np.array(cfg.lrs), weight_decays=np.array(cfg.weight_decays))
    return out


def initial_sharpness(cfg: GDPhases | EdgeOfStability) -> float:
    """The largest eigenvalue of the Hessian of the summed square loss C_0 (weight decay lambda adds lambda to it) at
    the initial weights of a full-batch GD experiment, as its run draws them: its learning rates are stable at the
    start only below 2 / it (:func:`bounds.largest_hessian_eigenvalue`). Computed once per network and data."""
    unused: dict[str, Any] = {"lrs": (1.0,), "steps": 1, "every": 1}
    unused |= {"weight_decays": (0.0,)} if isinstance(cfg, GDPhases) else {"weight_decay": 0.0, "power_iters": 1}
    return _initial_sharpness(replace(cfg, **unused))


@lru_cache(maxsize=16)
def _initial_sharpness(cfg: GDPhases | EdgeOfStability) -> float:
    from .stability import _gd_start, regularised_loss

    X, y = _small_digits(cfg, "cpu")
    torch.manual_seed(cfg.seed)
    activation = SmoothLeakyReLU(cfg.gamma, cfg.beta) if isinstance(cfg, GDPhases) else None
    model = MLP(list(cfg.widths), cfg.num_nonlinear, activation=activation).double()
    Xd, Y, params = _gd_start(model, X, y, min(cfg.lrs), 0.0)
    return bounds.largest_hessian_eigenvalue(lambda ps: regularised_loss(model, ps, Xd, Y, 0.0), params, tol=1e-3)


@dataclass(frozen=True)
class EdgeOfStability(OneSeed):
    """Chapter 7: full-batch GD at large learning rates on a small MLP with a linear head, tracking the top
    eigenvalue of the Hessian of C_lambda (Cohen et al. 2021; Jacot et al. Sec. 5.2)."""

    widths: tuple[int, ...] = (64, 64, 32, 32, 32, 10)
    num_nonlinear: int = 2
    per_class: int | None = 10          # None: every digit
    input_scale: float = 1 / 16
    lrs: tuple[float, ...] = (0.01, 0.02, 0.05)
    weight_decay: float = 1e-3
    steps: int = 3000
    every: int = 100
    power_iters: int = 30
    seed: int = 0
    dtype: str = "float64"              # GD's precision (float32 at the gpu scale); the NTK is measured in float64

    def __post_init__(self):
        check_dtype(self.dtype)


def run_edge_of_stability(cfg: EdgeOfStability, device: str = "cpu", progress: bool = True,
                          checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [lr, step] (loss), [lr, record] (sharpness), and for each run the final kappa of the products
    W_{L:l} of the linear head, [lr, l]."""

    X, y = _small_digits(cfg, device)
    loss, sharp, kappas = [], [], []
    for lr in cfg.lrs:
        torch.manual_seed(cfg.seed)
        model = MLP(list(cfg.widths), cfg.num_nonlinear).double().to(device)
        out = gd_with_sharpness(model, X, y, lr, cfg.weight_decay, cfg.steps, cfg.every, cfg.power_iters, progress,
                                part_checkpoint(checkpoint, f"lr{lr:g}"), dtype=getattr(torch, cfg.dtype))
        loss.append(out["loss"])
        sharp.append(out["sharpness"])
        W = out["weights"]
        kappas.append([bounds.kappa(bounds.product(W[i:]), 10) for i in range(cfg.num_nonlinear, len(W))])
    return {"lrs": np.array(cfg.lrs), "loss": np.array(loss), "sharpness": np.array(sharp),
            "sharpness_steps": np.arange(0, cfg.steps + 1, cfg.every), "kappa_tail": np.array(kappas)}


def run_trained_ntk(cfg: EdgeOfStability, device: str = "cpu", progress: bool = True,
                    checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Prop. 5.3 on trained networks: the networks of ``edge_of_stability`` trained again the same way, then per
    learning rate ||Theta||_op (exact NTK), the final sharpness, s_1 and s_K of Z_L, the largest operator norm r of
    a linear layer and kappa(W_{L:l}) for every linear layer l, [lr, l]."""
    X, y = _small_digits(cfg, device)
    K = cfg.widths[-1]
    rows = []
    for lr in cfg.lrs:
        torch.manual_seed(cfg.seed)
        model = MLP(list(cfg.widths), cfg.num_nonlinear).double().to(device)
        out = gd_with_sharpness(model, X, y, lr, cfg.weight_decay, cfg.steps, cfg.steps, cfg.power_iters, progress,
                                part_checkpoint(checkpoint, f"lr{lr:g}"), dtype=getattr(torch, cfg.dtype))
        with torch.no_grad():
            for weight, W in zip(model.weights, out["weights"]):
                weight.copy_(W)
            s = torch.linalg.svdvals(model(X))
        W = out["weights"]
        rows.append({"ntk": ntk_op_norm(model, X), "sharpness": out["sharpness"][-1], "loss": out["loss"][-1],
                     "s1_ZL": float(s[0]), "sK_ZL": float(s[K - 1]),
                     "r": max(op_norm(w) for w in W[cfg.num_nonlinear:]),
                     "kappa_tails": [kappa(product(W[i:]), K) for i in range(cfg.num_nonlinear, len(W))]})
    result = {name: np.array([row[name] for row in rows]) for name in rows[0]}
    result["lrs"] = np.array(cfg.lrs)
    return result
