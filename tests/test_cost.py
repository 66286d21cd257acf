"""ncbook.cost: FLOP counts checked by hand and against published ResNet counts; estimates for every experiment and
scale, ordered as the scales are; the gpu scale sized to 10 minutes; estimates against recorded wall times."""
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch

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


def making_rates(provenance: dict) -> dict:
    """The fixed rates of the kind of machine a result was made on: cost.REFERENCE_GPU for a GPU; for the CPU,
    cost.REFERENCE_CPU's one-thread product rates times the threads the run used (its per-layer overhead does not
    shrink with threads)."""
    if provenance["device"].startswith("cuda"):
        return cost.REFERENCE_GPU
    threads = provenance.get("cpu_threads", 1)
    return {k: v * threads if k in ("float32", "float64") else v for k, v in cost.REFERENCE_CPU.items()}


def convolutional(cfg) -> bool:
    """Whether a configuration trains a ResNet (convolutions and batch norm, far below the matmul rate)."""
    return hasattr(cfg, "resnet_depth") or getattr(cfg, "arch", None) == "resnet18"


def reference_ratios() -> dict[str, tuple[float, bool]]:
    """Each shipped result's recorded wall time over its estimate at the rates of the machine that made it
    (:func:`making_rates`: fixed numbers, so nothing here depends on the machine running the test or its load), and
    whether it trains a ResNet."""
    out = {}
    for path in sorted(cache.RESULTS_DIR.glob("*/*.json")):
        if path.parent.name.startswith("."):          # a run in progress: the runner's own checkpoints and locks
            continue
        m = json.loads(path.read_text())
        if m["provenance"].get("assembled_from"):     # its time is its pieces', each checked on its own machine
            continue
        cfg = EXPERIMENTS[m["experiment"]].config(m["base_scale"], **m["overrides"])
        out[f"{m['experiment']}/{path.stem}"] = (m["provenance"]["wall_time_s"] / cost.reference_seconds(
            cost.estimate(cfg), making_rates(m["provenance"])), convolutional(cfg))
    return out


BANDS = {False: (0.5, 6.0), True: (0.5, 20.0)}
"""A run's recorded wall time over its estimate at the making machine's rates, for networks without and with
convolutions. On the results shipped on 2026-12-05: 1.1-3.7 for the MLPs and the linear heads, 7-12 for the
ResNets (convolutions and batch norm run far below the matmul rate, and the estimate counts only FLOPs and layer
steps); the lower end leaves room for a machine twice as fast as cost.REFERENCE_CPU."""


def outside_bands(ratios: dict[str, tuple[float, bool]]) -> dict[str, float]:
    return {k: round(r, 2) for k, (r, conv) in ratios.items() if not BANDS[conv][0] <= r <= BANDS[conv][1]}


def test_estimates_at_the_making_machines_rates_are_within_their_band_of_recorded_wall_times():
    """A run takes 0.5-6x the estimate (0.5-20x for a ResNet; small layers and elementwise work are not counted);
    a count off by an order of magnitude either way leaves the band for most results. Timing against this machine's
    live rates is a benchmark (benchmarks/bench_cost.py), not a test."""
    ratios = reference_ratios()
    assert len(ratios) >= 17 and any(conv for _, conv in ratios.values())
    assert not outside_bands(ratios)


def test_the_bands_catch_a_count_off_by_ten(monkeypatch):
    """The check above fails for most results when every count (FLOPs and layer steps) is ten times too large or
    too small."""
    real = cost.estimate
    for factor in (10, 0.1):
        monkeypatch.setattr(cost, "estimate", lambda cfg, f=factor: (lambda c: cost.Cost(
            c.flops * f, c.layer_steps * f, c.dtype))(real(cfg)))
        ratios = reference_ratios()
        assert len(outside_bands(ratios)) > 3 * len(ratios) / 4, factor
        monkeypatch.setattr(cost, "estimate", real)


def test_unknown_configuration_is_refused():
    with pytest.raises(TypeError, match="no cost estimate for int"):
        cost.estimate(3)


def test_human_units():
    assert [cost.human(x) for x in (2.3e17, 1.2e15, 60e6)] == ["230 P", "1.2 P", "60 M"]
    assert [cost.duration(x) for x in (45, 600, 7200, 1.9e7)] == ["45 s", "10 min", "2 h", "220 days"]


def test_backbone_flops_are_torchs_flop_counts():
    """cost.backbone_flops counts with hooks on one sample; torch's FlopCounterMode gives the same numbers."""
    from torch.utils.flop_counter import FlopCounterMode

    from ncbook.nets import resnet_backbone

    for depth, width, shape in ((8, 8, (1, 28, 28)), (20, 16, (3, 32, 32)), (14, 16, (1, 28, 28))):
        with torch.device("meta"):
            net, _ = resnet_backbone(depth, shape[0], width)
            x = torch.empty(1, *shape)
        with FlopCounterMode(display=False) as counter:
            net(x)
        assert cost.backbone_flops(depth, width, shape) == counter.get_total_flops()


def test_the_device_rates_are_measured_once_and_kept(monkeypatch, tmp_path):
    """list answers in about a second: the rates come from the cache file after the first measurement; a damaged
    file is measured again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []
    monkeypatch.setattr(cost, "matmul_rate", lambda device, dtype: calls.append(dtype) or 1e11)
    monkeypatch.setattr(cost, "layer_step_seconds", lambda device: calls.append("step") or 1e-5)
    cost.device_rates.cache_clear()
    assert cost.device_rates("cpu") == {"float32": 1e11, "float64": 1e11, "layer_step": 1e-5} and len(calls) == 3
    path = cost.rates_file("cpu")
    assert path.parent == tmp_path / "ncbook" and path.is_file()
    cost.device_rates.cache_clear()
    assert cost.device_rates("cpu")["layer_step"] == 1e-5 and len(calls) == 3        # read back, not measured
    path.write_text("{not json")
    cost.device_rates.cache_clear()
    assert cost.device_rates("cpu")["float32"] == 1e11 and len(calls) == 6             # damaged: measured again
    cost.device_rates.cache_clear()


CHECKPOINTED = [("tirer_wd_ablation", {"hidden": (256, 256), "epochs": 1}),
                ("tirer_blur", {"hidden": (256, 256), "epochs": 1}),
                ("jacot_resnet_head", {"resnet_width": 16, "depths": (1,), "epochs": 1}),
                ("jacot_head_depth", {"width": 256}),
                ("jacot_mlp", {"widths": (64, 256, 256, 256, 256, 128, 10)}),
                ("linear_head", {"relu_widths": (256,), "head_width": 256}),
                ("jacot_bounds", {"relu_widths": (256,), "head_width": 256}),
                ("jacot_nonlinear_depth", {"width": 256})]


@pytest.mark.parametrize("name,overrides", CHECKPOINTED, ids=[n for n, _ in CHECKPOINTED])
def test_checkpoint_bytes_predicts_the_checkpoints_a_run_writes(name, overrides, tmp_path):
    """The relay refuses to start a run it cannot finish when its checkpoints could not travel, by
    cost.checkpoint_bytes: for tiny runs with layers wide enough that the weights dominate (with momentum, ensembles,
    a ResNet), the prediction is within 5% of the bytes of every checkpoint file the run leaves, and not above them
    (it leaves out histories and biases: a run it refuses really cannot travel)."""
    exp = EXPERIMENTS[name]
    cfg = replace(exp.scales["tiny"], **overrides)
    exp.run(cfg, progress=False, checkpoint=tmp_path / "run.pt")
    written = sum(p.stat().st_size for p in tmp_path.glob("*.pt"))
    assert 0.95 * written <= cost.checkpoint_bytes(cfg) <= written


def test_the_checkpoint_sizes_benchmarks_readme_quotes_are_computed():
    """benchmarks/README.md's sizes of the gpu scale's checkpoints are cost.checkpoint_bytes's, in whole MiB."""
    text = " ".join((Path(__file__).resolve().parents[1] / "benchmarks" / "README.md").read_text().split())
    mib = {name: round(cost.checkpoint_bytes(EXPERIMENTS[name].scales["gpu"]) / 2**20)
           for name in ("tirer_wd_ablation", "tirer_blur", "jacot_mlp")}
    quoted = re.search(r"`tirer_blur`: ([\d,]+) and ([\d,]+) MiB of checkpoints .* nor carried \(([\d,]+) MiB\)", text)
    assert quoted, "the sentence quoting the checkpoint sizes is gone: update this test"
    assert [int(g.replace(",", "")) for g in quoted.groups()] == [mib["tirer_wd_ablation"], mib["tirer_blur"],
                                                                  mib["jacot_mlp"]]
