"""ncbook.claims: the one verdict rule, the claims as data, each paper's own metrics."""

import html
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ncbook import claims, scaling
from ncbook.claims import Criterion, judge
from ncbook.registry import get_experiment

ROOT = Path(__file__).resolve().parents[1]

DOWN = Criterion("down")


def test_the_rule_is_symmetric_not_reproduced_needs_a_clear_effect_against():
    """Issue 60, point 3. Every run but one moves the paper's way, and the group means move the other way (one huge
    run), but within the margin: no clear effect (the old rule said not reproduced for any adverse mean). A clear
    move against (every run, beyond 2 SDs) is not reproduced; a clear move the paper's way reproduced; the same move
    as the first within the margin is no clear effect whichever its sign."""
    a = np.array([1.0, 1.0, 1.0, 1.0])
    b = np.array([0.9, 0.9, 0.9, 50.0])
    j = judge([a, b], DOWN)
    assert j.holds.tolist() == [True, True, True, False] and j.direction and j.separated is False
    assert claims.grade(3, 4, j.direction, j.separated, j.some_clear) == claims.NO_EFFECT
    against = judge([a, a * np.array([1.5, 1.6, 1.5, 1.6])], DOWN)
    assert not against.direction and claims.grade(0, 4, against.direction, against.separated) == "not reproduced"
    j = judge([a[:3] + [0.0, 0.01, 0.02], b[:3] - 0.5], DOWN)
    assert j.direction and j.separated and claims.grade(3, 3, j.direction, j.separated) == "reproduced"
    noise = np.array([0.1, -0.1, 0.1, -0.1])
    for shift in (0.02, -0.02):                        # a move of a fifth of the noise, either way
        j = judge([a + 1, a + 1 + shift + noise], DOWN)
        assert j.direction and j.separated is False and not j.some_clear


def test_no_margin_is_read_from_fewer_than_two_runs():
    """A comparison with one run in the regime has no margin (its SD is 0): the row is not reached, not graded."""
    a, b = np.array([2.0, np.nan, np.nan]), np.array([1.0, 5.0, np.nan])
    j = judge([a, b], DOWN, common=True)
    assert j.margin_runs == 1 and j.separated is None and j.outside == 2
    row = claims.Claim("x", "y", j.holds, "seeds", "", j.separated, direction=j.direction, outside=j.outside,
                       margin_runs=j.margin_runs, ledger="judged on the 1 of 3 runs")
    assert row.verdict == claims.NOT_REACHED and "a comparison needs 2" in row.count


def test_a_ratio_metric_is_compared_on_a_log_scale():
    """Three runs falling 10-fold from levels 1, 10 and 100: on a linear scale the spread of the falls (SD 36.7)
    hides their mean (37.0 < 2 SD); on a log scale every fall is exactly one decade, a clear effect."""
    a = np.array([1.0, 10.0, 100.0])
    assert judge([a, a / 10], DOWN).separated is False
    assert judge([a, a / 10], DOWN, log=True).separated is True
    assert judge([a - 50, a / 10], DOWN, log=True).separated is False     # not all positive: linear


def test_the_margin_is_in_the_stated_direction_and_on_every_metric(monkeypatch):
    """Two groups of different networks, SD 2.5: means 4.8 apart fall short of 2 x 2.5 = 5.0 (the referee's
    NC2-under-doubling case: partly although every run holds), 5.2 apart clear it; a move the wrong way never clears
    it; a row naming two metrics needs the margin on both."""
    a = np.array([7.5, 2.5, 7.5, 2.5])
    close, far = judge([a, a - 4.8], DOWN, paired=False), judge([a, a - 5.2], DOWN, paired=False)
    assert close.holds.all() and close.direction and close.separated is False
    assert claims.grade(4, 4, close.direction, close.separated) == claims.NO_EFFECT
    assert far.separated is True and claims.grade(4, 4, far.direction, far.separated) == "reproduced"
    up = judge([a, a + 20], DOWN, paired=False)
    assert up.separated is False and up.direction is False            # 20 against, beyond 2 x 2.5: clear
    monkeypatch.setattr(claims.regime, "UNPAIRED_VIEWS", ("groups",))   # where evaluate reads it
    two = {"nc1_pinv": np.stack([a, a - 5.2])[..., None],           # [group, seed, record]
           "nc2_etf_distance": np.stack([a, a - 4.8])[..., None]}
    claims.VIEWS["groups"] = lambda r, name: (["a", "b"], [r[name][0, :, -1], r[name][1, :, -1]])
    try:
        row = claims.evaluate(claims.Spec("Tirer", "x", "", "", ("NC1", "NC2"), "r", "groups", DOWN, "seeds"),
                              {"r": two})
        assert row.holds.all() and row.separated is False and row.verdict == "partly"
    finally:
        del claims.VIEWS["groups"]


def test_a_run_compared_with_itself_is_judged_on_its_paired_differences():
    """The referee's case: three seeds at levels 5, 7.5 and 10 each fall by 29-30%. Unpaired, the seed spread hides
    the fall (means 2.23 apart against 2 x 2.04); paired, each run falls by 1.45 to 3.0 (SD 0.63), clear of 2 SD.
    Rows read paired differences exactly where run i of every group is one network: every view but those of
    networks of different depths (a reading that pairs the depth sweeps, or unpairs the rest, fails here)."""
    a = np.array([5.0, 7.5, 10.0])
    b = a * np.array([0.71, 0.70, 0.70])
    assert judge([a, b], DOWN, paired=False).separated is False
    assert judge([a, b], DOWN, paired=True).separated is True
    assert judge([a, b], DOWN).separated is True                        # paired unless said otherwise
    paired = {}
    for paper in ("Jacot", "Tirer"):
        for spec in claims.specs_at(paper, "cpu"):
            paired[spec.view] = spec.view not in claims.UNPAIRED_VIEWS
    assert {v for v, p in paired.items() if not p} == {"head_depths", "nonlinear", "variance_sources"}
    assert all(paired[v] for v in ("training", "h_over_w", "settings", "layerwise", "roles", "head_layers"))


def test_graded_verdicts_separate_six_of_thirty_from_twenty_nine():
    assert claims.grade(29, 30, True, True) == "reproduced"
    assert claims.grade(29, 30, True, False) == claims.NO_EFFECT              # within the margin
    assert claims.grade(29, 30, True, False, some_clear=True) == "partly"      # clear on some metrics
    assert claims.grade(20, 30, True, True) == "partly"
    assert claims.grade(6, 30, True, True) == "not reproduced"
    assert claims.grade(15, 30) == "partly" and claims.grade(14, 30) == "not reproduced"
    assert claims.grade(30, 30, False, True) == "not reproduced"


def test_a_qualifier_is_a_bound():
    """"slightly worse" (up, at most x2) fails on a x10 rise and on a fall; "minor" (flat 1.1) fails on +40%;
    "at least" / "at most" levels."""
    slightly = Criterion("up", 1.0, cap=2.0)
    a = np.ones(3)
    assert judge([a, a * 1.5], slightly).holds.all()
    assert not judge([a, a * 10], slightly).holds.any() and judge([a, a * 10], slightly).direction
    assert not judge([a, a * 0.9], slightly).direction
    minor = Criterion("flat", 1.1)
    assert judge([a, a * 1.05], minor).holds.all() and not judge([a, a * 1.4], minor).holds.any()
    assert judge([np.array([0.0, 0.01])], Criterion("at most", 0.0)).holds.tolist() == [True, False]
    with pytest.raises(ValueError, match="criterion kind"):
        judge([a, a], Criterion("sideways"))
    with pytest.raises(ValueError, match="two or more groups"):
        judge([a], DOWN)
    with pytest.raises(ValueError, match="the same runs in each"):
        judge([a, a[:2]], minor)
    assert not judge([a, np.array([1.0, np.nan, 1.0])], minor).holds[1]     # a dead layer does not hold


def test_each_paper_is_measured_with_its_own_metrics():
    """Every Jacot row reads the trace-ratio NC1 and the condition-number NC2; every Tirer row the pseudo-inverse NC1
    and the ETF-distance NC2. Fails if a Jacot row is measured with Tirer's NC1 or the reverse."""
    assert claims.PAPER_METRICS["Jacot"]["NC1"] == "nc1_trace_ratio"
    assert claims.PAPER_METRICS["Jacot"]["NC2"] == "nc2_condition_number"
    assert claims.PAPER_METRICS["Tirer"]["NC1"] == "nc1_pinv"
    assert claims.PAPER_METRICS["Tirer"]["NC2"] == "nc2_etf_distance"
    jacot, tirer = claims.jacot_specs("cpu"), claims.tirer_specs()
    assert {s.paper for s in jacot} == {"Jacot"} and {s.paper for s in tirer} == {"Tirer"}
    used = {claims.PAPER_METRICS[s.paper][m] for s in jacot for m in s.metrics}
    assert "nc1_trace_ratio" in used and "nc1_pinv" not in used and "nc2_etf_distance" not in used
    used = {claims.PAPER_METRICS[s.paper][m] for s in tirer for m in s.metrics}
    assert "nc1_pinv" in used and "nc2_condition_number" not in used
    assert all(s.view in claims.VIEWS and s.criterion.text for s in jacot + tirer)


def _deep_head_result(S=3, R=11):
    """A synthetic Fig. 1/4 result: 1 backbone, 3 ReLU, 2 linear, output; every claim holds on every seed."""
    names = np.array(["backbone", "hidden 1", "hidden 2", "hidden 3", "linear 1", "linear 2", "output"])
    n = len(names)
    r = {"steps": np.arange(R) * 100.0, "train_error": np.zeros((S, R)), "layer_names": names}
    r["nc1_trace_ratio"] = np.ones((S, R, n))
    r["nc1_trace_ratio"][:, -1] = 1e-3
    r["nc1_pinv"] = np.ones((S, R, n))                               # Tirer's NC1 never falls
    k = np.full((S, R, n), 1.01)
    k[:, 0] = 50.0
    k[:, -1, 3:6] = [4.0, 2.0, 1.01]
    r["nc2_condition_number"] = k
    bal = np.full((S, R, n), np.nan)
    bal[:, :, 1:3] = 1.0
    bal[:, :, 4:6] = np.exp(-np.linspace(0, 3, R))[None, :, None]
    r["balancedness"] = bal
    cos = np.ones(n)
    cos[3:6] = [0.6, 0.3, 0.1]                                      # the head's Gram approaches the identity
    r["class_mean_cosines"] = (1 - cos)[None, :, None, None] * np.eye(10) + cos[None, :, None, None] * np.ones(
        (S, n, 10, 10))
    return r


def test_a_jacot_row_fails_when_measured_with_tirers_nc1():
    """The collapse row reads tr Σ_W / tr Σ_B; mapped to Tirer's pseudo-inverse NC1 (flat here) it fails: a flat
    curve is clearly short of the criterion's 100-fold fall."""
    class Cfg:
        steps, lr, lr_drops, momentum = 1000, 1.0, (0.8,), 0.0
    spec = next(s for s in claims.jacot._deep_head_specs("Fig. 4", "x", "hidden 1", 1e-3, Cfg) if "collapse" in s.claim)
    assert claims.evaluate(spec, {"x": _deep_head_result()}).verdict == "reproduced"
    swapped = dict(claims.PAPER_METRICS["Jacot"], NC1="nc1_pinv")
    claims.PAPER_METRICS["Jacot"], saved = swapped, claims.PAPER_METRICS["Jacot"]
    try:
        assert claims.evaluate(spec, {"x": _deep_head_result()}).verdict == "not reproduced"
    finally:
        claims.PAPER_METRICS["Jacot"] = saved


def test_deep_head_rows_hold_on_a_collapsing_result_and_fail_where_a_seed_fails():
    class Cfg:
        steps, lr, lr_drops, momentum = 1000, 1.0, (0.8,), 0.0
    fitted_specs = claims.jacot._deep_head_specs("Fig. 1", "x", "hidden 1", 1e-3, Cfg)
    specs = [replace(s, regime="") for s in fitted_specs]              # every run counted, as before issue 50
    r = _deep_head_result()
    got = {s.claim[:20]: claims.evaluate(s, {"x": r}).verdict for s in specs
           if s.view not in claims.WHATEVER_THE_LOSS}             # the balancing's rows: tested below
    assert set(got.values()) == {"reproduced", "met"} and got["precondition, not co"] == "met", got
    r["nc2_condition_number"][1, -1, 5] = 3.0                       # seed 1: NC2 worse at the last head layer
    r["train_error"][0, -1] = 0.02                                  # seed 0 does not fit (above FITS = 1%)
    r["class_mean_cosines"][2, -2, 0, 1] = 0.5
    rows = {s.claim[:20]: claims.evaluate(s, {"x": r}) for s in specs}
    assert rows["precondition, not co"].holds.tolist() == [False, True, True]
    assert rows["precondition, not co"].verdict == "partly met"
    assert rows["through the linear h"].holds.tolist() == [True] * 5 + [False]     # seed 2's last layer
    assert rows["NC2 improves with ea"].verdict == "partly"
    # read as Jacot's claims are (about networks that fit): seed 0 is outside, not a run that holds or fails
    fitted = {s.claim[:20]: claims.evaluate(s, {"x": r}) for s in fitted_specs}
    assert fitted["through the linear h"].holds.tolist() == [True, True, True, False]
    gram = fitted["through the linear h"]
    assert gram.outside == 2 and gram.in_regime == (2, 3)
    assert "judged on 2 of 3 runs that fit (1 stuck)" in gram.count
    assert fitted["precondition, not co"].holds.tolist() == [False, True, True]     # the precondition reads all
    r["train_error"][:, -1] = 0.5                                   # no seed fits: nothing to judge but the
    none = [claims.evaluate(s, {"x": r}) for s in fitted_specs if s.regime or s.precondition]   # balancing's rows
    assert {c.verdict for c in none} == {claims.NOT_REACHED, "not met"}
    assert all(not s.regime for s in fitted_specs if s.view in claims.WHATEVER_THE_LOSS)
    n = len(none) - 1
    assert claims.verdict_counts(none).startswith(f"0 reproduced, 0 partly, 0 not reproduced of 0 claims; {n} rows "
                                                  f"not reached by the reproduction, not counted ({n} claims with no "
                                                  "row reached)")
    assert "the reproduction did not reach the regime: judged on 0 of 3 runs" in none[1].count


def test_judge_reads_only_the_runs_with_a_value_when_asked():
    """``common``: a NaN is a network that does not fit; the comparison's runs, means and margin leave it out (a
    run that fails elsewhere could otherwise decide the means), and it is counted as outside the regime."""
    down = claims.Criterion("down")
    a, b = np.array([10.0, 10.0, 10.0, 10.0]), np.array([5.0, 5.1, 4.9, np.nan])
    j = claims.judge([a, b], down, common=True)
    assert j.holds.tolist() == [True, True, True] and j.outside == 1 and j.direction and j.separated
    assert claims.judge([a, b], down).holds.tolist() == [True, True, True, False]   # without: a NaN fails
    c = np.array([np.nan, 20.0, 20.0, 1.0])                       # group means against the claim on common runs,
    assert claims.judge([a, c], down, common=True).direction         # within the margin: no clear effect
    c = np.array([np.nan, 20.0, 21.0, 19.0])                      # clearly against
    assert not claims.judge([a, c], down, common=True).direction
    flat = claims.Criterion("flat", 2.0)
    j = claims.judge([a, np.array([12.0, np.nan, 30.0, np.nan]), np.array([np.nan] * 4)], flat, common=True)
    assert j.holds.tolist() == [True, False] and j.outside == 2


def test_numbers_in_claims_tables_stay_on_one_line():
    from ncbook.claims import unbroken_numbers

    out = unbroken_numbers("NC1: 8.91e-05 ± 1e-06 (>1e12 to 3,000); a<b")
    assert "<span class='n'>8.91e-05</span>" in out and "<span class='n'>>1e12</span>" not in out
    assert "<span class='n'>&gt;1e12</span>" in out and "<span class='n'>3,000</span>" in out and "a&lt;b" in out


def _tirer_cpu_rows():
    from ncbook.registry import get_experiment

    results = claims.cached_results("Tirer", "cpu")
    return claims.tirer_claims(results, get_experiment("tirer_wd_ablation").config("cpu").losses,
                               get_experiment("tirer_blur").config("cpu").blurred, "cpu")


def test_a_scale_beside_the_cpu_gives_its_verdict_where_its_result_exists_and_not_run_elsewhere():
    """Issue 49, point 5: another scale's verdict is shown under the cpu one on every row whose result it has, "not
    run" on the others (in the text on each row, on the page in the caption's count); with no other scale the table
    is the cpu table alone, as before."""
    rows = _tirer_cpu_rows()
    layerwise = claims.evaluate(next(s for s in claims.specs_at("Tirer", "cpu") if s.result == "tirer_layerwise"),
                                claims.cached_results("Tirer", "cpu"))
    fake = claims.Claim(layerwise.where, layerwise.claim, np.zeros(4, bool), "seeds", "made up")  # holds in none
    beside = {"gpu": {(fake.where, fake.claim): fake}}
    table = claims.ClaimsTable(rows, "Tirer", beside=beside, scale="cpu")
    text, page = repr(table), table._repr_html_()
    assert text.count("at gpu: not run") == len(rows) - 1
    assert "at gpu: not reproduced: 0 of 4 seeds; ours: made up" in text
    assert page.count("at gpu: <b>not reproduced</b>, 0 of 4 seeds") == 1 and "made up" in page
    counts = f"gpu: 0 reproduced, 0 partly, 1 not reproduced of 1 claim run there (shown under the cpu verdict), " \
             f"{len(rows) - 1} rows not run"
    assert counts in text and counts in page
    alone = claims.ClaimsTable(rows, "Tirer")
    assert "at gpu" not in repr(alone) and "at gpu" not in alone._repr_html_()
    assert page.count("<th>") == alone._repr_html_().count("<th>")          # no column added: rows wrap no more


def test_a_row_of_another_scale_with_no_cpu_row_is_shown_not_dropped():
    rows = _tirer_cpu_rows()
    odd = claims.Claim("Fig. 99", "a claim only the gpu configuration reads", np.ones(3, bool), "seeds", "1, 2, 3")
    table = claims.ClaimsTable(rows, "Tirer", beside={"gpu": {(odd.where, odd.claim): odd}}, scale="cpu")
    assert "only at gpu: [Fig. 99] a claim only the gpu configuration reads" in repr(table)
    assert "[Fig. 99] a claim only the gpu configuration reads</td><td data-label='why'>holds in every run</td>" \
           "<td data-label='verdict: runs in which it holds'>not run at cpu<br><span class='claim-scale " \
           "verdict-reproduced'>at gpu: <b>reproduced</b>" in table._repr_html_()


def test_every_claim_row_is_read_from_one_stored_result_and_list_counts_them():
    """``python -m ncbook list``'s claim rows: summed over the cpu results, every row of both tables once."""
    from ncbook.runner import stored_tags

    counts = {"Jacot": 0, "Tirer": 0}
    for name, tag in stored_tags():
        if tag.split("--")[0] == "cpu":
            for part in filter(None, claims.verdicts_reading(name, tag).split(", ")):
                paper, n = part.split()
                counts[paper] += int(n)
    assert counts == {p: len(claims.specs_at(p, "cpu")) for p in counts}


@pytest.mark.parametrize("path", ["README.md", "docs/details.md"])
def test_the_verdict_counts_stated_in_the_readme_and_the_details_are_the_computed_ones(path):
    """The prose states each paper's cpu verdict counts as "k reproduced, k partly, k not": the numbers the claims
    tables compute from the shipped results (a remade result that changes a verdict fails here until the text
    follows)."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[1] / path).read_text().split())
    rows = {"Tirer": _tirer_cpu_rows(),
            "Jacot": claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")}
    for paper, who in (("Jacot", "Jacot et al.'s"), ("Tirer", "Tirer et al.'s")):
        found = re.search(who + r"(?: claims)?: (\d+) reproduced, (\d+) partly, (\d+) not(?: reproduced)?, (\d+) no "
                          r"clear effect", text)
        assert found, (path, who)
        counts = tuple(sum(g.verdict == v for g in claims.by_claim(rows[paper]) if not g.precondition)
                       for v in claims.VERDICTS)
        assert tuple(map(int, found.groups())) == counts, (path, paper, counts)
    unreached = {p: sum(c.verdict == claims.NOT_REACHED for c in r if not c.precondition) for p, r in rows.items()}
    said = re.search(r"Jacot et al.'s claims: [^;]*?; (\d+) rows not reached", text)
    assert said and int(said.group(1)) == unreached["Jacot"], (path, unreached)
    said = re.search(r"Tirer et al.'s: [^;]*?; (\d+) (?:claims and (\d+) rows )?not reached", text)
    if said and said.group(2):                  # docs/details.md states the rows too
        assert int(said.group(2)) == unreached["Tirer"], (path, unreached)


def test_a_pure_exponential_has_no_plateau_and_a_plateau_is_found_where_there_is_one():
    """Issue 60, point 4. Balancedness decaying as exp(-r λt) (λt 0 to 8 at the lr drop): with a plateau from
    λt 2.5 the exponential row holds at r = 2 and the plateau row holds; a pure exponential (no plateau) holds the
    first row and fails the plateau row (an onset rule found a plateau in it); r = 0.5 fails the first row. After
    the drop, a fall at a smaller rate holds the last row, a rise or a fall as fast as before fails it."""
    class Cfg:
        steps, lr, lr_drops, momentum = 1000, 10.0, (0.8,), 0.0
    specs = {s.view: s for s in claims.jacot._deep_head_specs("Fig. 1", "x", "hidden 1", 1e-3, Cfg)}
    r = _deep_head_result()
    t = scaling.decay_time_at(r["steps"], Cfg, 1e-3)                 # λt of each record: 0 to 8 at the drop

    def verdicts(curve):
        r["balancedness"][:, :, 4:6] = curve[None, :, None]
        return {v: claims.evaluate(specs[v], {"x": r}).verdict for v in claims.WHATEVER_THE_LOSS}

    plateau = np.maximum(np.exp(-2.0 * t), np.exp(-5.0)) * np.exp(-0.5 * np.maximum(t - 8, 0))
    assert verdicts(plateau) == {"decay_rate": "reproduced", "decay_phases": "reproduced",
                                 "after_drop": "reproduced"}
    pure = np.exp(-2.0 * t)                 # gradient flow exactly: the same rate per unit of λt throughout,
    assert verdicts(pure)["decay_phases"] == "not reproduced"          # so no plateau, and per step (the paper's
    assert verdicts(pure)["decay_rate"] == "reproduced" and verdicts(pure)["after_drop"] == "reproduced"  # axis) a
    steps = np.asarray(r["steps"], dtype=float)                         # tenth of the rate after the drop
    same_per_step = np.exp(-2.0 * 1e-3 * Cfg.lr * steps)                # its negation: no slower fall per step
    assert verdicts(same_per_step)["after_drop"] == claims.NO_EFFECT
    lt_drop = float(t[np.argmax(steps >= 0.8 * Cfg.steps)])
    faster = np.exp(-2.0 * np.minimum(t, lt_drop) - 40.0 * np.maximum(t - lt_drop, 0))   # and faster per step
    assert verdicts(faster)["after_drop"] == "not reproduced"
    assert verdicts(np.exp(-0.5 * t))["decay_rate"] == "not reproduced"
    rise = np.maximum(np.exp(-2.0 * t), np.exp(-5.0)) * np.exp(0.5 * np.maximum(t - 8, 0))
    assert verdicts(rise)["after_drop"] != "reproduced"


def test_claims_on_cifar10_are_listed_as_not_run_and_counted_apart():
    """Issue 50, point 5: each paper's CIFAR-10 claims (and those needing runs not made) appear under its table as not
    run, with the reason, in the text and on the page, and the caption counts them apart from the verdicts."""
    rows = _tirer_cpu_rows()
    plain = claims.ClaimsTable(rows, "Tirer")
    table = claims.ClaimsTable(rows, "Tirer", not_run=claims.not_run("Tirer"))
    text, page = " ".join(repr(table).split()), table._repr_html_()
    cifar = [n for n in claims.not_run("Tirer") if "CIFAR-10" in n.where]
    assert len(cifar) == 3 and sum("CIFAR-10" in n.where for n in claims.not_run("Jacot")) == 2
    for n in claims.not_run("Tirer"):
        assert n.where in text and html.escape(n.claim) in page
    assert text.count("not run: CIFAR-10 is not present") == 3
    k = len(claims.not_run("Tirer"))
    assert f"{k} claims not run, listed below" in text and f"{k} claims not run" in page
    assert f"The claims no run tests ({k}), and why" in page            # folded below the table, not rows in it
    assert claims.verdict_counts(rows) in text and claims.verdict_counts(rows) in repr(plain)
    assert "CIFAR-10" not in repr(plain)


def test_minor_is_no_clear_effect_and_fails_on_a_clear_one():
    """Issue 60, point 4, and issue 74, point 2: "minor" is a change that is not clear. With no effect at all (3
    seeds, each the mean of its 9 classes, log-normal noise) the row reads minor (reproduced or partly) in all but
    the stated false-clear share of 400 draws (5%, with room for the draw: at most 8%); a clear change, every run up
    by half, fails it."""
    rng = np.random.default_rng(0)
    crit, got = Criterion("minor"), []
    for _ in range(400):
        clean = np.exp(rng.normal(0, 0.3, (3, 9)))
        blurred = clean * np.exp(rng.normal(0, 0.1, (3, 9)))
        j = judge([np.exp(np.log(clean).mean(1)), np.exp(np.log(blurred).mean(1))], crit, log=True)
        got.append(claims.grade(int(j.holds.sum()), j.holds.size, j.direction, j.separated))
    assert got.count("not reproduced") <= 0.08 * len(got), {v: got.count(v) for v in set(got)}
    assert got.count("reproduced") >= 0.8 * len(got), {v: got.count(v) for v in set(got)}
    clean = np.exp(rng.normal(0, 0.3, (3, 9)))
    j = judge([clean, clean * 1.5 * np.exp(rng.normal(0, 0.05, (3, 9)))], crit, log=True)
    assert not j.direction and claims.grade(int(j.holds.sum()), j.holds.size, j.direction, j.separated) == \
        "not reproduced"
    with pytest.raises(ValueError, match="two or more"):
        judge([clean[:1, :1], clean[:1, :1]], crit)


def test_sometimes_can_needs_one_clear_case_not_all(monkeypatch):
    """Issue 60, point 4: an existential sentence ("sometimes ... can") is reproduced by one metric with a clear
    case, whatever the other shows; read as universal (both metrics), the same runs are only partly reproduced; with
    no clear case on either metric it is no clear effect."""
    a = np.array([1.0, 1.1, 0.9])
    two = {"nc1_pinv": np.stack([a, a * 0.5])[..., None],          # [group, seed, record]: NC1 clearly halves
           "nc2_etf_distance": np.stack([a, a * np.array([1.1, 0.9, 1.0])])[..., None]}     # NC2: noise
    monkeypatch.setitem(claims.VIEWS, "groups", lambda r, name: (["a", "b"], [r[name][0, :, -1], r[name][1, :, -1]]))
    spec = claims.Spec("Tirer", "x", "", "", ("NC1", "NC2"), "r", "groups", DOWN, "seeds", exists=True)
    assert claims.evaluate(spec, {"r": two}).verdict == "reproduced"
    assert claims.evaluate(replace(spec, exists=False), {"r": two}).verdict == "partly"
    two["nc1_pinv"] = two["nc2_etf_distance"]
    assert claims.evaluate(spec, {"r": two}).verdict == claims.NO_EFFECT
    tirer = [s for s in claims.specs_at("Tirer", "cpu") if "sometimes" in s.sentence]
    assert len(tirer) == 1 and tirer[0].exists


def test_a_claim_is_counted_once_with_its_rows_under_it():
    """Issue 50, point 3: rows testing one sentence (figures, losses, sizes, sweeps) make one claim, graded from its
    rows (reproduced when all are, not reproduced when none is reproduced or partly, else partly), and the totals
    count claims; a precondition's rows make a precondition, never counted."""
    def row(sentence, verdict, pre=False):
        k = {"reproduced": 3, "partly": 2, "not reproduced": 0}[verdict]
        return claims.Claim("w", "c", np.arange(3) < k, "seeds", "", paper=sentence, precondition=pre)
    rows = [row("A", "reproduced"), row("A", "reproduced"), row("B", "reproduced"), row("B", "not reproduced"),
            row("C", "not reproduced"), row("C", "not reproduced"), row("D", "partly"), row("P", "reproduced", True),
            row("P", "not reproduced", True)]
    got = {g.sentence: g.verdict for g in claims.by_claim(rows)}
    assert got == {"A": "reproduced", "B": "partly", "C": "not reproduced", "D": "partly", "P": "partly met"}
    assert claims.verdict_counts(rows) == ("1 reproduced, 2 partly, 1 not reproduced of 4 claims in 7 rows; "
                                           "1 precondition, not counted: 1 partly met")


def test_a_result_cut_at_a_record_is_the_run_stopped_there():
    """The λt sweep reads a result as if training had stopped at a record: every per-record array ends there, the rows
    read that record as the end, and λt grows along the sweep."""
    r = _deep_head_result()
    cut = claims.at_record(r, 4)
    assert len(cut["steps"]) == 5 and cut["train_error"].shape[-1] == 5
    assert cut["nc2_condition_number"].shape[-2] == 5
    assert cut["class_mean_cosines"].shape == r["class_mean_cosines"].shape          # end of training only: kept
    np.testing.assert_array_equal(cut["nc2_condition_number"][..., -1, :], r["nc2_condition_number"][..., 4, :])

    class Cfg:
        steps, lr, lr_drops, momentum = 1000, 1.0, (0.8,), 0.0
    specs = [s for s in claims.jacot._deep_head_specs("Fig. 1", "x", "hidden 1", 1e-3, Cfg) if "collapse" in s.claim]
    sweep = claims.lambda_t_sweep(specs, r, Cfg, 1e-3, fractions=(0.5, 1.0))
    assert sweep[0][0] < sweep[1][0]
    assert [rows[0].verdict for _, rows in sweep] == ["not reproduced", "reproduced"]   # NC1 falls at the last record
    assert "λt: " in claims.format_sweep(sweep)


def test_the_results_readme_states_jacot_mlps_seeds_as_the_arrays_have_them():
    """Issue 60: results/README said seed 2 of jacot_mlp/cpu ends at 10% training error (it is 20.04%)."""
    from pathlib import Path

    from ncbook.runner import get

    r = get("jacot_mlp", "cpu")
    error = r["train_error"][:, 0, -1]
    kappa = r["nc2_condition_number"][:, 0, -1, :]
    text = " ".join((Path(__file__).resolve().parents[1] / "results" / "README.md").read_text().split())
    assert f"Seed 2 of `jacot_mlp/cpu` ends with {100 * error[2]:.2f}% training error" in text
    assert f"seeds 0 and 1 end at {100 * error[0]:.2f}% and {100 * error[1]:.2f}%" in text and max(error[:2]) <= 0.01

    def sci(x):
        return f"{x:.1e}".replace("e+0", "e").replace("e+", "e")

    assert f"{sci(kappa[2, 5])}, {sci(kappa[2, 6])}, {sci(kappa[2, 7])} in the three linear layers, " \
           f"{sci(kappa[2, 8])} at the output" in text
    for seed in (0, 1):
        chain = ", ".join(f"{k:.3g}" if k < 1.1 else f"{k:.2g}" for k in kappa[seed, 4:])
        assert chain in text, chain


def test_the_results_readme_states_the_wide_mse_ablation_as_the_arrays_have_it():
    """Issue 60: the regime reached by the 512-wide MSE ablation at the paper's lambda t, as results/README says it:
    how many runs end (and stay) at zero training error, the others' errors, the baseline NC1 against Table 1's."""
    from pathlib import Path

    from ncbook import compare
    from ncbook.registry import get_experiment
    from ncbook.reproduce import ABLATIONS
    from ncbook.runner import get

    wide = get("tirer_wd_ablation", "cpu", epochs=1000, hidden=(512, 512, 512), losses=("mse",))
    narrow = get("tirer_wd_ablation", "cpu")
    err = wide["train_error"][0]                                   # [seed, setting, record]
    zero = err[..., -1] == 0
    onset = [int(wide["epochs"][np.nonzero(e == 0)[0][0]]) for e in err[zero]]
    assert all((e[np.nonzero(e == 0)[0][0]:] == 0).all() for e in err[zero])          # and they stay there
    left = err[..., -1][~zero]
    paper = compare.TIRER_TABLE1["MNIST, MSE"]["NC1"][0]
    nc1 = compare.ablation_table(wide)["NC1"][0, 0]
    mse = get_experiment("tirer_wd_ablation").config("cpu").losses.index("mse")
    nc1_narrow = compare.ablation_table(narrow)["NC1"][mse, 0]
    text = " ".join((Path(__file__).resolve().parents[1] / "results" / "README.md").read_text().split())
    assert f"At the end {zero.sum()} of its {zero.size} runs are at zero training error and stay there from epochs " \
           f"{min(onset)}-{max(onset)} on; the other {(~zero).sum()} end at {round(left.min() * 5000)} to " \
           f"{round(left.max() * 5000)} digits of 5,000 ({100 * left.min():.2f}-{100 * left.max():.2f}%)" in text
    not_zero = {(ABLATIONS[j], int(wide["seeds"][i])) for i, j in zip(*np.nonzero(~zero))}
    assert not_zero == {("WDx2 for H", 0), ("WDx2 for H", 1), ("WDx2 for H", 2), ("WDx2 for W", 0),
                        ("WDx2 for W", 1)}, not_zero                                  # as the text lists them
    assert f"Its baseline NC1 (the paper's metric, at the end) is {nc1:.4f}, {nc1 / paper:.0f} times Table 1's " \
           f"{paper} (the 128-wide `cpu` run's is {nc1_narrow / paper:.0f} times)" in text



def test_the_wide_mse_ablations_regime_is_stated_by_its_claims_rows_as_the_arrays_have_it():
    """The 512-wide MSE ablation (Tirer et al.'s precondition and the row not reached), read against the arrays: its
    precondition row counts the runs at zero training error, and its doubling row is not reached because no seed has
    the doubling row's three settings there (doubling lambda_H leaves every seed short of it). Chapter 9 says this
    only through these generated rows (issue 73: its hand-written summary once said one seed had)."""
    from ncbook.reproduce import ABLATIONS
    from ncbook.runner import get

    err = get("tirer_wd_ablation", "cpu", **claims.TIRER_EXTRA[claims.WIDE][1])["train_error"][0][..., -1]
    zero = err == 0                                                       # [seed, setting]
    rows = [c for c in _tirer_cpu_rows() if "512 wide" in c.where and "2,000 epochs" not in c.where]
    pre = [c for c in rows if c.precondition]
    assert len(pre) == 1 and int(np.sum(pre[0].holds)) == zero.sum() and np.size(pre[0].holds) == zero.size
    doubling = [ABLATIONS.index(s) for s in ("baseline", "WDx2 for W", "WDx2 for H")]
    assert not zero[:, doubling].all(axis=1).any() and not zero[:, ABLATIONS.index("WDx2 for H")].any()
    assert [c.verdict for c in rows if "doubling" in c.claim and not c.precondition] == [claims.NOT_REACHED]


def test_the_front_page_and_the_results_index_paste_each_papers_and_figures_verdict():
    """Issue 62, point 1, and issue 73: the verdict sentences a reader meets first are the claims tables' own. The
    front page pastes each paper's line (claims.paper_summary) and each Results index entry its own figure's
    (claims.figure_summary), from chapters 8 and 9; tests/test_typed_numbers.py recomputes them from the arrays."""
    import re
    from pathlib import Path

    book = Path(__file__).resolve().parents[1] / "book"
    front = " ".join((book / "index.md").read_text().split())
    for chapter, paper in (("ch08_jacot_experiments", "jacot"), ("ch09_tirer_experiments", "tirer")):
        assert f"{{glue:text}}`{chapter}.ipynb::{paper}-paper:s`" in front
    jacot = claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")
    tirer = _tirer_cpu_rows()
    shown = {("Jacot", f) for f in claims.figure_verdicts(jacot)}
    shown |= {("Tirer", f) for f in claims.figure_verdicts(tirer)}
    index = " ".join((book / "results_index.md").read_text().split())
    entries = re.findall(r"\*\*(Jacot|Tirer) et al\., ((?:Fig|Table)\.? \d+)[^*]*\*\*: [^{]{0,12}\{glue:text\}`\w+"
                         r"\.ipynb::([\w.-]+)(?::s)?`", index)
    checked = 0
    for paper, figure, key in entries:
        assert key == claims.figure_key(paper, figure), (paper, figure, key)
        checked += (paper, figure) in shown
    assert checked >= 8, entries            # Tirer et al.'s Fig. 5 (c) is read on cross-entropy alone: not reached
    assert claims.verdicts._joined(["Fig. 1", "Fig. 2", "Fig. 3", "Table 1"]) == "Figs. 1, 2 and 3 and Table 1"


def counted_rows(rows):
    return [c for c in claims.counted(rows) if c.verdict != claims.NOT_REACHED]


def test_each_claims_table_says_how_its_results_were_made():
    """Issue 62, point 4: under each paper's table, every result its verdicts read, with the machine, date, commit,
    wall time and command of its manifest (the gpu-scale result made on a CPU says so)."""
    import json
    from pathlib import Path

    rows = claims.Provenance("Tirer").rows
    names = [r[0] for r in rows]
    assert "tirer_layerwise/gpu" in names and "tirer_wd_ablation/cpu" in names and len(names) == len(set(names))
    results = Path(__file__).resolve().parents[1] / "results"
    for name, where, date, commit, wall, command in rows:
        exp, tag = name.split("/", 1)
        p = json.loads((results / exp / f"{tag}.json").read_text())["provenance"]
        assert date == p["date"][:10] and commit == p["git_commit"][:7] and command == p["command"]
        assert wall == claims.wall_time(p) and wall.split(",")[0].split()[-1] in ("s", "min", "h")
        assert ("thread" in where) == (p["device"] == "cpu")
    page = claims.Provenance("Jacot")._repr_html_()
    assert page.count("<tr>") == len(claims.Provenance("Jacot").rows) + 1


def test_the_results_readme_states_fig4s_five_seeds_as_the_arrays_have_them():
    """Issue 60: Fig. 4 with the paper's five seeds: seeds 0-2 are the three-seed runs bit for bit, seeds 3 and 4 end
    at 10.1% training error (505 digits, one class given up: condition number at least 1e5 in every linear layer);
    issue 74: the rows about fitted networks are judged on the seeds of 0-14 that fit, at least five."""
    from pathlib import Path

    from ncbook.runner import get

    five, three = get("jacot_mlp", "cpu", seeds=(0, 1, 2, 3, 4)), get("jacot_mlp", "cpu")
    for name, v in three.items():
        if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.shape[:1] == (3,):
            np.testing.assert_array_equal(v, five[name][:3], err_msg=name)
    error = five["train_error"][:, 0, -1]
    kappa = five["nc2_condition_number"][:, 0, -1, 5:8]
    text = " ".join((Path(__file__).resolve().parents[1] / "results" / "README.md").read_text().split())
    assert f"Seeds 3 and 4 end at {100 * error[3]:.1f}% training error, {round(5000 * error[3])} of 5,000" in text
    assert error[3] == error[4] and round(5000 * error[3]) == 505 and (kappa[3:] >= 1e5).all()
    assert f"so {int((error <= claims.FITS).sum())} of the paper's 5 seeds fit" in text
    pooled = claims.pooled_result(claims.FIG4_POOLED, "cpu")                # issue 74: seeds added until 5 fit
    fit = int((pooled["train_error"][:, 0, -1] <= claims.FITS).sum())
    assert f"of seeds 0-14, {fit} of 15 fit, and the rows of Fig. 4 about fitted networks are judged on" in text
    rows = [c for c in claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu") if c.where == "Fig. 4, MLP"]
    assert rows and all(c.in_regime == (fit, 15) for c in rows if c.in_regime) and fit >= 5


def test_the_config_differences_are_read_from_the_configurations():
    """Issue 62, point 3: one table of every setting in which an experiment differs from its paper configuration;
    a setting that matches is not listed, one that differs is, both sides shown."""
    rows = dict(claims.ConfigDifferences("Tirer").rows)
    assert set(rows) == {"tirer_layerwise", "tirer_wd_ablation", "tirer_blur"}
    assert "arch mlp / resnet18" in rows["tirer_wd_ablation"] and "weight_decay" not in rows["tirer_wd_ablation"]
    assert "seeds 3 seeds / 1 seed" in rows["tirer_layerwise"]
    jacot = dict(claims.ConfigDifferences("Jacot").rows)
    assert "weight_decays 0.013, 0.052 / 0.001, 0.004" in jacot["jacot_resnet_head"]
    assert "record_every" not in " ".join(jacot.values())


def test_each_row_says_what_its_runs_showed_with_its_number():
    """Issue 73, point 4 (issue 62 before it): the glance table's "why" for every row of both papers' tables is
    about 15 words at most and, on a judged row, says what its runs showed with a number (:attr:`Claim.finding`),
    not the rule's reason; a row without a finding still gives the rule's reason: a clear effect against, a share
    under 90%, within the margin, not reached and why."""
    cfg = get_experiment("tirer_wd_ablation").config("cpu")
    rows = (claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")
            + claims.tirer_claims(claims.cached_results("Tirer", "cpu"), cfg.losses, (4, 9), "cpu"))
    assert all(0 < len(c.why.split()) <= 18 for c in rows), [c.why for c in rows if len(c.why.split()) > 18]
    judged = [c for c in rows if c.verdict in ("reproduced", "partly", "not reproduced", claims.NO_EFFECT)]
    assert judged and all(c.why == c.finding and re.search(r"\d", c.why) for c in judged), \
        [c.why for c in judged if c.why != c.finding]
    a = np.ones(4)
    against = judge([a, a * np.array([1.5, 1.6, 1.5, 1.6])], DOWN)
    row = claims.Claim("x", "y", against.holds, "seeds", "", against.separated, direction=against.direction)
    assert row.verdict == "not reproduced" and "against" in row.why
    noise = np.array([0.1, -0.1, 0.1, -0.1])
    within = judge([a + 1, a + 1.02 + noise], DOWN)
    row = claims.Claim("x", "y", within.holds, "seeds", "", within.separated, direction=within.direction)
    assert row.verdict == claims.NO_EFFECT and "not clear" not in row.why and "no effect clear" in row.why
    few = claims.Claim("x", "y", np.arange(6) < 4, "seeds", "")
    assert few.verdict == "partly" and few.why == "holds in 4 of 6 runs, under the 90% needed"
    none = claims.Claim("x", "y", np.zeros(0, bool), "seeds", "", outside=15, in_regime=(0, 15),
                        ledger="judged on 0 of 15 runs at zero error (15 not at zero error)")
    assert none.verdict == claims.NOT_REACHED and none.why == "none of our 15 runs reached zero training error"


def test_a_rows_picture_has_a_dot_per_run():
    """The glance table's picture of a row: a filled dot per run in which the claim holds, a hollow one per run in
    which it does not, a small grey one per run outside the regime."""
    row = claims.Claim("x", "y", np.array([True, False, True]), "seeds", "", outside=2)
    svg = row.dots()
    assert svg.count("dot-holds") == 2 and svg.count("dot-fails") == 1 and svg.count("dot-outside") == 2
    assert "2 of 3 runs hold, 2 outside the regime" in svg
    assert claims.Claim("x", "y", np.zeros(0, bool), "seeds", "").dots() == ""
    many = claims.Claim("x", "y", np.ones(50, bool), "seeds", "").dots()         # wraps: 24 a line
    assert "height='22'" in many and many.count("<circle") == 50


def test_part_fours_scales_table_reads_the_configurations_and_the_manifests(tmp_path):
    """Issue 62: the scales table gives each experiment's network, data, length and seeds at each scale from its
    configuration, and where and in how long it was made from the result's manifest; "not made" where no result is
    cached (an empty results folder: every cell)."""
    from ncbook import cache
    from ncbook.cost import duration
    from ncbook.runner import Run

    table = claims.Scales("Jacot")
    assert table.experiments == ["jacot_mlp", "jacot_resnet_fig1", "jacot_head_depth", "jacot_resnet_head",
                                 "jacot_nonlinear_depth"]
    what, where = table.cell("jacot_resnet_head", "cpu")
    assert what == "ResNet-8 (width 8); MNIST-5k x 50, 60 epochs, 3 seeds"
    p = cache.read_manifest("jacot_resnet_head", Run.of("jacot_resnet_head", "cpu").tag)["provenance"]
    assert where == f"CPU, {duration(p['wall_time_s'])}"
    assert table.cell("jacot_mlp", "paper") == ("width 1024; MNIST, 4,690,000 steps, 5 seeds", "not made")
    empty = claims.Scales("Tirer", root=tmp_path)
    assert all(empty.cell(exp, s)[1] == "not made" for exp in empty.experiments for s in empty.scales)
    assert "<table class='ncbook-scales'>" in table._repr_html_() and "shipped with the book" in repr(table)


def test_the_caption_says_what_ran_at_another_scale_and_where():
    """Issue 62: "at gpu" verdicts say what ran and where: the caption names each result another scale's rows read,
    with its network, data and length and the machine it was made on (the shipped gpu layer-wise result was made on
    a CPU, and says so)."""
    table = claims.ClaimsTable(_tirer_cpu_rows(), "Tirer", beside=claims.beside_scales("Tirer", "cpu"), scale="cpu")
    what, where = claims.what_ran("tirer_layerwise", "gpu")
    assert where.startswith("CPU, ") and f"tirer_layerwise: {what}, made on {where}" in table._counts()


def _fate(r: dict) -> list[str]:
    """Each run's fate at the end: "fits", or why it is outside the regime (:func:`claims.why_outside`)."""
    err = np.asarray(r["train_error"], dtype=float)
    kappa = claims.regime._last_layer_at_end(r["nc2_condition_number"]).ravel()
    e = err.reshape(-1, err.shape[-1])
    return ["fits" if e[i, -1] <= claims.FITS else claims.why_outside(e[i], float(kappa[i]), "fits")
            for i in range(len(e))]


def test_every_row_at_a_glance_links_to_our_figure_of_its_experiment():
    """Issues 62 and 73: each claim's row links to our figure of the experiment it reads, on that figure's page (the
    ResNet sweep's rows to the ResNet sweep's figure, not the MLP's); its group's heading links ours and the paper's.
    The browser test follows each link to a figure whose caption names that experiment."""
    import re

    for paper, rows in (("Jacot", claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")),
                        ("Tirer", _tirer_cpu_rows())):
        page = claims.ClaimsTable(rows, f"{paper} et al.", not_run=claims.not_run(paper), scale="cpu")._repr_html_()
        glance = page.split("<details class='ncbook-claims-detail'>")[0]
        unreached = {c.where for c in rows if not c.precondition} - {c.where for c in rows if not c.precondition
                                                                     and c.verdict != claims.NOT_REACHED}
        shown = [c for c in rows if not c.failed_design and not c.precondition and c.where not in unreached]
        assert all(claims.figure_link(c) for c in shown), [c.where for c in shown if not claims.figure_link(c)]
        links = re.findall(r"class='claim-fig' href='([\w.-]+)#([\w-]+)'", glance)
        assert len(links) == len(shown), paper
        assert set(links) <= {(f"{page}.html", anchor) for page, anchor in claims.FIGURES.values()}
        for c in shown:
            result = c.source.removesuffix(", mse").removesuffix(", ce")
            experiment = claims.GOVERNS[result][0]
            page_, anchor = claims.figure_link(c).split(".html#")
            assert (page_, anchor) in (claims.FIGURES[experiment],
                                       claims.FIGURES.get(f"{experiment}@{claims.figure_of(c.where)}")), c.where
    resnet = [c for c in claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")
              if "780 epochs" in c.where]
    assert resnet and all(claims.figure_link(c).endswith("#fig-jacot-fig2-resnet") for c in resnet)


def test_the_results_readme_states_the_ablations_made_for_the_papers_regime_as_the_arrays_have_them():
    """Issue 60: the MSE ablation under the book's 1/(2N) loss at the paper's lambda t (every run at zero error from
    the latest onset on, its baseline NC1 against Table 1's) and the 1,000-epoch cross-entropy ablation (its baseline
    NC1 against Table 1's, and the 500-epoch run's), as results/README's rows say."""
    from pathlib import Path

    from ncbook import compare

    rows = {(r.run, r.loss): r for r in compare.ablation_regimes(compare.cached_ablations("cpu"))}
    half, _, _ = compare.cached_ablations("cpu")["128 wide, 1,000 epochs, 1/(2N) loss"]
    err = half["train_error"][0]                                   # [seed, setting, record]
    assert (err[..., -1] == 0).all()
    onset = max(int(half["epochs"][np.nonzero(e != 0)[0][-1] + 1]) for e in err.reshape(-1, err.shape[-1]))
    mse = rows[("128 wide, 1,000 epochs, 1/(2N) loss", "mse")]
    ce_long, ce = rows[("128 wide, 1,000 epochs", "ce")], rows[("128 wide, 500 epochs", "ce")]
    text = " ".join((Path(__file__).resolve().parents[1] / "results" / "README.md").read_text().split())
    assert (f"every one of its {mse.runs} runs at zero training error from epoch {onset} on, baseline NC1 "
            f"{mse.times:.1f} times Table 1's") in text
    assert f"its baseline NC1 is {ce_long.times:.0f} times Table 1's ({ce.times:.0f} at 500 epochs)" in text
    wide = rows[("512 wide, 500 epochs", "ce")]
    assert f"its baseline NC1 is {wide.times:.0f} times Table 1's ({ce.times:.0f} at 128 wide): four times the " \
           "width lowers it by less than a fifth" in text and 0.8 < wide.nc1 / ce.nc1 < 1
    few = rows[("128 wide, 1,000 epochs, 300 per class, 1/(2N) loss", "mse")]
    from ncbook.scaling import governing_text
    lt = governing_text("tirer_wd_ablation", "cpu", paper={"dataset": "mnist", "per_class": 3000},
                        **compare.ABLATION_RUNS["128 wide, 1,000 epochs, 300 per class, 1/(2N) loss"])
    assert lt.startswith("λt 1.3 (1.3; matched)") and few.at_zero == few.runs
    assert (f"1000 epochs (λt 1.3, the paper's at 3K per class); every one of its {few.runs} runs at zero training "
            f"error, baseline NC1 {few.times:.1f} times Table 1's") in text


def test_a_figure_the_reproduction_did_not_reach_is_one_heading_at_a_glance():
    """Issue 60/62: a figure none of whose rows was reached (one reason for all) shows its heading with the ledger and
    "not reached: its n claims never judged", and its rows only in the full table; a figure with a reached row keeps
    every row."""
    rows = _tirer_cpu_rows()
    page = claims.ClaimsTable(rows, "Tirer et al.", not_run=claims.not_run("Tirer"), scale="cpu")._repr_html_()
    glance, full = page.split("<details class='ncbook-claims-detail'>", 1)
    for where in ("Figs. 3, 5, Table 1, MSE", "Fig. 4, MSE"):
        n = sum(c.where == where for c in rows)
        assert all(c.verdict == claims.NOT_REACHED for c in rows if c.where == where) and n == 2
        assert f"<b>not reached</b>: its {n} claims never judged" in glance
        # 512 wide at 1,000 and 2,000 epochs; 1/(2N) at 500, 300 (CE: not reached)
        assert glance.count("doubling λ_H moves NC1 and NC2") == 4
    assert "<b>not reached</b>: its 1 claim never judged" in glance     # Table 1, MSE (128 wide)
    mixed = [c for c in rows if c.where == "Figs. 3, 5, 512 wide, MSE"]
    assert {c.verdict for c in mixed} == {claims.NOT_REACHED, "reproduced"}
    from ncbook.runner import get

    wide = get("tirer_wd_ablation", "cpu", **claims.TIRER_EXTRA[claims.WIDE][1])["train_error"][..., -1]
    in_regime = f"{int((wide == 0).sum())} of {wide.size} in the regime, but none"
    assert glance.count(in_regime) == 1                               # its unreached row still shown
    assert full.count("<b>Figs. 3, 5, Table 1, MSE</b>") == 2


def test_the_ablations_ledger_says_how_near_collapse_its_runs_are():
    """Issue 60, point 2 ("NC level k times the paper's"): every row on Tirer et al.'s ablation that names a loss
    carries its result's baseline NC1 over Table 1's in its ledger and in the caption's regime line, computed from the
    arrays (a changed baseline changes it); Jacot et al.'s rows carry none."""
    from ncbook import compare

    rows = _tirer_cpu_rows()
    results = claims.cached_results("Tirer", "cpu")
    with_loss = [(c, s) for c, s in zip(rows, [s for s in claims.specs_at("Tirer", "cpu", tuple(results))
                                                if s.result in results]) if "loss" in s.args]
    assert len(with_loss) >= 10
    for c, s in with_loss:
        x = compare.baseline_over_table1(results[s.result], s.args["loss"], tuple(s.args["losses"]))
        near = c.ledger.endswith(f"; NC1 {compare.times_text(x)}x Table 1's")
        far = c.ledger == (f"not reached by the reproduction: NC1 {compare.times_text(x)}x Table 1's, above all its "
                           f"{s.args['loss'].upper()} entries")
        assert near or far, (c.where, c.ledger)
        assert far == (c.verdict == claims.NOT_REACHED and s.args["loss"] == "ce"), (c.where, c.ledger)  # issue 74
    ce = next(c for c, s in with_loss if c.where == "Figs. 3, 5, Table 1, CE")
    assert f"Figs. 3, 5, Table 1, CE 0 of 15 (NC1 {ce.ledger.split('NC1 ')[1].split('x')[0]}x, above all of Table 1)" \
        in claims.regime_line(rows)
    r = dict(results["tirer_wd_ablation"])
    r["nc1_pinv"] = r["nc1_pinv"] * 2
    spec = next(s for _, s in with_loss if s.where == "Figs. 3, 5, Table 1, CE")
    assert claims.evaluate(spec, {**results, "tirer_wd_ablation": r}).ledger != ce.ledger
    jacot = claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")
    assert not any("NC1" in c.ledger for c in jacot)


def test_a_precondition_read_on_several_runs_is_one_heading_at_a_glance():
    """Tirer et al.'s zero-error sentence is read on each ablation (128 wide, 512 wide, 1/(2N) at 500 and 300 per
    class): at a glance its first row's heading says every verdict, and no heading of its own repeats the others;
    the full table keeps a row for each."""
    rows = _tirer_cpu_rows()
    page = claims.ClaimsTable(rows, "Tirer et al.", not_run=claims.not_run("Tirer"), scale="cpu")._repr_html_()
    glance, full = page.split("<details class='ncbook-claims-detail'>", 1)
    pre = [c for c in rows if c.precondition and c.where.startswith("Sec. 6")]     # Fig. 6's is a sentence of its own
    assert [c.where for c in pre] == ["Sec. 6", "Sec. 6, 512 wide", "Sec. 6, 512 wide, 2,000 epochs",
                                      "Sec. 6, 1/(2N) loss", "Sec. 6, Fig. 4, 1/(2N) loss"]
    said = "; ".join(f"{c.where.removeprefix('Sec. 6, ')}: <b>{c.verdict}</b>, {int(c.holds.sum())} of {c.holds.size}"
                     for c in pre[1:])
    assert f"{int(pre[0].holds.sum())} of {pre[0].holds.size} runs; {said}</span>" in glance
    assert "<th colspan='3'>Sec. 6, 512 wide" not in glance
    assert "<th colspan='3'>Sec. 6<" in glance or "<th colspan='3'>Sec. 6 <span class='claim-links'>" in glance
    assert all(f"<b>{c.where}</b>" in full for c in pre)
    import html

    jacot = claims.jacot_claims(claims.cached_results("Jacot", "cpu"), "cpu")      # one sentence, several figures:
    page = claims.ClaimsTable(jacot, "Jacot et al.", not_run=claims.not_run("Jacot"), scale="cpu")._repr_html_()
    glance = page.split("<details class='ncbook-claims-detail'>", 1)[0]          # each in its own figure's heading
    shown = {c.where for c in jacot if c.precondition and not c.failed_design}
    assert len(shown) >= 4 and all(f"<th colspan='3'>{html.escape(w)}" in glance for w in shown)
    assert glance.count("precondition (not counted)") == len(shown)


def test_a_ledger_names_the_reasons_the_count_does_not_already_say():
    """"judged on 9 of 15 runs at zero error" already says 6 are not: that reason alone is left out; any other reason
    (dead, gave up classes, still falling, stuck) is named, and with it every reason."""
    assert claims.ledger(9, 15, {"not at zero error": 6}, "zero error") == "judged on 9 of 15 runs at zero error"
    assert claims.ledger(0, 15, {"dead": 5, "not at zero error": 10}, "zero error") == \
        "judged on 0 of 15 runs at zero error (5 dead, 10 not at zero error)"
    assert claims.ledger(9, 30, {"gave up classes": 12, "still falling": 9}, "fits") == \
        "judged on 9 of 30 runs that fit (12 gave up classes, 9 still falling)"


def test_a_resumed_results_wall_time_says_so():
    """The provenance tables give a resumed run's wall time with its resumes, and mark one that lacks the earlier
    segments (runner.stopped_segments), instead of passing the last segment off as the whole."""
    assert claims.wall_time({"wall_time_s": 619.2}) == "10 min"
    assert claims.wall_time({"wall_time_s": 3700.0, "segments": 2}) == "62 min, resumed once"
    assert claims.wall_time({"wall_time_s": 3700.0, "segments": 4}) == "62 min, resumed 3 times"
    assert claims.wall_time({"wall_time_s": 70.0, "wall_time_partial": True}) == "70 s (after its last resume only)"
    load = {"mean_1min": 2.94, "max_1min": 3.5, "readings": 12, "cpus": 2}
    assert claims.beside({"load": load}) == ", machine load 2.9 on 2 CPUs" and claims.beside({}) == ""


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("n", [2, 3, 5, 15])
def test_clear_has_a_five_percent_false_clear_rate_at_every_number_of_runs(n, paired):
    """Issue 74, point 2: "clear" means one thing at every n. Under no effect (simulated runs: a level shared by each
    run's two groups, and noise) the rule reads "clear" (for or against) in at most 5% of 4,000 draws (with three
    SEs of room for the draw), each way about half of it, by the same statistic; the 2-SD margin it replaced read
    "clear" 15% of the time with 2 runs. A real effect of 3 SDs per run is clear in most draws with 5 runs or more."""
    rng = np.random.default_rng(n + 100 * paired)
    draws, down = 4000, Criterion("down")
    fore = against = 0
    for _ in range(draws):
        level = rng.normal(0, 1, n) if paired else 0.0
        a, b = level + rng.normal(0, 1, n), level + rng.normal(0, 1, n)
        j = judge([a, b], down, paired=paired)
        fore += bool(j.some_clear)
        against += not j.direction
    room = 3 * np.sqrt(0.05 * 0.95 / draws)
    assert (fore + against) / draws <= 0.05 + room, (n, paired, fore, against)
    assert abs(fore - against) / draws <= 2 * room, (n, paired, fore, against)
    if n >= 5:
        hits = 0
        for _ in range(200):
            level = rng.normal(0, 1, n) if paired else 0.0
            a, b = level + rng.normal(0, 1, n), level - 3 + rng.normal(0, 1, n)
            hits += bool(judge([a, b], down, paired=paired).separated)
        assert hits >= 150, (n, paired, hits)


def test_a_sentence_is_judged_step_by_step_and_an_unjudged_step_keeps_it_from_reproduced():
    """Issue 74, point 3: a sentence with two steps (zeroing and doubling) whose second step no two runs of the regime
    can judge is not reproduced on its first step alone: it reads partly, and the row names the step it could not
    judge; with both steps judged and clear it is reproduced; both clear against it, not reproduced."""
    down = Criterion("down")
    rng = np.random.default_rng(3)
    a = 1 + 0.01 * rng.normal(size=6)
    b, c = a * 0.5, a * 0.25
    both = judge([a, b, c], down, common=True, log=True)
    assert both.separated and both.unjudged == 0
    cut = judge([a, b, np.where(np.arange(6) < 1, c, np.nan)], down, common=True, log=True)
    assert cut.separated and cut.unjudged == 1                  # the step it judged is clear; one it could not
    row = claims.Claim("x", "closer to collapse", cut.holds, "seeds", "", cut.separated, direction=cut.direction,
                       some_clear=cut.some_clear, margin_runs=cut.margin_runs, unjudged="baseline to WDx2 for H")
    assert row.verdict == "partly" and "not judged, under 2 runs in the regime: baseline to WDx2" in row.count
    full = claims.Claim("x", "y", both.holds, "seeds", "", both.separated, direction=both.direction,
                        some_clear=both.some_clear, margin_runs=both.margin_runs)
    assert full.verdict == "reproduced"
    up = judge([c, b, a], down, common=True, log=True)
    assert not up.direction and claims.grade(int(up.holds.sum()), up.holds.size, up.direction, up.separated,
                                             up.some_clear) == "not reproduced"
    half = judge([a, b, a], down, common=True, log=True)         # one step its way, one against: partly at most
    assert half.direction and not half.separated


def test_fig2s_variance_is_judged_depth_by_depth_with_seeds_as_replicates():
    """Issue 74, point 2: "the high variance is due to averaging over different weight decays" is read depth by
    depth, each depth's seeds the replicates (Welch's t, two-sided, at 5%), never with depths as replicates. On the
    shipped sweep's arrays replaced by simulated runs: weight decays a factor 10 apart with seed noise of 10%
    (what the sentence asserts) read reproduced at every depth; the same two weight decays drawn from one
    distribution (its negation) read no clear effect; "differ" reads "clear" under no difference at most 5% of the
    time (3 runs a group, 4,000 draws)."""
    rng = np.random.default_rng(74)
    r = dict(claims.cached_results("Jacot", "cpu")["jacot_head_depth"])
    spec = next(s for s in claims.jacot_specs("cpu") if s.view == "variance_sources" and s.result == "jacot_head_depth")
    D, S, W = r["train_error"].shape[:3]

    def simulated(apart: float) -> dict:
        out = dict(r)
        for name in ("nc1_trace_ratio", "nc2_condition_number"):
            v = np.array(r[name], dtype=float)
            for d in range(D):
                i = claims.views.layer_index(r, "deepest", d)
                v[d, ..., -1, i] = np.exp(rng.normal(0, 0.1, (S, W)) + np.log(apart) * np.arange(W))
            out[name] = v
        return out

    theory = claims.evaluate(spec, {spec.result: simulated(10.0)})
    assert theory.verdict == "reproduced" and theory.count.startswith(f"{2 * D} of {2 * D} depths"), theory.count
    negation = claims.evaluate(spec, {spec.result: simulated(1.0)})
    assert negation.verdict in (claims.NO_EFFECT, "partly") and negation.verdict != "reproduced"
    differ = Criterion("differ")
    clear = sum(bool(judge([rng.normal(0, 1, 3), rng.normal(0, 1, 3)], differ, paired=False).some_clear)
                for _ in range(4000))
    assert clear / 4000 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 4000), clear
    with pytest.raises(ValueError, match="in pairs"):
        judge([np.ones(3)] * 3, differ, paired=False)


def _readme_line(start: str) -> str:
    from pathlib import Path
    return next(x for x in (Path(__file__).parents[1] / "results" / "README.md").read_text().splitlines()
                if x.startswith(start))


def test_every_card_label_of_the_claims_tables_is_whole():
    """Issue 76: on a phone each cell of the claims tables shows its column's name (``data-label``); a name with an
    apostrophe ("the paper's claim") was cut at it when the attribute was not escaped."""
    from html.parser import HTMLParser

    rows = _tirer_cpu_rows()
    page = claims.ClaimsTable(rows, "Tirer")._repr_html_()
    heads = set(claims.ClaimsTable.HEADS) | set(claims.ClaimsTable.DETAIL_HEADS)
    labels: list[str] = []

    class Labels(HTMLParser):
        def handle_starttag(self, tag, attrs):
            labels.extend(v for k, v in attrs if k == "data-label")

    Labels().feed(page)
    assert labels and set(labels) <= heads and {h for h in heads if "'" in h} <= set(labels)


def test_the_results_readme_says_how_each_run_ended_as_the_arrays_have_it():
    """Issue 73: the results README's counts of runs (how many fit, how many gave up classes...) are generated from the
    arrays (scripts/results_table.py); here they are recounted with this file's own reading of each run's fate, and a
    changed array changes the file, which the README test then fails on."""
    import importlib.util

    from ncbook.runner import get

    spec = importlib.util.spec_from_file_location("results_table", ROOT / "scripts" / "results_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    for tag, overrides in (("jacot_resnet_head/cpu--epochs=780,record_every_epochs=30,weight_decays=(0.001, 0.004)",
                            {"weight_decays": (0.001, 0.004), "epochs": 780, "record_every_epochs": 30}),
                           ("jacot_head_depth/cpu--record_every=400,steps=8000", {"steps": 8000, "record_every": 400}),
                           ("jacot_mlp/cpu--seeds=(10, 11, 12, 13, 14)", {"seeds": (10, 11, 12, 13, 14)})):
        fates = Counter(_fate(get(tag.split("/")[0], "cpu", **overrides)))
        others = ", ".join(f"{n} {why}" for why, n in sorted(fates.items()) if why != "fits")
        said = f"{fates['fits']} of {sum(fates.values())} runs fit (the others: {others})"
        assert table.outcome(tag) == said
        assert f"{table.OUTCOME[0]}{said}{table.OUTCOME[1]}" in _readme_line(f"| `{tag}`")
    text, provenances = table.README.read_text(), table.manifests()
    real = table.regime_runs
    try:                                       # a remade run with one more fit changes the generated text
        table.regime_runs = lambda *a, **k: (lambda k_, n, r: (k_ + 1, n, r))(*real(*a, **k))
        assert table.rewrite(text, provenances)[0] != text
    finally:
        table.regime_runs = real

