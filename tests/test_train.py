"""ncbook.train: the trainers (the ensemble step and train_module), their configuration, the regularised objective,
checkpoints that resume bit-identically, divergence, and the metrics recorded along the way."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from torch import nn

import ncbook.train
from ncbook import data, metrics
from ncbook.nets import MLP, BackboneHead, BlockMLP, Ensemble
from ncbook.train import TrainConfig, data_loss, layer_metrics, train, train_ensemble, train_module, weight_penalty


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


def problem(seed=0, n=12, d=6, K=3):
    X, y = data.gaussian_mixture(K, n, d, seed=seed)
    return X, y


def net(seed, widths=(6, 16, 12, 8, 3), L1=2):
    torch.manual_seed(seed)
    return MLP(list(widths), L1).double()


@pytest.mark.parametrize("bad,match", [({"steps": 0}, "steps"), ({"lr": 0.0}, "lr"),
                                       ({"weight_decay": -1e-3}, "lambda"), ({"weight_decay": float("nan")}, "lambda"),
                                       ({"loss": "hinge"}, "loss"), ({"momentum": 1.0}, "momentum"),
                                       ({"lr_drops": (1.5,)}, "lr_drops"), ({"batch_size": 0}, "batch_size")])
def test_config_rejects_bad_values(bad, match):
    kwargs = {"steps": 10, "lr": 0.1, "weight_decay": 1e-3} | bad
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_learning_rate_drops_and_weight_decay_groups():
    cfg = TrainConfig(steps=100, lr=1.0, weight_decay=0.1, weight_decay_last=0.0, lr_drops=(0.5, 0.8))
    assert [cfg.lr_at(s) for s in (0, 49, 50, 79, 80, 99)] == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01])
    assert [cfg.decay_of(i, 4) for i in range(4)] == [0.1, 0.1, 0.1, 0.0]
    # no weight decay on the last layer: its gradient is that of the data loss alone
    X, y = problem()
    m = net(0)
    from ncbook.train import data_loss, weight_penalty
    L = len(m.weights)
    (data_loss(m(X), y) + sum(weight_penalty([W], cfg.decay_of(i, L)) for i, W in enumerate(m.weights))).backward()
    g_last = m.weights[-1].grad.clone()
    m.zero_grad()
    data_loss(m(X), y).backward()
    assert torch.allclose(g_last, m.weights[-1].grad)


def test_minibatch_sgd_with_momentum_is_seeded_and_learns():
    X, y = problem()
    cfg = TrainConfig(steps=300, lr=0.05, weight_decay=1e-4, batch_size=8, momentum=0.9, record_every=100)
    h1 = train(net(0), X, y, cfg, seed=1, progress=False)
    h2 = train(net(0), X, y, cfg, seed=1, progress=False)
    h3 = train(net(0), X, y, cfg, seed=2, progress=False)
    assert h1.loss == h2.loss and h1.loss != h3.loss
    assert h1.loss[-1] < h1.loss[0] / 3


def test_cross_entropy_training_reaches_zero_error():
    X, y = problem()
    h = train(net(0), X, y, TrainConfig(steps=300, lr=0.2, weight_decay=1e-4, loss="ce", record_every=100),
              progress=False)
    assert h.train_error[-1] == 0


def test_ensemble_equals_separate_runs():
    X, y = problem()
    lams = [0.0, 1e-3, 1e-2]
    cfgs = [TrainConfig(steps=150, lr=0.1, weight_decay=lam, momentum=0.5, lr_drops=(0.8,), record_every=50)
            for lam in lams]
    models = [net(s) for s in range(3)]
    ens = Ensemble(models)
    together = train_ensemble(ens, X, y, cfgs, progress=False)
    for m, (model, cfg) in enumerate(zip(models, cfgs)):
        alone = train(model, X, y, cfg, progress=False)
        assert together[m].steps == alone.steps
        np.testing.assert_allclose(together[m].loss, alone.loss, rtol=1e-10)
        np.testing.assert_allclose(together[m].layers["nc1_pinv"], alone.layers["nc1_pinv"], rtol=1e-8)
        for Wt, Wa in zip(ens.model(m).weights, model.weights):
            torch.testing.assert_close(Wt, Wa, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_penalty_gradient_added_by_hand_is_bit_identical_to_autograd(dtype, momentum):
    """train_ensemble adds lambda W to the data gradient itself and steps with its own momentum update; autograd on
    the whole regularised objective (data loss + sum_l lambda_l/2 ||W_l||^2, Jacot et al. Sec. 4) stepped by
    torch.optim.SGD must give the very same floats."""
    X, y = problem()
    X = X.to(dtype)
    cfgs = [TrainConfig(steps=40, lr=0.1, weight_decay=lam, weight_decay_last=last, momentum=momentum,
                        record_every=10 ** 6) for lam, last in [(0.0, 0.0), (1e-3, 3e-2), (2e-2, None)]]
    ens = Ensemble([net(s).to(dtype) for s in range(3)])
    ref = Ensemble([net(s).to(dtype) for s in range(3)])
    train_ensemble(ens, X, y, cfgs, progress=False)
    L = len(ref.weights)
    lam = torch.tensor([[c.decay_of(i, L) for i in range(L)] for c in cfgs], dtype=dtype)
    Y = torch.nn.functional.one_hot(y, 3).to(dtype)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=momentum)
    for _ in range(40):
        fit = 0.5 * ((ref(X) - Y) ** 2).sum((1, 2)) / len(y)
        norms = torch.stack([(W ** 2).sum((1, 2)) for W in ref.weights], dim=1)
        opt.zero_grad()
        (fit + 0.5 * (lam * norms).sum(1)).sum().backward()
        opt.step()
    for a, b in zip(ens.parameters(), ref.parameters()):
        assert torch.equal(a, b)
    assert not torch.equal(ens.weights[0][1], net(1).to(dtype).layers[0].weight)     # it did train


def test_ensemble_rejects_mixed_settings_and_shapes():
    with pytest.raises(ValueError, match="same architecture"):
        Ensemble([net(0), net(1, widths=(6, 8, 3), L1=1)])
    ens = Ensemble([net(0), net(1)])
    X, y = problem()
    with pytest.raises(ValueError, match="share every setting"):
        train_ensemble(ens, X, y, [TrainConfig(steps=5, lr=0.1, weight_decay=0.0),
                                   TrainConfig(steps=5, lr=0.2, weight_decay=0.0)], progress=False)


RESUME_SCRIPT = """
import sys, torch
from ncbook import data
from ncbook.nets import MLP
from ncbook.train import TrainConfig, train
X, y = data.gaussian_mixture(3, 12, 6, seed=0)
torch.manual_seed(0)
m = MLP([6, 16, 12, 8, 3], 2).double()
cfg = TrainConfig(steps=4000, lr=0.05, weight_decay=1e-3, batch_size=8, momentum=0.9, record_every=500)
train(m, X, y, cfg, seed=3, checkpoint=sys.argv[1], checkpoint_every=50, progress=False)
"""


def test_resume_after_kill_equals_uninterrupted_run(tmp_path):
    ckpt = tmp_path / "run.pt"
    proc = subprocess.Popen([sys.executable, "-c", RESUME_SCRIPT, str(ckpt)])
    t0 = time.time()
    while not ckpt.exists() and time.time() - t0 < 120:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()                                   # SIGKILL: no chance to clean up
    proc.wait()
    assert ckpt.exists(), "the run never wrote a checkpoint"
    saved_step = torch.load(ckpt, weights_only=True)["step"]
    assert 0 < saved_step < 4000, "kill the run before it finishes, to test resuming"
    cfg = TrainConfig(steps=4000, lr=0.05, weight_decay=1e-3, batch_size=8, momentum=0.9, record_every=500)
    X, y = problem()
    resumed_model = net(99)                       # different init: everything must come from the checkpoint
    resumed = train(resumed_model, X, y, cfg, seed=3, checkpoint=ckpt, checkpoint_every=50, progress=False)
    fresh_model = net(0)
    fresh = train(fresh_model, X, y, cfg, seed=3, progress=False)
    assert resumed.steps == fresh.steps and resumed.loss == fresh.loss
    for a, b in zip(resumed_model.weights, fresh_model.weights):
        assert torch.equal(a, b)


def test_divergence_names_step_and_cause():
    X, y = problem()
    with pytest.raises(FloatingPointError, match=r"step \d+.*learning rate"):
        train(net(0, widths=(6, 16, 3), L1=0), X * 10, y, TrainConfig(steps=500, lr=5.0, weight_decay=0.0,
                                                                      record_every=1000), progress=False)


def test_interrupted_ensemble_resumes_to_the_same_result(tmp_path, kill_at_step):
    X, y = problem()
    cfgs = [TrainConfig(steps=60, lr=0.05, weight_decay=lam, batch_size=10, momentum=0.9, record_every=20,
                        record_at=(5,)) for lam in (1e-3, 1e-2)]
    ckpt = tmp_path / "ens.pt"
    restore = kill_at_step(ncbook.train, 37, "momentum_step")
    with pytest.raises(KeyboardInterrupt):
        train_ensemble(Ensemble([net(0), net(1)]), X, y, cfgs, seed=4, checkpoint=ckpt, checkpoint_every=10,
                       progress=False)
    restore()
    assert torch.load(ckpt, weights_only=True)["step"] == 30
    resumed_ens = Ensemble([net(7), net(8)])
    resumed = train_ensemble(resumed_ens, X, y, cfgs, seed=4, checkpoint=ckpt, checkpoint_every=10, progress=False)
    fresh_ens = Ensemble([net(0), net(1)])
    fresh = train_ensemble(fresh_ens, X, y, cfgs, seed=4, progress=False)
    assert [h.steps for h in resumed] == [h.steps for h in fresh] == [[0, 5, 20, 40, 60]] * 2
    assert [h.loss for h in resumed] == [h.loss for h in fresh]
    for a, b in zip(resumed_ens.parameters(), fresh_ens.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_run_at_the_end_of_its_step_with_a_checkpoint_there(tmp_path, monkeypatch, sig):
    """Issue 75, point 1: with :func:`ncbook.train.stop_on_signals` (what ``python -m ncbook run`` installs), a real
    SIGTERM or SIGINT during update 37 (checkpoints every 10) ends the run after that update with a checkpoint of
    step 38, not 30: nothing computed is lost; the run resumed from it ends with the uninterrupted run's result.
    Without the stop (``stop_here`` a no-op) the signal would not stop it, and the test fails."""
    import signal

    X, y = problem()
    cfgs = [TrainConfig(steps=60, lr=0.05, weight_decay=lam, batch_size=10, momentum=0.9, record_every=20,
                        record_at=(5,)) for lam in (1e-3, 1e-2)]
    ckpt = tmp_path / "ens.pt"
    real, calls = ncbook.train.momentum_step, {"n": 0}

    def signalled(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 38:                       # during update 37 (the 38th call): a real signal to this process
            os.kill(os.getpid(), getattr(signal, sig))
        return real(*args, **kwargs)

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setattr(ncbook.train, "momentum_step", signalled)
    monkeypatch.setattr(ncbook.train, "_STOP_SIGNALS", [])
    try:
        ncbook.train.stop_on_signals()
        with pytest.raises(ncbook.train.Stopped) as stopped:
            train_ensemble(Ensemble([net(0), net(1)]), X, y, cfgs, seed=4, checkpoint=ckpt, checkpoint_every=10,
                           progress=False)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert (stopped.value.signal.name, stopped.value.step, stopped.value.saved) == (sig, 38, True)
    assert str(stopped.value) == f"stopped by {sig} at step 38, its checkpoint written there"
    assert torch.load(ckpt, weights_only=True)["step"] == 38
    monkeypatch.setattr(ncbook.train, "momentum_step", real)
    monkeypatch.setattr(ncbook.train, "_STOP_SIGNALS", [])
    resumed_ens = Ensemble([net(7), net(8)])
    resumed = train_ensemble(resumed_ens, X, y, cfgs, seed=4, checkpoint=ckpt, checkpoint_every=10, progress=False)
    fresh_ens = Ensemble([net(0), net(1)])
    fresh = train_ensemble(fresh_ens, X, y, cfgs, seed=4, progress=False)
    assert [h.loss for h in resumed] == [h.loss for h in fresh]
    for a, b in zip(resumed_ens.parameters(), fresh_ens.parameters()):
        assert torch.equal(a, b)


def test_undefined_metric_is_recorded_as_nan_not_a_crash():
    from ncbook.train import layer_metrics

    y = torch.tensor([0, 0, 1, 1])
    Z = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 2.0]], dtype=torch.float64)  # a dead sample
    W = torch.eye(2, dtype=torch.float64)
    out = layer_metrics([Z, Z], [W, W], y)
    assert np.isnan(out["nc3_cosine"][0]) and np.isfinite(out["nc1_trace_ratio"]).all()


def test_regularised_mse_matches_formula_and_gd_decreases_it():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 10, 6, seed=1)
    net = MLP([6, 8, 8, 3], num_nonlinear=1).double()
    Y = torch.nn.functional.one_hot(y, 3).double()
    lam = 0.01
    direct = 0.5 * ((net(X) - Y) ** 2).sum() / 30 + 0.5 * lam * sum((w ** 2).sum() for w in net.parameters())
    objective = data_loss(net(X), y) + weight_penalty(net.weights, lam)
    assert objective.item() == pytest.approx(direct.item(), rel=1e-14)
    hist = train(net, X, y, TrainConfig(steps=200, lr=0.1, weight_decay=lam, record_every=50), progress=False)
    assert hist.steps == [0, 50, 100, 150, 200]
    assert all(np.diff(hist.loss) < 0)                      # small-step GD decreases the loss it minimises
    assert hist.series("nc1_trace_ratio", -2)[-1] < hist.series("nc1_trace_ratio", -2)[0]


def test_layer_metrics_use_ncbook_metrics():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 8, 4, seed=0)
    net = MLP([4, 32, 8, 3], num_nonlinear=1).double()
    feats = net.forward_features(X)
    out = layer_metrics(feats, net.weights, y)
    assert out["nc1_pinv"][1] == pytest.approx(metrics.nc1_pinv(feats[1].detach(), y))
    assert out["balancedness"][1] == pytest.approx(metrics.balancedness(net.weights[2], net.weights[1]))
    assert np.isnan(out["balancedness"][-1])
    assert out["nc3_cosine"][0] == pytest.approx(metrics.nc3_cosine(feats[1].detach(), y, net.weights[2].detach()))


def test_divergence_is_reported_with_step_and_cause():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 10, 6, seed=1)
    net = MLP([6, 8, 8, 3], num_nonlinear=1).double()
    with pytest.raises(FloatingPointError, match=r"at step \d+.*lower the learning rate"):
        train(net, X * 100, y, TrainConfig(steps=100, lr=10.0, weight_decay=0.0), progress=False)
    with pytest.raises(ValueError, match="lr must be > 0"):
        train(net, X, y, TrainConfig(steps=10, lr=-1.0, weight_decay=0.0), progress=False)


def test_shuffled_epochs_use_every_sample_once_per_epoch_and_restart_anywhere():
    """Epochs are full shuffled passes (DataLoader(shuffle=True)): the batches of one epoch partition the data, the
    last one smaller; epochs differ; a fresh sampler asked for a later step (a resumed run) draws the same batch."""
    from ncbook.train import ShuffledEpochs
    s = ShuffledEpochs(23, 5, seed=3)
    assert s.per_epoch == 5
    for epoch in range(3):
        idx = torch.cat([s.batch(epoch * 5 + b) for b in range(5)])
        assert sorted(idx.tolist()) == list(range(23)) and len(s.batch(epoch * 5 + 4)) == 3
    assert not torch.equal(s.permutation(0), s.permutation(1))
    assert torch.equal(ShuffledEpochs(23, 5, seed=3).batch(12), s.batch(12))
    assert not torch.equal(ShuffledEpochs(23, 5, seed=4).permutation(0), s.permutation(0))
    assert len(ShuffledEpochs(23, None, seed=0).batch(7)) == 23 and len(ShuffledEpochs(23, 50, seed=0).batch(0)) == 23


def test_capture_is_asked_for_by_the_environment(monkeypatch):
    monkeypatch.delenv(ncbook.train.CAPTURE_ENV, raising=False)
    assert not ncbook.train.capture_requested()
    monkeypatch.setenv(ncbook.train.CAPTURE_ENV, "1")
    assert ncbook.train.capture_requested()
