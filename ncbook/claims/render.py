"""The claims tables as HTML (:class:`ClaimsTable`), with their links to our figures and the papers."""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field

import numpy as np

from ..compare import WRAP
from .provenance import unbroken_numbers, what_ran
from .rule import NOT_REACHED
from .tirer import GOVERNS
from .verdicts import (
    Claim,
    NotRun,
    counted,
    figure_key,
    figure_of,
    figure_summaries,
    figure_verdicts,
    glance_counts,
    regime_line,
    verdict_class,
    verdict_counts,
)

PAPER_URLS = {"Jacot": "https://arxiv.org/abs/2410.04887", "Tirer": "https://arxiv.org/abs/2210.16658"}
"""Where each paper is (its figures are in it)."""

FIGURES = {"jacot_mlp": ("ch08_jacot_figs_1_4", "fig-jacot-fig4"),
           "jacot_resnet_fig1": ("ch08_jacot_figs_1_4", "fig-jacot-fig1-resnet"),
           "jacot_head_depth": ("ch08_jacot_fig_2", "fig-jacot-fig2"),
           "jacot_resnet_head": ("ch08_jacot_fig_2", "fig-jacot-fig2-resnet"),
           "jacot_nonlinear_depth": ("ch08_jacot_fig_3", "fig-jacot-fig3"),
           "tirer_layerwise": ("ch09_tirer_fig_2", "fig-tirer-fig2"),
           "tirer_wd_ablation": ("ch09_tirer_table_1", "fig-tirer-fig3"),
           "tirer_wd_ablation@Fig. 4": ("ch09_tirer_table_1", "fig-tirer-fig4"),
           "tirer_blur": ("ch09_tirer_fig_6", "fig-tirer-fig6")}
"""The page of the book and the id of its figure that draws each experiment's result (the figure a claims row reads;
Tirer et al.'s Fig. 4 rows, on 300 digits per class, have a figure of their own): each row of a claims table links
to it, and ``tests/test_browser.py`` follows every link to a figure whose caption names that experiment."""


def figure_link(c: Claim) -> str:
    """The address of our figure that claims row ``c`` reads ("" for none): page and anchor, from the experiment
    its result comes from."""
    name = c.source.removesuffix(", mse").removesuffix(", ce")          # the result, without the loss it reads
    experiment = GOVERNS[name][0] if name in GOVERNS else name
    page, anchor = FIGURES.get(f"{experiment}@{figure_of(c.where)}", FIGURES.get(experiment, ("", "")))
    return f"{page}.html#{anchor}" if page else ""


def ran_there(o: Claim, scale: str) -> str:
    """What another scale's row ran and where, for its "at <scale>" line: "; ran: <network; data, length, seeds>,
    on <device, wall time>" ("" for a row whose experiment is not named)."""
    from ..registry import EXPERIMENTS

    exp = o.source.split(",")[0]
    return "; ran: {}, on {}".format(*what_ran(exp, scale)) if exp in EXPERIMENTS else ""


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
        return (f"{o.verdict}: {o.count}" + (f"; ours: {o.numbers}; governing: {o.governing}" if numbers else "")
                + ran_there(o, scale))

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

    def _beside_counts(self, made: bool = True) -> str:
        """Each other scale's counts: its verdicts on the rows run there, what ran and where (with ``made``: each
        row's "at <scale>" line on the page says it), the rows not run."""
        out = ""
        for s, by in self.beside.items():
            left = len(self.claims) - sum((c.where, c.claim) in by for c in self.claims)
            ran = dict.fromkeys(GOVERNS[o.source.split(",")[0]][0] for o in by.values()
                                if o.source.split(",")[0] in GOVERNS)
            what = "; ".join(f"{exp}: " + ", made on ".join(what_ran(exp, s)) for exp in ran) if made else ""
            out += (f"; {s}: {verdict_counts(list(by.values()))} run there (shown under the {self.scale} verdict"
                    f"{'; ' + what if what else ''}), {left} row{'s' * (left != 1)} not run")
        return out

    def _counts(self) -> str:
        out = (f"{self.scale}: " if self.beside and self.scale else "") + verdict_counts(self.claims)
        out += self._beside_counts()
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
                f"<td data-label='{e(h)}'" + (f" class='verdict-{colour[i]}'" if colour.get(i) else "")
                + f">{x}</td>" for i, (h, x) in enumerate(zip(heads, values))) + "</tr>"

        css = verdict_class

        def head(heads):
            return "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead>"

        def elsewhere(scale: str, o: Claim) -> str:
            """Another scale's verdict, on a line of its own under the shown one (only where it was run)."""
            return (f"<br><span class='claim-scale verdict-{css(o.verdict)}'>at {e(scale)}: <b>{e(o.verdict)}</b>, "
                    f"{e(o.count)}{e(ran_there(o, scale))}</span>")

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
                few = (f"; {c.margin_runs} run in the regime, a comparison needs 2"
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
            link = next((figure_link(c) for c in self.claims if c.where == where and figure_link(c)), "")
            links = (f" <span class='claim-links'>(<a href='{link}'>ours</a>, <a href='{PAPER_URLS[paper]}'>"
                     f"paper</a>)</span>" if link and paper in PAPER_URLS else "")
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
                link = figure_link(c)
                claim = e(c.claim) + (f" <a class='claim-fig' href='{link}' title='our figure'>(fig.)</a>"
                                      if link else "")
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
        caption = e(glance_counts(self.claims, len(self.not_run))
                    + (f" Other scales: {self._beside_counts(made=False).removeprefix('; ')}." if self.beside else ""))
        legend = ("<p class='claims-legend'>A row per claim of a figure; <i>why</i>: what its runs showed, from the "
                  "first group to the last (a factor ×: the median run's; a rate or a difference: median to "
                  "median; where it was not judged, why not); <i>verdict</i>: the runs in which the claim holds, a "
                  "dot each (<span class='dot-key holds'>●</span> holds, <span class='dot-key fails'>○</span> does "
                  "not, <span class='dot-key outside'>∘</span> outside the regime). The caption counts rows and "
                  "claims: a claim's verdict combines its rows.</p>")
        return (f"{legend}<table class='ncbook-claims'><caption>{caption}</caption>{head(self.HEADS)}"
                f"<tbody>{rows}</tbody>"
                f"</table>{not_run}<details class='ncbook-claims-detail'><summary>Each claim in full: the paper's "
                f"words and "
                f"metric, what each run must show, our numbers, the governing quantities</summary>"
                f"<table class='ncbook-claims ncbook-claims-full'>{head(self.DETAIL_HEADS)}<tbody>{details}</tbody>"
                f"</table></details>")


@dataclass(frozen=True)
class FigureSummaries:
    """A paper's claims table figure by figure: each figure's (or table's) verdict over its claims, its counts and
    the runs in the regime, one generated line each (:func:`figure_summaries`, what the Results index pastes), and
    a link to the figure's page; the whole table's line last."""

    paper: str
    claims: list[Claim]

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill(f"{key}: {line}", WRAP, subsequent_indent="    ")
                         for key, line in figure_summaries(self.paper, self.claims).items())

    def _repr_html_(self) -> str:
        e = html.escape
        pages: dict[str, str] = {}
        for c in counted(self.claims):
            link = figure_link(c)
            pages.setdefault(figure_of(c.where), link.split("#")[0] if link else "")
        verdicts = figure_verdicts(self.claims)
        body = ""
        for figure in sorted(pages, key=lambda f: figure_key(self.paper, f)):
            line = figure_summaries(self.paper, self.claims)[figure_key(self.paper, figure)]
            verdict = verdicts.get(figure, NOT_REACHED)
            name = f"<a href='{pages[figure]}'>{e(figure)}</a>" if pages[figure] else e(figure)
            counts, _, runs = line.removeprefix(f"{verdict} (").partition("); runs in the regime: ")
            runs = f"<br><span class='claim-ledger'>runs in the regime: {e(runs)}</span>" if runs else ""
            body += (f"<tr><td data-label='figure'>{name}</td><td data-label='verdict' class='verdict-"
                     f"{verdict_class(verdict)}'><b>{e(verdict)}</b></td><td data-label='its claims and runs'>"
                     f"{e(counts.removesuffix(')'))}{runs}</td></tr>")
        whole = figure_summaries(self.paper, self.claims)[f"{self.paper.lower()}-paper"]
        return (f"<table class='ncbook-claims ncbook-figure-summaries'><caption>{e(self.paper)} et al., figure by "
                f"figure: {e(whole)}</caption><thead><tr><th>figure</th><th>verdict</th><th>its claims and runs"
                f"</th></tr></thead><tbody>{body}</tbody></table>")
