"""Jacot et al.'s claims as data: one :class:`~ncbook.claims.rule.Spec` per quantitative sentence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..registry import get_experiment
from .regime import FITS
from .rule import Criterion, Spec

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
             Criterion("down", 1.0, cap=1e3, text="per training step, the axis of the paper's figure (per unit of "
                       "λt gradient flow predicts no change): from the drop to the end, ln(fall) / step below the "
                       "first half's rate, and a fall (above a thousandth of it)"), "seeds",
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
             Criterion("down", text="lower with each added layer; significantly: a clear effect (t test at 5%)"),
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
             "different weight decay values\"", "at each depth, the runs' spread comes from the weight decays: "
             "their runs differ clearly", ("NC1", "NC2"), result, "variance_sources",
             Criterion("differ", text="depth by depth (a run is a training run: its seeds are the replicates), on a "
                       "log scale, the runs at the two weight decays differ clearly, either way (Welch's t at 5%): "
                       "the spread of the figure's average over both is then the weight decays'"), "depths"),
    ])


FIG3_PAPER = {
    ("balancedness", "min"): "\"Balancedness clearly improves with depth ... in the most balanced layer\"",
    ("balancedness", "mean"): "\"Balancedness clearly improves with depth, both on average per layer\"",
    ("negativity", "min"): "\"the non-negativity of the layer that least uses the ReLU clearly decreases\"",
    ("negativity", "mean"): "\"a decrease in the mean negativity is also reported (although less pronounced)\"",
}
"""What Jacot et al. Sec. 6 says of each Fig. 3 curve (the paper prints no values)."""


FIG3_CRITERIA = {key: Criterion("down", text="lower at the largest depth; clearly: a clear effect (t test at 5%)")
                 for key in FIG3_PAPER} | {("negativity", "mean"): Criterion(
                     "down", text="lower at the largest depth (the sentence asks no more than a decrease, \"less "
                     "pronounced\"; \"clear\" is the rule's, as for every comparison)")}
"""What each Fig. 3 row asks: "clearly" is a clear effect where the sentence says it; the mean negativity's says only
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

FIG4_POOLED = "jacot_mlp@seeds 0-14"
"""Fig. 4 on fifteen seeds, until at least five fit (issue 74): the runs of seeds 0-4, 5-9 and 10-14, three results
of five seeds each (full-batch GD: every seed is its own network on the same data), pooled along the seeds where all
three are cached (:data:`POOLS`); its rows read it in place of :data:`FIVE_SEEDS`."""

FIG1_FIVE = "jacot_resnet_fig1@seeds=(0, 1, 2, 3, 4)"
"""Fig. 1 with the paper's five seeds (the `cpu` scale has three; seeds 0-2 are the same networks)."""

PAPER_LT = "jacot_resnet_head@epochs=780,weight_decays=(0.001, 0.004)"
"""Fig. 2's ResNet sweep at the paper's weight decays trained to the paper's λt as we assume it (780 epochs): where
it is cached it supersedes the 240-epoch run."""

MLP_500 = "jacot_head_depth@per_class=500,steps=8000"
"""Fig. 2's MLP sweep on 500 digits per class (ten times the `cpu` scale's data, nearer the paper's all of MNIST),
8,000 steps, at both of the paper's weight decays (issue 74; assembled from a piece per weight decay, the larger's
from a piece per depth). Chapter 8's Fig. 2 page reads Fig. 2's rows on it (:func:`head_sweep_claims`) beside the
claims table, which keeps :data:`LONG_MLP`: at the larger weight decay none of its runs fits, so it would judge the
figure's rows on one weight decay where the 8,000-step sweep judges them on both."""

POOLS: dict[str, tuple[str, int, tuple[dict[str, Any], ...]]] = {
    FIG4_POOLED: ("seeds", 0, tuple({"seeds": tuple(range(i, i + 5))} for i in (0, 5, 10)))}
"""Results read as one run pooled from several stored ones: the setting they are pooled along, its axis in the
arrays, and each member's overrides (every member must be cached: a pool is read whole or not at all)."""

EXTRA: dict[str, tuple[str, dict[str, Any]]] = {X10: ("jacot_head_depth", {"lr": 0.05}),
                                                 PAPER_WD: ("jacot_resnet_head", {"weight_decays": (0.001, 0.004)}),
                                                 PAPER_WD_LONG: ("jacot_resnet_head", {
                                                     "weight_decays": (0.001, 0.004), "epochs": 240,
                                                     "record_every_epochs": 20}),
                                                 LONG_MLP: ("jacot_head_depth", {"steps": 8000, "record_every": 400}),
                                                 FIVE_SEEDS: ("jacot_mlp", {"seeds": (0, 1, 2, 3, 4)}),
                                                 FIG4_POOLED: ("jacot_mlp", {"seeds": tuple(range(15))}),
                                                 FIG1_FIVE: ("jacot_resnet_fig1", {"seeds": (0, 1, 2, 3, 4)}),
                                                 PAPER_LT: ("jacot_resnet_head", {
                                                     "weight_decays": (0.001, 0.004), "epochs": 780,
                                                     "record_every_epochs": 30}),
                                                 MLP_500: ("jacot_head_depth", {"per_class": 500, "steps": 8000,
                                                                                "record_every": 400})}
"""Runs beside the `cpu` scale that Part IV's claims tables also read, by name: the experiment and its overrides."""


def jacot_specs(scale: str = "cpu", extra: tuple[str, ...] = ()) -> list[Spec]:
    """Every quantitative claim of Jacot et al. Sec. 6 and App. A as data, at ``scale`` (for the λt of its runs);
    with the runs ``extra`` (names of :data:`EXTRA`) also Fig. 2's rows on them."""
    mlp, fig1_cfg = get_experiment("jacot_mlp").config(scale), get_experiment("jacot_resnet_fig1").config(scale)
    nd = get_experiment("jacot_nonlinear_depth").config(scale)
    fig4 = next((n for n in (FIG4_POOLED, FIVE_SEEDS) if n in extra), "jacot_mlp")
    fig1 = FIG1_FIVE if FIG1_FIVE in extra else "jacot_resnet_fig1"
    specs = _deep_head_specs("Fig. 4, MLP", fig4, "hidden 3", mlp.weight_decays[0], mlp)
    specs += _deep_head_specs("Fig. 1, ResNet", fig1, "hidden 1", fig1_cfg.weight_decays[0], fig1_cfg)
    # a sweep trained further supersedes the same networks' shorter run
    specs += (_head_sweep_specs("Fig. 2, MLP, 8,000 steps", LONG_MLP) if LONG_MLP in extra else
              _head_sweep_specs("Fig. 2, MLP", "jacot_head_depth"))
    specs += _head_sweep_specs("Fig. 2, MLP, λt x10", X10) if X10 in extra else []
    specs += [replace(s, failed_design=FAILED_13X) for s in _head_sweep_specs("Fig. 2 right / 5, ResNet",
                                                                             "jacot_resnet_head")]
    if PAPER_LT in extra:
        specs += _head_sweep_specs("Fig. 2 right / 5, ResNet, the paper's λ and λt, 780 epochs", PAPER_LT)
    elif PAPER_WD_LONG in extra:
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
