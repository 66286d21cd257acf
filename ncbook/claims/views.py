"""Views: what a claim reads from a result's arrays (one function per kind of comparison, :data:`VIEWS`)."""

from __future__ import annotations

import numpy as np

from ..compare import layer_index, layer_names, layers_of, relu_pairs
from ..reproduce import ABLATIONS
from ..scaling import decay_time_at

# ----------------------------------------------------------------------------------------------------------------
# views: how a claim's runs are grouped, each returning (labels, groups) for one metric array


def _end(r: dict, name: str, layer: str | None = None) -> np.ndarray:
    v = r[name]
    return v[..., -1] if layer is None else v[..., -1, layer_index(r, layer)]


def _record(r: dict, at: str) -> int:
    steps = np.asarray(r["steps"])
    return {"start": 0, "end": len(steps) - 1, "fifth": int(np.searchsorted(steps, 0.2 * steps[-1])),
            "drop": int(np.searchsorted(steps, 0.8 * steps[-1]))}[at]


def view_end(r, name, layer=None):
    """The value at the end of training (at a named layer)."""
    return ["end"], [_end(r, name, layer)]


def view_training(r, name, layer, at=("start", "end")):
    """The value at a named layer at records of training: "start", "fifth" (20%), "drop" (the lr drop at 80%), "end"."""
    if layer == "linear pairs":                                     # mean over the linear layers' pairs
        v = np.nanmean(r[name][..., layers_of(r, "linear")], -1)
        return list(at), [v[..., _record(r, a)] for a in at]
    i = layer_index(r, layer)
    return list(at), [r[name][..., _record(r, a), i] for a in at]


def _head_layers(r) -> range:
    """The linear head's layers, from its input to the classifier's input."""
    return range(layer_index(r, "head input"), layer_index(r, "deepest") + 1)


def view_head_layers(r, name):
    """At the end, every layer of the linear head from its input to the classifier's input."""
    names = layer_names(r)
    return [names[i] for i in _head_layers(r)], [r[name][..., -1, i] for i in _head_layers(r)]


def view_pair_kinds(r, name, shown):
    """At the end, per run: the smallest value over the ReLU pairs shown and the largest over the linear pairs (a
    linear layer and the next)."""
    v = r[name][..., -1, :]
    return (["ReLU pairs (min)", "linear pairs (max)"],
            [np.nanmin(v[..., relu_pairs(r, shown)], -1), np.nanmax(v[..., layers_of(r, "linear")], -1)])


def view_head_depths(r, name, end="last", depths=None):
    """Per depth of a head sweep (all, or the positions ``depths``), the value at the end at the head's first layer
    (its input) or last. ``depths="ends"``: the shallowest head, and per run the deepest head with a value (not NaN:
    where only the runs that fit have one, the deepest that fits)."""
    role = "head input" if end == "first" else "deepest"
    every = [r[name][d][..., -1, layer_index(r, role, d)] for d in range(len(r["depths"]))]
    if depths == "ends":
        v = np.stack(every)                                                      # [depth, run...]
        has = ~np.isnan(v[1:])
        last = np.where(has.any(0), has.shape[0] - np.argmax(has[::-1], 0), 0)  # 1 + deepest index with a value
        deepest = np.where(has.any(0), np.take_along_axis(v, last[None], 0)[0], np.nan)
        return [f"{int(r['depths'][0])} linear", "the deepest with a value"], [v[0], deepest]
    depths = range(len(r["depths"])) if depths is None else depths
    return [f"{int(r['depths'][d])} linear" for d in depths], [every[d] for d in depths]


def view_variance_sources(r, name):
    """Jacot Fig. 2: per head depth, at the head's last layer at the end, the runs of each weight decay (its seeds):
    groups in pairs, depth by depth, for the "differ" criterion (each depth's runs at the two weight decays)."""
    labels, groups = [], []
    for d, depth in enumerate(r["depths"]):
        v = np.asarray(r[name][d][..., -1, layer_index(r, "deepest", d)], dtype=float)      # [seed, weight decay]
        for w, lam in enumerate(r["weight_decays"]):
            labels.append(f"{int(depth)} linear, λ {lam:g}")
            groups.append(v[:, w])
    return labels, groups


def view_nonlinear(r, name, kind, backbone, depths=(0, -1)):
    """Jacot Fig. 3: per depth, the min or mean over the measured ReLU layers (after the backbone) at the end."""
    out = []
    for d in depths:
        v = r[name][d][..., -1, :][..., layers_of(r, "hidden", d)[backbone:]]
        out.append(np.nanmin(v, -1) if kind == "min" else np.nanmean(v, -1))
    return [f"depth {int(r['depths'][d])}" for d in depths], out


def view_last_relu(r, name):
    """Jacot Fig. 3: the value at the last ReLU layer at the end, every depth, learning rate and seed."""
    return ["last ReLU layer"], [np.stack([r[name][d][..., -1, layers_of(r, "hidden", d)[-1]]
                                          for d in range(len(r["depths"]))])]


def view_gram_layers(r, name):
    """At the end, the largest |cosine| between two class means at every layer of the linear head, from its input to
    the classifier's input (Jacot Figs. 1, 4, bottom row)."""
    names = layer_names(r)
    return [names[i] for i in _head_layers(r)], [largest_cosine(r["class_mean_cosines"][..., i, :, :])
                                                 for i in _head_layers(r)]


def largest_cosine(G: np.ndarray) -> np.ndarray:
    """The largest off-diagonal |entry| of Gram matrices of cosines [..., K, K]: 0 at the identity."""
    return np.max(np.abs(G - np.eye(G.shape[-1]) * np.diagonal(G, axis1=-2, axis2=-1)[..., None]), axis=(-2, -1))


PHASES = {"exponential": (0.0, 0.5), "plateau": (0.75, 1.0)}
"""The book's reading of "exponentially decreases until it plateaus", as fractions of the λt before the learning-rate
drop: the exponential phase is the first half, the plateau (if there is one) the last quarter; "then again it
exponentially decreases" is read from the drop to the end. Fixed windows, so that a pure exponential, falling at
one rate throughout, shows no plateau (an onset rule that looks for one finds it anywhere)."""


def phase_rates(r, name, cfg, weight_decay, per: str = "λt") -> dict[str, np.ndarray]:
    """The linear pairs' (mean) balancedness falls, ln(fall) per unit of λt (``per="λt"``, the theory's clock) or
    per training step (``per="step"``, the axis of the paper's figures), in each phase of :data:`PHASES` and after
    the drop: [run] each. Gradient flow predicts 2 per unit of λt (the imbalance decays as exp(-2λt), Jacot Sec.
    4.2), in every phase: so per step the rate after a ten-fold learning-rate drop is a tenth of the rate before."""
    v = np.nanmean(r[name][..., layers_of(r, "linear")], -1)            # [run, record]
    steps = np.asarray(r["steps"], dtype=float)
    lt = decay_time_at(steps, cfg, weight_decay)
    t = lt if per == "λt" else steps
    drop = float(lt[_record(r, "drop")])
    windows = {k: (f0 * drop, f1 * drop) for k, (f0, f1) in PHASES.items()} | {"after the drop": (drop, lt[-1])}
    # each window's ends found on the λt clock, the rate read on the asked one
    out = {}
    for k, (a, b) in windows.items():
        i, j = int(np.argmax(lt >= a - 1e-12)), int(np.argmax(lt >= b - 1e-12))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[k] = np.log(v[..., i] / v[..., j]) / (t[j] - t[i])
    return out


def view_decay_rate(r, name, cfg, weight_decay):
    """The exponential phase's rate (:func:`phase_rates`)."""
    return ["rate"], [phase_rates(r, name, cfg, weight_decay)["exponential"]]


def view_decay_phases(r, name, cfg, weight_decay):
    """The exponential phase's rate and the size of the plateau's, |rate| (a plateau neither falls nor rises)."""
    p = phase_rates(r, name, cfg, weight_decay)
    return ["exponential phase", "|plateau|"], [p["exponential"], np.abs(p["plateau"])]


def view_after_drop(r, name, cfg, weight_decay):
    """The exponential phase's rate and the rate after the learning-rate drop, per training step: the axis of the
    paper's Fig. 4, on which "at a smaller rate" is read (per unit of λt gradient flow predicts the same rate)."""
    p = phase_rates(r, name, cfg, weight_decay, per="step")
    return ["exponential phase", "after the drop"], [p["exponential"], p["after the drop"]]


def view_layerwise_end(r, name):
    """Tirer App. E.1: the value with every layer added and trained, per seed."""
    return [f"{r[name].shape[-1]} layers"], [r[name][:, -1]]


def view_layerwise(r, name):
    """Tirer Fig. 2: the value with one hidden layer and with all of them (arrays [seed, layers])."""
    return ["1 layer", f"{r[name].shape[-1]} layers"], [r[name][:, 0], r[name][:, -1]]


def view_settings(r, name, loss, settings, losses):
    """Tirer Table 1: the deepest features' value at the end in the given weight-decay settings, one loss."""
    v = _end(r, name, "deepest")[losses.index(loss)]                 # [seed, setting]
    return list(settings), [v[:, ABLATIONS.index(s)] for s in settings]


def view_h_over_w(r, name, loss, change, losses):
    """Tirer Figs. 3-5: how far changing W and changing H move the deepest features' value from the baseline, in
    size (the sentence compares deviations; their direction is Table 1's rows): [|Δ_W|, |Δ_H|], over seeds."""
    v = _end(r, name, "deepest")[losses.index(loss)]
    key = "WDx2 for" if change == "doubling" else "WD=0 for"
    base = v[:, 0]
    return ([f"|Δ| {change} W", f"|Δ| {change} H"],
            [np.abs(v[:, ABLATIONS.index(f"{key} {who}")] - base) for who in ("W", "H")])


def view_roles(r, name, loss, losses):
    """Tirer Figs. 4-5 (b) vs (c): the deepest and the intermediate features at the end, every seed and setting."""
    li = losses.index(loss)
    return ["deepest", "intermediate"], [_end(r, name, "deepest")[li], _end(r, name, "intermediate")[li]]


def _blur_values(r, name, blurred):
    """[setting, seed] at the end: NC1(k) of the classes not blurred, their geometric mean within each seed (a
    seed's classes are one training run, not independent replicates), else the deepest features' value (NC3 at the
    classifier)."""
    if name == "nc1_per_class":
        others = [k for k in range(r[name].shape[-1]) if k not in blurred]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.exp(np.mean(np.log(r[name][:, :, -1, :][..., others]), -1))
    return r[name][:, :, -1, -1 if name == "nc3_etf_distance" else layer_index(r, "deepest")]


def view_blur_vs_clean(r, name, blurred, setting):
    """Tirer Fig. 6 (a) against (b)-(d): clean and blurred at the ``setting``-th last-layer weight decay, per seed
    (NC1(k) of the other classes averaged within it)."""
    v = _blur_values(r, name, blurred)
    return ["clean", f"blurred, λ_W {r['weight_decays_last'][setting]:g}"], [v[0], v[setting + 1]]


def view_blur_lambda(r, name, blurred):
    """Tirer Fig. 6 (b) against (d): on the blurred data, the largest last-layer weight decay and the smallest."""
    order = np.argsort(r["weight_decays_last"])[::-1][[0, -1]]
    v = _blur_values(r, name, blurred)
    return [f"λ_W {r['weight_decays_last'][s]:g}" for s in order], [v[s + 1] for s in order]


VIEWS = {f.__name__[5:]: f for f in (view_end, view_training, view_head_layers, view_pair_kinds, view_head_depths,
                                     view_nonlinear, view_variance_sources, view_last_relu, view_gram_layers,
                                     view_decay_rate, view_decay_phases, view_after_drop, view_layerwise, view_settings,
                                     view_h_over_w, view_roles, view_blur_vs_clean, view_blur_lambda,
                                     view_layerwise_end)}
