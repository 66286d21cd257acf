"""Training: full-batch gradient descent on the MSE loss with weight decay, recording NC metrics along the way."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from . import metrics
from .nets import MLP


def progress_bar(iterable, enabled: bool = True, **kwargs):
    """A tqdm progress bar over ``iterable``, unless ``enabled`` is False or the environment sets TQDM_DISABLE=1
    (as `make execute` and `make test` do, so that executed notebooks hold no progress-bar widgets)."""
    if not enabled or os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true", "yes"):
        return iterable
    return tqdm(iterable, **kwargs)


@dataclass
class History:
    """Metrics recorded at ``steps``; ``layers[name][l]`` is the value for layer l+1 at each recorded step."""

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


def regularised_mse(model: MLP, x: torch.Tensor, targets: torch.Tensor, weight_decay: float) -> torch.Tensor:
    """(1/2N) ||Z_L - Y||_F^2 + (lambda/2) sum_l ||W_l||_F^2 (Jacot et al. Sec. 4, the loss C_lambda)."""
    fit = 0.5 * ((model(x) - targets) ** 2).sum() / x.shape[0]
    return fit + 0.5 * weight_decay * sum((w ** 2).sum() for w in model.weights)


def layer_metrics(model: MLP, x: torch.Tensor, labels: torch.Tensor) -> dict[str, list[float]]:
    """Per-layer NC1 (trace ratio and pseudo-inverse), NC2 (condition number), NC3 (cosine with the next layer's
    weights, when the next layer maps to K outputs) and balancedness of consecutive layers (Jacot et al. Sec. 6)."""
    with torch.no_grad():
        feats = model.forward_features(x)
        W = model.weights
        K = int(labels.max()) + 1
        out: dict[str, list[float]] = {"nc1_trace_ratio": [], "nc1_pinv": [], "nc2_condition_number": [],
                                       "balancedness": []}
        for i, Z in enumerate(feats):
            s = metrics.class_stats(Z, labels, K)
            out["nc1_trace_ratio"].append(metrics.nc1_trace_ratio(s))
            out["nc1_pinv"].append(metrics.nc1_pinv(s))
            out["nc2_condition_number"].append(metrics.nc2_condition_number(s) if Z.shape[1] >= K else math.nan)
            out["balancedness"].append(metrics.balancedness(W[i + 1], W[i]) if i + 1 < len(W) else math.nan)
        out["nc3_cosine"] = [metrics.nc3_cosine(feats[-2], labels, W[-1])]
        return out


def train_full_batch(model: MLP, x: torch.Tensor, labels: torch.Tensor, steps: int, lr: float,
                     weight_decay: float, record_every: int = 50, progress: bool = True) -> History:
    """Full-batch gradient descent with weight decay on the regularised MSE loss; records metrics every few steps.

    Stops with a clear error if the loss or the weights stop being finite (learning rate too large).
    """
    if steps < 1 or lr <= 0 or weight_decay < 0 or record_every < 1:
        raise ValueError(f"need steps >= 1, lr > 0, weight_decay >= 0, record_every >= 1; got steps={steps}, "
                         f"lr={lr}, weight_decay={weight_decay}, record_every={record_every}")
    K = model.layers[-1].out_features
    Y = one_hot_targets(labels, K, x.dtype)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    hist = History()
    for step in progress_bar(range(steps + 1), progress, desc=f"GD, lambda={weight_decay:g}", leave=False):
        loss = regularised_mse(model, x, Y, weight_decay)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}: the run diverged; lower the learning "
                                     f"rate (lr={lr}) or the initialisation scale")
        if step % record_every == 0 or step == steps:
            with torch.no_grad():
                hist.steps.append(step)
                hist.loss.append(loss.item())
                hist.train_error.append(float((model(x).argmax(1) != labels).double().mean()))
                for name, vals in layer_metrics(model, x, labels).items():
                    hist.layers.setdefault(name, []).append(vals)
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return hist
