"""ncbook.hooks: per-layer statistics of a model the package did not define (torchvision's ResNet-18, untrained),
recorded by forward hooks batch by batch, equal the one-shot statistics of the same layers' outputs taken by an
independent route (torchvision's feature extractor on all the samples at once)."""

import pytest
import torch

from ncbook import hooks, metrics

torchvision = pytest.importorskip("torchvision")
feature_extraction = pytest.importorskip("torchvision.models.feature_extraction")


def resnet_and_data(K: int = 4, n: int = 8):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=K).double()
    x = torch.randn(K * n, 3, 32, 32, dtype=torch.float64)
    y = torch.arange(K).repeat_interleave(n)[torch.randperm(K * n)]
    return model, x, y


def test_hooked_layer_stats_of_a_resnet18_equal_the_one_shot_stats():
    model, x, y = resnet_and_data()
    layers = ["layer3", "layer4", "avgpool", "fc"]
    model.train()
    stats = hooks.layer_stats(model, layers, [(x[a:a + 10], y[a:a + 10]) for a in range(0, len(y), 10)], 4)
    assert model.training and not any(m._forward_hooks for m in model.modules())      # mode restored, hooks gone
    extractor = feature_extraction.create_feature_extractor(model.eval(), layers)
    with torch.no_grad():
        direct = extractor(x)
    for name in layers:
        Z = direct[name].flatten(1)
        assert stats[name].dim == Z.shape[1] and stats[name].num_samples == len(y)
        torch.testing.assert_close(stats[name].means, metrics.class_means(Z, y), rtol=1e-10, atol=1e-12)
        for metric in (metrics.nc1_trace_ratio, metrics.cdnv, metrics.equinorm, metrics.coherence):
            assert metric(stats[name]) == pytest.approx(metric(Z, y), rel=1e-9), (name, metric.__name__)
    logits = direct["fc"]
    nc4 = metrics.nc4_ncc_agreement(direct["avgpool"].flatten(1), logits.argmax(1), stats["avgpool"].means)
    assert 0 <= nc4 <= 1


def test_layer_stats_refuses_unknown_layers_and_no_data():
    model, x, y = resnet_and_data()
    with pytest.raises(ValueError, match="no sub-module named 'layer9'"):
        hooks.layer_stats(model, ["layer9"], [(x, y)], 4)
    with pytest.raises(ValueError, match="no batches"):
        hooks.layer_stats(model, ["fc"], [], 4)
    assert not any(m._forward_hooks for m in model.modules())


def test_the_accumulator_is_chosen_by_a_stated_memory_rule():
    """One pass (K d x d scatters) where they fit in max_bytes, two passes (K d) where not, a one-line error before
    allocating where neither does."""
    assert hooks.plan(10, 512) == "one pass" and hooks.scatter_bytes(10, 512) == 8 * 10 * 512 * 512
    assert hooks.plan(10, 256 * 8 * 8) == "two passes"          # layer3 of the CIFAR ResNet18: 21 GB of scatters
    with pytest.raises(ValueError, match=r"needs 1,526 MiB even in two passes, over max_bytes = 1,024 MiB"):
        hooks.plan(10, 10**7)


PEAK = """
import sys, torch
from ncbook import hooks, metrics
def status(key):
    return int(next(line for line in open("/proc/self/status") if line.startswith(key)).split()[1]) * 1024
K, d, rows, dtype = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), getattr(torch, sys.argv[4])
torch.manual_seed(0)
batches = [(torch.randn(rows, d, dtype=dtype), torch.randint(0, K, (rows,))) for _ in range(3)]
warm = metrics.StreamingClassStats(2, 64).update(torch.randn(64, 64, dtype=dtype), torch.arange(64) % 2)
warm.finalize()
before = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")                  # the high-water mark from here on
acc = metrics.StreamingClassStats(K, d)
for _ in range(7):
    for Z, y in batches:
        acc.update(Z, y)
acc.finalize()
print((status("VmHWM:") - before) / hooks.scatter_bytes(K, d, rows, torch.finfo(dtype).bits // 8))
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_one_pass_accumulators_peak_is_what_the_memory_rule_budgets(dtype):
    """Issue 59: measured in a child process (the kernel's high-water mark of resident memory, reset before the
    accumulator is made), StreamingClassStats' peak from construction through 21 batches to ``finalize`` is at most
    what ``hooks.scatter_bytes`` budgets (a ResNet18 layer planned at 781 MiB had peaked at 3 times that: finalize
    made two more K d x d float64 arrays)."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the high-water mark")
    run = subprocess.run([sys.executable, "-c", PEAK, "10", "2000", "256", dtype], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert 0.7 < float(run.stdout) <= 1.0, run.stdout


def test_two_passes_give_the_one_shot_stats_and_need_a_re_readable_source():
    model, x, y = resnet_and_data()
    layers = ["layer2", "layer3", "avgpool"]                   # d = 2048, 1024, 512
    batches = [(x[a:a + 10], y[a:a + 10]) for a in range(0, len(y), 10)]
    limit = 24 << 20                                           # 24 MiB: layer2 and layer3 in two passes
    stats = hooks.layer_stats(model, layers, batches, 4, max_bytes=limit)
    assert [hooks.plan(4, stats[n].dim, limit, 10, 8) for n in layers] == ["two passes", "two passes", "one pass"]
    extractor = feature_extraction.create_feature_extractor(model.eval(), layers)
    with torch.no_grad():
        direct = extractor(x)
    for name in layers:
        Z = direct[name].flatten(1)
        for metric in (metrics.nc1_trace_ratio, metrics.nc1_pinv, metrics.cdnv, metrics.coherence):
            assert metric(stats[name]) == pytest.approx(metric(Z, y), rel=1e-9), (name, metric.__name__)
    with pytest.raises(ValueError, match="not a one-shot iterator"):
        hooks.layer_stats(model, ["layer3"], iter(batches), 4, max_bytes=limit)
    assert not any(m._forward_hooks for m in model.modules())


def test_the_cifar_resnet18s_convolutional_layers_fit_in_memory(tmp_path):
    """Issue 51: layer3 and layer4 of ncbook's CIFAR ResNet18 (d = 16,384 and 8,192, whose scatters would take 21.5
    and 5.4 GB) recorded on a few batches in a child process whose peak memory stays under 2 GiB. The peak is the
    kernel's high-water mark of the child's own address space (VmHWM, reset by exec; getrusage's ru_maxrss is not:
    it keeps the parent's at the fork)."""
    import json
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import json, re, torch
        from ncbook import hooks, metrics, nets
        def status(field):
            return int(re.search(field + r":\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) / 1024
        torch.manual_seed(0)
        model = nets.ResNet18()
        x, y = torch.randn(40, 3, 32, 32), torch.arange(10).repeat(4)
        stats = hooks.layer_stats(model, ["net.layer3", "net.layer4"], [(x[:20], y[:20]), (x[20:], y[20:])], 10)
        print(json.dumps({"dims": [s.dim for s in stats.values()],
                          "nc1": [metrics.nc1_trace_ratio(s) for s in stats.values()],
                          "peak_mib": status("VmHWM")}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["dims"] == [16384, 8192] and all(v > 0 for v in out["nc1"])
    assert out["peak_mib"] < 2048, out
