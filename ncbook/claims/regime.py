"""A claim evaluated on the runs in its regime (:func:`evaluate`), and what the regime is (:data:`REGIMES`)."""

from __future__ import annotations

import warnings

import numpy as np

from .rule import LINEAR_VIEWS, NO_EFFECT, PAPER_METRICS, UNPAIRED_VIEWS, Spec, grade, judge
from .verdicts import Claim, ledger
from .views import VIEWS

# ----------------------------------------------------------------------------------------------------------------
# reading a spec: the one function every row goes through


def _summary(labels: list[str], groups: list[np.ndarray], fmt: str = ".3g") -> str:
    def num(x: float) -> str:                 # past 1e12 a condition number or NC1 says "degenerate", not its digits
        return f"{x:{fmt}}" if not np.isfinite(x) or abs(x) < 1e12 else ">1e12"

    def one(v):
        v = np.asarray(v, dtype=float).ravel()
        if np.isnan(v).any():                   # runs outside the regime (or without a value): counted, not listed
            kept = v[~np.isnan(v)]
            return f"{kept.size} of {v.size} with a value" + (f", {one(kept)}" if kept.size else "")
        if v.size > 6:
            with np.errstate(invalid="ignore", over="ignore"):             # inf among the runs
                mean, sd = num(np.nanmean(v)), num(np.nanstd(v))
            return f"{mean}\u00a0±\u00a0{sd} ({num(np.nanmin(v))} to {num(np.nanmax(v))})"
        return ", ".join(map(num, v))
    return "; ".join(f"{label}: {one(v)}" for label, v in zip(labels, groups))


def _nc_level(spec: Spec, r: dict) -> str:
    """How near collapse the runs of a row on Tirer et al.'s ablation are, for its ledger: "; NC1 86x Table 1's",
    the baseline's (the near-collapse regime their perturbation analysis is about; "" for other rows)."""
    from ..compare import baseline_over_table1, times_text
    if spec.paper != "Tirer" or "loss" not in spec.args or "nc1_pinv" not in r or "layer_names" not in r:
        return ""
    losses = tuple(spec.args.get("losses", ("mse", "ce")))
    return f"; NC1 {times_text(baseline_over_table1(r, spec.args['loss'], losses))}x Table 1's"


def far_from_collapse(spec: Spec, r: dict) -> str:
    """Why a row on Tirer et al.'s weight decays is outside the near-collapse regime their analysis is about, ""
    where it is not: its baseline NC1 (mean over seeds, deepest features, at the end) above the largest NC1 of Table
    1's MNIST column for its loss, zero weight decays included ("NC1 86x Table 1's, above all its CE entries"). The
    ablation's rows read their loss's baseline; Fig. 6's blur rows (cross-entropy) the clean
    data at the paper's λ_W."""
    from ..compare import TIRER_TABLE1, baseline_nc1, table1_nc1, times_text
    from .views import _blur_values
    if spec.paper != "Tirer" or spec.precondition or "nc1_pinv" not in r or "layer_names" not in r:
        return ""
    if spec.result == "tirer_blur":
        loss, base = "ce", float(np.mean(_blur_values(r, "nc1_pinv", spec.args["blurred"])[0]))
    elif spec.regime == "zero error" and "loss" in spec.args:
        loss = spec.args["loss"]
        base = baseline_nc1(r, loss, tuple(spec.args.get("losses", ("mse", "ce"))))
    else:
        return ""
    if base <= max(TIRER_TABLE1[f"MNIST, {loss.upper()}"]["NC1"]):
        return ""
    return f"NC1 {times_text(base / table1_nc1(loss))}x Table 1's, above all its {loss.upper()} entries"


RATE_VIEWS = ("decay_rate", "decay_phases", "after_drop")
"""The views whose values are a rate of fall (ln(fall) per unit of λt; after_drop's per step), named so in a row's
finding."""


def finding(metrics: list[str], labels: list[str], groups: list[list[np.ndarray]], kind: str, view: str) -> str:
    """What a row's runs showed, in a few words with its numbers (the glance table's "why"), metric by metric: a
    comparison's change from the first group to the last with a value, in the median run ("NC2 x0.32, hidden 5 →
    linear 3"), a rate (per unit of λt, or per step after the drop) or a difference from median to median; a
    level's range over the runs; "flat" its largest ratio between groups."""
    log = view not in LINEAR_VIEWS
    per = "step" if view == "after_drop" else "λt"
    name = (lambda m: f"{m} fall/{per}") if view in RATE_VIEWS else (lambda m: m)    # noqa: E731
    said = []
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for metric, gs in zip(metrics, groups):
            if kind == "differ":                # per pair, the factor between the geometric means, the median
                apart = [np.exp(abs(np.nanmean(np.log(a)) - np.nanmean(np.log(b))))
                         for a, b in zip(gs[::2], gs[1::2])]
                apart = [x for x in apart if np.isfinite(x)]
                x = float(np.median(apart)) if apart else np.nan
                said.append(f"{metric} " + ("without two values" if not apart else ">x1e12" if x > 1e12
                                            else f"x{x:.2g}"))
                continue
            v = np.stack([np.asarray(x, dtype=float).ravel() for x in gs])         # [group, run]
            if kind in ("at most", "at least") or len(v) < 2:
                f = v[np.isfinite(v)]
                said.append(f"{name(metric)} " + (f"{f.min():.2g}" + (f" to {f.max():.2g}" if f.max() != f.min()
                                                                       else "") if f.size else "without a value"))
                continue
            ok = np.isfinite(v)
            runs = ok.sum(0) >= 2                       # a run's first and last group with a value
            first = v[ok.argmax(0), np.arange(v.shape[1])][runs]
            last = v[v.shape[0] - 1 - ok[::-1].argmax(0), np.arange(v.shape[1])][runs]
            if not runs.any():
                said.append(f"{name(metric)} without two values to compare")
            elif kind == "flat":
                said.append(f"{name(metric)} up to x{np.nanmedian(np.nanmax(v, 0) / np.nanmin(v, 0)):.2g}")
            elif log:
                said.append(f"{name(metric)} x{np.median(last / first):.2g}")
            else:
                said.append(f"{name(metric)} {np.median(first):.2g} → {np.median(last):.2g}")
    if kind == "differ":
        return ", ".join(said) + ": λ against λ, median depth"
    level = kind in ("at most", "at least") or len(labels) < 2
    return ", ".join(said) + ("" if level else f": {labels[0]} → {labels[-1]}")


def steps_not_judged(labels: list[str], groups: list[np.ndarray], common: bool, pairs: bool = False) -> str:
    """The steps (consecutive groups) with fewer than two runs that have a value in both: "linear 4 to linear 5";
    with ``pairs`` ("differ"), the pairs (2i, 2i + 1) without two finite values in each group."""
    if pairs:
        return ", ".join(f"{labels[i]} against {labels[i + 1].split(', ')[-1]}" for i in range(0, len(groups), 2)
                         if min(np.isfinite(np.asarray(groups[j], dtype=float)).sum() for j in (i, i + 1)) < 2)
    out = []
    for i, (a, b) in enumerate(zip(groups, groups[1:])):
        a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
        if (~(np.isnan(a) | np.isnan(b)) if common else np.ones(a.shape, bool)).sum() < 2:
            out.append(f"{labels[i]} to {labels[i + 1]}")
    return ", ".join(out)


def evaluate(spec: Spec, results: dict[str, dict], governing: str = "") -> Claim:
    """A claims-table row from a :class:`Spec` on cached ``results`` (by experiment name), by :func:`judge`, on the
    runs in the spec's regime; an existential spec takes its clearest metric."""
    r = results[spec.result]
    metric_names = ", ".join(f"{m} = {PAPER_METRICS[spec.paper][m]}" for m in spec.metrics)
    far = far_from_collapse(spec, r)
    if far:                                     # not near collapse: the claim's regime is not reached, never judged
        err = np.asarray(r["train_error"])[..., -1]
        n = int(err[tuple(spec.args["losses"]).index(spec.args["loss"])].size if "loss" in spec.args else err.size)
        return Claim(spec.where, spec.claim, np.zeros(0, bool), spec.runs, "", None, spec.sentence, governing,
                     metric=metric_names,
                     criterion=spec.criterion.text, outside=n,
                     ledger=f"not reached by the reproduction: {far}", in_regime=(0, n), view=spec.view,
                     source=spec.result + (f", {spec.args['loss']}" if "loss" in spec.args else ""))
    parts, found, unjudged = [], [], []
    in_regime = regime_runs(r, spec.regime, spec.args.get("loss"), spec.args.get("losses")) if spec.regime else None
    for metric in spec.metrics:
        name = PAPER_METRICS[spec.paper][metric]
        with warnings.catch_warnings():         # the runs outside the regime are NaN: empty means, all-NaN slices
            warnings.simplefilter("ignore", RuntimeWarning)
            labels, groups = VIEWS[spec.view](in_regime_only(r, name, spec.regime) if spec.regime else r, name,
                                              **spec.args)
        j = judge(groups, spec.criterion, paired=spec.view not in UNPAIRED_VIEWS, common=bool(spec.regime),
                  log=spec.view not in LINEAR_VIEWS)
        k = f"{int(j.holds.sum())}/{j.holds.size} hold"
        if j.unjudged:
            unjudged.append(steps_not_judged(labels, groups, bool(spec.regime), spec.criterion.kind == "differ"))
        parts.append((j, (f"{metric} ({name}; {k}) " if len(spec.metrics) > 1 else "") + _summary(labels, groups)))
        found.append((metric, labels, groups))
    judged = [j for j, _ in parts]
    if spec.exists:                             # one clear case is enough: the best metric's judgement
        rank = {v: i for i, v in enumerate(("reproduced", "partly", NO_EFFECT, "not reproduced"))}
        judged = [min(judged, key=lambda j: rank[grade(int(j.holds.sum()), j.holds.size, j.direction,
                                                       j.separated, j.some_clear)])]
    seps = [j.separated for j in judged if j.separated is not None]
    margins = [j.margin_runs for j in judged if j.margin_runs is not None]
    runs = spec.runs + (f" x {len(judged)} metrics" if len(judged) > 1 else "")
    return Claim(spec.where, spec.claim, np.concatenate([j.holds for j in judged]), runs,
                 "; ".join(text for _, text in parts), all(seps) if seps else None, spec.sentence, governing,
                 metric=metric_names,
                 criterion=spec.criterion.text + ("; one metric with a clear case is enough (\"can\")"
                                                  if spec.exists else ""),
                 direction=any(j.direction for j in judged), precondition=spec.precondition,
                 outside=sum(j.outside for j in judged), some_clear=any(j.some_clear for j in judged),
                 margin_runs=min(margins) if margins else None,
                 ledger=(ledger(*in_regime, spec.regime) + _nc_level(spec, r)) if in_regime else "",
                 in_regime=in_regime[:2] if in_regime else None, view=spec.view, failed_design=spec.failed_design,
                 source=spec.result + (f", {spec.args['loss']}" if "loss" in spec.args else ""),
                 unjudged="; ".join(dict.fromkeys(unjudged)), two_sided=spec.criterion.kind == "differ",
                 finding=finding([m for m, _, _ in found], found[0][1], [g for _, _, g in found], spec.criterion.kind,
                                 spec.view))


FITS = 0.01
"""A run fits its data when its training error at the end is at most this (1%: a handful of digits at the book's
scale; the chapters' figures read the same runs). The book's reading of the "interpolating" networks that Jacot et
al.'s claims are about: the paper prints no training error."""

REGIMES = {"fits": FITS, "zero error": 0.0}
"""The regimes a claim's theory is about, as the largest training error at the end of a run in it: Jacot et al.'s
networks that fit their data (:data:`FITS`), Tirer et al.'s zero training error (Sec. 6)."""


def fits(r: dict, regime: str = "fits") -> np.ndarray:
    """Per run (the leading axes of ``train_error``), whether it is in ``regime`` at the end (:data:`REGIMES`)."""
    return np.asarray(r["train_error"])[..., -1] <= REGIMES[regime]


def in_regime_only(r: dict, name: str, regime: str = "fits") -> dict:
    """The result with metric ``name`` (and the class means' Gram matrices) NaN on every run outside ``regime``."""
    ok, out = fits(r, regime), dict(r)
    for key in {name, "class_mean_cosines"} & set(r):
        v = np.asarray(r[key], dtype=float)
        out[key] = np.where(ok.reshape(ok.shape + (1,) * (v.ndim - ok.ndim)), v, np.nan)
    return out



GIVEN_UP = 1e3
"""A run has given up classes when the condition number of its class means at the last layer is at least this at the
end (two or more class means on one line: NC2's κ of an ETF is 1)."""


def why_outside(error: np.ndarray, kappa: float, regime: str, classes: int = 10) -> str:
    """Why one run is outside ``regime``, from its training error per record and its class means' condition number
    at the last layer at the end: "dead" (it predicts one class), "gave up classes" (κ >= :data:`GIVEN_UP`), "still
    falling" (its error fell by 5% or more over the last fifth of training), "stuck" (none of these); under "zero
    error", a run that fits but keeps a few errors is "not at zero error"."""
    end = float(error[-1])
    if regime == "zero error" and end <= FITS:
        return "not at zero error"
    if end >= 1 - 1 / classes - FITS:
        return "dead"
    if kappa >= GIVEN_UP:
        return "gave up classes"
    if len(error) >= 5 and end <= 0.95 * error[int(0.8 * (len(error) - 1))]:
        return "still falling"
    return "stuck"


def _last_layer_at_end(v: np.ndarray) -> np.ndarray:
    """[..., record, layer] -> [...]: the value at the end at the last layer with one (heads of several depths are
    padded with NaN)."""
    end = np.asarray(v, dtype=float)[..., -1, :]
    last = (~np.isnan(end)).cumsum(-1).argmax(-1)
    return np.take_along_axis(end, last[..., None], -1)[..., 0]


def regime_runs(r: dict, regime: str, loss: str | None = None,
                losses: tuple[str, ...] | None = None) -> tuple[int, int, dict[str, int]]:
    """How many of the result's runs (those of ``loss`` where the result has several) are in ``regime``, of how many,
    and why the others are not (:func:`why_outside`), by reason."""
    err = np.asarray(r["train_error"], dtype=float)
    kappa = (_last_layer_at_end(r["nc2_condition_number"]) if "nc2_condition_number" in r
             else np.zeros(err.shape[:-1]))
    if loss is not None and losses is not None and err.shape[0] == len(losses):
        err, kappa = err[losses.index(loss)], kappa[losses.index(loss)]
    err, kappa = err.reshape(-1, err.shape[-1]), np.broadcast_to(kappa, err.shape[:-1]).ravel()
    ok = err[:, -1] <= REGIMES[regime]
    reasons: dict[str, int] = {}
    for i in np.flatnonzero(~ok):
        why = why_outside(err[i], float(kappa[i]), regime)
        reasons[why] = reasons.get(why, 0) + 1
    return int(ok.sum()), int(ok.size), dict(sorted(reasons.items()))
