"""Part IV's results read against the papers: the quantities their claims are about, and their published numbers.

Readers of results live here, apart from the code that produces them (:mod:`ncbook.experiments`,
:mod:`ncbook.reproduce`), so that reading a result differently never makes it stale."""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, replace

import numpy as np

from .registry import get_experiment
from .reproduce import ABLATIONS
from .scaling import decay_time_at, decay_times, num_steps
from .train import PER_LAYER_METRICS, History
from .words import scientific

# reading the results: the quantities the papers' claims are about


def layer_names(result: dict[str, np.ndarray], depth: int | None = None) -> list[str]:
    """The names on a result's layer axis ("hidden 1", "linear 2", "res block 3", "backbone", "output"); for a sweep
    whose networks differ in depth, those of the network at index ``depth`` of its depths (without the padding)."""
    names = np.asarray(result["layer_names"])
    if names.ndim == 2:
        if depth is None:
            raise ValueError("this result's networks differ in depth: pass depth= (an index into its depths)")
        names = names[depth]
    return [str(n) for n in names if str(n)]


def layers_of(result: dict[str, np.ndarray], kind: str, depth: int | None = None) -> list[int]:
    """The positions of every layer of one kind: "hidden" (the ReLU layers' outputs) or "linear" (the linear layers
    before the classifier); see :func:`layer_names`."""
    return [i for i, n in enumerate(layer_names(result, depth)) if n.startswith(kind + " ")]


def relu_pairs(result: dict[str, np.ndarray], shown: str) -> list[int]:
    """The positions l from the layer named ``shown`` on whose balancedness couples two ReLU layers (W_l, W_(l+1))
    (Jacot et al. Figs. 1, 4: the layers before ``shown`` are the backbone)."""
    hidden = layers_of(result, "hidden")
    return [i for i in hidden if i >= layer_index(result, shown) and i + 1 in hidden]


def layer_index(result: dict[str, np.ndarray], layer: str, depth: int | None = None) -> int:
    """The position of a named layer on a result's layer axis: a name from :func:`layer_names`, or a role:
    "deepest" (the classifier's input, Tirer et al.'s H; the last layer of Jacot et al.'s linear head),
    "intermediate" (the layer before it: an MLP's second-to-last hidden layer, ResNet18's third residual stage, Tirer
    et al. Fig. 4c/5c) or "head input" (the last ReLU layer's output, the input of Jacot et al.'s linear head)."""
    names = layer_names(result, depth)
    hidden = layers_of(result, "hidden", depth)
    roles = {"deepest": len(names) - 2, "intermediate": len(names) - 3, "head input": hidden[-1] if hidden else -1}
    if layer in names:
        return names.index(layer)
    if roles.get(layer, -1) >= 0:
        return roles[layer]
    raise ValueError(f"no layer {layer!r} in this result: its layers are {names}, or the roles 'deepest', "
                     "'intermediate' and 'head input'")


def final_at(result: dict[str, np.ndarray], name: str, layer: str) -> np.ndarray:
    """Metric ``name`` of a named layer (:func:`layer_index`) at the end of training, over the leading axes."""
    return result[name][..., -1, layer_index(result, layer)]


def head_ends(result: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per depth of a sweep, the position of the linear head's first layer (its input, "head input") and of its last
    (the classifier's input, "deepest"); they coincide for a one-layer head."""
    depths = range(len(result["depths"]))
    return {"first": np.array([layer_index(result, "head input", d) for d in depths]),
            "last": np.array([layer_index(result, "deepest", d) for d in depths])}


def head_values(result: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    """Metric ``name`` at the end of training at the linear head's first and last layer (:func:`head_ends`),
    each indexed [depth, seed, weight decay] (Jacot et al. Fig. 2)."""
    ends = head_ends(result)
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


ABLATION_RUNS: dict[str, dict] = {
    "128 wide, 500 epochs": {},
    "128 wide, 500 epochs, 300 per class": {"per_class": 300},
    "512 wide, 1,000 epochs": {"epochs": 1000, "hidden": (512, 512, 512), "losses": ("mse",)},
    "512 wide, 2,000 epochs": {"epochs": 2000, "hidden": (512, 512, 512), "losses": ("mse",)},
    "128 wide, 500 epochs, 1/(2N) loss": {"mse_over_classes": False},
    "128 wide, 1,000 epochs, 1/(2N) loss": {"epochs": 1000, "losses": ("mse",), "mse_over_classes": False},
    "128 wide, 1,000 epochs, 300 per class, 1/(2N) loss": {"epochs": 1000, "losses": ("mse",),
                                                            "mse_over_classes": False, "per_class": 300},
    "128 wide, 1,000 epochs": {"epochs": 1000, "losses": ("ce",)},
    "512 wide, 500 epochs": {"hidden": (512, 512, 512), "losses": ("ce",)},
}
"""Every shipped run of Tirer et al.'s weight-decay ablation (overrides of its `cpu` scale), by what sets it apart:
the rows of :func:`ablation_regimes` (issue 60: which reach the paper's regime, and how close to its NC1)."""


@dataclass(frozen=True)
class RegimeRow:
    """One loss of one ablation run: its (seed, setting) runs at zero training error at the end, of how many, and
    its baseline's NC1 (the paper's metric, deepest features, mean over seeds) against Table 1's (MNIST)."""

    run: str
    loss: str
    at_zero: int
    runs: int
    nc1: float
    paper: float

    @property
    def times(self) -> float:
        return self.nc1 / self.paper


Ablations = dict[str, tuple[dict[str, np.ndarray], tuple[str, ...], tuple[str, ...]]]
"""Ablation results by label: (result, its losses, the losses to show)."""


def times_text(x: float) -> str:
    """A factor as the regime ledgers print it: "86" from 9.5 on, "1.6" below."""
    return f"{x:.0f}" if x >= 9.5 else f"{x:.1f}"


def baseline_nc1(result: dict[str, np.ndarray], loss: str, losses: tuple[str, ...]) -> float:
    """An ablation's baseline NC1 with ``loss``: the paper's metric, deepest features, at the end, mean over seeds."""
    return float(final_at(result, "nc1_pinv", "deepest")[losses.index(loss), :, 0].mean())


def table1_nc1(loss: str) -> float:
    """Tirer et al.'s Table 1 (MNIST) baseline NC1 with ``loss``."""
    return TIRER_TABLE1[f"MNIST, {loss.upper()}"]["NC1"][0]


def baseline_over_table1(result: dict[str, np.ndarray], loss: str, losses: tuple[str, ...]) -> float:
    """:func:`baseline_nc1` over Table 1's: how near collapse the ablation's runs are, against the paper's."""
    return baseline_nc1(result, loss, losses) / table1_nc1(loss)


def ablation_regimes(results: Ablations) -> list[RegimeRow]:
    """Tirer et al. Sec. 6's regime, ablation by ablation (``results``: label -> (result, its losses, those shown)):
    zero training error in every run ("as long as entering the zero training error phase ... is maintained") and NC1
    near Table 1's (the near-collapse regime the perturbation analysis describes)."""
    rows = []
    for run, (r, losses, shown) in results.items():
        for loss in shown:
            end = r["train_error"][losses.index(loss), ..., -1]
            rows.append(RegimeRow(run, loss, int((end == 0).sum()), end.size, baseline_nc1(r, loss, losses),
                                  table1_nc1(loss)))
    return rows


def cached_ablations(scale: str = "cpu", root=None) -> Ablations:
    """Those of :data:`ABLATION_RUNS` cached and current at ``scale``: label -> (result, its losses, those shown: the
    MSE runs alone where only the square loss's normalisation differs, whose cross-entropy runs are the same)."""
    from .runner import cached_scales, get

    exp, out = get_experiment("tirer_wd_ablation"), {}
    for label, over in ABLATION_RUNS.items():
        if scale in cached_scales(exp.name, root, **over):
            losses = replace(exp.config(scale), **over).losses
            shown = tuple(x for x in losses if x == "mse" or over.get("mse_over_classes", True))
            out[label] = (get(exp.name, scale, root, **over), losses, shown)
    return out


@dataclass(frozen=True)
class RegimeTable:
    """:func:`ablation_regimes` as a table: a row per run and loss."""

    rows: list[RegimeRow]

    def cells(self, row: RegimeRow) -> list[str]:
        loss = {"mse": "MSE", "ce": "CE"}[row.loss]
        return [row.run, loss, f"{row.at_zero} of {row.runs}", f"{row.nc1:.2g}", times_text(row.times) + "x"]

    HEAD = ("run (MLP on MNIST-5k, 3 seeds unless named)", "loss", "at zero training error", "baseline NC1",
            "x Table 1's")

    def __repr__(self) -> str:
        return "\n".join(" | ".join(cells) for cells in [list(self.HEAD)] + [self.cells(r) for r in self.rows])

    def _repr_html_(self) -> str:
        import html
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.HEAD)
        body = "".join("<tr>" + "".join(f"<td data-label='{html.escape(h)}'>{html.escape(c)}</td>"
                                        for h, c in zip(self.HEAD, self.cells(r))) + "</tr>" for r in self.rows)
        return f"<table class='ncbook-scales'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@dataclass(frozen=True)
class FitTable:
    """A head sweep's fit, depth by depth and weight decay by weight decay: how many of its seeds end within
    ``fits`` training error (Jacot et al. Fig. 2's runs, issue 74); a row per depth, a column per weight decay."""

    depths: list[int]
    weight_decays: list[float]
    fitted: np.ndarray
    """[depth, weight decay]: seeds that fit."""
    seeds: int
    fits: float = 0.01

    @classmethod
    def of(cls, result: dict[str, np.ndarray], fits: float = 0.01) -> FitTable:
        error = np.asarray(result["train_error"], dtype=float)[..., -1]                 # [depth, seed, weight decay]
        return cls([int(d) for d in result["depths"]], [float(w) for w in result["weight_decays"]],
                   (error <= fits).sum(1), error.shape[1], fits)

    @property
    def head(self) -> list[str]:
        return ["linear layers"] + [f"λ {w:g}" for w in self.weight_decays]

    def rows(self) -> list[list[str]]:
        return [[str(d)] + [f"{k} of {self.seeds}" for k in row] for d, row in zip(self.depths, self.fitted)]

    def __repr__(self) -> str:
        return "\n".join(" | ".join(r) for r in [self.head] + self.rows())

    def _repr_html_(self) -> str:
        import html
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        body = "".join("<tr>" + "".join(f"<td data-label='{html.escape(h)}'>{html.escape(c)}</td>"
                                        for h, c in zip(self.head, r)) + "</tr>" for r in self.rows())
        return (f"<table class='ncbook-scales'><caption>seeds that fit (training error at most {self.fits:.0%} at the "
                f"end), per depth of the linear head and weight decay</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")


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
    """Min and mean over the measured non-linear layers (the ReLU layers after the first ``backbone``) of a metric
    at the end of training, per [depth, lr, seed] (Jacot et al. Fig. 3). Balancedness of layer l couples W_l and
    W_(l+1)."""
    mins, means = [], []
    for d in range(len(result["depths"])):
        v = result[name][d][..., -1, :][..., layers_of(result, "hidden", d)[backbone:]]
        mins.append(np.nanmin(v, axis=-1))
        means.append(np.nanmean(v, axis=-1))
    return {"min": np.array(mins), "mean": np.array(means)}


WRAP = 88
"""Characters of code and printed text a chapter's code column shows at 1280 px without scrolling (the code font is
set for it in book/_ext/static/ncbook.css); scripts/format_chapters.py formats the chapters' code to it."""


def wrapped(text: str, indent: str = "    ") -> str:
    """``text`` in lines of at most :data:`WRAP` characters, later lines indented: how a chapter prints prose."""
    return textwrap.fill(text, WRAP, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


# ----------------------------------------------------------------------------------------------------------------
# each claim's metric against the quantity that governs it (ncbook.scaling), the paper's value marked


@dataclass(frozen=True)
class Curves:
    """One panel: ``lines`` of (label, λt per record, values [seed, record]) and the paper's λt per label."""

    title: str
    ylabel: str
    lines: list[tuple[str, np.ndarray, np.ndarray]]
    paper: dict[str, float]
    guide: bool = False                       # draw exp(-2 λt) through the first line's start (Jacot Sec. 4.2)


def _paper_decay_time(name: str, **overrides) -> float:
    exp = get_experiment(name)
    return float(decay_times(replace(exp.config("paper"), **overrides)).max())


def jacot_decay_curves(mlp: dict, fig1: dict, nd: dict, scale: str) -> list[Curves]:
    """Jacot et al. Figs. 1, 4 (linear layers' balancedness, NC1 at the classifier's input) and Fig. 3 (the most
    balanced non-linear layer) against λt over training, at ``scale``, with the paper's λt."""
    runs = []
    for r, name, label in ((mlp, "jacot_mlp", "Fig. 4 (MLP)"), (fig1, "jacot_resnet_fig1", "Fig. 1 (ResNet)")):
        cfg = get_experiment(name).config(scale)
        one = {k: (v[0, :, 0] if name == "jacot_resnet_fig1" and np.ndim(v) > 2 else
                   v[:, 0] if np.ndim(v) > 2 else v) for k, v in r.items()}
        names = one["layer_names"][0] if one["layer_names"].ndim == 2 else one["layer_names"]
        one["layer_names"] = names
        lam_t = decay_time_at(one["steps"], cfg, float(r["weight_decays"][0]))
        runs.append((label, lam_t, one, _paper_decay_time(name)))
    bal = [(label, t, np.nanmean(o["balancedness"][..., layers_of(o, "linear")], axis=-1)) for label, t, o, _ in runs]
    nc1 = [(label, t, o["nc1_trace_ratio"][..., layer_index(o, "deepest")]) for label, t, o, _ in runs]
    paper = {label: p for label, _, _, p in runs}
    cfg = get_experiment("jacot_nonlinear_depth").config(scale)
    fig3, paper3 = [], {}
    for d in (0, len(cfg.depths) - 1):
        L = cfg.depths[d] + cfg.num_linear
        v = nd["balancedness"][d][-1][..., layers_of(nd, "hidden", d)[cfg.backbone:]]      # largest lr: [seed, rec, l]
        label = f"depth {cfg.depths[d]}"
        fig3.append((label, decay_time_at(nd["steps"], cfg, cfg.weight_decay_total / L, cfg.lrs[-1]),
                     np.nanmin(v, axis=-1)))
        paper_cfg = get_experiment("jacot_nonlinear_depth").config("paper")
        paper3[label] = float(decay_time_at(np.array([num_steps(paper_cfg)]), paper_cfg,
                                            paper_cfg.weight_decay_total / L, paper_cfg.lrs[-1])[0])
    return [Curves("linear layers' balancedness", "balancedness", bal, paper, guide=True),
            Curves("NC1 at the classifier's input", "NC1", nc1, paper),
            Curves(f"Fig. 3: most balanced ReLU layer (lr {cfg.lrs[-1]:g})", "min balancedness", fig3, paper3)]


def tirer_decay_curves(ab: dict, bl: dict, blurred: tuple[int, ...], scale: str) -> list[Curves]:
    """Tirer et al. Table 1 / Figs. 3-5 (NC1 of the deepest features per weight-decay setting, MSE and CE) and
    Fig. 6 (the other classes' per-class NC1 per λ_W) against the baseline's λt, at ``scale``, with the paper's."""
    cfg, bcfg = get_experiment("tirer_wd_ablation").config(scale), get_experiment("tirer_blur").config(scale)
    t = decay_time_at(ab["steps"], cfg, cfg.weight_decay)
    paper = {"MNIST 5K per class": _paper_decay_time("tirer_wd_ablation", dataset="mnist", per_class=5000)}
    nc1 = ab["nc1_pinv"][..., layer_index(ab, "deepest")]                  # [loss, seed, setting, record]
    out = [Curves(f"Table 1, {loss.upper()}: NC1 of the deepest features", "NC1",
                  [(setting, t, nc1[li, :, si]) for si, setting in enumerate(ABLATIONS)], paper)
           for li, loss in enumerate(cfg.losses)]
    per = bl["nc1_per_class"][..., [k for k in range(bl["nc1_per_class"].shape[-1]) if k not in blurred]].mean(-1)
    lines = [("clean", per[0])] + [(f"blurred, λ_W {w:g}", per[i + 1]) for i, w in enumerate(bl["weight_decays_last"])]
    tb = decay_time_at(bl["steps"], bcfg, bcfg.weight_decay)
    out.append(Curves("Fig. 6: the other classes' per-class NC1", "NC1 per class",
                      [(label, tb, v) for label, v in lines], {"MNIST 3K per class": _paper_decay_time("tirer_blur")}))
    return out


# runs that blow up: the runner refuses them, so they are shown by retraining the network that diverges


FIG3_DIVERGES = {"seeds": (3,), "depths": (10,), "lrs": (0.01,)}
"""The network that keeps Jacot et al. Fig. 3's `cpu` sweep from the paper's five seeds: with
``--set seeds=0,1,2,3,4`` the runner refuses the run, because this network (one of its 50) diverges;
:func:`divergence` retrains it alone."""


@dataclass(frozen=True)
class Divergence:
    """Where a run diverged, as the trainer's divergence check stopped it (``train.divergence_error``)."""

    step: int
    times: float
    """Its loss at ``step`` over its loss at step 0 (inf: not finite)."""


def divergence(name: str, scale: str, **changes) -> Divergence | None:
    """Train ``name`` at ``scale`` with the settings ``changes``: where it diverges, or None if it trains to its
    end (it is then trained whole, so keep ``changes`` to the network in question)."""
    exp = get_experiment(name)
    try:
        exp.run(replace(exp.config(scale), **changes), progress=False)
    except FloatingPointError as err:
        if m := re.search(r"loss at step (\d+) is (\S+) times", str(err)):
            return Divergence(int(m[1]), float(m[2]))
        if m := re.search(r"loss became \S+ at step (\d+)", str(err)):
            return Divergence(int(m[1]), math.inf)
        raise
    return None


def fig3_five_seeds(scale: str, shipped: tuple[int, ...]) -> str:
    """The sentence that says why Fig. 3 at ``scale`` has the seeds ``shipped`` and not the paper's five: the network
    of :data:`FIG3_DIVERGES` retrained (:func:`divergence`), where the sweep has it."""
    cfg = get_experiment("jacot_nonlinear_depth").config(scale)
    [seed], [depth], [lr] = (FIG3_DIVERGES[k] for k in ("seeds", "depths", "lrs"))
    have = ", ".join(map(str, shipped))
    if len(shipped) >= 5:
        return f"The sweep has the paper's five runs per setting (seeds {have})."
    if depth not in cfg.depths or lr not in cfg.lrs:
        return f"The sweep at this scale has seeds {have}; the paper averages five runs."
    found = divergence("jacot_nonlinear_depth", scale, **FIG3_DIVERGES)
    if found is None:
        return (f"The sweep has seeds {have}; the paper averages five runs. Seed {seed}'s network with {depth} ReLU "
                f"layers at learning rate {lr:g}, which diverged when five seeds were first run, now trains: the "
                "five seeds can be run.")
    times = "not finite" if math.isinf(found.times) else f"{scientific(found.times)} times its first"
    ratio = cfg.lrs[0] / get_experiment("jacot_nonlinear_depth").config("paper").lrs[0]
    return (f"The sweep has seeds {have}, not the paper's five: asked for seeds 0 to 4, the "
            f"runner refuses the run, because seed {seed}'s network with {depth} ReLU layers at learning rate "
            f"{lr:g} diverges (retrained alone here: at step {found.step} its loss is {times}), and a run that blows "
            f"up is never stored. Our learning rates are {ratio:g} times the paper's (see above); at them this "
            "network blows up: a defect of our runs, not a property of the claims, which are read on the seeds "
            "shipped.")
