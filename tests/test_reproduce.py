"""Part IV's building blocks: backbones, the generic trainer, layer-wise growth, the blur, and the experiments at tiny
scale (shapes, settings, and the claims' helper functions)."""

import numpy as np
import pytest
import torch

from ncbook import compare, data, registry, reproduce, runner
from ncbook.nets import BlockMLP
from ncbook.train import TrainConfig, train_module


def test_layerwise_growth_freezes_earlier_blocks_and_their_statistics():
    X, y = data.gaussian_mixture(3, 20, 6, seed=0, dtype=torch.float32)
    torch.manual_seed(0)
    m = BlockMLP(6, 10, 3)
    cfg = TrainConfig(steps=20, lr=1e-2, weight_decay=0.0, loss="ce", batch_size=16, optimizer="adam",
                      record_every=20)
    train_module(m, X, y, cfg, progress=False)
    m.add_block()
    before = {k: v.clone() for k, v in m.blocks[0].state_dict().items()}
    classifier = m.classifier.weight.detach().clone()
    train_module(m, X, y, cfg, progress=False)
    after = m.blocks[0].state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "a frozen block changed"
    assert not torch.equal(classifier, m.classifier.weight), "the classifier keeps training"
    assert len(m.blocks) == 2 and m.blocks[1][0].weight.requires_grad


def test_blur_changes_only_the_chosen_classes_and_keeps_constant_images():
    X, y = data.mnist5k(per_class=5)
    Xb = data.blur_classes(X, y, (4, 9))
    changed = (Xb != X).any(1)
    assert bool(changed[(y == 4) | (y == 9)].all()) and not bool(changed[(y != 4) & (y != 9)].any())
    const = torch.full((2, 1, 12, 12), 0.7)
    assert torch.allclose(data.blur_classes(const, torch.tensor([0, 1]), (1,), 5), const)
    # a box blur averages: each blurred pixel lies between the image's extremes
    img = Xb[y == 4]
    assert float(img.max()) <= float(X[y == 4].max()) + 1e-6
    with pytest.raises(ValueError, match="odd"):
        data.blur_classes(X, y, (4,), 4)
    with pytest.raises(ValueError, match="do not occur"):
        data.blur_classes(X, y, (11,))


def test_ablation_settings_are_the_papers_five():
    decays = reproduce.ablation_decays(5e-4)
    assert dict(zip(reproduce.ABLATIONS, decays)) == {
        "baseline": (5e-4, 5e-4), "WDx2 for W": (5e-4, 1e-3), "WDx2 for H": (1e-3, 5e-4),
        "WD=0 for W": (5e-4, 0.0), "WD=0 for H": (0.0, 5e-4)}


@pytest.mark.parametrize("name", ["tirer_wd_ablation", "tirer_blur", "tirer_layerwise", "jacot_nonlinear_depth"])
def test_part_four_experiments_run_at_tiny_scale(name):
    exp = registry.get_experiment(name)
    cfg = exp.config("tiny")
    out = exp.run(cfg, progress=False)
    assert all(np.asarray(v).dtype != object for v in out.values())
    if name == "tirer_wd_ablation":
        assert out["nc1_pinv"].shape[:3] == (len(cfg.losses), len(cfg.seeds), 5)
    if name == "tirer_blur":
        assert out["nc1_per_class"].shape[0] == 1 + len(cfg.weight_decays_last) and out["nc1_per_class"].shape[-1] == 10
    if name == "tirer_layerwise":
        assert out["nc1_pinv"].shape == (len(cfg.seeds), cfg.num_layers) and np.isfinite(out["nc1_pinv"]).all()
    if name == "jacot_nonlinear_depth":
        summary = compare.nonlinear_layer_summary(out, "balancedness", cfg.backbone)
        assert summary["min"].shape == (len(cfg.depths), len(cfg.lrs), len(cfg.seeds))
        assert (summary["min"] <= summary["mean"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tirer_wd_ablation", "tirer_blur"])
def test_paper_architecture_path_runs(name):
    """The `paper` scale trains ResNet18 with train_module; its code path runs at tiny scale (8x8 digits)."""
    exp = registry.get_experiment(name)
    cfg = exp.config("tiny", arch="resnet18", per_class=3, epochs=1, batch_size=16,
                     **({"losses": ("ce",)} if name == "tirer_wd_ablation" else {}))
    out = exp.run(cfg, progress=False)
    assert np.isfinite(out["loss"]).all()
    assert out["nc1_pinv"].shape[-1] == 3          # the third stage (Fig. 4c/5c), the backbone's output H, logits
    assert out["layer_names"].tolist() == ["res block 3", "res block 4", "output"]
    assert compare.final_at(out, "nc1_pinv", "intermediate").shape == compare.final_at(out, "nc1_pinv", "deepest").shape


@pytest.mark.parametrize("name", ["jacot_mlp", "linear_head", "jacot_head_depth", "jacot_resnet_head",
                                  "jacot_resnet_fig1", "jacot_nonlinear_depth", "tirer_wd_ablation"])
def test_results_name_every_layer_of_their_layer_axis(name):
    """Every result with a layer axis stores one name per position (per depth in a sweep, padded with "" exactly
    where the metrics are padded with NaN), so readers name layers instead of counting them."""
    exp = registry.get_experiment(name)
    cfg = exp.config("tiny")
    out = exp.run(cfg, progress=False)
    names = np.asarray(out["layer_names"])
    layers = out["nc1_pinv"].shape[-1]
    assert names.shape[-1] == layers and names.dtype.kind == "U"
    if names.ndim == 2:                                             # a sweep over depths: [depth, layer]
        assert names.shape[0] == len(cfg.depths)
        for d in range(len(cfg.depths)):
            real = np.array([bool(n) for n in names[d]])
            nc1 = out["nc1_pinv"][d]
            assert np.isnan(nc1[..., ~real]).all() and not np.isnan(nc1[..., -1, real]).all()
            assert compare.layer_names(out, d)[-1] == "output"
            assert compare.layer_index(out, "head input", d) <= compare.layer_index(out, "deepest", d)
    else:
        assert compare.layer_names(out)[-1] == "output"


def test_a_finished_run_leaves_no_checkpoints(tmp_path):
    """Multi-part runs checkpoint each part; once the result is stored, none of those files remain."""
    runner.run_and_cache("tirer_wd_ablation", "tiny", progress=False, root=tmp_path)
    assert not list((tmp_path / ".checkpoints").iterdir())
    assert runner.verify(tmp_path) == [("tirer_wd_ablation", "tiny", "ok")]


def test_figure_1_head_has_three_relu_and_three_linear_layers(monkeypatch):
    """jacot_resnet_fig1: the backbone, then num_nonlinear=3 ReLU layers and 3 linear ones (the last to the classes);
    negativity is defined exactly on the ReLU layers (1-3), balancedness on the head's consecutive pairs (1-5)."""
    exp = registry.EXPERIMENTS["jacot_resnet_fig1"]
    cfg = exp.config("tiny")
    built = []
    real = reproduce.BackboneHead

    def spy(backbone, dim, widths, num_nonlinear, **kw):
        built.append((widths, num_nonlinear))
        return real(backbone, dim, widths, num_nonlinear, **kw)

    monkeypatch.setattr(reproduce, "BackboneHead", spy)
    r = exp.run(cfg, progress=False)
    assert built[0] == ([cfg.head_width] * 5 + [10], 3) and r["num_layers"].tolist() == [7]
    final = {k: r[k][0, 0, 0, -1] for k in ("negativity", "balancedness")}
    assert np.isfinite(final["negativity"]).tolist() == [False, True, True, True, False, False, False]
    assert np.isfinite(final["balancedness"]).tolist() == [False, True, True, True, True, True, False]
    assert registry.EXPERIMENTS["jacot_resnet_head"].config("cpu").num_nonlinear == 1     # Figs. 2 and 5: one
