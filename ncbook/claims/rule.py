"""The verdict rule (chapter 8, "The verdict rule"): a claim's criterion, its specification as data, and
:func:`judge` and :func:`grade`, which read every claim of both papers the same way."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

PAPER_METRICS = {
    "Jacot": {"NC1": "nc1_trace_ratio", "NC2": "nc2_condition_number", "balancedness": "balancedness",
              "negativity": "negativity", "error": "train_error", "Gram": "class_mean_cosines"},
    "Tirer": {"NC1": "nc1_pinv", "gNC1": "nc1_trace_ratio", "NC2": "nc2_etf_distance", "NC3": "nc3_etf_distance",
              "NC1(k)": "nc1_per_class", "error": "train_error"},
}
"""Each paper's metrics by the names its sentences use: Jacot et al. Sec. 6 (NC1 = tr Σ_W / tr Σ_B, NC2 = the
condition number of the class-mean matrix), Tirer et al. Sec. 6 (NC1 = tr(Σ_W Σ_B^+)/K, NC2 = the distance of the
centred class means' Gram matrix from the simplex ETF's, NC3 likewise for the classifier); a row measured with the
other paper's definition is a different claim."""

MARGIN = 2.0
"""A comparison's effect must reach MARGIN times its SD over runs: of the paired differences, or for unpaired groups
the larger group SD."""

UNPAIRED_VIEWS = ("head_depths", "nonlinear")
"""The views whose groups are different networks (heads, or backbones, of different depths, each initialised
afresh): their margin compares group SDs. Every other view's groups are one network per run (at two times, layers
or classes, or trained from one initialisation under two settings), and its margin reads paired differences."""

LINEAR_VIEWS = ("h_over_w", "decay_rate", "decay_phases", "after_drop")
"""The views whose values are differences or rates already (|Δ| from the baseline, ln(fall)/λt): compared on a
linear scale. Every other view's metric is a ratio (NC1, a condition number, balancedness, a cosine) whose effect is
a factor, compared on a log scale where all its values are positive."""

NO_EFFECT, NOT_REACHED = "no clear effect", "not reached"
"""The two verdicts besides the three grades: a comparison within the margin, and a row no run of ours reached the
regime of (not counted)."""

REPRODUCED, PARTLY = 0.9, 0.5
"""Fractions of runs: at least REPRODUCED (with the margin) is reproduced, at least PARTLY is partly."""


@dataclass(frozen=True)
class Criterion:
    """What a run must show. ``kind``: "down" / "up" (each later group below the earlier divided by ``factor`` /
    above it times ``factor``, and, with ``cap``, within ``cap`` times of it), "flat" (largest over smallest group at
    most ``factor``), "at most" / "at least" (the value against ``factor``), "minor" (two groups whose change is
    within the margin: each run's change at most :data:`MARGIN` SDs of the runs' changes, and the mean change no
    clear effect). ``text``: the criterion in words."""

    kind: str
    factor: float = 1.0
    cap: float | None = None
    text: str = ""

    @property
    def comparative(self) -> bool:
        return self.kind in ("down", "up")


@dataclass(frozen=True)
class Spec:
    """One claim of a paper as data: where it is made, the paper's sentence, our reading of it, the metrics the
    sentence names (keys of :data:`PAPER_METRICS` for ``paper``), the result and how its runs are grouped (``view``
    names a function of :data:`VIEWS`, ``args`` its arguments), what the runs are, and the criterion.
    ``precondition``: a condition the paper implies rather than claims (reported beside the claims, not counted).
    ``regime``: the regime the claim's theory is about (a key of :data:`REGIMES`; "" for every run): judged on the
    runs in it. ``exists``: the sentence is existential ("sometimes ... can"): one metric with a clear case is
    enough."""

    paper: str
    where: str
    sentence: str
    claim: str
    metrics: tuple[str, ...]
    result: str
    view: str
    criterion: Criterion
    runs: str
    args: dict = field(default_factory=dict)
    precondition: bool = False
    regime: str = ""
    exists: bool = False
    failed_design: str = ""
    """Where the runs are a design of ours that cannot reach the regime (why): shown, never judged or counted."""


@dataclass(frozen=True)
class Judgement:
    """:func:`judge`'s reading of a claim's groups: one boolean per run (pair of groups x run); ``direction``: no pair
    of group means moves clearly (by the margin) against the stated way; ``separated``: every pair moves clearly its
    way (None: not a comparison); ``some_clear``: at least one pair does; ``outside``: runs without a value (not in
    the regime); ``margin_runs``: the fewest runs a margin was read from (None: no margin)."""

    holds: np.ndarray
    direction: bool
    separated: bool | None
    outside: int = 0
    some_clear: bool = False
    margin_runs: int | None = None


def _effect(a: np.ndarray, b: np.ndarray, sign: float, paired: bool, log: bool) -> tuple[float, float]:
    """The move of the mean from group ``a`` to ``b`` in the stated direction (``sign``) and the margin it is read
    against: :data:`MARGIN` times the SD of the paired differences, or the larger group SD; on a log scale where
    ``log`` and every value is positive."""
    if log and np.all(a > 0) and np.all(b > 0):
        a, b = np.log(a), np.log(b)
    with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():    # inf - inf (dead layers):
        warnings.simplefilter("ignore", RuntimeWarning)                                 # undecided, so not clear
        move = sign * (np.nanmean(b) - np.nanmean(a))
        spread = MARGIN * (np.nanstd(b - a) if paired else max(np.nanstd(a), np.nanstd(b)))
    return float(move), float(spread)


def judge(groups: list[np.ndarray], c: Criterion, paired: bool = True, common: bool = False,
          log: bool = False) -> Judgement:
    """The book's one verdict rule on one metric (module docstring): ``groups`` are arrays over the same runs;
    ``paired``: run i of every group is one network, so the margin reads the paired differences; ``common``: a NaN
    is a run without a value (a network outside the regime): a run of a comparison is judged where both groups have
    a value, of "flat" where two or more have, of a level where it has one; the others are counted as outside;
    ``log``: a ratio metric, its effect read on a log scale."""
    g = [np.asarray(x, dtype=float).ravel() for x in groups]
    if c.kind == "minor":
        if len(g) != 2 or g[0].size != g[1].size or g[0].size < 2:
            raise ValueError(f"a 'minor' claim needs two groups of the same runs, two or more; got sizes "
                             f"{[x.size for x in g]}")
        both = ~(np.isnan(g[0]) | np.isnan(g[1])) if common else np.ones(g[0].shape, bool)
        a, b = g[0][both], g[1][both]
        if log and np.all(a > 0) and np.all(b > 0):
            a, b = np.log(a), np.log(b)
        d = b - a
        limit = MARGIN * np.std(d) if d.size >= 2 else np.nan
        plain = bool(abs(np.mean(d)) >= limit) if d.size >= 2 else False
        return Judgement(np.abs(d) <= limit, not plain, None, int((~both).sum()), False, int(d.size))
    if not g or (c.kind not in ("at most", "at least") and (len(g) < 2 or len({x.size for x in g}) > 1)):
        raise ValueError(f"a '{c.kind}' claim needs {'a group' if c.kind.startswith('at') else 'two or more groups'}"
                         f" of runs, the same runs in each; got sizes {[x.size for x in g]}")
    if c.kind in ("at most", "at least"):
        v = np.concatenate(g)
        held = v <= c.factor if c.kind == "at most" else v >= c.factor
        keep = ~np.isnan(v) if common else np.ones(v.shape, bool)
        return Judgement(held[keep], True, None, int((~keep).sum()))
    if c.kind == "flat":
        v = np.stack(g)
        if common:
            keep = (~np.isnan(v)).sum(0) >= 2
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                held = np.nanmax(v, 0) <= c.factor * np.nanmin(v, 0)
            return Judgement(held[keep], True, None, int((~keep).sum()))
        return Judgement(np.max(v, 0) <= c.factor * np.min(v, 0), True, None)      # a NaN (dead layer) fails
    if c.kind not in ("down", "up"):
        raise ValueError(f"criterion kind must be 'down', 'up', 'flat', 'minor', 'at most' or 'at least', got "
                         f"{c.kind!r}")
    sign = 1.0 if c.kind == "up" else -1.0
    holds: list[np.ndarray] = []
    against, clear, pairs, left = False, 0, 0, 0
    fewest: int | None = None
    for a, b in zip(g, g[1:]):
        both = ~(np.isnan(a) | np.isnan(b)) if common else np.ones(a.shape, bool)
        ok = b > a * c.factor if c.kind == "up" else b < a / c.factor
        if c.cap is not None:
            ok &= b <= a * c.cap if c.kind == "up" else b >= a / c.cap
        holds.append(ok[both])
        left += int((~both).sum())
        m = int(both.sum())
        if m == 0:                          # no run to compare: these two groups say nothing of the direction
            continue
        fewest = m if fewest is None else min(fewest, m)
        pairs += 1
        if m < 2:                           # no margin from one run
            continue
        edge = a[both] / c.factor if c.kind == "down" else a[both] * c.factor      # the criterion's threshold
        move, spread = _effect(edge, b[both], sign, paired, log)
        against |= bool(-move >= spread and move < 0)
        clear += int(move >= spread and move > 0)
    separated = None if fewest is None or fewest < 2 else clear == pairs
    return Judgement(np.concatenate(holds), not against, separated, left, clear > 0, fewest)


def grade(k: int, n: int, direction: bool = True, separated: bool | None = None, some_clear: bool = False) -> str:
    """The verdict of k holding runs of n (module docstring): a clear effect against the paper is not reproduced, a
    comparison within the margin on every metric is no clear effect, one clear on some metrics partly."""
    if not direction or n == 0:
        return "not reproduced"
    if separated is False and not some_clear:
        return NO_EFFECT
    if k >= REPRODUCED * n:
        return "partly" if separated is False else "reproduced"
    return "partly" if k >= PARTLY * n else "not reproduced"
