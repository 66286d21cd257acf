"""Jacot et al. (2025): the activation of eq. (7), Lemma C.2, Theorem 3.1 on networks built to satisfy it, the
exponent of Theorem 5.2, and the NTK and Hessian tools of Proposition 5.3."""

import math

import numpy as np
import pytest
import torch
from scipy.integrate import quad

from ncbook import bounds, data
from ncbook.nets import MLP, SmoothLeakyReLU


def by_quadrature(x: float, g: float, b: float) -> float:
    """eq. (7) as written: -(1-g)^2/(2 pi b) + b/(1-g) int max(g u, u) exp(-pi b^2 (x-u)^2/(1-g)^2) du."""
    f = lambda u: max(g * u, u) * math.exp(-math.pi * b * b * (x - u) ** 2 / (1 - g) ** 2)  # noqa: E731
    return -(1 - g) ** 2 / (2 * math.pi * b) + b / (1 - g) * quad(f, x - 10, x + 10, points=[0.0],
                                                                     epsabs=1e-13, epsrel=1e-13, limit=200)[0]


@pytest.mark.parametrize("g,b", [(0.1, 1.0), (0.2, 2.0), (0.5, 5.0)])
def test_activation_matches_its_integral_and_assumption_4_2(g, b):
    act = SmoothLeakyReLU(g, b)
    for x in [-3.0, -0.4, -0.05, 0.0, 0.02, 0.3, 2.5]:
        assert float(act(torch.tensor(x, dtype=torch.float64))) == pytest.approx(by_quadrature(x, g, b), abs=1e-12)
    x = torch.linspace(-5, 5, 20001, dtype=torch.float64, requires_grad=True)
    y = act(x)
    d1, = torch.autograd.grad(y.sum(), x)
    x, y = x.detach(), y.detach()
    assert float(d1.min()) >= g - 1e-12 and float(d1.max()) <= 1 + 1e-12          # (i) sigma' in [gamma, 1]
    assert bool((y.abs() <= x.abs() + 1e-15).all())                                # (ii) |sigma(x)| <= |x|
    slope = (d1[1:] - d1[:-1]).abs() / (x[1:] - x[:-1])
    assert float(slope.max()) <= b * (1 + 1e-6)                                    # (iii) sigma' b-Lipschitz
    with pytest.raises(ValueError, match="Assumption 4.2"):
        SmoothLeakyReLU(1.5, 1.0)


def test_lemma_c2_bound_holds_and_balanced_chains_are_exact():
    g = torch.Generator().manual_seed(0)
    for L2 in (2, 3, 5):
        Ws = [torch.randn(6, 8, generator=g, dtype=torch.float64) / 3]
        Ws += [torch.randn(6, 6, generator=g, dtype=torch.float64) / 2.5 for _ in range(L2 - 2)]
        Ws += [torch.randn(4, 6, generator=g, dtype=torch.float64) / 2.5]
        gap, bound = bounds.lemma_c2(Ws)
        assert gap <= bound
        P = bounds.product(Ws)
        chain = bounds.balanced_chain(P, L2, width=6, seed=1)
        torch.testing.assert_close(bounds.product(chain), P)
        gap0, _ = bounds.lemma_c2(chain)
        assert gap0 < 1e-12
        # exact balancedness: kappa(W_L) is the L2-th root of kappa of the product (not the L1-th)
        assert bounds.kappa(chain[-1], 4) == pytest.approx(bounds.kappa(P, 4) ** (1 / L2), rel=1e-10)


@pytest.fixture(scope="module")
def digits100():
    X, y = data.digits(dtype=torch.float64)
    idx = torch.as_tensor(data.balanced_subset(y.numpy(), 10, 0))
    return X[idx], y[idx]


@pytest.mark.parametrize("noise,L2", [(0.0, 3), (1e-3, 4), (1e-3, 6), (3e-3, 4)])
def test_theorem_3_1_bounds_hold_on_networks_that_meet_its_hypotheses(digits100, noise, L2):
    X, y = digits100
    th = bounds.theorem_3_1(bounds.interpolating_network(X, y, 400, 12, L2, noise=noise), X, y)
    assert th.eps2 < 1e-12                                    # the head is exactly balanced
    assert th.nc1 <= th.bound_nc1
    assert th.kappa_WL <= th.bound_kappa_WL_fixed * (1 + 1e-9)
    assert th.nc2 <= th.bound_nc2 * (1 + 1e-9)
    assert th.nc3 >= th.bound_nc3 - 1e-9
    if noise == 0.0:
        assert th.bound_nc1 < 1e-6 and th.kappa_WL == pytest.approx(th.kappa_linear ** (1 / L2), rel=1e-8)


def test_relu_can_increase_the_operator_norm():
    """The step ||Z_{L1}||_op <= ||X||_op r^{L1} in the proof of (3) assumes ||sigma(A)||_op <= ||A||_op."""
    A = torch.tensor([[1.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    assert bounds.op_norm(torch.relu(A)) > bounds.op_norm(A) * 1.1


def test_ntk_norm_and_hessian_top_eigenvalue(digits100):
    X, y = digits100
    X, y = X[::5], y[::5]                                      # 20 samples, 2 per class
    torch.manual_seed(0)
    model = MLP([64, 12, 10, 10], 1).double()
    ntk = bounds.ntk_op_norm(model, X)
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    Y = torch.nn.functional.one_hot(y, 10).double()

    def loss(ps):
        h = torch.relu(X @ ps[0].T)
        return 0.5 * ((h @ ps[1].T @ ps[2].T - Y) ** 2).sum()

    top = bounds.top_hessian_eigenvalue(loss, params, iters=300)
    flat = torch.cat([p.reshape(-1) for p in params]).detach().requires_grad_(True)
    sizes = [p.numel() for p in params]

    def loss_flat(v):
        return loss([t.reshape(p.shape) for t, p in zip(torch.split(v, sizes), params)])

    H = torch.autograd.functional.hessian(loss_flat, flat)
    assert top == pytest.approx(float(torch.linalg.eigvalsh(H).max()), rel=1e-6)

    def outputs_flat(v):
        ps = [t.reshape(p.shape) for t, p in zip(torch.split(v, sizes), params)]
        return (torch.relu(X @ ps[0].T) @ ps[1].T @ ps[2].T).reshape(-1)

    J = torch.autograd.functional.jacobian(outputs_flat, flat.detach())
    assert ntk == pytest.approx(float(torch.linalg.matrix_norm(J, ord=2)) ** 2, rel=1e-10)


def test_proposition_5_3_ntk_lower_bound(digits100):
    X, y = digits100
    X, y = X[::2], y[::2]                                      # 50 samples
    for L2 in (2, 4):
        model = bounds.interpolating_network(X, y, 120, 12, L2, noise=1e-3)
        th = bounds.theorem_3_1(model, X, y)
        r = max(bounds.op_norm(W) for W in model.weights)
        assert bounds.ntk_op_norm(model, X) >= bounds.ntk_lower_bound(th.s_K_Y, th.eps1, th.K, r, L2)


@pytest.mark.parametrize("leak,seed", [(0.003, 0), (0.01, 0), (0.01, 1), (0.03, 2)])
def test_nc3_bound_holds_when_features_leak_into_the_kernel(leak, seed):
    """Chapter 5's proof of (5) for eps2 > 0: the paper's per-sample step ||z'|| <= kappa (1 + eps1) fails on every
    sample, the second-order step (eq-nc3-sample) holds, and so does (5), informatively."""
    model, X, y = bounds.kernel_leaking_network(3, 8, 4, leak, seed=seed)
    th, t = bounds.theorem_3_1(model, X, y), bounds.nc3_terms(model, X, y)
    D = th.kappa_WL * (1 + th.eps1)
    assert th.eps2 > leak and th.kappa_WL == pytest.approx(1, abs=1e-12)
    assert torch.all((t["row"] ** 2 + t["kernel"] ** 2).sqrt() > D)
    assert torch.all(t["cos"] >= t["a"] / D - t["kernel"] ** 2 / (2 * D ** 2) - 1e-12)
    assert torch.sum(t["kernel"] ** 2) <= th.r ** 4 * th.n_last * th.eps2          # the kernel mass step
    assert th.nc3 >= th.bound_nc3 > 0


def test_nc3_terms_agree_with_the_network(digits100):
    X, y = digits100
    model = bounds.interpolating_network(X, y, 120, 12, 3, noise=1e-2)
    th, t = bounds.theorem_3_1(model, X, y), bounds.nc3_terms(model, X, y)
    with torch.no_grad():
        feats = model.forward_features(X)
    Z, out = feats[-2], feats[-1]
    scale = bounds.op_norm(model.weights[-1])
    assert torch.allclose(t["a"], out[torch.arange(len(y)), y], rtol=1e-10)        # a_ci is the c-th output
    assert torch.allclose(t["row"] ** 2 + t["kernel"] ** 2, scale ** 2 * Z.norm(dim=1) ** 2, rtol=1e-10)
    assert float(t["cos"].mean()) == pytest.approx(th.nc3, rel=1e-12)
    assert float(t["err"].norm()) == pytest.approx(th.eps1, rel=1e-12)


def test_nc3_bound_bad_sample_term():
    common = dict(kappa_WL=1.2, r=2.0, p=0.1, N=100, K=10)
    for eps1, m in ((0.5, 0), (1.0, 0), (1.5, 2), (2.0, 3)):
        gap = bounds.nc3_bound(eps1=eps1, **common, as_printed=True) - bounds.nc3_bound(eps1=eps1, **common)
        printed_t = np.sqrt(10) * (1.2 ** 2 - 1)
        corrected_t = 10 * (1.2 - 1 / 1.2)
        t_gap = ((0.2 + corrected_t) ** 2 - (0.2 + printed_t) ** 2) / (2 * 100 * 1.2 * (1 + eps1))
        assert gap == pytest.approx(t_gap + m / 100, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prop_53_both_forms_on_any_network(seed):
    """Chapter 7's Prop. 5.3, which needs no interpolation: ||Theta|| >= L2 s_1(Z_L)^2 / r^2, r the largest operator
    norm of a linear layer; every tail kappa(W_{L:l}), l = L1+1..L (the whole head included), is at most
    sqrt(||Theta||) r / s_K(Z_L); for every M some l among the first M meets the paper's K / sqrt(M) form;
    and the step K^2 ||Theta|| >= sum_l ||W_{L:l+1}||_F^2 ||Z_{l-1} V_K||_F^2 holds."""
    torch.manual_seed(seed)
    K = 3
    X, y = data.gaussian_mixture(K, 6, 5, seed=seed)
    L1, L2 = 1, 4
    model = MLP([5, 9, 7, 6, 5, K], L1).double()
    with torch.no_grad():
        feats = [X.double()] + model.forward_features(X.double())
    _, sv, Vh = torch.linalg.svd(feats[-1].T, full_matrices=False)
    r = max(bounds.op_norm(W) for W in model.weights[L1:])
    ntk = bounds.ntk_op_norm(model, X)
    assert ntk >= L2 * float(sv[0]) ** 2 / r ** 2
    tails = [bounds.kappa(bounds.product(model.weights[i:]), K) for i in range(L1, L1 + L2)]   # W_{L:l}
    for M in range(1, L2 + 1):
        b = bounds.prop_5_3_kappa_bounds(ntk, r, float(sv[K - 1]), K, M)
        assert max(tails) <= b["every"] * (1 + 1e-12)
        assert min(tails[:M]) <= b["some"] * (1 + 1e-12)
    V = Vh[:K].T                                                             # N x K, top right singular vectors
    with torch.no_grad():
        heads = [bounds.product(model.weights[i + 1:]) if i + 1 < L1 + L2 else torch.eye(K) for i in range(L1, L1 + L2)]
        terms = [torch.linalg.matrix_norm(B) ** 2 * torch.linalg.matrix_norm(feats[i].T @ V) ** 2
                 for B, i in zip(heads, range(L1, L1 + L2))]                 # ||W_{L:l+1}||_F^2 ||Z_{l-1} V_K||_F^2
    assert K ** 2 * ntk >= float(sum(terms)) * (1 - 1e-12)
