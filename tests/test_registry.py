"""ncbook.registry: the paper-scale configurations follow the papers field by field."""

from ncbook import registry


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
