"""The experiments of Part IV: every figure and table of the two papers' experimental sections as a configuration
(``cpu`` scale shipped with the book, ``paper`` scale the paper's own settings) and a run function returning arrays.

Jacot et al. Sec. 6 / App. A: :class:`HeadDepthSweep` (Fig. 2 and 5), :class:`NonlinearDepthSweep` (Fig. 3);
Fig. 1 / 4 is ``jacot_mlp`` of :mod:`ncbook.experiments`. Tirer et al. Sec. 6 / App. E: :class:`LayerwiseTraining`
(Fig. 2), :class:`WeightDecayAblation` (Fig. 3-5, Table 1), :class:`BlurredClasses` (Fig. 6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, cast

import numpy as np
import torch

from . import data, metrics
from .data import load_data
from .nets import MLP, BackboneHead, BlockMLP, Ensemble, ResNet18, mlp_layer_names, padded_layer_names, resnet_backbone
from .train import History, TrainConfig, part_checkpoint, train_ensemble, train_module


def _stack_histories(hists: list[History], shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Loss, training error and every recorded metric of runs laid out as ``shape``: [..., record(, layer)]."""
    out = {"steps": np.array(hists[0].steps)}
    R = len(hists[0].steps)
    out["loss"] = np.array([h.loss for h in hists]).reshape(*shape, R)
    out["train_error"] = np.array([h.train_error for h in hists]).reshape(*shape, R)
    for name in hists[0].layers:
        out[name] = np.array([h.layers[name] for h in hists], dtype=np.float64).reshape(*shape, R, -1)
    return out


def _pad_stack(parts: list[np.ndarray]) -> np.ndarray:
    """Stack arrays whose last axis (layers) differs, padding with NaN."""
    most = max(p.shape[-1] for p in parts)
    return np.stack([np.pad(p, [(0, 0)] * (p.ndim - 1) + [(0, most - p.shape[-1])], constant_values=np.nan)
                     for p in parts])


def he_init(mlp: MLP) -> None:
    """Redraw every weight of ``mlp`` as N(0, 2/fan_in) in its ReLU layers and N(0, 1/fan_in) in its linear ones, so
    that a deep stack neither shrinks nor blows up the signal (He et al. 2015)."""
    with torch.no_grad():
        for i, W in enumerate(mlp.weights):
            gain = 2.0 if i < mlp.num_nonlinear else 1.0
            W.normal_(0.0, math.sqrt(gain / W.shape[1]))


def _mlp_ensemble(widths: list[int], num_nonlinear: int, seeds: tuple[int, ...], copies: int, device: str,
                  dtype: torch.dtype, init: str = "default", last_bias: bool = False) -> Ensemble:
    """``copies`` models per seed (one per weight decay), each drawn from torch.manual_seed(seed); ``init="he"``
    redraws the weights with :func:`he_init` so deep nets train."""
    models = []
    for seed in seeds:
        for _ in range(copies):
            torch.manual_seed(seed)
            m = MLP(widths, num_nonlinear, last_bias=last_bias)
            if init == "he":
                he_init(m)
            models.append(m.to(device=device, dtype=dtype))
    return Ensemble(models)


# ----------------------------------------------------------------------------------------------------------------
# Jacot et al., Figure 2 (and 5): the depth of the linear head


@dataclass(frozen=True)
class HeadDepthSweep:
    """An MLP of ``num_nonlinear`` ReLU layers and L2 linear layers (all of width ``width``), for every L2 in
    ``depths``, every weight decay and seed; MSE loss, GD with momentum, lr dropped ten-fold at 80% (Jacot et al.
    Sec. 6, Fig. 2 left). One ensemble (seeds x weight decays) per depth."""

    dataset: str = "mnist5k"
    per_class: int | None = 50
    num_nonlinear: int = 5
    depths: tuple[int, ...] = (1, 2, 3, 4, 5)
    width: int = 64
    weight_decays: tuple[float, ...] = (1e-3, 4e-3)
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 2000
    lr: float = 0.05
    momentum: float = 0.9
    batch_size: int | None = None
    lr_drops: tuple[float, ...] = (0.8,)
    record_every: int = 100
    init: str = "default"
    data_root: str = "~/data"
    download: bool = False

    def __post_init__(self):
        if not self.depths or min(self.depths) < 1:
            raise ValueError(f"depths (linear layers) must be >= 1, got {self.depths}")
        if not self.seeds or not self.weight_decays:
            raise ValueError("need at least one seed and one weight decay")


def run_head_depth_sweep(cfg: HeadDepthSweep, device: str = "cpu", progress: bool = True,
                         checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [depth, seed, weight decay, record(, layer)]; layer l is the output of layer l+1, padded with NaN."""
    X, y = load_data(cfg.dataset, cfg.per_class, 0, device, torch.float32, cfg.data_root, cfg.download)
    runs = []
    for depth in cfg.depths:
        widths = [X.shape[1], *[cfg.width] * (cfg.num_nonlinear + depth - 1), 10]
        ens = _mlp_ensemble(widths, cfg.num_nonlinear, cfg.seeds, len(cfg.weight_decays), device, torch.float32,
                            cfg.init)
        cfgs = [TrainConfig(steps=cfg.steps, lr=cfg.lr, weight_decay=wd, momentum=cfg.momentum,
                            batch_size=cfg.batch_size, lr_drops=cfg.lr_drops, record_every=cfg.record_every)
                for _ in cfg.seeds for wd in cfg.weight_decays]
        hists = train_ensemble(ens, X, y, cfgs, seed=cfg.seeds[0], checkpoint=part_checkpoint(checkpoint, f"L{depth}"),
                               checkpoint_every=max(1, cfg.steps // 10), progress=progress)
        runs.append(_stack_histories(hists, (len(cfg.seeds), len(cfg.weight_decays))))
    out = {"depths": np.array(cfg.depths), "seeds": np.array(cfg.seeds), "weight_decays": np.array(cfg.weight_decays),
           "steps": runs[0]["steps"], "num_layers": np.array([cfg.num_nonlinear + d for d in cfg.depths]),
           "layer_names": padded_layer_names([mlp_layer_names(cfg.num_nonlinear + d, cfg.num_nonlinear)
                                              for d in cfg.depths])}
    for name in runs[0]:
        if name != "steps":
            out[name] = _pad_stack([r[name] for r in runs])
    return out


@dataclass(frozen=True)
class ResNetHeadDepth:
    """Jacot et al. Sec. 6, Figs. 1, 2 right and 5: a ResNet backbone (depth ``resnet_depth``, base width
    ``resnet_width``) followed by ``num_nonlinear`` ReLU layers and L2 linear layers of width ``head_width``, for
    every L2 in ``depths`` (Fig. 1: 3 and 3; Figs. 2 and 5: 1 and 1-6); MSE loss, SGD with weight decay on every
    parameter, lr dropped ten-fold at 80%. ``init="he"`` redraws the head's weights (:func:`he_init`)."""

    dataset: str = "mnist5k"
    per_class: int | None = 50
    resnet_depth: int = 8
    resnet_width: int = 8
    head_width: int = 64
    depths: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    weight_decays: tuple[float, ...] = (1e-3, 4e-3)
    seeds: tuple[int, ...] = (0,)
    epochs: int = 60
    batch_size: int = 100
    lr: float = 0.05
    momentum: float = 0.9
    lr_drops: tuple[float, ...] = (0.8,)
    record_every_epochs: int = 10
    data_root: str = "~/data"
    download: bool = False
    num_nonlinear: int = 1
    init: str = "default"

    def __post_init__(self):
        if not self.depths or min(self.depths) < 1:
            raise ValueError(f"depths (linear layers) must be >= 1, got {self.depths}")
        if self.init not in ("default", "he"):
            raise ValueError(f"init must be 'default' or 'he', got {self.init!r}")


def run_resnet_head_depth(cfg: ResNetHeadDepth, device: str = "cpu", progress: bool = True,
                          checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [depth, seed, weight decay, record(, layer)]; layer 0 is the backbone's output, layers 1 to
    ``num_nonlinear`` the ReLU layers, then the linear head; padded with NaN."""
    X, y = _image_data(cfg.dataset, cfg.per_class, device, cfg.data_root, cfg.download, flatten=False)
    per_epoch = math.ceil(len(y) / cfg.batch_size)
    runs, names, grams = [], [], []
    for depth in cfg.depths:
        hists, cosines = [], []
        for seed in cfg.seeds:
            for wd in cfg.weight_decays:
                torch.manual_seed(seed)
                backbone, dim = resnet_backbone(cfg.resnet_depth, X.shape[1], cfg.resnet_width)
                widths = [cfg.head_width] * (cfg.num_nonlinear + depth - 1) + [10]
                model = BackboneHead(backbone, dim, widths, cfg.num_nonlinear)
                if cfg.init == "he":
                    he_init(model.head)
                model = model.to(device)
                tc = TrainConfig(steps=cfg.epochs * per_epoch, lr=cfg.lr, weight_decay=wd, momentum=cfg.momentum,
                                 batch_size=cfg.batch_size, lr_drops=cfg.lr_drops,
                                 record_every=cfg.record_every_epochs * per_epoch)
                hists.append(train_module(model, X, y, tc, seed=seed, progress=progress,
                                          checkpoint=part_checkpoint(checkpoint, f"L{depth}-{seed}-{wd:g}"),
                                          checkpoint_every=max(1, tc.steps // 10)))
                cosines.append(_class_mean_grams(model, X, y))
        runs.append(_stack_histories(hists, (len(cfg.seeds), len(cfg.weight_decays))))
        names.append(model.layer_names)
        grams.append(np.array(cosines).reshape(len(cfg.seeds), len(cfg.weight_decays), *cosines[0].shape))
    out = {"depths": np.array(cfg.depths), "seeds": np.array(cfg.seeds), "weight_decays": np.array(cfg.weight_decays),
           "steps": runs[0]["steps"], "epochs": runs[0]["steps"] / per_epoch,
           "num_layers": np.array([d + cfg.num_nonlinear + 1 for d in cfg.depths]),
           "layer_names": padded_layer_names(names)}
    for name in runs[0]:
        if name != "steps":
            out[name] = _pad_stack([r[name] for r in runs])
    most = max(g.shape[2] for g in grams)          # [depth, seed, weight decay, layer, K, K], NaN-padded layers
    out["class_mean_cosines"] = np.stack([np.pad(g, [(0, 0), (0, 0), (0, most - g.shape[2]), (0, 0), (0, 0)],
                                                 constant_values=np.nan) for g in grams])
    return out


def _class_mean_grams(model, X: torch.Tensor, y: torch.Tensor, batch: int = 1000) -> np.ndarray:
    """The K x K cosines of the class means of every measured layer of a trained model (Jacot et al. Fig. 1,
    bottom), [layer, K, K]; NaN for a layer with a zero class mean."""
    model.eval()
    K = int(y.max()) + 1
    with torch.no_grad():
        feats = [torch.cat(parts) for parts in zip(*(model.forward_features(X[i:i + batch])
                                                      for i in range(0, len(X), batch)))]
    out = []
    for f in feats:
        try:
            out.append(metrics.class_mean_cosines(f.flatten(1), y, K))
        except ValueError:                          # a dead layer: a zero class mean
            out.append(np.full((K, K), np.nan))
    return np.array(out)




# ----------------------------------------------------------------------------------------------------------------
# Jacot et al., Figure 3: the depth of the non-linear part


@dataclass(frozen=True)
class NonlinearDepthSweep:
    """MLPs of L1 ReLU layers (every L1 in ``depths``) and ``num_linear`` linear layers, weight decay
    ``weight_decay_total`` / L (L = L1 + num_linear), two learning rates, several seeds (Jacot et al. Sec. 6, Fig. 3).
    Balancedness and negativity of the non-linear layers past the ``backbone`` first ones are what it measures."""

    dataset: str = "mnist5k"
    per_class: int | None = 50
    depths: tuple[int, ...] = (4, 6, 8, 10, 12)
    num_linear: int = 3
    backbone: int = 2
    width: int = 64
    weight_decay_total: float = 0.016
    lrs: tuple[float, ...] = (0.01, 0.02)
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 2000
    momentum: float = 0.9
    batch_size: int | None = None
    lr_drops: tuple[float, ...] = (0.8,)
    record_every: int = 200
    init: str = "he"
    data_root: str = "~/data"
    download: bool = False

    def __post_init__(self):
        if not self.depths or min(self.depths) <= self.backbone:
            raise ValueError(f"every non-linear depth must exceed the {self.backbone} backbone layers, got "
                             f"{self.depths}")
        if self.num_linear < 1:
            raise ValueError(f"num_linear must be >= 1 (the last layer is linear), got {self.num_linear}")


def run_nonlinear_depth_sweep(cfg: NonlinearDepthSweep, device: str = "cpu", progress: bool = True,
                              checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [depth, lr, seed, record(, layer)], layers padded with NaN."""
    X, y = load_data(cfg.dataset, cfg.per_class, 0, device, torch.float32, cfg.data_root, cfg.download)
    runs = []
    for L1 in cfg.depths:
        L = L1 + cfg.num_linear
        widths = [X.shape[1], *[cfg.width] * (L - 1), 10]
        per_lr = []
        for lr in cfg.lrs:
            ens = _mlp_ensemble(widths, L1, cfg.seeds, 1, device, torch.float32, cfg.init)
            tc = TrainConfig(steps=cfg.steps, lr=lr, weight_decay=cfg.weight_decay_total / L, momentum=cfg.momentum,
                             batch_size=cfg.batch_size, lr_drops=cfg.lr_drops, record_every=cfg.record_every)
            hists = train_ensemble(ens, X, y, [tc] * len(cfg.seeds), seed=cfg.seeds[0],
                                   checkpoint=part_checkpoint(checkpoint, f"L{L1}-lr{lr:g}"),
                                   checkpoint_every=max(1, cfg.steps // 10), progress=progress)
            per_lr.append(_stack_histories(hists, (len(cfg.seeds),)))
        runs.append({"steps": per_lr[0]["steps"]} | {k: np.stack([r[k] for r in per_lr]) for k in per_lr[0]
                                                     if k != "steps"})
    out = {"depths": np.array(cfg.depths), "lrs": np.array(cfg.lrs), "seeds": np.array(cfg.seeds),
           "steps": runs[0]["steps"], "num_layers": np.array([d + cfg.num_linear for d in cfg.depths]),
           "layer_names": padded_layer_names([mlp_layer_names(d + cfg.num_linear, d) for d in cfg.depths])}
    for name in runs[0]:
        if name != "steps":
            out[name] = _pad_stack([r[name] for r in runs])
    return out


@dataclass(frozen=True)
class LayerwiseTraining:
    """Tirer et al. Sec. 6 and App. E.1: an MLP grown one hidden layer at a time (Linear, batch norm, ReLU of width
    ``width``); after each insertion only the new layer and the classifier are trained, ``epochs`` epochs of Adam
    (minibatch ``batch_size``, lr ``lr``, cross-entropy); NC1 and gNC1 of the deepest features after each."""

    dataset: str = "mnist5k"
    per_class: int | None = 500
    width: int = 784
    num_layers: int = 10
    epochs: int = 3
    batch_size: int = 256
    lr: float = 1e-4
    seeds: tuple[int, ...] = (0, 1, 2)
    data_root: str = "~/data"
    download: bool = False

    def __post_init__(self):
        if self.num_layers < 1 or self.epochs < 1:
            raise ValueError(f"need num_layers >= 1 and epochs >= 1, got {self.num_layers}, {self.epochs}")


def _flat_data(dataset: str, per_class: int | None, device: str, data_root: str, download: bool):
    if dataset == "cifar10":
        return data.load_dataset("cifar10", data_root, download=download, per_class=per_class, device=device,
                                 flatten=True)
    return load_data(dataset, per_class, 0, device, torch.float32, data_root, download)


def run_layerwise(cfg: LayerwiseTraining, device: str = "cpu", progress: bool = True,
                  checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [seed, hidden layers]: NC1 (pinv), gNC1 (trace ratio), loss and training error after each outer
    iteration."""
    X, y = _flat_data(cfg.dataset, cfg.per_class, device, cfg.data_root, cfg.download)
    steps = math.ceil(cfg.epochs * len(y) / cfg.batch_size)
    tc = TrainConfig(steps=steps, lr=cfg.lr, weight_decay=0.0, loss="ce", batch_size=cfg.batch_size,
                     optimizer="adam", record_every=steps)
    rows: dict[str, list] = {k: [] for k in ("nc1_pinv", "nc1_trace_ratio", "loss", "train_error")}
    for seed in cfg.seeds:
        torch.manual_seed(seed)
        model = BlockMLP(X.shape[1], cfg.width, int(y.max()) + 1).to(device)
        vals: dict[str, list] = {k: [] for k in rows}
        for k in range(cfg.num_layers):
            if k:
                model.add_block()
            h = train_module(model, X, y, tc, seed=seed * 1000 + k, progress=progress)
            vals["nc1_pinv"].append(h.layers["nc1_pinv"][-1][0])
            vals["nc1_trace_ratio"].append(h.layers["nc1_trace_ratio"][-1][0])
            vals["loss"].append(h.loss[-1])
            vals["train_error"].append(h.train_error[-1])
        for name in rows:
            rows[name].append(vals[name])
    return {"seeds": np.array(cfg.seeds), "hidden_layers": np.arange(1, cfg.num_layers + 1)} | {
        k: np.array(v, dtype=np.float64) for k, v in rows.items()}


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al., Figures 3-5 and Table 1: weight decay of the features vs the last layer

ABLATIONS = ("baseline", "WDx2 for W", "WDx2 for H", "WD=0 for W", "WD=0 for H")
"""Tirer et al.'s five settings: the last layer's weight decay (W) or the feature layers' (H) doubled or zeroed."""


def ablation_decays(base: float) -> list[tuple[float, float]]:
    """(feature-layer, last-layer) weight decays of the five settings of :data:`ABLATIONS`."""
    return [(base, base), (base, 2 * base), (2 * base, base), (base, 0.0), (0.0, base)]


@dataclass(frozen=True)
class TirerSGD:
    """What Tirer et al.'s App. E.2 experiments share: the data, the network (``arch="mlp"``: an MLP with ``hidden``
    bias-free ReLU layers, its settings trained together as one ensemble, weight decay on the weights;
    ``arch="resnet18"``: the paper's ResNet18, PyTorch weight decay on every parameter), the feature-layer weight
    decay ``weight_decay``, and SGD (momentum, batch ``batch_size``, lr divided by 10 at each fraction of ``lr_drops``)
    with NC metrics of every layer every ``record_every_epochs`` epochs."""

    dataset: str = "mnist5k"
    per_class: int | None = 500
    arch: str = "mlp"
    hidden: tuple[int, ...] = (256, 256, 256)
    weight_decay: float = 5e-4
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 100
    batch_size: int = 128
    lr: float = 0.05
    momentum: float = 0.9
    lr_drops: tuple[float, ...] = (0.4, 0.8)
    record_every_epochs: int = 2
    data_root: str = "~/data"
    download: bool = False

    def __post_init__(self):
        if self.arch not in ("mlp", "resnet18"):
            raise ValueError(f"arch must be 'mlp' or 'resnet18', got {self.arch!r}")

    def steps_per_epoch(self, num_samples: int) -> int:
        return math.ceil(num_samples / self.batch_size)

    def train_config(self, num_samples: int, loss: str, weight_decay: float,
                     weight_decay_last: float | None) -> TrainConfig:
        """The SGD run of one setting on ``num_samples`` training samples (``weight_decay_last`` None: the same as
        ``weight_decay``)."""
        per_epoch = self.steps_per_epoch(num_samples)
        return TrainConfig(steps=self.epochs * per_epoch, lr=self.lr, weight_decay=weight_decay,
                           weight_decay_last=weight_decay_last, loss=cast(Literal["mse", "ce"], loss),
                           batch_size=self.batch_size,
                           momentum=self.momentum, lr_drops=self.lr_drops,
                           record_every=self.record_every_epochs * per_epoch)


@dataclass(frozen=True)
class WeightDecayAblation(TirerSGD):
    """Tirer et al. Sec. 6 and App. E.2: the five weight-decay settings of :data:`ABLATIONS`, with the MSE loss and
    no last-layer bias, and with cross-entropy and a bias."""

    losses: tuple[str, ...] = ("mse", "ce")
    mse_over_classes: bool = True

    def __post_init__(self):
        super().__post_init__()
        if not set(self.losses) <= {"mse", "ce"} or not self.losses:
            raise ValueError(f"losses must be among 'mse', 'ce', got {self.losses}")

    def loss_scale(self, loss: str, num_classes: int) -> float:
        """Tirer et al.'s square loss over the book's: with ``mse_over_classes`` (the default) PyTorch's
        ``nn.MSELoss``, the mean over samples and classes (1/(NK)) ||Z - Y||_F^2, as in the code of the baseline they
        follow (Zhu et al. 2021), 2/K times the book's (1/(2N)) ||Z - Y||_F^2 (``train.square_loss``); 1 for the
        book's own and for cross-entropy."""
        return 2 / num_classes if loss == "mse" and self.mse_over_classes else 1.0

    def train_configs(self, num_samples: int, loss: str, num_classes: int = 10) -> list[TrainConfig]:
        """The five settings' SGD runs. Under a loss s L (s = :meth:`loss_scale`, L the trainers' loss) SGD with
        momentum at lr eta and weight decays lambda takes the steps SGD takes on L at lr s eta with weight decays
        lambda / s (every gradient, velocity and step is linear in them): that is how it runs, its recorded
        objective multiplied by s."""
        scale = self.loss_scale(loss, num_classes)
        return [replace(self.train_config(num_samples, loss, h / scale, w / scale), lr=self.lr * scale)
                for h, w in ablation_decays(self.weight_decay)]


def tirer_layer_names(arch: str, hidden: tuple[int, ...]) -> list[str]:
    """The measured layers of a :class:`TirerSGD` network, in the order of the results' layer axis."""
    return [*ResNet18.layer_names, "output"] if arch == "resnet18" else mlp_layer_names(len(hidden) + 1, len(hidden))


def _image_data(dataset: str, per_class: int | None, device: str, data_root: str, download: bool, flatten: bool):
    """Training images (N, C, H, W), or flattened: shipped MNIST-5k or digits, or a full data set from disk."""
    if dataset in ("mnist5k", "digits"):
        X, y = load_data(dataset, per_class, 0, device, torch.float32)
        side = 28 if dataset == "mnist5k" else 8
        return (X, y) if flatten else (X.reshape(len(X), 1, side, side), y)
    return data.load_dataset(dataset, data_root, download=download, per_class=per_class, device=device,
                             flatten=flatten)


def _train_settings(arch: str, hidden: tuple[int, ...], X, y, cfgs: list[TrainConfig], seed: int, device: str,
                    progress: bool, checkpoint: Path | None, tag: str) -> list[History]:
    """Train one model per TrainConfig from the same seed: an ensemble of MLPs, or ResNet18s one by one."""
    last_bias = cfgs[0].loss == "ce"
    if arch == "mlp":
        ens = _mlp_ensemble([X.shape[1], *hidden, 10], len(hidden), (seed,), len(cfgs), device, torch.float32,
                            last_bias=last_bias)
        return train_ensemble(ens, X, y, cfgs, seed=seed, checkpoint=part_checkpoint(checkpoint, tag),
                              checkpoint_every=max(1, cfgs[0].steps // 10), progress=progress)
    hists = []
    for i, c in enumerate(cfgs):
        torch.manual_seed(seed)
        backbone, dim = resnet_backbone(18, X.shape[1], 64)
        model = BackboneHead(backbone, dim, [10], 0, last_bias=last_bias).to(device)
        hists.append(train_module(model, X, y, c, seed=seed, checkpoint=part_checkpoint(checkpoint, f"{tag}-{i}"),
                                  checkpoint_every=max(1, c.steps // 20), progress=progress))
    return hists


def run_weight_decay_ablation(cfg: WeightDecayAblation, device: str = "cpu", progress: bool = True,
                              checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [loss, seed, setting, record(, layer)]."""
    X, y = _image_data(cfg.dataset, cfg.per_class, device, cfg.data_root, cfg.download, cfg.arch == "mlp")
    parts = []
    K = int(y.max()) + 1
    for loss in cfg.losses:
        hists = []
        for seed in cfg.seeds:
            hists += _train_settings(cfg.arch, cfg.hidden, X, y, cfg.train_configs(len(y), loss, K), seed, device,
                                     progress, checkpoint, f"{loss}-{seed}")
        parts.append(_stack_histories(hists, (len(cfg.seeds), len(ABLATIONS))))
        parts[-1]["loss"] = parts[-1]["loss"] * cfg.loss_scale(loss, K)          # in the loss's own units
    out = {k: np.stack([p[k] for p in parts]) for k in parts[0] if k != "steps"}
    return out | {"steps": parts[0]["steps"], "epochs": parts[0]["steps"] / cfg.steps_per_epoch(len(y)),
                  "seeds": np.array(cfg.seeds), "weight_decays": np.array(ablation_decays(cfg.weight_decay)),
                  "layer_names": np.array(tirer_layer_names(cfg.arch, cfg.hidden))}


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al., Figure 6: two blurred classes and the last layer's weight decay


@dataclass(frozen=True)
class BlurredClasses(TirerSGD):
    """Tirer et al. App. E.2, Fig. 6: the baseline on clean data, and the same training on data whose classes
    ``blurred`` are blurred by a ``blur`` x ``blur`` uniform kernel, with last-layer weight decays
    ``weight_decays_last`` (the feature layers keep ``weight_decay``); per-class NC1, NC1, NC2 and NC3 of the deepest
    features."""

    loss: str = "ce"
    blurred: tuple[int, ...] = (4, 9)
    blur: int = 9
    weight_decays_last: tuple[float, ...] = (5e-4, 5e-5, 0.0)

    def __post_init__(self):
        super().__post_init__()
        if self.loss not in ("mse", "ce"):
            raise ValueError(f"loss must be 'mse' or 'ce', got {self.loss!r}")


def run_blurred_classes(cfg: BlurredClasses, device: str = "cpu", progress: bool = True,
                        checkpoint: Path | None = None) -> dict[str, np.ndarray]:
    """Arrays [setting, seed, record(, layer or class)]; setting 0 is the clean baseline, then one per last-layer
    weight decay on the blurred data."""
    X, y = _image_data(cfg.dataset, cfg.per_class, device, cfg.data_root, cfg.download, flatten=False)
    Xb = data.blur_classes(X, y, cfg.blurred, cfg.blur)
    if cfg.arch == "mlp":
        X, Xb = X.reshape(len(X), -1), Xb.reshape(len(Xb), -1)
    def setting(weight_decay_last: float | None) -> TrainConfig:
        return cfg.train_config(len(y), cfg.loss, cfg.weight_decay, weight_decay_last)

    clean, blurred = [], []
    for seed in cfg.seeds:
        clean += _train_settings(cfg.arch, cfg.hidden, X, y, [setting(None)], seed, device, progress, checkpoint,
                                 f"clean-{seed}")
        blurred += _train_settings(cfg.arch, cfg.hidden, Xb, y, [setting(w) for w in cfg.weight_decays_last], seed,
                                   device, progress, checkpoint, f"blur-{seed}")
    S = len(cfg.seeds)
    a = _stack_histories(clean, (1, S))
    b = _stack_histories(blurred, (S, len(cfg.weight_decays_last)))
    out = {k: np.concatenate([a[k], np.swapaxes(b[k], 0, 1)]) for k in a if k != "steps"}
    return out | {"steps": a["steps"], "epochs": a["steps"] / cfg.steps_per_epoch(len(y)),
                  "seeds": np.array(cfg.seeds), "weight_decays_last": np.array(cfg.weight_decays_last),
                  "layer_names": np.array(tirer_layer_names(cfg.arch, cfg.hidden))}
