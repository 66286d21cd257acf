"""Part IV's results read against the papers: the quantities their claims are about, and their published numbers.

Readers of results live here, apart from the code that produces them (:mod:`ncbook.experiments`,
:mod:`ncbook.reproduce`), so that reading a result differently never makes it stale."""

from __future__ import annotations

import numpy as np

from .train import PER_LAYER_METRICS, History

# reading the results: the quantities the papers' claims are about


def layer_index(result: dict[str, np.ndarray], layer: str) -> int:
    """The position of a named layer on a result's layer axis: a name from its ``layer_names`` ("hidden 2",
    "res block 3", "output"), or a role: "deepest" (the classifier's input, Tirer et al.'s H) or "intermediate" (the
    layer before it: an MLP's second-to-last hidden layer, ResNet18's third residual stage, Tirer et al. Fig. 4c/5c)."""
    names = [str(n) for n in result["layer_names"]]
    roles = {"deepest": len(names) - 2, "intermediate": len(names) - 3}
    if layer in names:
        return names.index(layer)
    if roles.get(layer, -1) >= 0:
        return roles[layer]
    raise ValueError(f"no layer {layer!r} in this result: its layers are {names}, or the roles 'deepest' and "
                     "'intermediate'")


def final_at(result: dict[str, np.ndarray], name: str, layer: str) -> np.ndarray:
    """Metric ``name`` of a named layer (:func:`layer_index`) at the end of training, over the leading axes."""
    return result[name][..., -1, layer_index(result, layer)]


def head_ends(result: dict[str, np.ndarray], first: int) -> dict[str, np.ndarray]:
    """Per depth, the layer index of the linear head's first layer (its input: the output of the last non-linear
    layer, index ``first``) and of its last layer (the input of the classifier, index num_layers - 2); they
    coincide for a one-layer head."""
    last = np.asarray(result["num_layers"]) - 2
    return {"first": np.full_like(last, first), "last": last}


def head_values(result: dict[str, np.ndarray], name: str, first: int) -> dict[str, np.ndarray]:
    """Metric ``name`` at the end of training at the linear head's first and last layer (:func:`head_ends`),
    each indexed [depth, seed, weight decay] (Jacot et al. Fig. 2)."""
    ends = head_ends(result, first)
    return {w: np.array([result[name][d, ..., -1, ends[w][d]] for d in range(len(ends[w]))]) for w in ends}


def final_mean_sd(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation over the seed axis, as the papers report them."""
    return np.nanmean(values, axis=axis), np.nanstd(values, axis=axis)


def ablation_table(result: dict[str, np.ndarray], layer: str = "deepest") -> dict[str, np.ndarray]:
    """Tirer et al. Table 1 from a :class:`WeightDecayAblation` result: NC1 and NC2 (ETF distance) of the deepest
    (or another named) features at the end of training, mean and sd over seeds, indexed [loss, setting]."""
    out = {}
    for name, key in (("nc1_pinv", "NC1"), ("nc2_etf_distance", "NC2")):
        mean, sd = final_mean_sd(final_at(result, name, layer), axis=1)
        out[key], out[key + "_sd"] = mean, sd
    return out


TIRER_TABLE1 = {
    "CIFAR-10, MSE": {"NC1": (0.0061, 0.0055, 0.0022, 0.0048, 0.0280), "NC1_sd": (4e-4, 3e-4, 8e-5, 2e-4, 3e-3),
                      "NC2": (0.111, 0.101, 0.070, 0.101, 0.226), "NC2_sd": (1e-2, 8e-3, 6e-3, 6e-3, 6e-3)},
    "CIFAR-10, CE": {"NC1": (0.062, 0.040, 0.024, 0.104, 0.174), "NC1_sd": (5e-3, 2e-3, 4e-3, 8e-3, 7e-3),
                     "NC2": (0.173, 0.161, 0.131, 0.195, 0.331), "NC2_sd": (1e-2, 7e-3, 9e-3, 9e-3, 1e-2)},
    "MNIST, MSE": {"NC1": (8e-4, 5e-4, 4e-4, 1.7e-3, 41e-3), "NC1_sd": (5e-5, 5e-5, 2e-5, 1e-4, 2e-3),
                   "NC2": (0.072, 0.055, 0.048, 0.108, 0.303), "NC2_sd": (1e-2, 1e-2, 5e-3, 2e-2, 2e-2)},
    "MNIST, CE": {"NC1": (0.004, 0.003, 0.002, 0.009, 0.031), "NC1_sd": (3e-4, 1e-4, 7e-5, 4e-4, 4e-4),
                  "NC2": (0.115, 0.102, 0.101, 0.147, 0.198), "NC2_sd": (5e-3, 3e-3, 3e-3, 5e-3, 8e-3)},
}
"""Tirer et al. Table 1 (ResNet18, 3 seeds, epoch 100) as published: means and SDs in the order of :data:`ABLATIONS`,
for both data sets and losses."""


def feature_decay_verdicts(result: dict[str, np.ndarray], losses: tuple[str, ...], layer: str = "deepest"
                           ) -> dict[tuple[str, str, str], np.ndarray]:
    """Tirer et al.'s Table 1 claim seed by seed: for every (loss, metric, kind of change), whether changing the
    feature layers' weight decay moved the deepest features' metric further from the baseline than changing the
    last layer's, one boolean per seed (``losses``: the configuration's, in the result's order; kinds: doubling
    compares WDx2 for H with WDx2 for W, zeroing WD=0 for H with WD=0 for W)."""
    out = {}
    for name, key in (("nc1_pinv", "NC1"), ("nc2_etf_distance", "NC2")):
        final = final_at(result, name, layer)                      # [loss, seed, setting]
        dev = np.abs(final[..., 1:] - final[..., :1])               # [loss, seed, (x2 W, x2 H, 0 W, 0 H)]
        for li, loss in enumerate(losses):
            for kind, (w, h) in (("doubling", (0, 1)), ("zeroing", (2, 3))):
                out[(loss, key, kind)] = dev[li, :, h] > dev[li, :, w]
    return out


def deviation_from_baseline(table: dict[str, np.ndarray], key: str) -> np.ndarray:
    """|metric(setting) - metric(baseline)| for the four modified settings, [loss, setting 1..4]."""
    v = np.asarray(table[key])
    return np.abs(v[..., 1:] - v[..., :1])


def history_at(result: dict[str, np.ndarray], *index: int) -> History:
    """The :class:`History` of one run of a cached result (``index`` into its leading axes); with ``num_layers`` in
    the result (networks of several depths), the padding layers are dropped."""
    layers = {name: result[name][index] for name in result if result[name].ndim == len(index) + 2}
    if "num_layers" in result:
        n = int(result["num_layers"][index[:result["num_layers"].ndim]])
        layers = {name: v[:, :n] if name in PER_LAYER_METRICS else v for name, v in layers.items()}
    return History(steps=result["steps"].tolist(), loss=result["loss"][index].tolist(),
                   train_error=result["train_error"][index].tolist(),
                   layers={name: v.tolist() for name, v in layers.items()})


def nonlinear_layer_summary(result: dict[str, np.ndarray], name: str, backbone: int) -> dict[str, np.ndarray]:
    """Min and mean over the measured non-linear layers (backbone+1 .. L1) of a metric at the end of training,
    per [depth, lr, seed] (Jacot et al. Fig. 3). Balancedness of layer l couples W_l and W_(l+1)."""
    mins, means = [], []
    for d, L1 in enumerate(result["depths"]):
        v = result[name][d, ..., -1, backbone:int(L1)]
        mins.append(np.nanmin(v, axis=-1))
        means.append(np.nanmean(v, axis=-1))
    return {"min": np.array(mins), "mean": np.array(means)}


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al., Figure 2: layer-wise training
