"""Part IV's building blocks: backbones, the generic trainer, layer-wise growth, the blur, and the experiments at tiny
scale (shapes, settings, and the claims' helper functions)."""

import numpy as np
import pytest
import torch
from torch import nn

from ncbook import compare, data, registry, reproduce, runner
from ncbook.nets import MLP, BackboneHead, BlockMLP, Ensemble, resnet_backbone
from ncbook.train import TrainConfig, train_ensemble, train_module


def test_resnet18_has_torchvisions_parameter_count_less_stem_and_classifier():
    """torchvision's ResNet18 has 11,689,512 parameters; ours swaps the 7x7x3x64 stem for a 3x3 one and drops the
    512 x 1000 classifier (+ bias): 11,689,512 - 9,408 + 1,728 - 513,000."""
    net, dim = resnet_backbone(18, in_channels=3, width=64)
    assert dim == 512
    assert sum(p.numel() for p in net.parameters()) == 11_689_512 - 9_408 + 1_728 - 513_000
    assert net(torch.randn(2, 3, 32, 32)).shape == (2, 512)


def test_cifar_resnet_shapes_and_bad_depths():
    net, dim = resnet_backbone(20, in_channels=1, width=4)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert len(convs) == 19 and dim == 16            # 19 conv layers + the classifier = ResNet20
    assert net(torch.randn(3, 1, 28, 28)).shape == (3, 16)
    with pytest.raises(ValueError, match="6n\\+2"):
        resnet_backbone(19)
    with pytest.raises(ValueError, match="fixed widths"):
        resnet_backbone(18, width=32)


def test_train_module_equals_the_ensemble_trainer_on_an_mlp():
    """SGD with momentum and PyTorch's coupled weight decay on a bias-free MLP is the ensemble trainer's explicit
    penalty: same trajectory (full batch, float64) to rounding, with a backbone that is the identity."""
    X, y = data.gaussian_mixture(3, 10, 5, seed=2)
    cfg = TrainConfig(steps=40, lr=0.05, weight_decay=1e-2, weight_decay_last=3e-2, momentum=0.9, record_every=20)
    torch.manual_seed(0)
    mlp = MLP([5, 12, 8, 3], 1).double()
    model = BackboneHead(nn.Identity(), 5, [12, 8, 3], 1).double()
    model.head.load_state_dict(mlp.state_dict())
    ens = Ensemble([mlp])
    [h_ens] = train_ensemble(ens, X, y, [cfg], progress=False)
    h_mod = train_module(model, X, y, cfg, progress=False)
    assert np.allclose(h_ens.loss, h_mod.loss, rtol=1e-10)
    for W, V in zip(ens.weights, model.head.weights):
        assert torch.allclose(W[0], V, rtol=1e-9, atol=1e-12)
    # the backbone's output is layer 0: the head's metrics follow it, one layer later
    assert np.allclose(np.array(h_mod.layers["nc1_pinv"])[:, 1:], np.array(h_ens.layers["nc1_pinv"]), rtol=1e-8)


def test_train_module_resumes_to_the_identical_result(tmp_path, kill_at_step):
    X, y = data.gaussian_mixture(3, 10, 5, seed=1)
    cfg = TrainConfig(steps=30, lr=1e-2, weight_decay=1e-3, batch_size=8, optimizer="adam", loss="ce",
                      record_every=10)

    def model(seed):
        torch.manual_seed(seed)
        return BlockMLP(5, 16, 3).double()

    restore = kill_at_step(torch.optim.Adam, 17)
    ckpt = tmp_path / "m.pt"
    with pytest.raises(KeyboardInterrupt):
        train_module(model(0), X, y, cfg, seed=5, checkpoint=ckpt, checkpoint_every=5, progress=False)
    restore()
    resumed_model, fresh_model = model(9), model(0)
    resumed = train_module(resumed_model, X, y, cfg, seed=5, checkpoint=ckpt, checkpoint_every=5, progress=False)
    fresh = train_module(fresh_model, X, y, cfg, seed=5, progress=False)
    assert resumed.loss == fresh.loss and resumed.steps == fresh.steps
    for a, b in zip(resumed_model.state_dict().values(), fresh_model.state_dict().values()):
        assert torch.equal(a, b)


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


@pytest.mark.parametrize("name", ["tirer_wd_ablation", "tirer_blur"])
def test_paper_architecture_path_runs(name):
    """The `paper` scale trains ResNet18 with train_module; its code path runs at tiny scale (8x8 digits)."""
    exp = registry.get_experiment(name)
    cfg = exp.config("tiny", arch="resnet18", per_class=3, epochs=1, batch_size=16,
                     **({"losses": ("ce",)} if name == "tirer_wd_ablation" else {}))
    out = exp.run(cfg, progress=False)
    assert np.isfinite(out["loss"]).all()
    assert out["nc1_pinv"].shape[-1] == 2          # the backbone's output H and the logits


def test_paper_configurations_follow_the_papers():
    abl = registry.get_experiment("tirer_wd_ablation").config("paper")
    assert (abl.arch, abl.dataset, abl.batch_size, abl.lr, abl.momentum, abl.weight_decay, abl.epochs) == \
        ("resnet18", "cifar10", 256, 0.05, 0.9, 5e-4, 100)
    assert abl.lr_drops == (0.4, 0.8) and len(abl.seeds) == 3               # /10 every 40 epochs of 100
    lw = registry.get_experiment("tirer_layerwise").config("paper")
    assert (lw.dataset, lw.width, lw.num_layers, lw.epochs, lw.batch_size, lw.lr) == ("cifar10", 3072, 10, 3, 256, 1e-4)
    nd = registry.get_experiment("jacot_nonlinear_depth").config("paper")
    assert nd.depths == (4, 6, 8, 10, 12) and nd.lrs == (1e-3, 2e-3) and nd.weight_decay_total == 0.016
    hd = registry.get_experiment("jacot_head_depth").config("paper")
    assert hd.depths == (1, 2, 3, 4, 5) and hd.weight_decays == (1e-3, 4e-3) and hd.lr == 1e-3


def test_a_finished_run_leaves_no_checkpoints(tmp_path):
    """Multi-part runs checkpoint each part; once the result is stored, none of those files remain."""
    runner.run_and_cache("tirer_wd_ablation", "tiny", progress=False, root=tmp_path)
    assert not list((tmp_path / ".checkpoints").iterdir())
    assert runner.verify(tmp_path) == [("tirer_wd_ablation", "tiny", "ok")]


def test_claim_helpers_read_the_right_entries():
    """Table 1 from a synthetic result: mean/sd over seeds at the last record of the deepest features, and the
    deviations from the baseline in the order of ABLATIONS[1:]."""
    from ncbook import compare

    rng = np.random.default_rng(0)
    nc1 = rng.random((2, 3, 5, 4, 3))              # [loss, seed, setting, record, layer]
    nc1[..., -1, -2] = np.arange(5)[None, None, :] + np.array([0.0, 1.0, 2.0])[None, :, None]
    table = compare.ablation_table({"nc1_pinv": nc1, "nc2_etf_distance": nc1})
    assert np.allclose(table["NC1"], np.arange(5) + 1.0) and np.allclose(table["NC1_sd"], np.std([0, 1, 2]))
    assert np.allclose(compare.deviation_from_baseline(table, "NC1"), [[1, 2, 3, 4]] * 2)
    m = rng.random((2, 3, 5, 4, 7))               # [depth, seed, weight decay, record, layer]
    values = compare.head_values({"num_layers": np.array([6, 7]), "m": m}, "m", first=1)
    assert values["last"].shape == (2, 3, 5) and np.allclose(values["last"][1], m[1, :, :, -1, 5])
    assert np.allclose(values["first"][0], m[0, :, :, -1, 1])
    ends = compare.head_ends({"num_layers": np.array([6, 7, 8])}, first=4)
    assert ends["last"].tolist() == [4, 5, 6] and ends["first"].tolist() == [4, 4, 4]
    assert len(compare.TIRER_TABLE1) == 4 and all(len(v["NC1"]) == len(reproduce.ABLATIONS)
                                                   for v in compare.TIRER_TABLE1.values())
