"""The benchmark's FLOP count (the numerator of its throughput ratio) against torch's own FLOP counter."""

import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ncbook.nets import MLP, Ensemble


def load_benchmark(name: str):
    """A script of benchmarks/ as a module."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load_benchmark("bench_training")


@pytest.mark.parametrize("widths", [[784, 256, 256, 10], [64, 32, 32, 32, 16, 16, 10], [5, 7, 3]])
def test_step_flops_counts_every_product_of_a_training_step(widths):
    torch.manual_seed(0)
    x, n = torch.randn(37, widths[0]), 37
    for model in (MLP(widths, len(widths) - 2), Ensemble([MLP(widths, len(widths) - 2)])):
        with FlopCounterMode(display=False) as counter:
            model(x).square().sum().backward()
        assert counter.get_total_flops() == bench.step_flops(widths, n)


@pytest.mark.parametrize("widths", [[784, 64, 64, 32, 32, 10], [5, 7, 3]])
def test_the_ceiling_times_exactly_the_products_of_a_step(widths):
    n, M = 37, 8
    products = bench.step_products(widths, n, M)
    flops = [{2 * B * p * q * r for B, p, q, r in ways} for ways in products]
    assert all(len(f) == 1 for f in flops), "every decomposition of a product must do the same arithmetic"
    assert sum(f.pop() for f in flops) == M * bench.step_flops(widths, n)


def test_capture_pays_only_where_every_captured_step_ran_faster():
    bench_gpu = load_benchmark("bench_gpu")
    fast, slow, failed = {"step_ms": 1.0}, {"step_ms": 2.0}, {"error": "RuntimeError: no"}
    step = {"float32": {"eager": slow, "captured": fast}, "float64": {"eager": fast, "captured": slow}}
    resnets = {"a": {"ops_per_step": 300, "eager": slow, "captured": fast}, "b": {"eager": slow, "captured": fast}}
    assert bench_gpu.capture_pays(step, resnets)
    assert not bench_gpu.capture_pays(step, resnets | {"b": {"eager": fast, "captured": slow}})
    assert not bench_gpu.capture_pays(step, resnets | {"b": {"eager": slow, "captured": failed}})
    assert not bench_gpu.capture_pays({"float32": {"eager": failed, "captured": fast}}, resnets)


def test_the_gpu_session_script_parses_and_the_relay_reads_the_benchmarks_verdict(tmp_path, monkeypatch):
    """scripts/gpu_session.sh is valid bash; the relay (which runs the benchmark since issue 75) asks for captured
    steps only where the benchmark of this device kind says capture paid, and leaves an explicit NCBOOK_CAPTURE
    alone."""
    import os
    import subprocess

    from ncbook import relay
    from ncbook.train import CAPTURE_ENV

    script = (Path(__file__).parents[1] / "scripts" / "gpu_session.sh").read_text()
    subprocess.run(["bash", "-n", "-c", script], check=True)
    seen = []

    def fake(*args, env=None, **kwargs):
        seen.append((env or {}).get(CAPTURE_ENV, os.environ.get(CAPTURE_ENV)))
        return "made"
    monkeypatch.setattr(relay, "run_one", fake)
    unit = relay.Unit("collapse_picture", "tiny", {})
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    for verdict, expected in ((True, "1"), (False, "0")):
        bench = {"kinds": {"cpu": {"capture_pays": verdict, "experiments": []}}}
        relay.session([unit], None, tmp_path / f"out{verdict}", "cpu", 60.0, tmp_path / f"r{verdict}", bench=bench)
        assert seen[-1] == expected
    monkeypatch.setenv(CAPTURE_ENV, "0")
    relay.session([unit], None, tmp_path / "out", "cpu", 60.0, tmp_path / "r", bench={"kinds": {"cpu": {
        "capture_pays": True, "experiments": []}}})
    assert seen[-1] == "0" and os.environ[CAPTURE_ENV] == "0"          # the session sets nothing in this process


def test_ops_per_step_leaves_no_counting_mode_behind_when_the_trainer_fails():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    bench_gpu = load_benchmark("bench_gpu")
    x, y = torch.randn(30, 12), torch.arange(30) % 3
    run = bench_gpu.mlp_trainer([12, 8, 8, 8, 8, 8, 3], x, y, False)

    def failing(total: int) -> None:
        import ncbook.train

        loop = ncbook.train.run_steps

        def broken(total, update, *args, **kwargs):   # fails at step 2, inside the counted window
            return loop(total, lambda step: update(step) if step < 2 else 1 / 0, *args, **kwargs)

        ncbook.train.run_steps, inner = broken, ncbook.train.run_steps
        try:
            run(total)
        finally:
            ncbook.train.run_steps = inner

    with pytest.raises(ZeroDivisionError):
        bench_gpu.ops_per_step(failing)
    assert _get_current_dispatch_mode() is None
