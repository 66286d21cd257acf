"""No gpu or paper configuration diverges in its first steps (issue 49, point 1): each one's first ~50 optimiser
steps, trained on the CPU with its networks, learning rates, losses, weight decays and normalisation exactly as
configured, on real data (MNIST-5k standing in for a data set not present). A run that blows up raises
FloatingPointError (``train.check_divergence``): the configuration, not the device, is unstable."""

import math
from dataclasses import fields

import pytest

from ncbook.registry import EXPERIMENTS

from helpers import scale_cases

STEPS = 50
"""Optimiser steps of a full-batch or minibatch run cut short."""
STAND_IN = {"mnist": "mnist5k", "fashion-mnist": "mnist5k", "cifar10": "mnist5k"}
"""Data sets that need files from a download, and what stands in for them."""


def first_steps(name: str, scale: str) -> dict:
    """Overrides that cut a configuration to its first steps and nothing else that sets their stability: lengths,
    seeds (the first), the deepest network, one weight decay (it acts over 1/(lr lambda) steps, far more than 50),
    and where the loss is a mean over samples, the samples (the step's scale does not depend on their number);
    learning rates and losses stay whole (the largest rate is the one that blows up)."""
    cfg = EXPERIMENTS[name].config(scale)
    have = {f.name for f in fields(cfg)}
    out: dict = {}
    if "dataset" in have and cfg.dataset in STAND_IN:
        out["dataset"] = STAND_IN[cfg.dataset]
    if "seeds" in have:
        out["seeds"] = cfg.seeds[:1]
    if "steps" in have:
        out["steps"] = STEPS
        for every in ("record_every", "every"):
            if every in have:
                out[every] = STEPS
    if "checkpoints" in have:
        out["checkpoints"] = tuple(c for c in cfg.checkpoints if c <= STEPS)
    if "power_iters" in have:
        out["power_iters"] = 5
    if "epochs" in have:                      # minibatch SGD: a subset of the digits, enough for ~4 full batches
        out["epochs"] = 1
        if "record_every_epochs" in have:
            out["record_every_epochs"] = 1
        if "per_class" in have:
            out["per_class"] = min(100, cfg.per_class or 500)
    elif "batch_size" in have and cfg.batch_size:          # SGD in steps: the batch is what the step sees
        out["per_class"] = min(50, cfg.per_class or 500)
    elif "per_class" in have and name not in SUMMED:       # mean loss, full batch: fewer samples, the same step
        out["per_class"] = min(50, cfg.per_class or 500)
    if "depths" in have:                  # the deepest network: the least stable
        out["depths"] = (max(cfg.depths),)
    for grid in ("weight_decays", "weight_decays_last"):     # weight decay acts on a scale of 1/(lr lambda) steps,
        if grid in have:                                     # far beyond 50: one point
            out[grid] = getattr(cfg, grid)[:1]
    return out


SUMMED = {"jacot_phases", "edge_of_stability", "trained_ntk"}
"""Full-batch GD on the summed loss (Jacot et al. Sec. 4): its curvature grows with the number of samples, which
therefore stays as configured."""


def cut_repr(name: str, scale: str) -> str:
    return repr(EXPERIMENTS[name].config(scale, **first_steps(name, scale)))


ONE_SETTING = {"tirer_wd_ablation"}
"""Grids of ResNet18s trained one after another whose settings share one learning rate: cut to one run (below), the
CPU time of ten (290 s on 2 cores) being what CI cannot spare."""


@pytest.mark.slow
@pytest.mark.parametrize("name, scale", scale_cases(first_steps, ONE_SETTING))
def test_first_steps_do_not_diverge(name, scale):
    exp = EXPERIMENTS[name]
    cfg = exp.config(scale, **first_steps(name, scale))
    try:
        arrays = exp.run(cfg, device="cpu", progress=False)
    except FloatingPointError as err:
        pytest.fail(f"{name} at scale {scale} diverges in its first steps: {err}")
    losses = [v for k, v in arrays.items() if "loss" in k and v.dtype.kind == "f"]
    assert all(math.isfinite(float(v.max())) for v in losses if v.size and not (v != v).all())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SUMMED))
def test_full_batch_gd_rates_are_stable_at_initialisation_as_the_notes_say(name):
    """At the gpu and paper scales lr times the top Hessian eigenvalue at initialisation is at most 1/2 (GD is stable
    below 2; the margin is for the curvature's growth in the first steps), and the notes state that eigenvalue and
    the cpu scale's, as computed."""
    from ncbook.experiments import initial_sharpness

    exp = EXPERIMENTS[name]
    at_cpu = initial_sharpness(exp.config("cpu"))
    for scale in ("gpu", "paper"):
        cfg = exp.config(scale)
        top = initial_sharpness(cfg)
        assert max(cfg.lrs) * top <= 0.5, (scale, max(cfg.lrs) * top)
        assert f"top eigenvalue {top:.3g} " in exp.notes[scale] and f"100 digits: {at_cpu:.3g})" in exp.notes[scale]


@pytest.mark.slow
@pytest.mark.parametrize("scale", sorted({cut_repr("tirer_wd_ablation", s): s for s in ("paper", "gpu")}.values()))
def test_tirer_ablation_first_steps_do_not_diverge(scale):
    """tirer_wd_ablation's ResNet18 with the square loss (the run that blew up under the book's normalisation,
    issue 49), baseline weight decays, as :meth:`WeightDecayAblation.train_configs` sets it up: its four other
    settings take the same learning rate with other weight decays (which act over 1/(lr lambda) steps, far beyond
    these), its cross-entropy runs are tirer_blur's network and rate."""
    from ncbook.reproduce import _image_data, _train_settings

    cfg = EXPERIMENTS["tirer_wd_ablation"].config(scale, **first_steps("tirer_wd_ablation", scale))
    X, y = _image_data(cfg.dataset, cfg.per_class, "cpu", cfg.data_root, False, False)
    run = cfg.train_configs(len(y), "mse", int(y.max()) + 1)[:1]
    try:
        hist, = _train_settings(cfg.arch, cfg.hidden, X, y, run, cfg.seeds[0], "cpu", False, None, "first")
    except FloatingPointError as err:
        pytest.fail(f"tirer_wd_ablation at scale {scale} diverges in its first steps: {err}")
    assert all(math.isfinite(v) for v in hist.loss)
