"""Shared figure styles and the figures the chapters reuse."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from . import metrics
from .train import History

plt.rcParams.update({"figure.dpi": 80, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
                     "axes.spines.right": False, "font.size": 9})


def layer_colors(n: int) -> list:
    """n colours from light (early layers) to dark (last layer)."""
    return [plt.cm.viridis(0.85 - 0.75 * i / max(n - 1, 1)) for i in range(n)]


def plot_history(hist: History, title: str = "", layers: list[int] | None = None) -> Figure:
    """NC1 (trace ratio), NC2 (condition number of class means) and NC3 over training, one line per layer."""
    nl = len(hist.layers["nc1_trace_ratio"][0])
    layers = layers if layers is not None else list(range(nl))
    colors = layer_colors(nl)
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.0))
    for name, ax, label in [("nc1_trace_ratio", axes[0], r"NC1 = tr$\Sigma_W$/tr$\Sigma_B$"),
                            ("nc2_condition_number", axes[1], r"NC2 = $\kappa(\bar Z)$")]:
        for i in layers:
            vals = hist.series(name, i)
            if np.all(np.isfinite(vals)):
                ax.semilogy(hist.steps, vals, color=colors[i], label=f"layer {i + 1}")
        ax.set_title(label)
        ax.set_xlabel("GD step")
    axes[0].legend(fontsize=7, ncol=2)
    axes[2].plot(hist.steps, hist.series("nc3_cosine", 0), color="k")
    axes[2].set_ylim(0, 1.02)
    axes[2].set_title(r"NC3 = mean cos($z_{ci}$, $W_{L,c:}$)")
    axes[2].set_xlabel("GD step")
    axes[3].semilogy(hist.steps, hist.loss, color="C3", label="loss")
    axes[3].semilogy(hist.steps, np.maximum(hist.train_error, 1e-4), color="C0", ls="--", label="train error")
    axes[3].set_title("regularised loss, training error")
    axes[3].set_xlabel("GD step")
    axes[3].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def normalised_gram(means: torch.Tensor) -> np.ndarray:
    """Cosines between class means (K x K), the quantity whose collapsed form is the identity or a simplex ETF."""
    M = means / torch.linalg.vector_norm(means, dim=1, keepdim=True)
    return (M @ M.T).cpu().numpy()


def plot_gram(features: torch.Tensor, labels: torch.Tensor, ax=None, title: str = "") -> Figure:
    """Heat map of the cosines between the (uncentred) class means of one layer."""
    G = normalised_gram(metrics.class_means(features, labels))
    fig = ax.figure if ax is not None else plt.figure(figsize=(3, 2.8))
    ax = ax if ax is not None else fig.add_subplot()
    im = ax.imshow(G, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_title(title, fontsize=9)
    ax.grid(False)
    ax.set_xticks(range(len(G)))
    ax.set_yticks(range(len(G)))
    ax.tick_params(labelsize=6)
    fig.colorbar(im, ax=ax, fraction=0.046)
    return fig


def plot_grams(features: list[torch.Tensor], labels: torch.Tensor, layers: list[int]) -> Figure:
    """Side-by-side class-mean cosine Gram matrices of the given layers (0-based indices into ``features``)."""
    fig, axes = plt.subplots(1, len(layers), figsize=(3.7 * len(layers), 3))
    for ax, layer in zip(np.atleast_1d(axes), layers):
        plot_gram(features[layer], labels, ax=ax, title=f"layer {layer + 1}: cos($\\mu_c$, $\\mu_{{c'}}$)")
    fig.tight_layout()
    return fig


def plot_layer_metric(result: dict[str, np.ndarray], name: str, title: str, wd_index: int = 0,
                      log: bool = True) -> Figure:
    """A cached result's per-layer metric at the end of training against the layer, one line per seed."""
    values = result[name][:, wd_index, -1, :]                 # (seeds, layers)
    layers = np.arange(1, values.shape[1] + 1)
    fig, ax = plt.subplots(figsize=(5, 3))
    for s, seed in enumerate(result["seeds"]):
        ok = np.isfinite(values[s])
        ax.plot(layers[ok], values[s][ok], "o-", label=f"seed {seed}")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
