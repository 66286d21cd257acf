"""Part IV's verdicts: every quantitative claim of both papers' experiment sections as data (one :class:`Spec` per
claim: the paper's sentence, the metric in that paper's own definition, the runs it is counted on, the criterion),
and the book's one verdict rule, :func:`judge`, that reads them all.

The rule (stated in chapter 8, section "The verdict rule"):

- a run *holds* when it shows the paper's direction with the criterion's effect (a claim that compares settings,
  depths, layers or times compares each run with itself, consecutive groups pairwise), or, for a claim of a level,
  when its value is within the criterion's bound; a qualifier of the paper ("slightly", "rapidly", "significant") is
  a stated bound in the criterion, and "minor" is an effect that is not clear (below);
- a comparison's effect is *clear* when the group means move past the criterion's threshold (the earlier group, times
  or divided by its factor) by a t statistic beyond the two-sided t quantile at :data:`FALSE_CLEAR` (5%: "clear"
  under no effect one time in twenty, whatever the number of runs): a paired t on the runs' differences where each
  run is compared with itself (one network at two times, layers or settings from one initialisation), Welch's t where
  the groups are different networks (heads or backbones of different depths: :data:`UNPAIRED_VIEWS`); on a log scale
  where the metric is a ratio (every view but :data:`LINEAR_VIEWS`, where all its values are positive). The rule is
  symmetric: **not reproduced** needs every step clear against the paper's direction, **reproduced** every step
  clear its way, by the same statistic; an effect not clear is **no clear effect**, whatever the runs; nothing is
  clear from fewer than 2 runs;
- otherwise, with k of n runs holding: **reproduced** when k/n >= :data:`REPRODUCED` (and, for a comparison, its
  effect is clear the paper's way on every metric the sentence names); **partly** when k/n >= :data:`PARTLY`, or
  when a comparison is clear on some metrics or steps and not on others; **not reproduced** below
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

from . import jacot, provenance, reading, regime, render, rule, tirer, verdicts, views
from .jacot import (
    EVERY_RUN,
    EXTRA,
    FAILED_13X,
    FIG1_FIVE,
    FIG3_CRITERIA,
    FIG3_PAPER,
    FIG4_POOLED,
    FITTED,
    FIVE_SEEDS,
    LONG_MLP,
    MLP_500,
    PAPER_LT,
    PAPER_WD,
    PAPER_WD_LONG,
    POOLS,
    WHATEVER_THE_LOSS,
    X10,
    ZERO_ERROR,
    about_fitted,
    jacot_specs,
)
from .provenance import (
    SCALE_ROLES,
    ConfigDifferences,
    Notes,
    Provenance,
    Scales,
    beside,
    lambda_t_ratios,
    resumes,
    unbroken_numbers,
    wall_time,
    what_ran,
)
from .reading import (
    RESULTS,
    at_record,
    beside_scales,
    cached_results,
    claims_at,
    format_sweep,
    head_sweep_claims,
    jacot_claims,
    jacot_fig2_sweep,
    lambda_t_sweep,
    pooled_result,
    specs_at,
    tirer_ablation_sweep,
    tirer_claims,
    verdicts_reading,
)
from .regime import FITS, GIVEN_UP, REGIMES, evaluate, fits, in_regime_only, regime_runs, why_outside
from .render import FIGURES, PAPER_URLS, ClaimsTable, FigureSummaries, figure_link
from .rule import (
    FALSE_CLEAR,
    LINEAR_VIEWS,
    NO_EFFECT,
    NOT_REACHED,
    PAPER_METRICS,
    PARTLY,
    REPRODUCED,
    UNPAIRED_VIEWS,
    Criterion,
    Judgement,
    Spec,
    grade,
    judge,
    threshold,
)
from .tirer import GOVERNS, HALF, HALF_300, TIRER_EXTRA, TIRER_EXTRA_LABELS, WIDE, WIDE_LONG, tirer_specs
from .verdicts import (
    CIFAR,
    LAYERWISE,
    NOT_RUN,
    PRECONDITION_GRADES,
    VERDICTS,
    Claim,
    ClaimRows,
    ClaimSummary,
    NotRun,
    by_claim,
    counted,
    figure_key,
    figure_of,
    figure_summaries,
    figure_summary,
    figure_verdicts,
    format_by_claim,
    format_claims,
    glance_counts,
    ledger,
    not_run,
    regime_line,
    verdict_class,
    verdict_counts,
)
from .views import (
    PHASES,
    VIEWS,
    largest_cosine,
    phase_rates,
    view_after_drop,
    view_blur_lambda,
    view_blur_vs_clean,
    view_decay_phases,
    view_decay_rate,
    view_end,
    view_gram_layers,
    view_h_over_w,
    view_head_depths,
    view_head_layers,
    view_last_relu,
    view_layerwise,
    view_layerwise_end,
    view_nonlinear,
    view_pair_kinds,
    view_roles,
    view_settings,
    view_training,
    view_variance_sources,
)

__all__ = [
    "CIFAR", "Claim", "ClaimRows", "ClaimSummary", "ClaimsTable", "ConfigDifferences", "Criterion", "EVERY_RUN",
    "FigureSummaries", "Notes",
    "EXTRA", "FAILED_13X", "FIG1_FIVE", "FIG3_CRITERIA", "FIG3_PAPER", "FIG4_POOLED", "FIGURES",
    "FITS", "FITTED", "FIVE_SEEDS",
    "GIVEN_UP", "GOVERNS", "HALF", "HALF_300", "Judgement", "LAYERWISE", "LINEAR_VIEWS", "LONG_MLP", "MLP_500",
    "FALSE_CLEAR",
    "NOT_REACHED", "NOT_RUN", "NO_EFFECT", "NotRun", "PAPER_METRICS", "PAPER_URLS", "PAPER_LT", "PAPER_WD",
    "PAPER_WD_LONG", "POOLS", "WIDE_LONG",
    "PARTLY", "PHASES", "PRECONDITION_GRADES", "Provenance", "REGIMES", "REPRODUCED", "RESULTS", "SCALE_ROLES",
    "Scales", "Spec", "TIRER_EXTRA", "TIRER_EXTRA_LABELS", "UNPAIRED_VIEWS", "VERDICTS", "VIEWS",
    "WHATEVER_THE_LOSS", "WIDE", "X10", "ZERO_ERROR", "about_fitted", "at_record", "beside", "beside_scales",
    "by_claim", "cached_results", "claims_at", "counted", "evaluate", "figure_key", "figure_link", "figure_of",
    "figure_summaries", "figure_summary", "figure_verdicts", "fits", "format_by_claim", "format_claims",
    "format_sweep", "glance_counts", "grade", "head_sweep_claims", "in_regime_only", "jacot_claims", "jacot_fig2_sweep",
    "jacot_specs", "judge",
    "lambda_t_ratios", "lambda_t_sweep", "pooled_result", "largest_cosine", "ledger", "not_run", "phase_rates",
    "regime_line", "regime_runs",
    "resumes", "specs_at", "threshold", "tirer_ablation_sweep", "tirer_claims", "tirer_specs", "unbroken_numbers",
    "verdict_class", "verdict_counts", "verdicts_reading", "view_after_drop", "view_blur_lambda",
    "view_blur_vs_clean", "view_decay_phases", "view_decay_rate", "view_end", "view_gram_layers", "view_h_over_w",
    "view_head_depths", "view_head_layers", "view_last_relu", "view_layerwise", "view_layerwise_end",
    "view_nonlinear", "view_pair_kinds", "view_roles", "view_settings", "view_training", "view_variance_sources",
    "wall_time", "what_ran", "why_outside", "rule", "verdicts", "render", "views", "regime", "jacot", "tirer",
    "reading", "provenance"
]
