"""A claim's verdict over its runs (:class:`Claim`), the claims not run, and the tallies and lines that
summarise them (verdict counts, the regime ledger's line)."""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass

import numpy as np

from ..compare import WRAP
from .rule import FALSE_CLEAR, NO_EFFECT, NOT_REACHED, REPRODUCED, grade


@dataclass(frozen=True)
class Claim:
    """One row of a claims table: ``holds`` has one boolean per run judged (every seed, setting, depth... in the
    regime), ``direction`` whether no group mean moves clearly against the paper's way, ``separated`` whether they
    clear its way (None: not a comparison); ``paper`` the paper's sentence, ``metric`` the paper's metric
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
    unjudged: str = ""
    """The steps of the sentence no two runs of the regime could judge, where others could ("linear 4 to linear 5"):
    the row cannot reproduce the whole sentence (issue 74, point 3)."""
    two_sided: bool = False
    """The criterion is a two-sided difference ("differ"): nothing can be against it (:func:`grade`)."""
    finding: str = ""
    """What the runs showed, with its number, metric by metric (:func:`ncbook.claims.regime.finding`)."""

    @property
    def reached(self) -> bool:
        """Whether some run reached the regime, and, for a comparison, at least 2 (a comparison needs 2), in a design
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
                       self.some_clear, self.two_sided)
        if self.unjudged and grade_ == "reproduced":     # a step of the sentence no run could judge (issue 74)
            grade_ = "partly"
        return PRECONDITION_GRADES.get(grade_, grade_) if self.precondition else grade_

    @property
    def count(self) -> str:
        """k of n runs, and why a comparison that holds in most runs is not reproduced, if it is not; where the
        reproduction did not reach the regime, that and why."""
        if self.failed_design:
            return f"a failed design of ours: {self.failed_design}" + (f"; {self.ledger}" if self.ledger else "")
        if not self.reached:
            few = (f"; {self.margin_runs} run in the regime, a comparison needs 2"
                   if self.margin_runs is not None and self.margin_runs < 2 else "")
            ledger = self.ledger.removeprefix("not reached by the reproduction: ")
            return f"the reproduction did not reach the regime: {ledger or 'no run in it'}{few}"
        why = ("; a clear effect against the claim" if not self.direction else
               f"; effect not clear ({FALSE_CLEAR:.0%} t test)" if self.separated is False else "")
        left = f"; {self.ledger}" if self.ledger else ""
        steps = f"; not judged, under 2 runs in the regime: {self.unjudged}" if self.unjudged else ""
        return f"{int(np.sum(self.holds))} of {np.size(self.holds)} {self.runs}{why}{steps}{left}"

    @property
    def why(self) -> str:
        """Why the row has its verdict, in about 15 words at most (the glance table's "why" column): what its runs
        showed, with its number (:attr:`finding`); where it was not judged, why not."""
        k, n = int(np.sum(self.holds)), int(np.size(self.holds))
        if self.failed_design:
            return "a design of ours that cannot reach the regime: never judged"
        if not self.reached:
            if self.margin_runs is not None and 0 < self.margin_runs < 2:
                return f"only {self.margin_runs} run to compare in the regime; a comparison needs 2"
            if self.ledger.startswith("not reached by the reproduction: "):
                return self.ledger.removeprefix("not reached by the reproduction: ")
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
        if self.finding:                        # what the runs showed; the verdict column gives k of n
            return self.finding
        verdict = self.verdict
        if verdict == NO_EFFECT:
            return f"no effect clear of the run-to-run spread ({FALSE_CLEAR:.0%} t test)"
        if verdict == "not reproduced":
            return ("a clear effect against the claim" if not self.direction else
                    f"holds in {k} of {n} runs, under half")
        runs = "every run" if k == n else f"{k} of {n} runs"
        clear = {True: f", clear ({FALSE_CLEAR:.0%} t test)", False: "; not clear on a metric",
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


def _judged(claims: list[Claim]) -> list[ClaimRows]:
    """The claims proper (not preconditions) that the reproduction reached: those a verdict is counted for."""
    return [g for g in by_claim(claims) if not g.precondition and g.verdict != NOT_REACHED]


def _nonzero_counts(judged: list[ClaimRows]) -> str:
    """"3 reproduced, 1 no clear effect": each verdict that some of ``judged`` have, with how many."""
    return ", ".join(f"{n} {v}" for v in VERDICTS if (n := sum(g.verdict == v for g in judged)))


def verdict_counts(claims: list[Claim]) -> str:
    """How many claims (sentences, :func:`by_claim`) are reproduced, partly, not reproduced, of no clear effect, of
    how many, in how many rows; the rows and claims the reproduction did not reach, not counted; then the
    preconditions, apart and never counted."""
    grouped = by_claim(claims)
    unreached = [g for g in grouped if not g.precondition and g.verdict == NOT_REACHED]
    proper = _judged(claims)
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


def glance_counts(claims: list[Claim], not_run: int = 0) -> str:
    """A claims table's counts in both of its units, named, in under 40 words (its caption on the page): the rows
    judged by verdict, the claims (sentences, each combining its rows) by verdict, then what is apart."""
    rows = [c for c in counted(claims) if c.verdict != NOT_REACHED]
    by_row = ", ".join(f"{n} {v}" for v in VERDICTS if (n := sum(c.verdict == v for c in rows)))
    proper = _judged(claims)
    apart = [f"{n} {one if n == 1 else many}" for n, one, many in (
        (sum(c.verdict == NOT_REACHED for c in counted(claims)), "row not reached", "rows not reached"),
        (sum(g.precondition for g in by_claim(claims)), "precondition", "preconditions"),
        (not_run, "claim not run", "claims not run")) if n]
    return (f"Of {len(rows)} rows judged: {by_row}. Of {len(proper)} claims: {_nonzero_counts(proper)}."
            + (f" Apart: {', '.join(apart)}." if apart else ""))


def regime_line(claims: list[Claim]) -> str:
    """The ledger of a table in one line: for each set of runs that rows read in a regime, m of n runs in it, named by
    the first figure that reads them, and for Tirer et al.'s ablation how near collapse they are: "; runs in the
    regime: Fig. 4, MLP 2 of 3, ..., Figs. 3, 5, Table 1, CE 15 of 15 (NC1 86x)" (times Table 1's)."""
    seen: dict[str, tuple[str, tuple[int, int], str]] = {}
    for c in claims:
        if c.in_regime and not c.failed_design:
            level = c.ledger.partition("; NC1 ")[2].removesuffix(" Table 1's")    # Tirer et al.'s: how near
            far = c.ledger.partition("reproduction: NC1 ")[2].partition(" ")[0]     # collapse, or how far
            seen.setdefault(c.source, (c.where, c.in_regime, f" (NC1 {level})" if level else
                                       f" (NC1 {far}, above all of Table 1)" if far else ""))
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
    folded: bool = False
    """On the page: folded under a bar that says what it holds (the claims table above already lists each row)."""

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
        table = (f"<table class='ncbook-claims-summary'><thead><tr><th>verdict</th><th>the paper's claim, "
                 f"and the rows that test it</th></tr></thead><tbody>{body}</tbody></table>")
        return (f"<details class='ncbook-claims-detail'><summary>Each claim once, its verdict and the rows that test it"
                f"</summary>{table}</details>" if self.folded else table)


def format_claims(claims: list[Claim]) -> str:
    """A claims table as text, one claim per paragraph, the count of each verdict and the runs in the regime."""
    return "\n".join(map(str, claims)) + "\n" + verdict_counts(claims) + regime_line(claims)


def ledger(m: int, n: int, reasons: dict[str, int], regime: str) -> str:
    """A row's ledger in words: "judged on 9 of 30 runs that fit (12 gave up classes, ...)"; the reasons are left out
    where the only one is "not at zero error", which the count already says."""
    out = f"judged on {m} of {n} runs " + ("that fit" if regime == "fits" else "at zero error")
    said = reasons and set(reasons) != {"not at zero error"}
    return out + (" (" + ", ".join(f"{k} {w}" for w, k in reasons.items()) + ")" if said else "")


def figure_summary(claims: list[Claim], figure: str) -> str:
    """A figure's (or table's) status in one generated line, for the pages that summarise Part IV (the Results
    index): its verdict (:func:`figure_verdicts`), its claims by verdict, its rows not reached and its precondition,
    and for each set of runs its rows read, how many were in the regime and why the others were not (their ledger):
    "partly (4 claims: 3 partly, 1 no clear effect; 4 rows not reached, not counted; precondition partly met); runs in
    the regime: Fig. 2, MLP, 8,000 steps: 19 of 30 runs that fit (3 dead, 8 gave up classes); ...". Pasted with
    ``{glue:text}``, never typed, so that remaking a run cannot leave it behind."""
    rows = [c for c in claims if figure_of(c.where) == figure]
    if not rows:
        raise ValueError(f"no claims row is about {figure!r}")
    proper, counts = _judged(rows), _nonzero_counts(_judged(rows))
    parts = [f"{len(proper)} claim{'s' * (len(proper) != 1)}" + (f": {counts}" if counts else "")]
    unreached = sum(c.verdict == NOT_REACHED for c in counted(rows))
    parts += [f"{unreached} row{'s' * (unreached != 1)} not reached, not counted"] if unreached else []
    parts += [f"precondition {g.verdict}" for g in by_claim(rows) if g.precondition]
    out = f"{figure_verdicts(rows).get(figure, NOT_REACHED)} ({'; '.join(parts)})"
    judged: dict[str, str] = {}
    for c in counted(rows):
        if c.ledger and not c.failed_design:
            judged.setdefault(c.source, f"{c.where}: {c.ledger.removeprefix('judged on ').replace('; ', ', ')}")
    return out + ("; runs in the regime: " + "; ".join(judged.values()) if judged else "")


def figure_key(paper: str, figure: str) -> str:
    """The glue key of a figure's summary: ("Jacot", "Fig. 2") -> "jacot-fig-2", ("Tirer", "App. E.1") ->
    "tirer-app-e1"."""
    return f"{paper}-{figure}".lower().replace(". ", "-").replace(".", "").replace(" ", "-")


def paper_summary(claims: list[Claim]) -> str:
    """A paper's claims table in one generated line, for the front page: its figures and tables grouped by verdict
    (:func:`figure_verdicts`: "Figs. 1, 2, 3 and 4 in part"), then its claims judged, by verdict (the rows not
    reached and the preconditions are in the chapter's caption, :func:`verdict_counts`)."""
    names = {"reproduced": "reproduced", "partly": "in part", "not reproduced": "not reproduced",
             NO_EFFECT: "with no clear effect"}
    found = figure_verdicts(claims)
    groups = []
    for verdict, word in names.items():
        figures = [f for f in sorted(found, key=_figure_order) if found[f] == verdict and f.startswith(("Fig", "Tab"))]
        if figures:
            groups.append(f"{_joined(figures)} {word}")
    proper = _judged(claims)
    return "; ".join(groups) + f" (of {len(proper)} claims: {_nonzero_counts(proper)})"


def _figure_order(figure: str) -> tuple[str, int]:
    kind, _, number = figure.partition(" ")
    return (kind, int(number) if number.isdigit() else 0)


def _joined(figures: list[str]) -> str:
    """["Fig. 1", "Fig. 2", "Table 1"] -> "Figs. 1 and 2 and Table 1"."""
    by_kind: dict[str, list[str]] = {}
    for f in figures:
        kind, _, number = f.partition(" ")
        by_kind.setdefault(kind, []).append(number)
    parts = []
    for kind, numbers in by_kind.items():
        plural = {"Fig.": "Figs.", "Table": "Tables"}.get(kind, kind) if len(numbers) > 1 else kind
        listed = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
        parts.append(f"{plural} {listed}")
    return " and ".join(parts)


def figure_summaries(paper: str, claims: list[Claim]) -> dict[str, str]:
    """Every figure's (and table's) :func:`figure_summary` of ``paper``'s claims table, by :func:`figure_key`, and
    the whole table's :func:`paper_summary` under "<paper>-paper": what chapters 8 and 9 glue for the Results index
    and the front page, and what a test recomputes from the arrays."""
    figures = sorted({figure_of(c.where) for c in counted(claims)})
    out = {figure_key(paper, f): figure_summary(claims, f) for f in figures}
    return out | {f"{paper.lower()}-paper": paper_summary(claims)}
