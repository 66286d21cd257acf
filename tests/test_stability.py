"""Training dynamics of Jacot et al. Secs. 4 and 5.2: the one-step balancing recursion, the sharpness tracker,
and clear failures."""

import numpy as np
import pytest
import torch

from ncbook import bounds, stability
from ncbook.experiments import run_trained_ntk
from ncbook.nets import MLP, SmoothLeakyReLU
from ncbook.registry import EXPERIMENTS

from helpers import rounding

# ----------------------------------------------------------------------------------------------------------------
# the loss of Section 4


def test_regularised_loss_by_hand():
    model = MLP([2, 2, 1], 1).double()
    W1 = torch.tensor([[1.0, -1.0], [2.0, 0.5]], dtype=torch.float64)
    W2 = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    X = torch.tensor([[1.0, 2.0]], dtype=torch.float64)       # relu(W1 x) = (0, 3); output 9
    Y = torch.tensor([[4.0]], dtype=torch.float64)
    # 0.5 * (9 - 4)^2 + 0.5 * 0.1 * (1 + 1 + 4 + 0.25 + 1 + 9)
    expected = 12.5 + 0.05 * 16.25
    assert float(stability.regularised_loss(model, [W1, W2], X, Y, 0.1)) == pytest.approx(expected, rel=rounding())


def test_balancing_recursion_is_exact_and_loss_decreases(digits40):
    X, y = digits40
    torch.manual_seed(0)
    model = MLP([64, 40, 16, 12, 12, 10], 2, activation=SmoothLeakyReLU(0.1, 1.0))
    out = stability.gd_phases(model, X, y, lr=0.01, weight_decay=0.05, steps=200, every=10, progress=False)
    assert float(out["recursion_residual"]) < 1e-12
    assert out["loss"][-1] < 0.95 * out["loss"][0]
    assert out["balance"].shape == (21, 2)


def test_sharpness_is_tracked_and_divergence_is_reported(digits40):
    X, y = digits40
    torch.manual_seed(0)
    model = MLP([64, 16, 12, 10], 1)
    out = stability.gd_with_sharpness(model, X, y, lr=0.01, weight_decay=1e-3, steps=40, every=20,
                                      power_iters=10, progress=False)
    assert out["sharpness"].shape == (3,) and (out["sharpness"] > 0).all()
    linear = MLP([64, 16, 10], 0)                      # (a ReLU network would rather die than diverge)
    with pytest.raises(FloatingPointError, match="diverged"):
        stability.gd_with_sharpness(linear, X, y, lr=50.0, weight_decay=0.0, steps=200, every=1000, progress=False)
    with pytest.raises(ValueError, match="lr > 0"):
        stability.gd_with_sharpness(model, X, y, lr=-1.0, weight_decay=0.0, steps=10)


def test_trained_ntk_matches_the_edge_of_stability_run_and_meets_prop_53():
    """trained_ntk retrains edge_of_stability's networks: the same final loss (same seed, data and steps); and its
    NTK norm bounds every tail of the head as chapter 7's Prop. 5.3 (part 2) says, on any network."""
    cfg = EXPERIMENTS["trained_ntk"].scales["tiny"]
    assert cfg == EXPERIMENTS["edge_of_stability"].scales["tiny"]
    eos = EXPERIMENTS["edge_of_stability"].run(cfg, progress=False)
    out = run_trained_ntk(cfg, progress=False)
    assert out["loss"] == pytest.approx(eos["loss"][:, -1], rel=1e-12)
    for i in range(len(cfg.lrs)):
        b = bounds.prop_5_3_kappa_bounds(out["ntk"][i], out["r"][i], out["sK_ZL"][i], K=10, M=1)
        assert np.all(out["kappa_tails"][i] <= b["every"] * (1 + 1e-10))
        assert out["ntk"][i] >= 2 * out["s1_ZL"][i] ** 2 / out["r"][i] ** 2 * (1 - 1e-10)   # part 1, L2 = 2


class _Stop(Exception):
    pass


@pytest.mark.parametrize("loop", ["gd_phases", "gd_with_sharpness"])
def test_a_killed_gd_run_resumes_to_the_identical_result(digits40, tmp_path, monkeypatch, loop):
    X, y = digits40

    def run(checkpoint=None):
        torch.manual_seed(0)
        model = MLP([64, 40, 16, 12, 12, 10], 2, activation=SmoothLeakyReLU(0.1, 1.0))
        kw = {"every": 5} if loop == "gd_phases" else {"every": 5, "power_iters": 3}
        return getattr(stability, loop)(model, X, y, 0.01, 0.05, 30, progress=False, checkpoint=checkpoint,
                                        save_every=10, **kw)

    whole = run()
    ckpt = tmp_path / "gd.pt"
    real = stability.run_steps

    def dies_at_step_25(steps, update, measure, *args, **kwargs):      # a kill -9 after the checkpoint of step 20
        def measure_or_die(step):
            if step == 25:
                raise _Stop
            measure(step)
        return real(steps, update, measure_or_die, *args, **kwargs)

    monkeypatch.setattr(stability, "run_steps", dies_at_step_25)
    with pytest.raises(_Stop):
        run(ckpt)
    monkeypatch.setattr(stability, "run_steps", real)
    assert torch.load(ckpt, weights_only=True)["step"] == 20
    resumed = run(ckpt)
    for name in ("loss", "sharpness", "balance", "grad0_sq", "step", "recursion_residual"):
        if name in whole:
            np.testing.assert_array_equal(resumed[name], whole[name])


def test_edge_of_stability_trains_in_float32_at_the_gpu_scale_as_in_float64():
    """The gpu scale's float32 (issue 49): on the tiny configuration (lr 0.05, at the edge of stability, where one
    rounding apart makes another trajectory within a few steps) the float32 run starts as the float64 one: the same
    sharpness at initialisation and the same first losses, to float32 rounding; trained_ntk's quantities (measured
    in float64 on the float32-trained weights) are finite."""
    from dataclasses import replace

    exp = EXPERIMENTS["edge_of_stability"]
    assert exp.config("gpu").dtype == "float32" and exp.config("cpu").dtype == "float64"
    tiny = exp.config("tiny")
    r64, r32 = (exp.run(replace(tiny, dtype=d), progress=False) for d in ("float64", "float32"))
    np.testing.assert_allclose(r32["sharpness"][:, 0], r64["sharpness"][:, 0], rtol=1e-4)
    np.testing.assert_allclose(r32["loss"][:, :3], r64["loss"][:, :3], rtol=1e-4)
    assert not np.allclose(r32["loss"][:, 3:], r64["loss"][:, 3:], rtol=1e-12, atol=0)     # it did run in float32
    ntk = EXPERIMENTS["trained_ntk"].run(replace(tiny, dtype="float32"), progress=False)
    assert all(np.isfinite(v).all() for v in ntk.values())


def test_sharpness_against_edge_reads_the_last_steps_over_two_over_lr():
    from ncbook.stability import sharpness_against_edge

    eos = {"lrs": np.array([0.01, 0.02]), "sharpness_steps": np.array([0, 500, 1000, 1500, 2000]),
           "sharpness": np.array([[5.0, 300, 190, 210, 200], [4.0, 300, 95, 105, 100]])}
    s = sharpness_against_edge(eos)
    np.testing.assert_allclose(s["edge"], [200, 100])
    np.testing.assert_allclose(s["start"], [5, 4])
    np.testing.assert_allclose(s["median"], [1.0, 1.0])        # step 500's 300 is not among the last 1000 steps
    np.testing.assert_allclose(s["min"], [0.95, 0.95])
    np.testing.assert_allclose(s["max"], [1.05, 1.05])
    np.testing.assert_allclose(sharpness_against_edge(eos, last=1500)["max"], [1.5, 3.0])


@pytest.mark.slow
def test_power_iteration_falls_short_at_the_gpu_scales_start_where_the_most_negative_nearly_matches_the_top():
    """Chapter 7's caution (issue 59): at initialisation of the gpu scale's network the Hessian's most negative
    eigenvalue is within 2% of its top one in magnitude (Lanczos, both ends), so power iteration, which converges at
    the rate |lambda_2| / |lambda_1|, is still well short of the top after its 30 iterations (the shipped step-0
    sharpness); at the cpu scale the rate is set by the second largest in magnitude, a positive eigenvalue 6.5% below
    the top (the most negative is 7% below), and the shipped 0.2% is the luck of its start: from 40 starts, 7 come
    within 1% (issue 76)."""
    from ncbook.experiments import _small_digits
    from ncbook.runner import get
    from ncbook.train import one_hot_targets

    for scale in ("gpu", "cpu"):
        cfg = EXPERIMENTS["edge_of_stability"].scales[scale]
        X, y = _small_digits(cfg, "cpu")
        torch.manual_seed(cfg.seed)
        model = MLP(list(cfg.widths), cfg.num_nonlinear).double()
        Y = one_hot_targets(y, 10, torch.float64)
        params = [W.detach().clone().requires_grad_(True) for W in model.weights]

        def loss(ps, model=model, X=X, Y=Y, cfg=cfg):
            return stability.regularised_loss(model, ps, X, Y, cfg.weight_decay)

        top = bounds.largest_hessian_eigenvalue(loss, params, tol=1e-2)
        bottom = bounds.largest_hessian_eigenvalue(loss, params, tol=1e-2, which="SA")
        start = float(get("edge_of_stability", scale)["sharpness"][0, 0])
        if scale == "gpu":
            assert 0.98 < -bottom / top < 1 and start < 0.8 * top
        else:
            assert round(100 * (1 + bottom / top)) == 7 and start == pytest.approx(top, rel=3e-3)
            # what sets the rate at the cpu scale is the second largest in magnitude, a positive eigenvalue
            first, second = largest_in_magnitude(loss, params, 2)
            assert (round(first, 2), round(second, 2)) == (5.33, 4.98) == (round(top, 2), round(second, 2))
            assert round(100 * (1 - second / first), 1) == 6.5 and round((second / first) ** 30, 2) == 0.13
            starts = [bounds.top_hessian_eigenvalue(loss, params, iters=30, seed=s) for s in range(40)]
            assert sum(s > 0.99 * top for s in starts) == 7 and round(100 * (1 - start / top), 1) == 0.2


def largest_in_magnitude(loss_fn, params: list[torch.Tensor], k: int) -> list[float]:
    """The ``k`` eigenvalues of the Hessian of ``loss_fn(params)`` largest in magnitude, largest first (Lanczos on
    Hessian-vector products, independently of ``ncbook.bounds``)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    sizes = [p.numel() for p in params]
    grads = torch.autograd.grad(loss_fn(params), params, create_graph=True)

    def matvec(v: np.ndarray) -> np.ndarray:
        parts = torch.split(torch.as_tensor(np.ravel(v), dtype=torch.float64), sizes)
        hv = torch.autograd.grad(grads, params, [x.reshape(p.shape) for x, p in zip(parts, params)], retain_graph=True)
        return torch.cat([h.reshape(-1) for h in hv]).numpy()

    n = sum(sizes)
    values = eigsh(LinearOperator((n, n), matvec=matvec, dtype=np.float64), k=k + 2, which="LM", v0=np.ones(n),
                   tol=1e-8, return_eigenvectors=False)
    return sorted(values.tolist(), key=abs, reverse=True)[:k]
