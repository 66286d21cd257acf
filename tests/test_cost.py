"""ncbook.cost: FLOP counts checked by hand and against published ResNet counts; estimates for every experiment and
scale, ordered as the scales are; the gpu scale sized to 10 minutes; estimates against recorded wall times."""
import json

import pytest

from ncbook import cache, cost
from ncbook.registry import EXPERIMENTS


def test_mlp_flops_count_every_layer():
    assert cost.mlp_flops((3, 4, 5)) == 2 * (3 * 4 + 4 * 5)


@pytest.mark.parametrize(("depth", "width", "macs"), [(20, 16, 40.8e6), (18, 64, 0.556e9)])
def test_backbone_flops_match_published_counts(depth, width, macs):
    """ResNet20 on CIFAR-10: 40.8M multiply-adds (He et al. 2016's 0.27M-parameter net); the CIFAR ResNet18 without
    max-pool: 0.56G."""
    assert cost.backbone_flops(depth, width, (3, 32, 32)) == pytest.approx(2 * macs, rel=0.01)


def test_every_experiment_and_scale_has_an_estimate_in_scale_order():
    for name, exp in EXPERIMENTS.items():
        flops = {s: cost.estimate(exp.config(s)).flops for s in exp.scales}
        assert list(flops) == ["tiny", "cpu", "gpu", "paper"], name
        assert 0 < flops["tiny"] < flops["cpu"] < flops["gpu"] <= flops["paper"], (name, flops)


def test_gpu_scale_fits_ten_minutes_on_the_reference_gpu():
    times = {n: cost.reference_seconds(cost.estimate(e.config("gpu"))) for n, e in EXPERIMENTS.items()}
    assert all(t <= 600 for t in times.values()), times


def test_estimates_are_within_a_factor_of_twenty_of_recorded_wall_times():
    """The estimate uses this machine's measured rates; a run takes 0.8-6x the estimate on the 2-core machine the
    results were made on (one thread for Part IV). A count off by an order of magnitude fails."""
    for path in sorted(cache.RESULTS_DIR.glob("*/*.json")):
        m = json.loads(path.read_text())
        est = cost.seconds(cost.estimate(EXPERIMENTS[m["experiment"]].config(m["base_scale"], **m["overrides"])))
        ratio = m["provenance"]["wall_time_s"] / est
        assert 1 / 5 <= ratio <= 20, (path.name, m["experiment"], ratio)


def test_unknown_configuration_is_refused():
    with pytest.raises(TypeError, match="no cost estimate for int"):
        cost.estimate(3)


def test_human_units():
    assert [cost.human(x) for x in (2.3e17, 1.2e15, 60e6)] == ["230 P", "1.2 P", "60 M"]
    assert [cost.duration(x) for x in (45, 600, 7200, 1.9e7)] == ["45 s", "10 min", "2 h", "220 days"]
