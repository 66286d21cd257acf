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

FALSE_CLEAR = 0.05
"""How often "clear" is read where there is no effect: a comparison is clear when its t statistic, over the runs,
passes the two-sided t quantile at this level for its degrees of freedom (:func:`threshold`), the same in either
direction. Under no effect with normal run-to-run noise it reads "clear" (for or against) in 5% of cases at every
number of runs; ``tests/test_claims.py`` measures it on simulated nulls with 2, 3, 5 and 15 runs."""

UNPAIRED_VIEWS = ("head_depths", "nonlinear", "variance_sources")
"""The views whose groups are different networks (heads, or backbones, of different depths, each initialised
afresh; networks trained at different weight decays): Welch's t compares them. Every other view's groups are one
network per run (at two times, layers or classes, or trained from one initialisation under two settings), and its t
reads the paired differences."""

LINEAR_VIEWS = ("h_over_w", "decay_rate", "decay_phases", "after_drop")
"""The views whose values are differences or rates already (|Δ| from the baseline, ln(fall)/λt): compared on a
linear scale. Every other view's metric is a ratio (NC1, a condition number, balancedness, a cosine) whose effect is
a factor, compared on a log scale where all its values are positive."""

NO_EFFECT, NOT_REACHED = "no clear effect", "not reached"
"""The two verdicts besides the three grades: a comparison that is not clear, and a row no run of ours reached the
regime of (not counted)."""

REPRODUCED, PARTLY = 0.9, 0.5
"""Fractions of runs: at least REPRODUCED (with every step clear) is reproduced, at least PARTLY is partly."""


@dataclass(frozen=True)
class Criterion:
    """What a run must show. ``kind``: "down" / "up" (each later group below the earlier divided by ``factor`` /
    above it times ``factor``, and, with ``cap``, within ``cap`` times of it), "flat" (largest over smallest
    group at most ``factor``), "at most" / "at least" (the value against ``factor``), "minor" (two groups whose
    change is not clear (:data:`FALSE_CLEAR`), each run's change within the t prediction interval of the runs'
    changes), "differ" (groups in pairs, each pair's runs different networks: the pair's means differ clearly,
    either way: a two-sided difference, whose negation, no difference, reads "no clear effect", never "not
    reproduced"). ``text``: the criterion in words."""

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
    """:func:`judge`'s reading of a claim's groups: one boolean per run (pair of groups x run); ``direction``:
    not every pair of groups moves clearly (:data:`FALSE_CLEAR`) against the stated way; ``separated``: every
    pair moves clearly its way (None: not a comparison); ``some_clear``: at least one pair does; ``outside``:
    runs without a value (not in the regime); ``margin_runs``: the fewest runs a margin was read from (None: no
    margin)."""

    holds: np.ndarray
    direction: bool
    separated: bool | None
    outside: int = 0
    some_clear: bool = False
    margin_runs: int | None = None
    unjudged: int = 0
    """Steps of the sentence (consecutive groups) that no two runs of the regime could judge, where others could."""


def threshold(df: float) -> float:
    """The t statistic a comparison must pass to be clear (:data:`FALSE_CLEAR`, two-sided): 12.7 with 1 degree of
    freedom (two runs), 4.3 with 2, 2.8 with 4, 2.1 with 14."""
    from scipy.stats import t

    return float(t.ppf(1 - FALSE_CLEAR / 2, df))


def t_statistic(a: np.ndarray, b: np.ndarray, sign: float, paired: bool, log: bool) -> tuple[float, float]:
    """The move of the mean from group ``a`` to ``b`` in the stated direction (``sign``) over its standard error,
    and its degrees of freedom: a paired t on the runs' differences (n - 1), or Welch's t for groups of different
    networks (Welch-Satterthwaite); on a log scale where ``log`` and every value is positive. No spread and a move
    is an infinite t; no move, zero; a move between infinities (dead layers) is undecided: NaN, never clear."""
    if log and np.all(a > 0) and np.all(b > 0):
        a, b = np.log(a), np.log(b)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        move = sign * (np.mean(b) - np.mean(a))
        if paired:
            se, df = np.std(b - a, ddof=1) / np.sqrt(a.size), a.size - 1.0
        else:
            va, vb = np.var(a, ddof=1) / a.size, np.var(b, ddof=1) / b.size
            se = np.sqrt(va + vb)
            df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)) if va + vb > 0 else a.size - 1.0
        t = move / se if se > 0 else (np.sign(move) * np.inf if move != 0 else 0.0)
    return float(t), float(df)


def judge(groups: list[np.ndarray], c: Criterion, paired: bool = True, common: bool = False,
          log: bool = False) -> Judgement:
    """The book's one verdict rule on one metric (module docstring): ``groups`` are arrays over the same runs;
    ``paired``: run i of every group is one network, so the t is the paired differences'; ``common``: a NaN
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
        if d.size < 2:
            return Judgement(np.zeros(d.size, bool), True, None, int((~both).sum()), False, int(d.size))
        t, df = t_statistic(a, b, 1.0, True, False)
        plain = bool(abs(t) >= threshold(df))           # a clear change, either way: not minor
        # each run's change within the range a further run's would fall in with no clear change (the t prediction
        # interval of the runs' changes)
        limit = threshold(df) * np.std(d, ddof=1) * np.sqrt(1 + 1 / d.size)
        return Judgement(np.abs(d) <= limit, not plain, None, int((~both).sum()), False, int(d.size))
    if c.kind == "differ":
        return _differ(g, log)
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
        raise ValueError(f"criterion kind must be 'down', 'up', 'flat', 'minor', 'differ', 'at most' or 'at least', "
                         f"got {c.kind!r}")
    sign = 1.0 if c.kind == "up" else -1.0
    holds: list[np.ndarray] = []
    against, clear, left = 0, 0, 0
    judged: list[int] = []                  # the runs compared at each step that has two or more
    seen: list[int] = []                    # ... at each step that has one or more
    for a, b in zip(g, g[1:]):
        both = ~(np.isnan(a) | np.isnan(b)) if common else np.ones(a.shape, bool)
        ok = b > a * c.factor if c.kind == "up" else b < a / c.factor
        if c.cap is not None:
            ok &= b <= a * c.cap if c.kind == "up" else b >= a / c.cap
        holds.append(ok[both])
        left += int((~both).sum())
        m = int(both.sum())
        if m:
            seen.append(m)
        if m < 2:                           # no spread from one run, no direction from none: a step not judged
            continue
        judged.append(m)
        edge = a[both] / c.factor if c.kind == "down" else a[both] * c.factor      # the criterion's threshold
        t, df = t_statistic(edge, b[both], sign, paired, log)
        clear += int(t >= threshold(df))
        against += int(-t >= threshold(df))
    steps = len(g) - 1
    # symmetric: reproduced needs every step of the sentence clear the paper's way, not reproduced every step clear
    # against it, by the same statistic; a step no run of the regime can judge is neither, and is counted apart
    # (``unjudged``: a row with one cannot reproduce the whole sentence, :attr:`Claim.verdict`)
    separated = clear == len(judged) if judged else None
    fewest = min(judged) if judged else (max(seen) if seen else None)
    return Judgement(np.concatenate(holds), not (judged and against == steps), separated, left, clear > 0, fewest,
                     steps - len(judged) if judged else 0)


def _differ(g: list[np.ndarray], log: bool) -> Judgement:
    """The "differ" criterion: groups in pairs (2i, 2i + 1) of different networks, each pair judged alone by Welch's
    t, two-sided: one boolean per pair judged (its means differ clearly, :data:`FALSE_CLEAR`); a pair without two
    finite values in each group is not judged (``unjudged``). Nothing is against: no difference is no clear effect."""
    if len(g) < 2 or len(g) % 2:
        raise ValueError(f"a 'differ' claim needs groups in pairs; got {len(g)} groups")
    clear, judged, left = [], [], 0
    for a, b in zip(g[::2], g[1::2]):
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        left += int(a.size < 2 or b.size < 2)
        if a.size < 2 or b.size < 2:
            continue
        t, df = t_statistic(a, b, 1.0, False, log)
        clear.append(bool(abs(t) >= threshold(df)))
        judged.append(min(a.size, b.size))
    held = np.array(clear, bool)
    return Judgement(held, True, bool(held.all()) if held.size else None, 0, bool(held.any()),
                     min(judged) if judged else None, left if judged else 0)


def grade(k: int, n: int, direction: bool = True, separated: bool | None = None, some_clear: bool = False,
          two_sided: bool = False) -> str:
    """The verdict of k holding runs of n (module docstring): a clear effect against the paper is not reproduced, a
    comparison clear on no metric is no clear effect, one clear on some metrics partly; a two-sided difference
    ("differ": nothing can be against it) is reproduced where every pair is clear, partly where some are."""
    if not direction or n == 0:
        return "not reproduced"
    if separated is False and not some_clear:
        return NO_EFFECT
    if two_sided:
        return "reproduced" if separated else "partly"
    if k >= REPRODUCED * n:
        return "partly" if separated is False else "reproduced"
    return "partly" if k >= PARTLY * n else "not reproduced"
