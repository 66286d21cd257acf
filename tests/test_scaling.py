"""ncbook.scaling: the quantities that govern Part IV's claims, for the paper's settings and the book's."""

import math

import numpy as np
import pytest

from ncbook import scaling
from ncbook.registry import get_experiment
from ncbook.train import TrainConfig


@pytest.mark.parametrize("steps,drops", [(10, ()), (1000, (0.8,)), (997, (0.4, 0.8)), (3, (0.5,))])
def test_lr_sum_is_the_sum_of_the_trainers_learning_rates(steps, drops):
    tc = TrainConfig(steps=steps, lr=0.3, weight_decay=0.0, lr_drops=drops)
    assert scaling.lr_sum(steps, 0.3, drops) == pytest.approx(sum(tc.lr_at(k) for k in range(steps)), rel=1e-12)


def test_the_papers_decay_time_from_its_stated_settings():
    """Jacot Fig. 1: 5,000 epochs of CIFAR-10 at batch 128 (391 steps), lr = wd = 1e-3, plain SGD, / 10 at 80%:
    λt = 1e-6 x 1,955,000 x (0.8 + 0.02) = 1.603; Tirer Table 1 (CIFAR-10, batch 256: 196 steps), lr 0.05,
    momentum 0.9, wd 5e-4, / 10 at 40% and 80%: 5e-4 x 0.05 x 19,600 x 0.442 / 0.1 = 2.166."""
    fig1 = get_experiment("jacot_resnet_fig1").config("paper")
    assert scaling.num_steps(fig1) == 1_955_000
    assert scaling.decay_times(fig1).tolist() == pytest.approx([1e-6 * 1_955_000 * 0.82])
    tirer = get_experiment("tirer_wd_ablation").config("paper")
    assert scaling.decay_times(tirer).tolist() == pytest.approx([5e-4 * 0.05 * 19_600 * 0.442 / 0.1])
    assert scaling.samples_per_class(tirer) == 5000


def test_momentum_counts_and_fig3s_weight_decay_follows_the_depth():
    """Heavy-ball momentum 0.9 multiplies the flow time by 10 (dropping it is the bug this catches); Fig. 3's
    weight decay 0.016 / L gives one λt per depth and learning rate."""
    cpu = get_experiment("jacot_nonlinear_depth").config("cpu")
    t = scaling.decay_times(cpu)
    assert len(t) == len(cpu.depths) * len(cpu.lrs)
    flow = scaling.lr_sum(cpu.steps, 0.01, cpu.lr_drops) / (1 - 0.9)
    assert t.max() == pytest.approx(flow * 0.016 / (cpu.depths[0] + cpu.num_linear))


def test_matched_within_a_factor_two_and_every_cpu_match_the_book_claims():
    g = scaling.Governing("λt", (1.0, 1.0), (2.0, 2.0))
    assert g.matched and not scaling.Governing("λt", (1.0, 1.0), (2.1, 2.1)).matched
    assert str(scaling.Governing("λt", (0.21, 0.21), (1.6, 1.6))) == "λt 0.21 (1.6; ours / paper = 0.13)"
    for name in ("jacot_mlp", "jacot_resnet_fig1", "jacot_nonlinear_depth", "tirer_wd_ablation", "tirer_blur"):
        lam_t = scaling.governing(get_experiment(name).config("cpu"), get_experiment(name).config("paper"))[0]
        assert lam_t.name == "λt" and lam_t.matched, (name, str(lam_t))
    assert "λt 0.66 (1.3; matched)" in scaling.governing_text(
        "tirer_wd_ablation", "cpu", paper={"dataset": "mnist", "per_class": 3000}, per_class=300)
    assert not math.isnan(scaling.Governing("per class", (50, 50), (5000, 5000)).ratio)


def test_decay_time_at_the_last_step_is_the_runs_and_grows_with_the_schedule():
    cfg = get_experiment("tirer_blur").config("cpu")
    n = scaling.num_steps(cfg)
    t = scaling.decay_time_at(np.array([0, n // 4, n]), cfg, cfg.weight_decay)
    assert t[0] == 0 and t[-1] == pytest.approx(scaling.decay_times(cfg)[0], rel=1e-12)
    assert t[1] == pytest.approx(cfg.weight_decay * cfg.lr * (n // 4) / (1 - cfg.momentum), rel=1e-12)


def test_the_papers_lambda_t_over_what_it_does_not_state():
    """Jacot Fig. 4 (10,000 epochs of 60,000 digits, lr 1e-3, weight decay 1.8e-3, lr / 10 at 80%): λt at batch b and
    momentum μ is 1.8e-3 * 1e-3 * 10,000 * ceil(60,000 / b) * 0.82 / (1 - μ); over batch 64-512 and μ 0-0.9 it
    spans batch 512 plain SGD to batch 64 with momentum; an unstated length multiplies by 0.1-10 instead of the batch;
    a paper that states everything has no range beyond its own λt, and no assumptions text."""
    at = lambda b, mu: 1.8e-3 * 1e-3 * 10_000 * math.ceil(60_000 / b) * 0.82 / (1 - mu)   # noqa: E731
    lo, hi = scaling.paper_decay_time_range("jacot_mlp")
    assert lo == pytest.approx(at(512, 0.0), rel=1e-12) and hi == pytest.approx(at(64, 0.9), rel=1e-12)
    assert lo < at(128, 0.0) < hi
    t = scaling.decay_times(get_experiment("jacot_head_depth").config("paper"))
    lo, hi = scaling.paper_decay_time_range("jacot_head_depth")
    assert lo == pytest.approx(0.1 * t.min(), rel=1e-12) and hi == pytest.approx(10 * t.max() / (1 - 0.9), rel=1e-12)
    assert "100,000 steps" in scaling.assumptions_text("jacot_head_depth")
    assert "batch" not in scaling.assumptions_text("jacot_head_depth").split("over")[1]
    t = scaling.decay_times(get_experiment("tirer_wd_ablation").config("paper"))
    assert scaling.paper_decay_time_range("tirer_wd_ablation") == pytest.approx((t.min(), t.max()), rel=1e-12)
    assert scaling.assumptions_text("tirer_wd_ablation") == ""
