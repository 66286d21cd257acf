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
