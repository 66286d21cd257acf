"""Named experiment configurations and their run functions (light ones, computed live in the chapters)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import torch

from . import data
from .nets import MLP
from .train import History, train_full_batch


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
    """Train the network of ``cfg`` (deterministic for a given seed) and return its metric history and the model."""
    torch.manual_seed(cfg.seed)
    X, y = data.mnist5k(per_class=cfg.per_class, seed=cfg.seed, dtype=torch.float64)
    model = MLP(list(cfg.widths), cfg.num_nonlinear).double()
    hist = train_full_batch(model, X, y, steps=cfg.steps, lr=cfg.lr, weight_decay=cfg.weight_decay,
                            record_every=cfg.record_every, progress=progress)
    return hist, model


def describe(cfg: MLPDemo) -> str:
    """One line naming every setting of a configuration (for figure captions)."""
    return ", ".join(f"{k}={v}" for k, v in asdict(cfg).items())
