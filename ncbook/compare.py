"""Part IV's results read against the papers: the quantities their claims are about, and their published numbers.

Readers of results live here, apart from the code that produces them (:mod:`ncbook.experiments`,
:mod:`ncbook.reproduce`), so that reading a result differently never makes it stale."""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, replace

import numpy as np

from .registry import get_experiment
from .reproduce import ABLATIONS
from .scaling import decay_time_at, decay_times, governing_text, num_steps
from .train import PER_LAYER_METRICS, History

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


# ----------------------------------------------------------------------------------------------------------------
# claims tables: every claim of a paper's figures and text, checked on every run


WRAP = 88
"""Characters of code and printed text a chapter's code column shows at 1280 px without scrolling (the code font is
set for it in book/_ext/static/ncbook.css); scripts/format_chapters.py formats the chapters' code to it."""


def wrapped(text: str, indent: str = "    ") -> str:
    """``text`` in lines of at most :data:`WRAP` characters, later lines indented: how a chapter prints prose."""
    return textwrap.fill(text, WRAP, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


MARGIN = 2.0
"""A claim that compares groups of runs (a shallow and a deep network, two weight decays) is reproduced only if,
besides holding in every run, consecutive groups' means differ by at least MARGIN times the larger of their
standard deviations over seeds: an effect that stands out of the seed spread."""


def separated(*groups: np.ndarray) -> bool:
    """Consecutive groups' means differ by at least MARGIN times the larger of their SDs (the verdict's margin)."""
    return all(abs(np.nanmean(b) - np.nanmean(a)) >= MARGIN * max(np.nanstd(a), np.nanstd(b))
               for a, b in zip(groups, groups[1:]))


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, checked run by run: ``holds`` has one boolean per run (seed, setting, depth...), every
    run counted, including those that did not interpolate; ``numbers`` are our values behind it (mean ± SD over
    seeds); ``separated``, for a comparison of groups of runs, whether the effect exceeds MARGIN seed SDs (None: not
    such a claim); ``paper`` what the paper states or prints; ``governing`` the quantities that govern the claim,
    ours and the paper's (:mod:`ncbook.scaling`)."""

    where: str
    claim: str
    holds: np.ndarray
    runs: str
    numbers: str
    separated: bool | None = None
    paper: str = ""
    governing: str = ""

    @property
    def verdict(self) -> str:
        n = int(np.sum(self.holds))
        if n == np.size(self.holds):
            return "partly" if self.separated is False else "reproduced"
        return "not reproduced" if n == 0 else "partly"

    @property
    def count(self) -> str:
        """How many runs it holds in, and whether the effect stands out of the seed spread."""
        margin = f"; effect within {MARGIN:g} seed SDs" if self.separated is False else ""
        return f"{int(np.sum(self.holds))} of {np.size(self.holds)} {self.runs}{margin}"

    def __str__(self) -> str:
        fill = lambda text, first="    ": textwrap.fill(text, WRAP, initial_indent=first,       # noqa: E731
                                                          subsequent_indent="    ")
        lines = [textwrap.fill(f"[{self.where}] {self.claim}", WRAP, subsequent_indent="  ")]
        lines += [fill(f"paper: {self.paper}")] if self.paper else []
        lines += [fill(f"{self.verdict.upper()}: holds in {self.count}; ours: {self.numbers}")]
        lines += [fill(f"governing, ours (paper): {self.governing}")] if self.governing else []
        return "\n".join(lines)


def verdict_counts(claims: list[Claim]) -> str:
    """How many claims are reproduced, partly, not reproduced."""
    counts = {v: sum(c.verdict == v for c in claims) for v in ("reproduced", "partly", "not reproduced")}
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def format_claims(claims: list[Claim]) -> str:
    """A claims table as text, one claim per paragraph, and the count of each verdict."""
    return "\n".join(map(str, claims)) + "\n" + verdict_counts(claims)


@dataclass(frozen=True)
class ClaimsTable:
    """Claims shown side by side: an HTML table (claim, the paper, ours, governing quantities, verdict) in a
    notebook and the rendered book, :func:`format_claims`'s text elsewhere."""

    claims: list[Claim]
    title: str = ""

    def __repr__(self) -> str:
        return (f"--- {self.title} ---\n" if self.title else "") + format_claims(self.claims)

    def _repr_html_(self) -> str:
        e = html.escape
        heads = ("claim", "paper", "ours (mean ± SD over seeds)", "governing, ours (paper)", "verdict")
        head = "".join(f"<th>{h}</th>" for h in heads)
        rows = ""
        for c in self.claims:
            cells = (f"<b>{e(c.where)}</b>: {e(c.claim)}", e(c.paper), e(c.numbers), e(c.governing),
                     f"<b>{e(c.verdict)}</b><br>{e(c.count)}")
            verdict = c.verdict.replace(" ", "-")
            rows += "<tr>" + "".join(
                f"<td data-label='{h}'" + (f" class='verdict-{verdict}'" if h == "verdict" else "") + f">{x}</td>"
                for h, x in zip(heads, cells)) + "</tr>"
        caption = e((self.title + ": " if self.title else "") + verdict_counts(self.claims))
        return (f"<table class='ncbook-claims'><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{rows}</tbody></table>")


def _mean_sd(v: np.ndarray, fmt: str = ".3g") -> str:
    return f"{np.nanmean(v):{fmt}}\u00a0±\u00a0{np.nanstd(v):{fmt}}"      # no line break inside


def _first_zero_error_epoch(result: dict[str, np.ndarray]) -> np.ndarray:
    """Per run (every leading index), the first recorded epoch with zero training error (NaN if never)."""
    err, epochs = result["train_error"], np.asarray(result["epochs"])
    zero = err == 0
    return np.where(zero.any(-1), epochs[np.argmax(zero, axis=-1)], np.nan)


def _changes(nc1: np.ndarray, who: str) -> str:
    """Relative change of the mean NC1 [seed, setting] when λ_who is doubled and zeroed: "-37% / +112%"."""
    x2, x0 = ABLATIONS.index(f"WDx2 for {who}"), ABLATIONS.index(f"WD=0 for {who}")
    base = np.nanmean(nc1[..., 0])
    return f"{np.nanmean(nc1[..., x2]) / base - 1:+.0%} / {np.nanmean(nc1[..., x0]) / base - 1:+.0%}"


def _paper_changes(loss: str, who: str) -> str:
    """The same relative changes in Tirer et al.'s Table 1 (MNIST, 3K per class, the loss given)."""
    return _changes(np.array(TIRER_TABLE1[f"MNIST, {loss.upper()}"]["NC1"]), who)


def tirer_claims(lw: dict, ab: dict, ab_small: dict, bl: dict, losses: tuple[str, ...],
                 blurred: tuple[int, ...], scale: str | None = None) -> list[Claim]:
    """Every claim of Tirer et al. Sec. 6 and App. E (Figs. 2-6, Table 1) on cached results: the layer-wise run
    ``lw``, the weight-decay ablation ``ab`` and its smaller twin ``ab_small`` (fewer samples per class), the blur
    run ``bl``; each checked seed by seed; with ``scale``, each claim names the quantities that govern it there
    and in the paper (:func:`ncbook.scaling.governing_text`)."""
    claims = []
    nc1, gnc1 = lw["nc1_pinv"], lw["nc1_trace_ratio"]                       # [seed, hidden layers]
    claims.append(Claim("Fig. 2", "NC1 and gNC1 decrease as hidden layers are added and trained one at a time",
                        (nc1[:, -1] < nc1[:, 0]) & (gnc1[:, -1] < gnc1[:, 0]), "seeds",
                        f"NC1 with 1 and with {nc1.shape[1]} layers {_mean_sd(nc1[:, 0])} and {_mean_sd(nc1[:, -1])}; "
                        f"{(np.diff(gnc1, axis=1) < 0).mean():.0%} of added layers lower gNC1",
                        separated(nc1[:, 0], nc1[:, -1]) and separated(gnc1[:, 0], gnc1[:, -1]),
                        "\"decrease in both NC1 and gNC1 as we add more hidden layers\" (CIFAR-10; read off Fig. 2)"))
    first = _first_zero_error_epoch(ab)                                     # [loss, seed, setting]
    claims.append(Claim("Sec. 6", "every setting reaches zero training error (the paper: at about epoch 40)",
                        ~np.isnan(first), "runs",
                        f"first epoch with zero error: {np.nanmin(first):.0f} to {np.nanmax(first):.0f}; final "
                        f"error at most {ab['train_error'][..., -1].max():.2%}" if (~np.isnan(first)).any() else
                        f"final error {_mean_sd(ab['train_error'][..., -1])}",
                        paper="\"we reach zero training error at the 40 epoch approximately\""))
    for result, label in ((ab, "Fig. 3, Table 1"), (ab_small, "Figs. 4-5")):
        verdicts = feature_decay_verdicts(result, losses)
        for li, loss in enumerate(losses):
            holds = np.concatenate([v for (lo, _, _), v in verdicts.items() if lo == loss])
            nc1 = final_at(result, "nc1_pinv", "deepest")[li]                  # [seed, setting]
            dev = np.abs(nc1[:, 1:] / nc1[:, :1] - 1)                         # [seed, (x2 W, x2 H, 0 W, 0 H)]
            claims.append(Claim(f"{label}, {loss.upper()}", "changing the feature layers' weight decay (H) moves NC1 "
                                "and NC2 further from the baseline than changing the last layer's (W)", holds,
                                "comparisons (NC1/NC2 x doubling/zeroing x seeds)",
                                f"NC1 moves {_changes(nc1, 'H')} (H), {_changes(nc1, 'W')} (W); failing: "
                                + (", ".join(f"{key} {kind} seed {s}" for (lo, key, kind), v in
                                             verdicts.items() if lo == loss for s in np.flatnonzero(~v)) or "none"),
                                separated(dev[:, 0], dev[:, 1]) and separated(dev[:, 2], dev[:, 3]),
                                f"MNIST NC1 moves {_paper_changes(loss, 'H')} (H), {_paper_changes(loss, 'W')} (W)"))
    final = final_at(ab, "nc1_pinv", "deepest")                             # [loss, seed, setting]
    for li, loss in enumerate(losses):
        f = final[li]
        for who, name in (("H", "feature"), ("W", "last-layer")):
            x2, x0 = ABLATIONS.index(f"WDx2 for {who}"), ABLATIONS.index(f"WD=0 for {who}")
            claims.append(Claim(f"Table 1, {loss.upper()}", f"more {name} weight decay, closer to collapse: NC1 "
                                f"with λ_{who} doubled < baseline < λ_{who} zeroed",
                                (f[:, x2] < f[:, 0]) & (f[:, 0] < f[:, x0]), "seeds",
                                f"NC1 doubled / baseline / zeroed: {_mean_sd(f[:, x2])} / {_mean_sd(f[:, 0])} / "
                                f"{_mean_sd(f[:, x0])} ({_changes(f, who)})", separated(f[:, x2], f[:, 0], f[:, x0]),
                                f"MNIST NC1 {_paper_changes(loss, who)} (Table 1)"))
    for result, label in ((ab, "Figs. 4-5 (c)"), (ab_small, "Figs. 4-5 (c), fewer per class")):
        for name, key in (("nc1_pinv", "NC1"), ("nc2_etf_distance", "NC2")):
            deep, mid = final_at(result, name, "deepest"), final_at(result, name, "intermediate")
            claims.append(Claim(label, f"{key} is larger in the intermediate features than in the deepest",
                                (mid > deep).ravel(), "runs (loss x seed x setting)",
                                f"{key} intermediate / deepest: {_mean_sd(mid / deep)}",
                                paper="larger in the intermediate features (Figs. 4c, 5c vs 4b, 5b; CE)"))
    per = bl["nc1_per_class"][:, :, -1, :]                                  # [setting, seed, class]
    others = [k for k in range(per.shape[-1]) if k not in blurred]
    mine = per[..., others].mean(-1)                                        # [setting, seed]
    claims.append(Claim("Fig. 6", "blurring two classes raises the other classes' per-class NC1",
                        (mine[1:] > mine[:1]).ravel(), "runs (seed x last-layer weight decay)",
                        f"other classes' NC1(k), clean {_mean_sd(mine[0])}, blurred {_mean_sd(mine[1:])}",
                        separated(mine[0], mine[1:]), "\"minor\" at λ_W = 5e-4; the blurred classes \"affect the "
                        "per-class NC1 of other classes\" at 5e-5 and 0 (Fig. 6b-d)"))
    order = np.argsort(bl["weight_decays_last"])[::-1] + 1                  # settings from the largest λ_W down
    for name, label in (("nc1_per_class", "the other classes' per-class NC1"), ("nc1_pinv", "NC1"),
                        ("nc2_etf_distance", "NC2"), ("nc3_etf_distance", "NC3")):
        v = mine if name == "nc1_per_class" else bl[name][:, :, -1, -1 if name == "nc3_etf_distance" else
                                                         layer_index(bl, "deepest")]
        holds = (np.diff(v[order], axis=0) > 0).all(axis=0)
        claims.append(Claim("Fig. 6", f"a smaller last-layer weight decay increases {label} on the blurred data",
                            holds, "seeds", "from the largest λ_W to 0: "
                            + " / ".join(_mean_sd(v[s]) for s in order), separated(*(v[s] for s in order)),
                            "\"small WD in the last layer ... increases also the other NC metrics\" (Fig. 6)"))
    if scale is None:
        return claims
    ablation, small = (governing_text("tirer_wd_ablation", scale, paper={"dataset": "mnist", "per_class": p}, **o)
                       for o, p in (({}, 5000), ({"per_class": 300}, 3000)))      # MNIST: Figs. 5 and 4
    by_where = {"Fig. 2": governing_text("tirer_layerwise", scale), "Fig. 6": governing_text("tirer_blur", scale),
                "Figs. 4-5": small, "Figs. 4-5 (c), fewer per class": small}
    return [replace(c, governing=by_where.get(c.where.split(", MSE")[0].split(", CE")[0], ablation)) for c in claims]


def _pairs_improve(v: np.ndarray, worse: bool = False) -> np.ndarray:
    """For values [depth, ...], one boolean per consecutive pair of depths and run: the deeper one is lower (or,
    with ``worse``, higher)."""
    d = np.diff(v, axis=0)
    return (d > 0 if worse else d < 0).ravel()


def _deep_head_claims(r: dict, where: str, shown: str) -> list[Claim]:
    """Jacot et al. Fig. 1 / 4 on one network, seed by seed: ``r`` holds arrays [seed, record, layer] and the
    ``layer_names``; the figure shows the layers from ``shown`` on (the ReLU layers before it are the backbone)."""
    nc1, nc2, bal, err = r["nc1_pinv"], r["nc2_condition_number"], r["balancedness"], r["train_error"][:, -1]
    n = nc1.shape[-1]
    head = slice(layer_index(r, "head input"), layer_index(r, "deepest") + 1)
    relus = relu_pairs(r, shown)
    linear_pairs = layers_of(r, "linear")                                # a linear layer and the next (or the output)
    steps = np.asarray(r["steps"])
    drop = int(np.searchsorted(steps, 0.8 * steps[-1]))            # the first record after the lr drop at 80%
    lin_end, lin_drop = np.nanmean(bal[:, -1, linear_pairs], axis=1), np.nanmean(bal[:, drop, linear_pairs], axis=1)
    fall = nc1[:, 0, n - 2] / nc1[:, -1, n - 2]
    return [
        Claim(where, "the network fits its training data (zero training error)", err == 0, "seeds",
              f"final training error per seed: {', '.join(f'{e:.2%}' for e in err)}",
              paper="implied (the collapse is of an interpolating network); no error printed"),
        Claim(where, "collapse is reached: NC1 at the classifier's input falls at least a hundredfold in training",
              fall >= 100, "seeds", f"NC1 there falls {', '.join(f'{f:.3g}' for f in fall)}-fold",
              paper="\"the collapse is reached throughout the training\" (NC1 curves; no value printed)"),
        Claim(where, "NC2 improves progressively with each layer of the linear head",
              (np.diff(nc2[:, -1, head], axis=1) < 0).all(axis=1), "seeds",
              "NC2 from the head's input to the classifier's input: "
              + "; ".join(" → ".join(f"{x:.3g}" for x in row) for row in nc2[:, -1, head]),
              paper="\"the NC2 metric improves progressively with each layer of the linear head\""),
        Claim(where, "the linear layers end far more balanced than the non-linear ones (5 times at least)",
              np.nanmax(bal[:, -1, linear_pairs], axis=1) < np.nanmin(bal[:, -1, relus], axis=1) / 5, "seeds",
              f"balancedness, linear pairs {_mean_sd(bal[:, -1, linear_pairs])}, ReLU pairs "
              f"{_mean_sd(bal[:, -1, relus])}",
              paper="linear pairs plateau \"at a rather small value\", ReLU pairs \"at a significantly larger "
              "value\" (no value printed)"),
        Claim(where, "after the learning-rate drop the linear layers' balancedness decreases again (by 5% at least)",
              lin_end < 0.95 * lin_drop, "seeds",
              f"mean over the linear pairs at the drop {_mean_sd(lin_drop)}, at the end {_mean_sd(lin_end)}",
              paper="\"again it exponentially decreases at a smaller rate after reducing the learning rate\""),
    ]


FIG3_PAPER = {
    ("balancedness", "min"): "\"Balancedness clearly improves with depth ... in the most balanced layer\"",
    ("balancedness", "mean"): "\"Balancedness clearly improves with depth, both on average per layer\"",
    ("negativity", "min"): "\"the non-negativity of the layer that least uses the ReLU clearly decreases\"",
    ("negativity", "mean"): "\"a decrease in the mean negativity is also reported (although less pronounced)\"",
}
"""What Jacot et al. Sec. 6 says of each Fig. 3 curve (the paper prints no values)."""


def jacot_claims(mlp: dict, fig1: dict, hd: dict, rh: dict, nd: dict, nd_cfg, scale: str | None = None
                 ) -> list[Claim]:
    """Every claim of Jacot et al. Sec. 6 and App. A (Figs. 1-5) on cached results (the results of ``jacot_mlp``,
    ``jacot_resnet_fig1``, ``jacot_head_depth``, ``jacot_resnet_head``, ``jacot_nonlinear_depth``, and the last
    one's configuration), each checked on every run: seeds, weight decays, depths and learning rates."""
    pick = lambda r, *i: {k: (v[i] if np.ndim(v) > 2 else v) for k, v in r.items()}    # noqa: E731
    claims = _deep_head_claims(pick(mlp, slice(None), 0), "Fig. 4, MLP", "hidden 3")     # Fig. 4 shows layers 3-9
    claims += _deep_head_claims(pick(fig1, 0, slice(None), 0) | {"layer_names": fig1["layer_names"][0]},
                                "Fig. 1, ResNet", "hidden 1")
    for r, where in ((hd, "Fig. 2, MLP"), (rh, "Fig. 2 right / 5, ResNet")):
        nc2 = head_values(r, "nc2_condition_number")                         # [depth, seed, weight decay]
        nc1 = head_values(r, "nc1_pinv")["last"]
        fit = (r["train_error"][..., -1] == 0).mean()
        claims.append(Claim(where, "NC2 of the head's last layer improves with every added linear layer",
                            _pairs_improve(nc2["last"]), "(seed, weight decay, added layer) runs",
                            f"{fit:.0%} of the runs fit the data; NC2 there by depth, mean over runs: "
                            + " → ".join(f"{x:.3g}" for x in nc2["last"].mean(axis=(1, 2))),
                            paper="\"NC2 significantly improves in the last layer as the depth of the linear head "
                            "increases\""))
        if r is hd:
            claims.append(Claim(where, "NC2 of the head's input layer gets slightly worse with every added layer",
                                _pairs_improve(nc2["first"], worse=True), "(seed, weight decay, added layer) runs",
                                "by depth, mean over runs: " + " → ".join(f"{x:.3g}" for x in
                                                                        nc2["first"].mean(axis=(1, 2))),
                                paper="\"it gets slightly worse in the input layer to the linear head\""))
            spread = np.nanmax(nc1, axis=0) / np.nanmin(nc1, axis=0)              # [seed, weight decay]
            claims.append(Claim(where, "NC1 does not depend strongly on the head's depth (within a factor 10)",
                                (spread < 10).ravel(), "(seed, weight decay) runs",
                                f"largest / smallest NC1 of the last layer over depths: {_mean_sd(spread)}",
                                paper="\"The NC1 does not have a strong dependence with the number of layers\""))
    for name, label in (("balancedness", "balancedness"), ("negativity", "negativity")):
        s = nonlinear_layer_summary(nd, name, nd_cfg.backbone)                 # [depth, lr, seed]
        for kind in ("min", "mean"):
            claims.append(Claim("Fig. 3", f"the {kind} {label} of the non-linear layers is lower in the deepest "
                                "network than in the shallowest", (s[kind][-1] < s[kind][0]).ravel(),
                                "(learning rate, seed) runs",
                                f"depth {nd_cfg.depths[0]} {_mean_sd(s[kind][0])}, depth {nd_cfg.depths[-1]} "
                                f"{_mean_sd(s[kind][-1])}", separated(s[kind][0], s[kind][-1]),
                                FIG3_PAPER[(name, kind)]))
    if scale is None:
        return claims
    by_where = {"Fig. 4, MLP": "jacot_mlp", "Fig. 1, ResNet": "jacot_resnet_fig1", "Fig. 2, MLP": "jacot_head_depth",
                "Fig. 2 right / 5, ResNet": "jacot_resnet_head", "Fig. 3": "jacot_nonlinear_depth"}
    return [replace(c, governing=governing_text(by_where[c.where], scale)) for c in claims]


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
    nc1 = [(label, t, o["nc1_pinv"][..., layer_index(o, "deepest")]) for label, t, o, _ in runs]
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
