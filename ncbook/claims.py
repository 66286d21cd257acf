"""Part IV's verdicts: every quantitative claim of both papers' experiment sections as data (one :class:`Spec` per
claim: the paper's sentence, the metric in that paper's own definition, the runs it is counted on, the criterion),
and the book's one verdict rule, :func:`judge`, that reads them all.

The rule (stated in chapter 8, section "The verdict rule"):

- a run *holds* when it shows the paper's direction with the criterion's effect (a claim that compares settings,
  depths, layers or times compares each run with itself, consecutive groups pairwise), or, for a claim of a level,
  when its value is within the criterion's bound; a qualifier of the paper ("slightly", "rapidly", "significant") is
  a stated bound in the criterion, and "minor" is an effect within the margin below;
- a comparison's effect is *clear* when the group means move past the criterion's threshold (the earlier group, times
  or divided by its factor) by at least :data:`MARGIN` standard deviations: of the
  runs' paired differences where each run is compared with itself (one network at two times, layers or settings
  from one initialisation), the larger group SD where the groups are different networks (heads or backbones of
  different depths: :data:`UNPAIRED_VIEWS`); on a log scale where the metric is a ratio (every view but
  :data:`LINEAR_VIEWS`, where all its values are positive). The rule is symmetric: **not reproduced** needs a clear
  effect against the paper's direction, **reproduced** a clear effect its way; an effect within the margin is **no
  clear effect**, whatever the runs; no margin is read from fewer than 2 runs;
- otherwise, with k of n runs holding: **reproduced** when k/n >= :data:`REPRODUCED` (and, for a comparison, its
  effect is clear the paper's way on every metric the sentence names); **partly** when k/n >= :data:`PARTLY`, or
  when a comparison is clear on some metrics or steps and within the margin on others; **not reproduced** below
  PARTLY;
- a row is judged only on the runs in the regime its theory is about (:data:`REGIMES`): Jacot et al.'s claims on
  networks that fit their data (training error at most :data:`FITS` at the end), except those that hold whatever
  the loss (the e^{-2λt} balancing of linear layers) or are purely empirical (Fig. 3); Tirer et al.'s weight-decay
  ablation on runs at zero training error (their Sec. 6: "as long as entering the zero training error phase ... is
  maintained"). Every row says on how many runs it was judged and why the others were left out (:func:`why_outside`:
  still falling, classes given up, dead, not at zero error); a row with no run in the regime, or too few for a
  margin, is **not reached** by the reproduction, and is not counted.
"""

from __future__ import annotations

import html
import re
import textwrap
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .compare import WRAP, layer_index, layer_names, layers_of, relu_pairs
from .registry import get_experiment
from .reproduce import ABLATIONS
from .scaling import assumptions_text, decay_time_at, governing_text

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


@dataclass(frozen=True)
class Claim:
    """One row of a claims table: ``holds`` has one boolean per run judged (every seed, setting, depth... in the
    regime), ``direction`` whether no group mean moves clearly against the paper's way, ``separated`` whether they
    clear the margin its way (None: not a comparison); ``paper`` the paper's sentence, ``metric`` the paper's metric
    it is measured with, ``criterion`` what a run must show, ``numbers`` ours, ``governing`` the quantities that govern
    it, ours and the paper's, with the paper's settings we assume (:mod:`ncbook.scaling`); ``ledger``: on how many of
    the result's runs it was judged, and why the others are outside the regime (:func:`ledger`)."""

    where: str
    claim: str
    holds: np.ndarray
    runs: str
    numbers: str
    separated: bool | None = None
    paper: str = ""
    governing: str = ""
    metric: str = ""
    criterion: str = ""
    direction: bool = True
    precondition: bool = False
    outside: int = 0
    """Runs (pairs of runs, for a comparison) left out because a network they read is outside the regime."""
    some_clear: bool = False
    margin_runs: int | None = None
    ledger: str = ""
    in_regime: tuple[int, int] | None = None
    """m of n of the result's runs in the regime the row is judged on (None: every run)."""
    view: str = ""
    """How the row groups its runs (a key of :data:`VIEWS`)."""
    failed_design: str = ""
    """Why the runs are a failed design of ours (:attr:`Spec.failed_design`): the row is not reached."""
    source: str = ""
    """The runs the row reads: its result (and loss, where the result has several)."""

    @property
    def reached(self) -> bool:
        """Whether some run reached the regime, and, for a comparison, at least 2 (a margin needs 2), in a design
        that can reach it."""
        if self.failed_design or (np.size(self.holds) == 0 and self.outside):
            return False
        return self.margin_runs is None or self.margin_runs >= 2

    @property
    def verdict(self) -> str:
        """The rule's grade; for a precondition, whether it is met (by the same rule); "not reached" where no run
        (or one only, for a comparison) is in the regime."""
        if not self.reached:
            return NOT_REACHED
        grade_ = grade(int(np.sum(self.holds)), int(np.size(self.holds)), self.direction, self.separated,
                       self.some_clear)
        return PRECONDITION_GRADES.get(grade_, grade_) if self.precondition else grade_

    @property
    def count(self) -> str:
        """k of n runs, and why a comparison that holds in most runs is not reproduced, if it is not; where the
        reproduction did not reach the regime, that and why."""
        if self.failed_design:
            return f"a failed design of ours: {self.failed_design}" + (f"; {self.ledger}" if self.ledger else "")
        if not self.reached:
            few = (f"; {self.margin_runs} run in the regime, a margin needs 2"
                   if self.margin_runs is not None and self.margin_runs < 2 else "")
            return f"the reproduction did not reach the regime: {self.ledger or 'no run in it'}{few}"
        why = ("; a clear effect against the claim" if not self.direction else
               f"; effect within {MARGIN:g} SDs" if self.separated is False else "")
        left = f"; {self.ledger}" if self.ledger else ""
        return f"{int(np.sum(self.holds))} of {np.size(self.holds)} {self.runs}{why}{left}"

    @property
    def why(self) -> str:
        """Why the row has its verdict, in at most 12 words (the glance table's "why" column)."""
        k, n = int(np.sum(self.holds)), int(np.size(self.holds))
        if self.failed_design:
            return "a design of ours that cannot reach the regime: never judged"
        if not self.reached:
            if self.margin_runs is not None and 0 < self.margin_runs < 2:
                return f"only {self.margin_runs} run to compare in the regime; a margin needs 2"
            found = re.search(r"of (\d+) runs (that fit|at zero error)", self.ledger)
            if self.in_regime and self.in_regime[0] > 0:
                return f"{self.in_regime[0]} of {self.in_regime[1]} in the regime, but none in every setting compared"
            if found:
                reached = "fit their data" if found.group(2) == "that fit" else "reached zero training error"
                return f"none of our {found.group(1)} runs {reached}"
            return "no run of ours reached the regime"
        if self.precondition:
            return f"{k} of {n} runs " + ("fit their data" if "fit" in self.claim else
                                          "reach zero training error" if "zero training error" in self.claim else
                                          "meet it")
        verdict = self.verdict
        if verdict == NO_EFFECT:
            return f"every effect within {MARGIN:g} SDs of the run-to-run spread"
        if verdict == "not reproduced":
            return ("a clear effect against the claim, beyond the margin" if not self.direction else
                    f"holds in {k} of {n} runs, under half")
        runs = "every run" if k == n else f"{k} of {n} runs"
        clear = {True: f", clear by {MARGIN:g} SDs", False: f"; within {MARGIN:g} SDs on a metric",
                 None: ""}[self.separated]
        if verdict == "partly" and k < REPRODUCED * n:
            return f"holds in {k} of {n} runs, under the 90% needed"
        return f"holds in {runs}{clear}"

    def dots(self) -> str:
        """The runs as a picture: an inline SVG with a dot per judged run (filled where the claim holds, hollow
        where it does not) and a small grey one per run left outside the regime."""
        holds = np.asarray(self.holds, bool).ravel()
        kinds = ["holds" if h else "fails" for h in holds] + ["outside"] * int(self.outside)
        if not kinds:
            return ""
        per_row, pitch = 24, 7
        rows = -(-len(kinds) // per_row)
        circles = "".join(
            f"<circle class='dot-{kind}' cx='{pitch * (i % per_row) + 4}' cy='{pitch * (i // per_row) + 4}' "
            f"r='{2 if kind == 'outside' else 3}'/>" for i, kind in enumerate(kinds))
        label = (f"{int(holds.sum())} of {holds.size} runs hold" +
                 (f", {self.outside} outside the regime" if self.outside else ""))
        return (f"<svg class='claim-dots' width='{pitch * min(len(kinds), per_row) + 1}' height='{pitch * rows + 1}' "
                f"role='img' aria-label='{label}'><title>{label}</title>{circles}</svg>")

    def __str__(self) -> str:
        fill = lambda text: textwrap.fill(text, WRAP, initial_indent="    ", subsequent_indent="    ")  # noqa: E731
        lines = [textwrap.fill(f"[{self.where}] {self.claim}", WRAP, subsequent_indent="  ")]
        lines += [fill(f"paper: {self.paper}")] if self.paper else []
        lines += [fill(f"metric: {self.metric}; criterion: {self.criterion}")]
        lines += [fill(f"{self.verdict.upper()}: holds in {self.count}; ours: {self.numbers}")]
        lines += [fill(f"governing, ours (paper): {self.governing}")] if self.governing else []
        return "\n".join(lines)


@dataclass(frozen=True)
class NotRun:
    """A claim of a paper that no run of the book tests, and why: listed under its claims table, counted apart from
    the verdicts."""

    paper: str
    where: str
    claim: str
    reason: str


CIFAR = "not run: CIFAR-10 is not present (no network at run time; the book's data are MNIST-5k and the digits)"

LAYERWISE = ("not run: the book's layer-wise runs use the paper's final recipe only (Adam, CE, 3 epochs per layer); "
             "the comparison needs runs with SGD, MSE or more epochs per layer")

NOT_RUN = (
    NotRun("Jacot", "Fig. 1 on CIFAR-10", "every claim of Fig. 1 for ResNet20 with 3 ReLU and 3 linear layers on "
           "CIFAR-10 (the Fig. 1 rows above run a depth-8 ResNet on MNIST-5k)", CIFAR),
    NotRun("Jacot", "Fig. 2 right on CIFAR-10", "the head-depth claims for ResNet20 on CIFAR-10 (the ResNet sweep "
           "above runs MNIST-5k, the data of Fig. 5)", CIFAR),
    NotRun("Tirer", "Fig. 2 on CIFAR-10", "NC1 and gNC1 decrease as the layers of a 3072-wide MLP on CIFAR-10 are "
           "added and trained one at a time (the Fig. 2 row above runs MNIST-5k)", CIFAR),
    NotRun("Tirer", "Fig. 3 on CIFAR-10", "for ResNet18 on CIFAR-10, with MSE and with CE, changing the feature "
           "layers' weight decay moves NC1 and NC2 further than changing the last layer's (the rows above run an MLP "
           "on MNIST-5k, the data of Fig. 5)", CIFAR),
    NotRun("Jacot", "Fig. 1", "\"plateaus at a rather small value (due to the large learning rate)\": the plateau's "
           "level set by the learning rate", "not run: the Fig. 1 and 4 runs use one learning rate; the cause needs "
           "runs at two"),
    NotRun("Tirer", "App. E.1", "\"Adam optimizer worked better than SGD\" for layer-wise training", LAYERWISE),
    NotRun("Tirer", "App. E.1", "\"Layer-wise minimization with CE loss (rather than MSE loss) has led to lower NC1 "
           "metrics\"", LAYERWISE),
    NotRun("Tirer", "App. E.1", "\"Using no more than 3 epochs per outer iteration allowed reaching lower values for "
           "the loss and the NC1 metrics at the deeper layers\"", LAYERWISE),
    NotRun("Tirer", "Table 1, CIFAR-10 columns", "NC1 and NC2 of ResNet18 on CIFAR-10 under each weight-decay change, "
           "MSE and CE, and their directions", CIFAR),
)
"""Every claim of the papers that no run tests: those on CIFAR-10, and those that need runs the book has not made."""


def not_run(paper: str) -> tuple[NotRun, ...]:
    """``paper``'s claims that no run tests (:data:`NOT_RUN`)."""
    return tuple(n for n in NOT_RUN if n.paper == paper)


PRECONDITION_GRADES = {"reproduced": "met", "partly": "partly met", "not reproduced": "not met"}
"""A precondition's grade in words (by the same rule as a claim's)."""


def verdict_class(verdict: str) -> str:
    """The CSS class suffix that colours a verdict on the page (a precondition's "met" as "reproduced", ...)."""
    return {v: k for k, v in PRECONDITION_GRADES.items()}.get(verdict, verdict).replace(" ", "-")


def counted(claims: list[Claim]) -> list[Claim]:
    """The claims proper, without the preconditions (which are reported beside them, never counted)."""
    return [c for c in claims if not c.precondition]


@dataclass(frozen=True)
class ClaimRows:
    """One claim of a paper (one sentence) with the rows that test it: its figures, losses, sizes or sweeps. Its
    verdict from its rows: **reproduced** when every row is, **not reproduced** when none is reproduced or partly,
    else **partly** (for a precondition: met, not met, partly met)."""

    sentence: str
    rows: tuple[Claim, ...]

    @property
    def precondition(self) -> bool:
        return all(r.precondition for r in self.rows)

    @property
    def verdict(self) -> str:
        found = {r.verdict for r in self.rows} - {NOT_REACHED}
        if not found:
            return NOT_REACHED
        words = PRECONDITION_GRADES if self.precondition else {v: v for v in PRECONDITION_GRADES}
        if found == {words["reproduced"]}:
            return words["reproduced"]
        if found <= {words["not reproduced"], NO_EFFECT}:
            return words["not reproduced"] if words["not reproduced"] in found else NO_EFFECT
        return words["partly"]


def by_claim(rows: list[Claim]) -> list[ClaimRows]:
    """The rows grouped by the paper's sentence they test (one claim each), in the order of their first row."""
    groups: dict[str, list[Claim]] = {}
    for r in rows:
        groups.setdefault(r.paper, []).append(r)
    return [ClaimRows(sentence, tuple(rs)) for sentence, rs in groups.items()]


VERDICTS = ("reproduced", "partly", "not reproduced", NO_EFFECT)
"""The verdicts a counted claim can have (a row not reached is counted apart)."""


def verdict_counts(claims: list[Claim]) -> str:
    """How many claims (sentences, :func:`by_claim`) are reproduced, partly, not reproduced, of no clear effect, of
    how many, in how many rows; the rows and claims the reproduction did not reach, not counted; then the
    preconditions, apart and never counted."""
    grouped = by_claim(claims)
    unreached = [g for g in grouped if not g.precondition and g.verdict == NOT_REACHED]
    proper = [g for g in grouped if not g.precondition and g.verdict != NOT_REACHED]
    counts = {v: sum(g.verdict == v for g in proper) for v in VERDICTS}
    n_rows = sum(c.verdict != NOT_REACHED for c in counted(claims))
    out = ", ".join(f"{n} {v}" for v, n in counts.items() if n or v != NO_EFFECT)
    out += f" of {len(proper)} claim{'s' * (len(proper) != 1)}"
    out += f" in {n_rows} rows" if n_rows != len(proper) else ""
    u_rows = sum(c.verdict == NOT_REACHED for c in counted(claims))
    if u_rows:
        out += f"; {u_rows} row{'s' * (u_rows != 1)} not reached by the reproduction, not counted"
    if unreached:
        out += f" ({len(unreached)} claim{'s' * (len(unreached) != 1)} with no row reached)"
    pre = [g for g in grouped if g.precondition]
    if pre:
        met = {v: sum(g.verdict == v for g in pre) for v in PRECONDITION_GRADES.values()}
        out += (f"; {len(pre)} precondition{'s' * (len(pre) != 1)}, not counted: "
                + ", ".join(f"{n} {v}" for v, n in met.items() if n))
    return out


def regime_line(claims: list[Claim]) -> str:
    """The ledger of a table in one line: for each set of runs that rows read in a regime, m of n runs in it, named by
    the first figure that reads them, and for Tirer et al.'s ablation how near collapse they are: "; runs in the
    regime: Fig. 4, MLP 2 of 3, ..., Figs. 3, 5, Table 1, CE 15 of 15 (NC1 86x)" (times Table 1's)."""
    seen: dict[str, tuple[str, tuple[int, int], str]] = {}
    for c in claims:
        if c.in_regime and not c.failed_design:
            level = c.ledger.partition("; NC1 ")[2].removesuffix(" Table 1's")    # Tirer et al.'s: how near
            seen.setdefault(c.source, (c.where, c.in_regime, f" (NC1 {level})" if level else ""))      # collapse
    return ("; runs in the regime: " + ", ".join(f"{w} {m} of {n}{x}" for w, (m, n), x in seen.values())
            if seen else "")


def figure_of(where: str) -> str:
    """The paper's figure or table a row is about: "Fig. 2 right / 5, ResNet" -> "Fig. 2", "Figs. 3, 5, Table 1, MSE"
    -> "Fig. 3", "Table 1, CE" -> "Table 1", "App. E.1" -> "App. E.1"."""
    m = re.match(r"(Figs?\.|Table|Sec\.|App\.)\s*([\w.]+)", where)
    if m is None:
        return where
    kind = {"Figs.": "Fig.", "Fig.": "Fig."}.get(m.group(1), m.group(1))
    return f"{kind} {m.group(2).rstrip(',')}"


def figure_verdicts(claims: list[Claim]) -> dict[str, str]:
    """Each figure's (or table's) verdict from its counted rows that the reproduction reached, as a claim's from its
    rows (:class:`ClaimRows`): reproduced when every row is, not reproduced when none is reproduced or partly, else
    partly. The verdict sentences of the front page and the results index are held to these by a test."""
    rows: dict[str, list[Claim]] = {}
    for c in counted(claims):
        if c.verdict != NOT_REACHED:
            rows.setdefault(figure_of(c.where), []).append(c)
    return {f: ClaimRows(f, tuple(rs)).verdict for f, rs in rows.items()}


def format_by_claim(claims: list[Claim]) -> str:
    """Each claim once (its sentence and verdict), its rows under it (where, verdict, k of n), as text."""
    lines = []
    for g in by_claim(claims):
        head = "PRECONDITION, " if g.precondition else ""
        lines.append(textwrap.fill(f"{head}{g.verdict.upper()}: {g.sentence}", WRAP, subsequent_indent="  "))
        lines += [textwrap.fill(f"[{c.where}] {c.claim}: {c.verdict}, {c.count}", WRAP, initial_indent="    ",
                                subsequent_indent="      ") for c in g.rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class ClaimSummary:
    """Each claim once with its verdict and its rows under it: :func:`format_by_claim`'s text where there is no page,
    an HTML table on the page (the verdicts coloured, the rows as a list that wraps at any width)."""

    claims: list[Claim]

    def __repr__(self) -> str:
        return format_by_claim(self.claims)

    def _repr_html_(self) -> str:
        e = html.escape

        css = verdict_class
        body = ""
        for g in by_claim(self.claims):
            items = "".join(f"<li><i>{e(c.where)}</i>, {e(c.claim)}: <span class='verdict-{css(c.verdict)}'>"
                            f"<b>{e(c.verdict)}</b></span>, {e(c.count)}</li>" for c in g.rows)
            head = "precondition, not counted: " if g.precondition else ""
            body += (f"<tr><td class='verdict-{css(g.verdict)}'><b>{e(g.verdict)}</b></td><td>{e(head + g.sentence)}"
                     f"<ul class='claim-rows'>{items}</ul></td></tr>")
        return (f"<table class='ncbook-claims-summary'><thead><tr><th>verdict</th><th>the paper's claim, "
                f"and the rows that test it</th></tr></thead><tbody>{body}</tbody></table>")


def format_claims(claims: list[Claim]) -> str:
    """A claims table as text, one claim per paragraph, the count of each verdict and the runs in the regime."""
    return "\n".join(map(str, claims)) + "\n" + verdict_counts(claims) + regime_line(claims)


PAPER_URLS = {"Jacot": "https://arxiv.org/abs/2410.04887", "Tirer": "https://arxiv.org/abs/2210.16658"}
"""Where each paper is (its figures are in it)."""

FIGURE_ANCHORS = {("Jacot", "Fig. 4"): "fig-jacot-fig4", ("Jacot", "Fig. 1"): "fig-jacot-fig1-resnet",
                  ("Jacot", "Fig. 2"): "fig-jacot-fig2", ("Jacot", "Fig. 3"): "fig-jacot-fig3",
                  ("Tirer", "Fig. 2"): "fig-tirer-fig2", ("Tirer", "Fig. 3"): "fig-tirer-fig3",
                  ("Tirer", "Fig. 4"): "fig-tirer-fig4", ("Tirer", "Fig. 6"): "fig-tirer-fig6",
                  ("Tirer", "Table 1"): "fig-tirer-fig3", ("Tirer", "Fig. 5"): "fig-tirer-fig3"}
"""Each paper's figure (as :func:`figure_of` names it) and the id of the chapter's figure that reproduces it: the
claims table links each group of rows to ours and to the paper."""


@dataclass(frozen=True)
class ClaimsTable:
    """Claims side by side: an HTML table (claim and metric, the paper, the criterion, ours, governing quantities,
    verdict with k of n) in a notebook and the rendered book, :func:`format_claims`'s text elsewhere."""

    claims: list[Claim]
    title: str = ""
    beside: dict[str, dict[tuple[str, str], Claim]] = field(default_factory=dict)
    """Other scales' verdicts of the same claims (:func:`claims_at`): in the text a line "at gpu: ..." under every
    claim ("not run" where that scale has no result); on the page a line under the shown verdict where it was run,
    and in the caption how many rows it ran and did not (a third column would make every claim wrap once more)."""
    scale: str = ""
    not_run: tuple[NotRun, ...] = ()
    """Claims of the paper that no run tests (:func:`not_run`): listed last, counted apart."""

    def _other(self, scale: str, c: Claim, numbers: bool = False) -> str:
        o = self.beside[scale].get((c.where, c.claim))
        if o is None:
            return "not run"
        return f"{o.verdict}: {o.count}" + (f"; ours: {o.numbers}; governing: {o.governing}" if numbers else "")

    def _unmatched(self) -> list[tuple[str, Claim]]:
        """Claims of another scale with no row of this one (the same sentence read on another configuration)."""
        have = {(c.where, c.claim) for c in self.claims}
        return [(s, o) for s, by in self.beside.items() for key, o in by.items() if key not in have]

    def __repr__(self) -> str:
        lines = [f"--- {self.title} ---"] if self.title else []
        for c in self.claims:
            lines += [str(c)] + [textwrap.fill(f"at {s}: {self._other(s, c, numbers=True)}", WRAP,
                                               initial_indent="    ", subsequent_indent="    ") for s in self.beside]
        lines += [f"only at {s}: {o}" for s, o in self._unmatched()]
        lines += [textwrap.fill(f"[{n.where}] {n.claim}: {n.reason}", WRAP, subsequent_indent="  ")
                  for n in self.not_run]
        return "\n".join(lines + [self._counts()])

    def _counts(self) -> str:
        out = (f"{self.scale}: " if self.beside and self.scale else "") + verdict_counts(self.claims)
        for s, by in self.beside.items():
            left = len(self.claims) - sum((c.where, c.claim) in by for c in self.claims)
            ran = dict.fromkeys(GOVERNS[o.source.split(",")[0]][0] for o in by.values()
                                if o.source.split(",")[0] in GOVERNS)
            made = "; ".join(f"{exp}: " + ", made on ".join(what_ran(exp, s)) for exp in ran)
            out += (f"; {s}: {verdict_counts(list(by.values()))} run there (shown under the {self.scale} verdict"
                    f"{'; ' + made if made else ''}), {left} row{'s' * (left != 1)} not run")
        if self.not_run:
            out += f"; {len(self.not_run)} claim{'s' * (len(self.not_run) != 1)} not run, listed below"
        return out + regime_line(self.claims)

    HEADS = ("the paper's claim, by figure", "why", "verdict: runs in which it holds")
    DETAIL_HEADS = ("where", "the paper's words, and the metric", "what each run must show",
                    "our numbers: each run's value, or mean ± SD (min to max) over more than six runs",
                    "the quantities that govern it, ours (the paper's)")

    def _repr_html_(self) -> str:
        """The claims at a glance (grouped by figure: claim, verdict), then each claim in full in a second table,
        folded."""
        e = html.escape

        def row(heads, values, verdicts=()):
            """A row; ``verdicts``: the verdict coloring each column from the second on ("" for none)."""
            colour = dict(enumerate(verdicts, start=1))
            return "<tr>" + "".join(
                f"<td data-label='{h}'" + (f" class='verdict-{colour[i]}'" if colour.get(i) else "")
                + f">{x}</td>" for i, (h, x) in enumerate(zip(heads, values))) + "</tr>"

        css = verdict_class

        def head(heads):
            return "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead>"

        def elsewhere(scale: str, o: Claim) -> str:
            """Another scale's verdict, on a line of its own under the shown one (only where it was run)."""
            return (f"<br><span class='claim-scale verdict-{css(o.verdict)}'>at {e(scale)}: <b>{e(o.verdict)}</b>, "
                    f"{e(o.count)}</span>")

        def shared(where: str) -> str:
            """The ledger every row of a figure that reads a regime shares ("" if they differ): said once, in the
            figure's heading."""
            found = {c.ledger for c in self.claims if c.where == where and not c.precondition and c.in_regime}
            return found.pop() if len(found) == 1 else ""

        def glance(c: Claim) -> str:
            """The verdict with k of n judged runs, and on how many of the result's runs where the heading does not
            say it; where the reproduction did not reach the regime, that and why."""
            if c.failed_design:
                return "<b>not reached</b>: failed design"
            ledger = c.ledger if c.ledger != shared(c.where) else ""
            if c.verdict == NOT_REACHED:
                few = (f"; {c.margin_runs} run in the regime, a margin needs 2"
                       if c.margin_runs is not None and c.margin_runs < 2 else "")
                return f"<b>not reached</b>{e(': ' + ledger if ledger else '')}{e(few)}"
            ledger = f"<br><span class='claim-ledger'>{e(ledger)}</span>" if ledger else ""
            return (f"<b>{e(c.verdict)}</b>, <span title='{e(c.runs)}'>{int(np.sum(c.holds))} of "
                    f"{np.size(c.holds)}</span> {c.dots()}{ledger}")

        def in_heading(c: Claim) -> bool:
            """A precondition no other scale ran goes in its figure's heading: the rows below read its runs."""
            return c.precondition and not any(self.beside[s].get((c.where, c.claim)) for s in self.beside)

        def unreached(where: str) -> bool:
            """A figure none of whose rows the reproduction reached, at any scale shown, for one reason (the
            heading's ledger): its heading says so once, and its rows are only in the full table."""
            rows = [c for c in self.claims if c.where == where and not c.precondition]
            return (bool(rows) and bool(shared(where)) and all(c.verdict == NOT_REACHED and not c.failed_design
                                                               for c in rows)
                    and not any(self.beside[s].get((c.where, c.claim)) for s in self.beside for c in rows))

        pres = [c for c in self.claims if in_heading(c) and not c.failed_design]

        def first_of(c: Claim) -> Claim | None:
            """The row whose heading also says precondition ``c``: the same sentence at the same place read on other
            runs ("Sec. 6, 512 wide" under "Sec. 6"); None for a row of its own."""
            return next((f for f in pres if f is not c and f.paper == c.paper
                         and c.where.startswith(f.where + ", ")), None) if any(c is f for f in pres) else None

        def joined(c: Claim) -> bool:
            return first_of(c) is not None

        def others(first: Claim) -> str:
            """The same precondition on the other runs, in its first row's heading ("; 512 wide: partly met, 9 of
            15")."""
            return "".join(f"; {e(o.where.removeprefix(first.where + ', '))}: <b>{e(o.verdict)}</b>, "
                           f"{int(np.sum(o.holds))} of {np.size(o.holds)}" for o in pres if first_of(o) is first)

        def heading(where: str) -> str:
            pre = [c for c in self.claims if c.where == where and in_heading(c) and not joined(c)]
            note = "".join(f"<span class='claim-precondition verdict-{css(c.verdict)}'>; precondition (not counted), "
                           f"{e(c.claim.removeprefix('precondition, not counted: '))}: <b>{e(c.verdict)}</b>, "
                           f"{int(np.sum(c.holds))} of {np.size(c.holds)} runs{others(c)}</span>"
                           for c in pre if not c.failed_design)
            failed = {c.failed_design for c in self.claims if c.where == where and c.failed_design}
            n_failed = sum(c.where == where and bool(c.failed_design) and not c.precondition for c in self.claims)
            note += "".join(f"<span class='claim-ledger'>; a failed design of ours: its {n_failed} claims are never "
                            f"judged (listed in full below): {e(f)}</span>" for f in failed)
            note += f"<span class='claim-ledger'>; {e(shared(where))}</span>" if shared(where) else ""
            if unreached(where):
                n = sum(c.where == where and not c.precondition for c in self.claims)
                note += (f"<span class='claim-ledger'>; <b>not reached</b>: its {n} claim{'s' * (n != 1)} never "
                         "judged (in full below)</span>")
            anchor = FIGURE_ANCHORS.get((paper, figure_of(where)))
            links = (f" <span class='claim-links'>(<a href='#{anchor}'>ours</a>, <a href='{PAPER_URLS[paper]}'>"
                     f"paper</a>)</span>" if anchor and paper in PAPER_URLS else "")
            return f"<tr class='claims-group'><th colspan='3'>{e(where)}{links}{note}</th></tr>"

        paper = self.not_run[0].paper if self.not_run else self.title.split()[0] if self.title else ""
        rows, details, where = "", "", None
        said: dict[str, str] = {}           # the governing quantities once per figure (the same for its rows)
        for c in self.claims:
            found = [self.beside[s].get((c.where, c.claim)) for s in self.beside]
            if c.where != where:
                where = c.where
                if not all(joined(o) for o in self.claims if o.where == where):   # else said in another heading
                    rows += heading(where)
            if not in_heading(c) and not c.failed_design and not unreached(c.where):   # else the heading says it
                anchor = FIGURE_ANCHORS.get((paper, figure_of(c.where)))
                claim = e(c.claim) + (f" <a class='claim-fig' href='#{anchor}' title='our figure'>(fig.)</a>"
                                      if anchor else "")
                rows += row(self.HEADS, (claim, f"<span class='claim-why'>{e(c.why)}</span>", glance(c) + "".join(
                    elsewhere(s, o) for s, o in zip(self.beside, found) if o)), ("", css(c.verdict)))
            words = e(c.paper) + f"<br><span class='claim-metric'>{e(c.metric)}</span>"
            ours = unbroken_numbers(c.numbers) + "".join(
                f"<br><i>at {e(s)}:</i> {unbroken_numbers(o.numbers)}" for s, o in zip(self.beside, found) if o)
            governing = unbroken_numbers(c.governing) if c.governing != said.get(c.where) else "as above"
            said[c.where] = c.governing
            details += row(self.DETAIL_HEADS, (f"<b>{e(c.where)}</b>", words,
                                               e(c.criterion) + f"<br><i>{e(c.verdict)}: {e(c.count)}</i>",
                                               ours, governing))
        for s, o in self._unmatched():
            rows += row(self.HEADS, (e(f"[{o.where}] {o.claim}"), e(o.why),
                                     f"not run at {e(self.scale)}" + elsewhere(s, o)))
        not_run = "".join(f"<li><b>{e(n.where)}</b>: {e(n.claim)}. <i>{e(n.reason)}</i></li>" for n in self.not_run)
        not_run = (f"<details class='ncbook-claims-detail ncbook-claims-not-run'><summary>The claims no run tests "
                   f"({len(self.not_run)}), and why</summary><ul>{not_run}</ul></details>") if self.not_run else ""
        caption = e((self.title + ": " if self.title else "") + self._counts())
        legend = ("<p class='claims-legend'>A row per claim of a figure; <i>why</i>: the verdict rule's reason; "
                  "<i>verdict</i>: the runs in which the claim holds, a dot each (<span class='dot-key holds'>●</span>"
                  " holds, <span class='dot-key fails'>○</span> does not, <span class='dot-key outside'>∘</span> "
                  "outside the regime). The caption counts claims: a claim's verdict combines its rows.</p>")
        return (f"{legend}<table class='ncbook-claims'><caption>{caption}</caption>{head(self.HEADS)}"
                f"<tbody>{rows}</tbody>"
                f"</table>{not_run}<details class='ncbook-claims-detail'><summary>Each claim in full: the paper's "
                f"words and "
                f"metric, what each run must show, our numbers, the governing quantities</summary>"
                f"<table class='ncbook-claims ncbook-claims-full'>{head(self.DETAIL_HEADS)}<tbody>{details}</tbody>"
                f"</table></details>")


_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?|>1e12")


def unbroken_numbers(text: str) -> str:
    """HTML of ``text`` with every number kept on one line (8.91e-05 is never split at its minus sign)."""
    out, at = [], 0
    for m in _NUMBER.finditer(text):
        out += [html.escape(text[at:m.start()]), f"<span class='n'>{html.escape(m.group())}</span>"]
        at = m.end()
    return "".join(out) + html.escape(text[at:])


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
    """Jacot Fig. 2: per head depth, at the head's last layer at the end, on a log scale, the spread over seeds within
    one weight decay (the mean of the seeds' SDs) and the spread between the weight decays (SD of the seed means)."""
    within, between = [], []
    for d in range(len(r["depths"])):
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)                    # dead heads: empty slices, NaN
            v = np.log(r[name][d][..., -1, layer_index(r, "deepest", d)])          # [seed, weight decay]
            v = np.where(np.isfinite(v), v, np.nan)
            means = np.nanmean(v, 0)
            within.append(np.nanmean(np.nanstd(v, 0)))
            between.append(np.nanstd(means) if np.isfinite(means).sum() >= 2 else np.nan)
    return ["spread within a weight decay (seeds)", "spread between weight decays"], [np.array(within),
                                                                                         np.array(between)]


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


def _rate(v: np.ndarray, t: np.ndarray, t0: float, t1: float) -> np.ndarray:
    """ln(v(t0) / v(t1)) / (t1 - t0) at the first records at or after ``t0`` and ``t1`` (the last axis records)."""
    i, j = int(np.argmax(t >= t0 - 1e-12)), int(np.argmax(t >= t1 - 1e-12))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(v[..., i] / v[..., j]) / (t[j] - t[i])


def phase_rates(r, name, cfg, weight_decay) -> dict[str, np.ndarray]:
    """The linear pairs' (mean) balancedness falls, ln(fall) per unit of λt, in each phase of :data:`PHASES` and
    after the drop: [run] each. Gradient flow predicts 2 (the imbalance decays as exp(-2λt), Jacot Sec. 4.2)."""
    v = np.nanmean(r[name][..., layers_of(r, "linear")], -1)            # [run, record]
    t = decay_time_at(np.asarray(r["steps"]), cfg, weight_decay)
    drop = float(t[_record(r, "drop")])
    out = {k: _rate(v, t, f0 * drop, f1 * drop) for k, (f0, f1) in PHASES.items()}
    return out | {"after the drop": _rate(v, t, drop, float(t[-1]))}


def view_decay_rate(r, name, cfg, weight_decay):
    """The exponential phase's rate (:func:`phase_rates`)."""
    return ["rate"], [phase_rates(r, name, cfg, weight_decay)["exponential"]]


def view_decay_phases(r, name, cfg, weight_decay):
    """The exponential phase's rate and the size of the plateau's, |rate| (a plateau neither falls nor rises)."""
    p = phase_rates(r, name, cfg, weight_decay)
    return ["exponential phase", "|plateau|"], [p["exponential"], np.abs(p["plateau"])]


def view_after_drop(r, name, cfg, weight_decay):
    """The exponential phase's rate and the rate after the learning-rate drop."""
    p = phase_rates(r, name, cfg, weight_decay)
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
    """[setting, seed(, other class)] at the end: NC1(k) of the classes not blurred, else the deepest features' value
    (NC3 at the classifier)."""
    if name == "nc1_per_class":
        others = [k for k in range(r[name].shape[-1]) if k not in blurred]
        return r[name][:, :, -1, :][..., others]
    return r[name][:, :, -1, -1 if name == "nc3_etf_distance" else layer_index(r, "deepest")]


def view_blur_vs_clean(r, name, blurred, setting):
    """Tirer Fig. 6 (a) against (b)-(d): clean and blurred at the ``setting``-th last-layer weight decay, per seed (and
    per other class for NC1(k))."""
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
    from .compare import baseline_over_table1, times_text
    if spec.paper != "Tirer" or "loss" not in spec.args or "nc1_pinv" not in r or "layer_names" not in r:
        return ""
    losses = tuple(spec.args.get("losses", ("mse", "ce")))
    return f"; NC1 {times_text(baseline_over_table1(r, spec.args['loss'], losses))}x Table 1's"


def evaluate(spec: Spec, results: dict[str, dict], governing: str = "") -> Claim:
    """A claims-table row from a :class:`Spec` on cached ``results`` (by experiment name), by :func:`judge`, on the
    runs in the spec's regime; an existential spec takes its clearest metric."""
    r = results[spec.result]
    parts = []
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
        parts.append((j, (f"{metric} ({name}; {k}) " if len(spec.metrics) > 1 else "") + _summary(labels, groups)))
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
                 metric=", ".join(f"{m} = {PAPER_METRICS[spec.paper][m]}" for m in spec.metrics),
                 criterion=spec.criterion.text + ("; one metric with a clear case is enough (\"can\")"
                                                  if spec.exists else ""),
                 direction=all(j.direction for j in judged), precondition=spec.precondition,
                 outside=sum(j.outside for j in judged), some_clear=any(j.some_clear for j in judged),
                 margin_runs=min(margins) if margins else None,
                 ledger=(ledger(*in_regime, spec.regime) + _nc_level(spec, r)) if in_regime else "",
                 in_regime=in_regime[:2] if in_regime else None, view=spec.view, failed_design=spec.failed_design,
                 source=spec.result + (f", {spec.args['loss']}" if "loss" in spec.args else ""))


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


def ledger(m: int, n: int, reasons: dict[str, int], regime: str) -> str:
    """A row's ledger in words: "judged on 9 of 30 runs that fit (12 gave up classes, ...)"; the reasons are left out
    where the only one is "not at zero error", which the count already says."""
    out = f"judged on {m} of {n} runs " + ("that fit" if regime == "fits" else "at zero error")
    said = reasons and set(reasons) != {"not at zero error"}
    return out + (" (" + ", ".join(f"{k} {w}" for w, k in reasons.items()) + ")" if said else "")


# ----------------------------------------------------------------------------------------------------------------
# the claims of Jacot et al. Sec. 6 and App. A (Figs. 1-5)

ZERO_ERROR = Criterion("at most", 0.0, text="zero training error at the end")
FITTED = Criterion("at most", FITS, text=f"training error at most {FITS:.0%} at the end (the book's reading of "
                   "interpolation at its scale; the rows below read only the runs that fit)")


WHATEVER_THE_LOSS = ("decay_rate", "decay_phases", "after_drop")
"""Jacot et al.'s rows that hold whatever the loss (the e^{-2λt} balancing of linear layers, Sec. 4.2): read on every
run, fitted or not."""

EVERY_RUN = (*WHATEVER_THE_LOSS, "variance_sources")
"""Jacot et al.'s rows read on every run: the balancing's, and Fig. 2's variance, a sentence about the figure's
averages over every run (the runs that give up classes are where its high variance comes from: chapter 8)."""


def about_fitted(specs: list[Spec]) -> list[Spec]:
    """Jacot et al.'s claims are about networks that fit their data: each but a precondition and those of
    :data:`EVERY_RUN` reads those runs only."""
    return [replace(s, regime="" if s.precondition or s.view in EVERY_RUN else "fits") for s in specs]


def _deep_head_specs(where: str, result: str, shown: str, weight_decay: float, cfg) -> list[Spec]:
    """Jacot et al. Fig. 1 / Fig. 4: one network per seed; the figure shows the layers from ``shown`` on."""
    J = "Jacot"
    return about_fitted([
        Spec(J, where, "implied: the collapse is of an interpolating network (no training error printed)",
             "precondition, not counted: the network fits its training data", ("error",), result, "end",
             FITTED, "seeds", precondition=True),
        Spec(J, where, "\"the collapse is reached throughout the training\" (NC1 curves; no value printed)",
             "collapse is reached: NC1 at the classifier's input falls", ("NC1",), result, "training",
             Criterion("down", 100, text="falls at least 100-fold from the start to the end of training"), "seeds",
             {"layer": "deepest"}),
        Spec(J, where, "\"the NC2 metric improves progressively with each layer of the linear head\"",
             "NC2 improves with each layer of the linear head", ("NC2",), result, "head_layers",
             Criterion("down", text="each layer's NC2 below the previous layer's, at the end"),
             "(seed, layer) pairs"),
        Spec(J, where, "\"the gram matrices of the class-means ... rapidly converge towards the identity\" (the "
             "figure's bottom row: the Gram matrices layer by layer through the linear head)",
             "through the linear head, the class means' Gram matrix nears the identity",
             ("Gram",), result, "gram_layers",
             Criterion("down", text="the largest off-diagonal |cosine| lower at each layer of the head than at the "
                       "previous, at the end (\"rapidly\" has no number in the paper; the book asks no more than "
                       "the convergence)"), "(seed, layer) pairs"),
        Spec(J, where, "linear pairs plateau \"at a rather small value\", the non-linear ones \"at a significantly "
             "larger value\"", "the linear layers end far more balanced than the non-linear ones", ("balancedness",),
             result, "pair_kinds", Criterion("down", 5, text="significantly: the least balanced linear pair at "
                                             "least 5 times below the most balanced ReLU pair"), "seeds",
             {"shown": shown}),
        Spec(J, where, "\"the metric capturing the balancedness exponentially decreases until it plateaus\"",
             "the linear layers' balancedness first decays exponentially at about gradient flow's rate",
             ("balancedness",), result, "decay_rate",
             Criterion("at least", 1.0, text="exponentially: over the first half of the λt before the lr drop, "
                       "ln(fall) / λt at least 1, half the rate 2 of exp(-2λt) (Sec. 4.2)"), "seeds",
             {"cfg": cfg, "weight_decay": weight_decay}),
        Spec(J, where, "\"the metric capturing the balancedness exponentially decreases until it plateaus\"",
             "then the linear layers' balancedness plateaus before the lr drop", ("balancedness",), result,
             "decay_phases", Criterion("down", 4, text="plateaus: over the last quarter of the λt before the lr "
                                       "drop, |ln(fall)| / λt below a quarter of the first half's rate (a pure "
                                       "exponential has no plateau)"), "seeds",
             {"cfg": cfg, "weight_decay": weight_decay}),
        Spec(J, where, "\"then again it exponentially decreases at a smaller rate after reducing the learning "
             "rate\"", "after the lr drop the linear layers' balancedness falls again, at a smaller rate",
             ("balancedness",), result, "after_drop",
             Criterion("down", 1.0, cap=1e3, text="from the drop to the end, ln(fall) / λt below the first half's "
                       "rate, and a fall (above a thousandth of it)"), "seeds",
             {"cfg": cfg, "weight_decay": weight_decay}),
    ])


def _head_sweep_specs(where: str, result: str) -> list[Spec]:
    """Jacot et al. Fig. 2 (MLP left, ResNet right; Fig. 5 the ResNet on MNIST): heads of 1 to 5 (6) linear layers."""
    J = "Jacot"
    return about_fitted([
        Spec(J, where, "implied: the collapse is of interpolating networks, at every depth of the head (no training "
             "error printed)", "precondition, not counted: the networks fit their training data", ("error",), result,
             "end", FITTED, "(depth, seed, weight decay) runs", precondition=True),
        Spec(J, where, "\"NC2 significantly improves in the last layer as the depth of the linear head increases\"",
             "NC2 at the head's last layer improves with every added linear layer", ("NC2",), result, "head_depths",
             Criterion("down", text="lower with each added layer; significantly: the means by the margin"),
             "(seed, weight decay) runs x added layer", {"end": "last"}),
        Spec(J, where, "\"it gets slightly worse in the input layer to the linear head\"",
             "NC2 at the head's input gets slightly worse as the head deepens", ("NC2",), result, "head_depths",
             Criterion("up", 1.0, cap=2.0, text="slightly: higher with the deepest head that fits than with the "
                       "shallowest, by at most a factor 2"), "(seed, weight decay) runs",
             {"end": "first", "depths": "ends"}),
        Spec(J, where, "\"The NC1 does not have a strong dependence with the number of layers\"",
             "NC1 at the head's last layer does not depend strongly on its depth", ("NC1",), result, "head_depths",
             Criterion("flat", 10 ** 0.5, text="not strongly: largest over smallest across the depths that fit at "
                       "most √10 (half a decade)"), "(seed, weight decay) runs", {"end": "last"}),
        Spec(J, where, "\"The relatively high variance of the results is due to averaging over rather strongly "
             "different weight decay values\"", "the runs' spread comes from the weight decays more than from the "
             "seeds", ("NC1", "NC2"), result, "variance_sources",
             Criterion("up", text="at every depth, on a log scale, the SD between the weight decays' seed means above "
                       "the mean SD over seeds within a weight decay"), "depths"),
    ])


FIG3_PAPER = {
    ("balancedness", "min"): "\"Balancedness clearly improves with depth ... in the most balanced layer\"",
    ("balancedness", "mean"): "\"Balancedness clearly improves with depth, both on average per layer\"",
    ("negativity", "min"): "\"the non-negativity of the layer that least uses the ReLU clearly decreases\"",
    ("negativity", "mean"): "\"a decrease in the mean negativity is also reported (although less pronounced)\"",
}
"""What Jacot et al. Sec. 6 says of each Fig. 3 curve (the paper prints no values)."""


FIG3_CRITERIA = {key: Criterion("down", text="lower at the largest depth; clearly: the means by the margin")
                 for key in FIG3_PAPER} | {("negativity", "mean"): Criterion(
                     "down", text="lower at the largest depth (the sentence asks no more than a decrease, \"less "
                     "pronounced\"; the margin is the rule's, as for every comparison)")}
"""What each Fig. 3 row asks: "clearly" is the margin where the sentence says it; the mean negativity's says only
that it decreases."""


X10 = "jacot_head_depth@lr=0.05"
"""Fig. 2's MLP sweep at lr 0.05: ten times the λt of the `cpu` scale, which matches the paper's assumed λt."""

PAPER_WD = "jacot_resnet_head@weight_decays=(0.001, 0.004)"
"""Fig. 2's ResNet sweep at the paper's weight decays: a 13th of the λt of the `cpu` scale (which raises them 13x)."""

FAILED_13X = ("13 times the paper's weight decay, to match its λt in 60 epochs, kills the deep heads before they fit "
              "(the paper trains at 0.001/0.004: the row below)")
"""Why Fig. 2's ResNet sweep at the `cpu` scale's weight decays is a failed design, shown and never counted."""

PAPER_WD_LONG = "jacot_resnet_head@epochs=240,weight_decays=(0.001, 0.004)"
"""Fig. 2's ResNet sweep at the paper's weight decays trained four times longer (240 epochs): where it is cached it
supersedes the 60-epoch run (its runs still falling fit; the others have given up classes)."""

LONG_MLP = "jacot_head_depth@steps=8000"
"""Fig. 2's MLP sweep of the `cpu` scale trained four times longer (8,000 steps): where it is cached it supersedes
the 2,000-step run (its runs still falling or stuck fit)."""

FIVE_SEEDS = "jacot_mlp@seeds=(0, 1, 2, 3, 4)"
"""Fig. 4 with the paper's five seeds (the `cpu` scale has three; seeds 0-2 are the same runs): its rows read it
where it is cached."""

EXTRA: dict[str, tuple[str, dict[str, Any]]] = {X10: ("jacot_head_depth", {"lr": 0.05}),
                                                 PAPER_WD: ("jacot_resnet_head", {"weight_decays": (0.001, 0.004)}),
                                                 PAPER_WD_LONG: ("jacot_resnet_head", {
                                                     "weight_decays": (0.001, 0.004), "epochs": 240,
                                                     "record_every_epochs": 20}),
                                                 LONG_MLP: ("jacot_head_depth", {"steps": 8000, "record_every": 400}),
                                                 FIVE_SEEDS: ("jacot_mlp", {"seeds": (0, 1, 2, 3, 4)})}
"""Runs beside the `cpu` scale that Part IV's claims tables also read, by name: the experiment and its overrides."""


def jacot_specs(scale: str = "cpu", extra: tuple[str, ...] = ()) -> list[Spec]:
    """Every quantitative claim of Jacot et al. Sec. 6 and App. A as data, at ``scale`` (for the λt of its runs);
    with the runs ``extra`` (names of :data:`EXTRA`) also Fig. 2's rows on them."""
    mlp, fig1 = get_experiment("jacot_mlp").config(scale), get_experiment("jacot_resnet_fig1").config(scale)
    nd = get_experiment("jacot_nonlinear_depth").config(scale)
    fig4 = FIVE_SEEDS if FIVE_SEEDS in extra else "jacot_mlp"
    specs = _deep_head_specs("Fig. 4, MLP", fig4, "hidden 3", mlp.weight_decays[0], mlp)
    specs += _deep_head_specs("Fig. 1, ResNet", "jacot_resnet_fig1", "hidden 1", fig1.weight_decays[0], fig1)
    # a sweep trained further supersedes the same networks' shorter run (every run that fits there fits here)
    specs += (_head_sweep_specs("Fig. 2, MLP, 8,000 steps", LONG_MLP) if LONG_MLP in extra else
              _head_sweep_specs("Fig. 2, MLP", "jacot_head_depth"))
    specs += _head_sweep_specs("Fig. 2, MLP, λt x10", X10) if X10 in extra else []
    specs += [replace(s, failed_design=FAILED_13X) for s in _head_sweep_specs("Fig. 2 right / 5, ResNet",
                                                                             "jacot_resnet_head")]
    if PAPER_WD_LONG in extra:
        specs += _head_sweep_specs("Fig. 2 right / 5, ResNet, the paper's λ, 240 epochs (λt /3.25)", PAPER_WD_LONG)
    elif PAPER_WD in extra:
        specs += _head_sweep_specs("Fig. 2 right / 5, ResNet, the paper's λ (λt /13)", PAPER_WD)
    fig3 = []
    for name in ("balancedness", "negativity"):
        for kind in ("min", "mean"):
            fig3.append(Spec("Jacot", "Fig. 3", FIG3_PAPER[(name, kind)], f"the {kind} {name} of the ReLU layers is "
                              "lower in the deepest network", (name,),
                              "jacot_nonlinear_depth", "nonlinear",
                              FIG3_CRITERIA[(name, kind)],
                              "(lr, seed) runs", {"kind": kind, "backbone": nd.backbone}))
    fig3.append(Spec("Jacot", "Fig. 3", "\"the last non-linear layer(s) always exhibit significant negativity\"",
                      "the last ReLU layer is significantly negative at every depth", ("negativity",),
                      "jacot_nonlinear_depth", "last_relu",
                      Criterion("at least", 0.1, text="significant: negativity at least 0.1 (a tenth of the "
                                "pre-activations' norm cut by the ReLU), in every run"),
                      "(depth, learning rate, seed) runs"))
    return specs + fig3                           # Fig. 3 is purely empirical: every run


# ----------------------------------------------------------------------------------------------------------------
# the claims of Tirer et al. Sec. 6 and App. E (Figs. 2-6, Table 1)


def _paper_changes(loss: str, who: str) -> str:
    """The relative changes of NC1 in Tirer et al.'s Table 1 (MNIST) when λ_who is doubled and zeroed."""
    from .compare import TIRER_TABLE1
    v = TIRER_TABLE1[f"MNIST, {loss.upper()}"]["NC1"]
    base = v[0]
    return (f"{v[ABLATIONS.index(f'WDx2 for {who}')] / base - 1:+.0%} / "
            f"{v[ABLATIONS.index(f'WD=0 for {who}')] / base - 1:+.0%}")


WIDE = "tirer_wd_ablation@512"
"""Tirer et al.'s MSE ablation made for the paper's regime (issue 60): 784-512-512-512-10 for 1,000 epochs (the
paper's λt 2.2), `nn.MSELoss`, the five weight-decay settings; its MSE rows beside the 128-wide run's."""

HALF = "tirer_wd_ablation@1/(2N)"
"""Tirer et al.'s MSE ablation under the book's normalisation of the square loss, (1/(2N)) ||Z - Y||^2 (the paper's
experiments do not state theirs): the `cpu` MLP for 1,000 epochs (the paper's λt 2.2), the five settings; every run
reaches zero training error (issue 60)."""

HALF_300 = "tirer_wd_ablation@300,1/(2N)"
""":data:`HALF` with 300 digits per class: Fig. 4's MSE rows in the paper's regime."""

TIRER_EXTRA: dict[str, tuple[str, dict[str, Any]]] = {
    WIDE: ("tirer_wd_ablation", {"epochs": 1000, "hidden": (512, 512, 512), "losses": ("mse",)}),
    HALF: ("tirer_wd_ablation", {"epochs": 1000, "losses": ("mse",), "mse_over_classes": False}),
    HALF_300: ("tirer_wd_ablation", {"epochs": 1000, "losses": ("mse",), "mse_over_classes": False,
                                     "per_class": 300})}
"""Runs beside the `cpu` scale that Tirer et al.'s claims tables also read, by name."""

TIRER_EXTRA_LABELS = {WIDE: ("512 wide", "Figs. 3, 5"), HALF: ("1/(2N) loss", "Figs. 3, 5"),
                      HALF_300: ("1/(2N) loss", "Fig. 4")}
"""How the rows on each of :data:`TIRER_EXTRA`'s runs name it, and the paper's figures it repeats (Table 1's rows
read only the runs of Figs. 3 and 5)."""


def _ablation_specs(result: str, where: str, losses: tuple[str, ...], shown: tuple[str, ...]) -> list[Spec]:
    """Tirer et al. Figs. 3-5 and Table 1 on the ablation ``result`` (its ``losses``), for the losses ``shown``: H
    against W, and Table 1's order of λ_H, on the runs at zero training error."""
    T, specs = "Tirer", []
    for loss in shown:
        for change in ("doubling", "zeroing"):
            specs.append(Spec(
                T, f"{where}, {loss.upper()}", "\"modifying the WD in the feature mapping increases the deviation "
                "from the baseline more than modifying the WD of the last layer\"",
                f"{change} λ_H moves NC1 and NC2 further from the baseline than {change} λ_W",
                ("NC1", "NC2"), result, "h_over_w",
                Criterion("up", text="|Δ_H| above |Δ_W|, on NC1 and on NC2 (the size of the deviation, as the "
                          "sentence says; its direction is Table 1's rows)"), "seeds",
                {"loss": loss, "change": change, "losses": losses}, regime="zero error"))
    return specs


def tirer_specs(losses: tuple[str, ...] = ("mse", "ce"), blurred: tuple[int, ...] = (4, 9),
                extra: tuple[str, ...] = ()) -> list[Spec]:
    """Every quantitative claim of Tirer et al. Sec. 6 and App. E as data: ``losses`` in the ablation's order and the
    ``blurred`` classes of the blur run; for each of the ``extra`` runs (:data:`TIRER_EXTRA`), also its MSE rows."""
    T = "Tirer"
    specs = [Spec(T, "Fig. 2", "\"decrease in both NC1 and gNC1 as we add more hidden layers\" (read off Fig. 2)",
                  "NC1 and gNC1 decrease as hidden layers are added and trained one by one", ("NC1", "gNC1"),
                  "tirer_layerwise", "layerwise", Criterion("down", text="lower with all layers than with one"),
                  "seeds"),
             Spec(T, "App. E.1", "\"reaching considerable low loss (though, still not zero training error)\" in "
                  "layer-wise training", "layer-wise training does not reach zero training error", ("error",),
                  "tirer_layerwise", "layerwise_end",
                  Criterion("at least", 1e-9, text="not zero: some training sample misclassified with all layers "
                            "trained"), "seeds"),
             Spec(T, "Sec. 6", "\"In all the settings, we reach zero training error at the 40 epoch approximately\" "
                  "(and the analysis holds \"as long as entering the zero training error phase ... is maintained\")",
                  "precondition, not counted: zero training error in every setting", ("error",),
                  "tirer_wd_ablation", "end", ZERO_ERROR, "(loss, seed, setting) runs", precondition=True)]
    for result, where in (("tirer_wd_ablation", "Figs. 3, 5, Table 1"), ("tirer_wd_ablation@300", "Fig. 4")):
        specs += _ablation_specs(result, where, losses, losses)
    for loss in losses:
        specs.append(Spec(T, f"Table 1, {loss.upper()}", "\"Reducing (zeroing) the WD in the feature mapping "
                          "increases the distance from exact NC ..., while increasing the WD decreases the gap\"",
                          "closer to collapse with more λ_H: λ_H zeroed > baseline > doubled",
                          ("NC1", "NC2"), "tirer_wd_ablation", "settings", Criterion("down", text="lower at each step"),
                          "seeds x step", {"loss": loss, "settings": ("WD=0 for H", "baseline", "WDx2 for H"),
                                           "losses": losses}, regime="zero error"))
    for name in (n for n in TIRER_EXTRA if n in extra and "mse" in losses):
        zero, table = (next(s for s in specs if s.where == w) for w in ("Sec. 6", "Table 1, MSE"))
        over, (label, figures) = TIRER_EXTRA[name][1], TIRER_EXTRA_LABELS[name]
        of = "" if figures == "Figs. 3, 5" else f"{figures}, "
        specs.append(replace(zero, where=f"Sec. 6, {of}{label}", result=name, runs="(seed, setting) runs"))
        specs += _ablation_specs(name, f"{figures}, {label}", over["losses"], over["losses"])
        if figures == "Figs. 3, 5":
            specs.append(replace(table, where=f"Table 1, MSE, {label}", result=name,
                                 args={**table.args, "losses": over["losses"]}))
    if "ce" in losses:      # a hedge with one example: a claim about cross-entropy's doubling, no ordering of all
        specs.append(Spec(T, "Table 1, CE", "\"sometimes (e.g., with CE loss) increasing the WD of the last layer "
                          f"can also decrease the gap\"; Table 1 (MNIST, CE): NC1 {_paper_changes('ce', 'W')} "
                          "doubled / zeroed", "with CE, doubling the last layer's λ_W brings the features closer "
                          "to collapse", ("NC1", "NC2"), "tirer_wd_ablation", "settings",
                          Criterion("down", text="lower with λ_W doubled than at the baseline (the sentence's "
                                    "example; \"sometimes\" asks no more of the other loss)"), "seeds",
                          {"loss": "ce", "settings": ("baseline", "WDx2 for W"), "losses": losses},
                          regime="zero error", exists=True))
    if "ce" in losses:
        for result, where in (("tirer_wd_ablation", "Fig. 5 (c), CE"), ("tirer_wd_ablation@300", "Fig. 4 (c), CE")):
            specs.append(Spec(T, where, "NC1 and NC2 larger in the intermediate features (Figs. 4c, 5c against "
                              "4b, 5b; CE)", "NC1 and NC2 are larger in the intermediate features than in the "
                              "deepest", ("NC1", "NC2"), result, "roles",
                              Criterion("up", text="larger at the intermediate layer"),
                              "(seed, setting) runs", {"loss": "ce", "losses": losses}, regime="zero error"))
    specs += [
        Spec(T, "Fig. 6 (b)", "\"The effect of the blurred classes on the NC metrics (avg. and other classes) is "
             "minor\" (λ_W = 5e-4)", "at λ_W = 5e-4 blurring changes the other classes' NC1(k) and NC1 little",
             ("NC1(k)", "NC1"), "tirer_blur", "blur_vs_clean",
             Criterion("minor", text="minor (no number in the paper): no clear effect, on a log scale: each run's "
                       f"change blurred against clean within {MARGIN:g} SDs of the runs' changes, and so their mean, "
                       "every other class (NC1(k)) and the mean (NC1)"), "(seed, other class) and seed runs",
             {"blurred": blurred, "setting": 0}),
        Spec(T, "Fig. 6 (c)", "\"The blurred classes affect the per-class NC1 of other classes and the NC metrics "
             "increase\" (λ_W = 5e-5)", "at λ_W = 5e-5 blurring raises every other class's NC1(k) and NC1, NC2, "
             "NC3", ("NC1(k)", "NC1", "NC2", "NC3"), "tirer_blur", "blur_vs_clean",
             Criterion("up", text="higher blurred than clean"), "(seed, other class) and seed runs",
             {"blurred": blurred, "setting": 1}),
        Spec(T, "Fig. 6 (d)", "\"small WD in the last layer increases the effect of the per-class NC1 curves of "
             "the blurred classes on the other classes, and increases also the other NC metrics\"",
             "on the blurred data, a smaller λ_W raises the other classes' NC1(k), NC1, NC2, NC3",
             ("NC1(k)", "NC1", "NC2", "NC3"), "tirer_blur", "blur_lambda",
             Criterion("up", text="higher at the smallest λ_W (0) than at the largest (5e-4): the sentence compares a "
                       "small weight decay with a larger one, no order of three"),
             "(seed, other class) and seed runs", {"blurred": blurred}),
        Spec(T, "Fig. 6", "\"in all of the settings we reached zero training error at the 40 epoch approximately\"",
             "every blur setting reaches zero training error", ("error",), "tirer_blur", "end", ZERO_ERROR,
             "(setting, seed) runs"),
    ]
    return specs


GOVERNS: dict[str, tuple[str, dict[str, Any]]] = {
           "jacot_mlp": ("jacot_mlp", {}), "jacot_resnet_fig1": ("jacot_resnet_fig1", {}),
           "jacot_head_depth": ("jacot_head_depth", {}), **EXTRA,
           "jacot_resnet_head": ("jacot_resnet_head", {}), "jacot_nonlinear_depth": ("jacot_nonlinear_depth", {}),
           "tirer_layerwise": ("tirer_layerwise", {}), "tirer_blur": ("tirer_blur", {}),
           "tirer_wd_ablation": ("tirer_wd_ablation", {}), "tirer_wd_ablation@300": ("tirer_wd_ablation",
                                                                                   {"per_class": 300}),
           **TIRER_EXTRA}
"""The experiment (and overrides) behind each name a spec's ``result`` uses."""


def _governing(spec: Spec, scale: str | None) -> str:
    """The row's governing quantities, ours (the paper's), with the paper's settings we assume and its runs."""
    if scale is None:
        return ""
    name, overrides = GOVERNS[spec.result]
    paper = ({"dataset": "mnist", "per_class": 3000 if overrides.get("per_class") == 300 else 5000}
             if name == "tirer_wd_ablation" else None)
    parts = [governing_text(name, scale, paper=paper, **overrides)]
    if spec.where.startswith("Table 1"):
        parts.append("Table 1's MNIST samples per class not stated (Figs. 4, 5: 3K, 5K; compared with 5K)")
    parts += [t for t in (assumptions_text(name),) if t]
    exp = get_experiment(name)
    ours, theirs = (len(getattr(exp.config(s), "seeds", ())) for s in (scale, "paper"))
    if ours and theirs:
        parts.append(f"seeds {ours} (paper {theirs})")
    return "; ".join(parts)


def jacot_claims(results: dict[str, dict], scale: str | None = None) -> list[Claim]:
    """Every claim of Jacot et al. on cached ``results`` (by experiment name), each checked on every run."""
    runs = _jacot_runs(results)
    extra = tuple(k for k in EXTRA if k in results)
    return [evaluate(s, runs, _governing(s, scale)) for s in jacot_specs(scale or "cpu", extra)]


def tirer_claims(results: dict[str, dict], losses: tuple[str, ...], blurred: tuple[int, ...],
                 scale: str | None = None) -> list[Claim]:
    """Every claim of Tirer et al. on cached ``results`` (by experiment name; the 300-per-class ablation as
    "tirer_wd_ablation@300"), each checked on every run."""
    return [evaluate(s, results, _governing(s, scale)) for s in tirer_specs(losses, blurred, tuple(results))
            if s.result in results]


def at_record(r: dict, k: int) -> dict:
    """The result as if training had stopped at record ``k``: every per-record array cut after it (the records of one
    run are a sweep of λt); arrays without a record axis (the end-of-training Gram matrices) are kept as they are."""
    R = len(r["steps"])
    out = dict(r)
    for name, v in r.items():
        if name in ("steps", "epochs"):
            out[name] = np.asarray(v)[:k + 1]
        elif name in ("train_error", "loss"):
            out[name] = np.asarray(v)[..., :k + 1]
        elif isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[-2] == R and name != "class_mean_cosines":
            out[name] = v[..., :k + 1, :]
    return out


def lambda_t_sweep(specs: list[Spec], r: dict, cfg, weight_decay: float,
                   fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)) -> list[tuple[float, list[Claim]]]:
    """The rows ``specs`` (which read result ``r`` at the end of training only) judged as if training had stopped at
    the records where λt (at ``weight_decay``, under ``cfg``'s schedule) first reaches each fraction of its final value:
    how a verdict moves with λt, on the runs already made (issue 50, point 6)."""
    t = decay_time_at(np.asarray(r["steps"]), cfg, weight_decay)
    out = []
    for f in fractions:
        k = int(np.argmax(t >= f * t[-1] * (1 - 1e-9)))
        cut = at_record(r, k)
        out.append((float(t[k]), [evaluate(s, {s.result: cut}) for s in specs]))
    return out


def jacot_fig2_sweep(results: dict[str, dict], scale: str = "cpu") -> list[tuple[float, list[Claim]]]:
    """Fig. 2's MLP rows along λt (at the first weight decay): the records of the run at the assumed λt and of the one
    at ten times it (:data:`X10`), from a tenth of the assumed λt to ten times it."""
    runs, cfg = _jacot_runs(results), get_experiment("jacot_head_depth").config(scale)
    out = lambda_t_sweep(_head_sweep_specs("Fig. 2, MLP", "jacot_head_depth"), runs["jacot_head_depth"], cfg,
                         cfg.weight_decays[0])
    if X10 in runs:
        name, overrides = EXTRA[X10]
        cfg10 = get_experiment(name).config(scale, **overrides)
        out += lambda_t_sweep(_head_sweep_specs("Fig. 2, MLP", X10), runs[X10], cfg10, cfg10.weight_decays[0])
    return sorted(out, key=lambda point: point[0])


def tirer_ablation_sweep(results: dict[str, dict], scale: str = "cpu") -> list[tuple[float, list[Claim]]]:
    """The ablation's rows (H over W, Table 1's directions; 500 per class) along λt: its records from a tenth of the
    final λt to the end."""
    cfg = get_experiment("tirer_wd_ablation").config(scale)
    specs = [s for s in specs_at("Tirer", scale) if s.result == "tirer_wd_ablation" and s.view in ("h_over_w",
                                                                                                 "settings")]
    return lambda_t_sweep(specs, results["tirer_wd_ablation"], cfg, cfg.weight_decay)


def format_sweep(sweep: list[tuple[float, list[Claim]]]) -> str:
    """A λt sweep as text: one line per row, its verdict (k of n) at each λt."""
    lines = ["λt: " + " | ".join(f"{t:.2g}" for t, _ in sweep)]
    for i, c in enumerate(sweep[0][1]):
        cells = [f"{rows[i].verdict} ({int(np.sum(rows[i].holds))}/{np.size(rows[i].holds)})" for _, rows in sweep]
        lines.append(textwrap.fill(f"[{c.where}] {c.claim}: " + " | ".join(cells), WRAP, subsequent_indent="    "))
    return "\n".join(lines)


RESULTS = {"Jacot": ("jacot_mlp", "jacot_resnet_fig1", "jacot_head_depth", "jacot_resnet_head", "jacot_nonlinear_depth",
                     *EXTRA),
           "Tirer": ("tirer_layerwise", "tirer_wd_ablation", "tirer_wd_ablation@300", "tirer_blur", *TIRER_EXTRA)}
"""The results (names of :data:`GOVERNS`) each paper's claims read."""


def cached_results(paper: str, scale: str, root=None) -> dict[str, dict]:
    """Those of ``paper``'s results (:data:`RESULTS`) that are cached and current at ``scale``, by name."""
    from .runner import cached_scales, get

    out = {}
    for name in RESULTS[paper]:
        exp, overrides = GOVERNS[name]
        if scale in cached_scales(exp, root, **overrides):
            out[name] = get(exp, scale, root, **overrides)
    return out


def claims_at(paper: str, scale: str, results: dict[str, dict]) -> dict[tuple[str, str], Claim]:
    """Every claim of ``paper`` ("Jacot" or "Tirer") whose result is among ``results`` (at ``scale``), checked on
    every run, by (where, claim): the claims of a scale where only some results exist."""
    runs = _jacot_runs(results) if paper == "Jacot" else results
    specs = specs_at(paper, scale, tuple(k for k in (*EXTRA, *TIRER_EXTRA) if k in results))
    return {(s.where, s.claim): evaluate(s, runs, _governing(s, scale)) for s in specs if s.result in runs}


def specs_at(paper: str, scale: str, extra: tuple[str, ...] = (*EXTRA, *TIRER_EXTRA)) -> list[Spec]:
    """``paper``'s claims as read on the configurations of ``scale`` (Jacot's with the runs ``extra`` beside it)."""
    if paper == "Jacot":
        return jacot_specs(scale, extra)
    return tirer_specs(get_experiment("tirer_wd_ablation").config(scale).losses,
                       get_experiment("tirer_blur").config(scale).blurred, extra)


def verdicts_reading(name: str, tag: str) -> str:
    """How many claim rows of each paper read experiment ``name``'s stored result ``tag`` (a scale, or a scale with
    overrides): "Tirer 1", or "" where none does (``python -m ncbook list``: which scale each verdict comes from)."""
    from .runner import Run

    scale = tag.split("--")[0]
    if scale not in get_experiment(name).scales:
        return ""
    out = []
    for paper, names in RESULTS.items():
        hits = {r for r in names if GOVERNS[r][0] == name and Run.of(name, scale, **GOVERNS[r][1]).tag == tag}
        count = sum(s.result in hits for s in specs_at(paper, scale)) if hits else 0
        out += [f"{paper} {count}"] if count else []
    return ", ".join(out)


def beside_scales(paper: str, shown: str = "cpu", scales: tuple[str, ...] = ("cpu", "gpu", "paper"),
                  root=None) -> dict[str, dict[tuple[str, str], Claim]]:
    """The verdicts of every scale but ``shown`` at which at least one of ``paper``'s results is cached, for the
    columns beside ``shown``'s (:class:`ClaimsTable`); none where no such result exists."""
    out = {}
    for scale in scales:
        if scale != shown and (results := cached_results(paper, scale, root)):
            out[scale] = claims_at(paper, scale, results)
    return out


@dataclass(frozen=True)
class Provenance:
    """How each result a paper's claims tables read was made: for every one cached and current at ``scales``, the
    machine (device, threads), the date, the commit, the wall time and the command; a table on the page, text
    elsewhere (the manifests' provenance, :func:`ncbook.cache.provenance`)."""

    paper: str
    scales: tuple[str, ...] = ("cpu", "gpu")
    root: Any = None

    HEADS = ("result", "made on", "date", "commit", "wall time", "command")

    @property
    def rows(self) -> list[tuple[str, ...]]:
        from . import cache
        from .runner import Run, cached_current

        out: list[tuple[str, ...]] = []
        for name in RESULTS[self.paper]:
            exp, overrides = GOVERNS[name]
            for scale in self.scales:
                if scale not in get_experiment(exp).scales:
                    continue
                run = Run.of(exp, scale, **overrides)
                if cached_current(run, self.root) is None:
                    continue
                p = cache.read_manifest(exp, run.tag, self.root)["provenance"]
                threads = p.get("cpu_threads", "?")
                where = (f"{p.get('cpu_model', 'CPU')}, {threads} thread{'s' * (threads != 1)}"
                         if p.get("device") == "cpu" else str(p.get("device_name", p.get("device", "?")))) + beside(p)
                out.append((f"{exp}/{run.tag}", where, str(p.get("date", "?"))[:10], str(p.get("git_commit", "?"))[:7],
                             wall_time(p), str(p.get("command", ""))))
        return out

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill("; ".join(r), WRAP, subsequent_indent="    ") for r in self.rows)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{e(h)}</th>" for h in self.HEADS)
        body = "".join("<tr>" + "".join(f"<td>{e(c) if i != 5 else f'<code>{e(c)}</code>'}</td>"
                                         for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        return (f"<details class='ncbook-claims-detail'><summary>How each result these verdicts read was made "
                f"({len(self.rows)})</summary><table class='ncbook-provenance'><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></details>")


def wall_time(provenance: dict) -> str:
    """A result's recorded wall time, and how it was resumed (:func:`resumes`)."""
    from .cost import duration

    return duration(float(provenance.get("wall_time_s", 0.0))) + resumes(provenance)


def beside(provenance: dict) -> str:
    """What ran beside a run (``runner.MachineLoad``): ", machine load 2.9 on 2 CPUs" (the mean one-minute load
    average while it ran; a one-thread run alone reads about 1), or "" where it was not recorded."""
    load = provenance.get("load")
    return f", machine load {load['mean_1min']:.1f} on {load['cpus']} CPUs" if load else ""


def resumes(provenance: dict) -> str:
    """What a wall time covers where a run was stopped and resumed (``runner.stopped_segments``): ", resumed once",
    or that it lacks the segments before the last resume; "" for a run made in one go."""
    if provenance.get("wall_time_partial"):
        return " (after its last resume only)"
    resumed = int(provenance.get("segments", 1)) - 1
    return f", resumed {({1: 'once', 2: 'twice'}).get(resumed, f'{resumed} times')}" if resumed else ""


SCALE_ROLES = {"cpu": "shipped with the book, made on 2 CPU cores",
               "gpu": "the papers' widths on the shipped data, for one GPU",
               "paper": "the paper's setting where it states one (full data sets)"}
"""What each scale of Part IV is for (the `tiny` one only tests the code); the glossary defines them."""

_DATA = {"mnist5k": "MNIST-5k", "mnist": "MNIST", "cifar10": "CIFAR-10", "digits": "digits"}


@dataclass(frozen=True)
class Scales:
    """Each of a paper's experiments at each scale: the network, the data, the length and the seeds, and where and in
    how long the result was made (from its manifest; "not made" where none is cached): Part IV's opening table."""

    paper: str
    scales: tuple[str, ...] = ("cpu", "gpu", "paper")
    root: Any = None

    def cell(self, exp: str, scale: str) -> tuple[str, str]:
        """(what runs, where it ran and for how long) for one experiment at one scale."""
        return what_ran(exp, scale, self.root)

    @property
    def experiments(self) -> list[str]:
        return list(dict.fromkeys(GOVERNS[r][0] for r in RESULTS[self.paper]))

    def __repr__(self) -> str:
        lines = [f"{s}: {SCALE_ROLES[s]}" for s in self.scales]
        for exp in self.experiments:
            lines += [textwrap.fill(f"{exp} [{s}]: " + "; ".join(self.cell(exp, s)), WRAP, subsequent_indent="    ")
                      for s in self.scales]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "<th>experiment</th>" + "".join(f"<th>{e(s)}<br><span class='claim-metric'>{e(SCALE_ROLES[s])}</span>"
                                               f"</th>" for s in self.scales)
        body = "".join(f"<tr><td><code>{e(exp)}</code></td>" + "".join(
            f"<td data-label='{e(s)}'>{e(what)}<br><i>{e(where)}</i></td>"
            for s, (what, where) in ((s, self.cell(exp, s)) for s in self.scales)) + "</tr>"
            for exp in self.experiments)
        return f"<table class='ncbook-scales'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def what_ran(exp: str, scale: str, root: Any = None) -> tuple[str, str]:
    """(what runs, where it ran and for how long) for experiment ``exp`` at ``scale``: the network, the data, the
    length and the seeds from its configuration; the device and wall time from its result's manifest ("not
    made" where no current result is cached)."""
    from . import cache
    from .runner import Run, cached_current

    cfg = get_experiment(exp).config(scale)
    per = f" x {cfg.per_class}" if getattr(cfg, "per_class", None) else ""
    length = (f"{cfg.steps:,} steps" if getattr(cfg, "steps", None) else f"{cfg.epochs:,} epochs")
    seeds = len(cfg.seeds)
    net = (f"ResNet-{cfg.resnet_depth} (width {cfg.resnet_width})" if hasattr(cfg, "resnet_depth") else
           f"width {cfg.width}" if getattr(cfg, "width", None) else
           f"width {max(cfg.hidden)}" if getattr(cfg, "hidden", None) else
           f"width {max(cfg.widths[1:-1])}" if getattr(cfg, "widths", None) else "")
    what = (f"{net + '; ' if net else ''}{_DATA.get(cfg.dataset, cfg.dataset)}{per}, {length}, "
            f"{seeds} seed{'s' * (seeds != 1)}")
    run = Run.of(exp, scale)
    if cached_current(run, root) is None:
        return what, "not made"
    p = cache.read_manifest(exp, run.tag, root)["provenance"]
    where = ("CPU" if p.get("device") == "cpu" else str(p.get("device_name", p.get("device", "?"))))
    return what, f"{where}, {wall_time(p)}"


@dataclass(frozen=True)
class ConfigDifferences:
    """Every setting in which each of a paper's experiments at ``scale`` differs from its `paper` configuration (the
    recording cadence left out), "ours / the paper's": one table instead of a paragraph per chapter."""

    paper: str
    scale: str = "cpu"

    @staticmethod
    def _value(name: str, v: Any) -> str:
        if name == "seeds":
            return f"{len(v)} seed{'s' * (len(v) != 1)}"
        if name == "widths":
            return f"{len(v) - 2} hidden layers of {v[1]}"
        if v is None:
            return "full batch" if name == "batch_size" else "all"
        return ", ".join(map(str, v)) if isinstance(v, tuple) else str(v)

    @property
    def rows(self) -> list[tuple[str, str]]:
        import dataclasses

        out = []
        for name in dict.fromkeys(GOVERNS[r][0] for r in RESULTS[self.paper]):
            exp = get_experiment(name)
            ours, theirs = exp.config(self.scale), exp.config("paper")
            diffs = [f"{f.name} {self._value(f.name, getattr(ours, f.name))} / "
                     f"{self._value(f.name, getattr(theirs, f.name))}"
                     for f in dataclasses.fields(ours) if not f.name.startswith("record_every")
                     and getattr(ours, f.name) != getattr(theirs, f.name)]
            out.append((name, "; ".join(diffs)))
        return out

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill(f"{n}: {d}", WRAP, subsequent_indent="    ") for n, d in self.rows)

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(f"<tr><td><code>{e(n)}</code></td><td>{unbroken_numbers(d)}</td></tr>" for n, d in self.rows)
        return (f"<table class='ncbook-provenance'><thead><tr><th>experiment</th><th>setting: ours at {e(self.scale)} "
                f"/ the paper's</th></tr></thead><tbody>{body}</tbody></table>")


def _jacot_runs(results: dict[str, dict]) -> dict[str, dict]:
    """Jacot et al.'s results as their claims read them: Figs. 1 and 4's one network per seed (:func:`_one_network`)."""
    return {k: _one_network(v) if k in ("jacot_mlp", "jacot_resnet_fig1", FIVE_SEEDS) else v
            for k, v in results.items()}


def _one_network(r: dict) -> dict:
    """Jacot Figs. 1 and 4 train one network per seed: drop the result's depth and weight-decay axes of length one,
    leaving [seed, record(, layer)] (and [seed, layer, K, K] for the class-mean cosines)."""
    out = dict(r)
    for k, v in r.items():
        v = np.asarray(v)
        if k == "layer_names" and v.ndim == 2:
            out[k] = v[0]
        elif k == "class_mean_cosines":
            out[k] = v.reshape(-1, *v.shape[-3:])
        elif k in ("loss", "train_error"):
            out[k] = v.reshape(-1, v.shape[-1])
        elif v.ndim >= 3:
            out[k] = v.reshape(-1, *v.shape[-2:])
    return out
