"""Every formula and bound of the papers that ncbook implements, tested so that a wrong formula fails:

* its value against an independent computation (numpy's SVD, autograd, or numbers derived by hand), so that a
  constant off by 0.1% fails;
* each bound where it is tight (attained, or nearly, by a constructed case or an adversarial search), so that a bound
  made twice as strong fails; where no tight case exists the test says so and checks the value.

``scripts/mutation_check.py`` checks that these tests do fail for such mutations.
"""

import math

import numpy as np
import pytest
import scipy.optimize
import torch

from ncbook import bounds, metrics, stability, ufm
from ncbook.nets import MLP

import naive

RNG = np.random.default_rng(0)
EPS = np.finfo(np.float64).eps


def rounding(n: int = 10, cond: float = 1.0) -> float:
    """Relative tolerance between two float64 evaluations of one quantity: the first-order error bound n eps cond of a
    backward-stable computation with n rounded operations per result and condition number cond, times 4 for the
    constant such bounds leave out. Closed-form scalars here take n = 10 (a dozen operations)."""
    return 4 * n * cond * EPS


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ----------------------------------------------------------------------------------------------------------------
# Jacot et al., Theorem 3.1: values at points where the right-hand sides are known by hand


def gram_cond(A, B) -> float:
    """Condition of ||B^T B - A A^T||_op as a function of A, B: the sizes of the Gram matrices over the result."""
    G = B.numpy().T @ B.numpy() - A.numpy() @ A.numpy().T
    return (np.linalg.norm(A.numpy(), 2) ** 2 + np.linalg.norm(B.numpy(), 2) ** 2) / np.linalg.norm(G, 2)


def test_norms_against_numpy():
    A = rand(5, 7)
    s = np.linalg.svd(A.numpy(), compute_uv=False)
    assert bounds.op_norm(A) == pytest.approx(s[0], rel=rounding(7))              # an SVD of a 5 x 7 matrix
    assert bounds.kappa(A) == pytest.approx(s[0] / s[-1], rel=rounding(7, s[0] / s[-1]))
    assert bounds.kappa(A, 3) == pytest.approx(s[0] / s[2], rel=rounding(7, s[0] / s[2]))
    B = rand(4, 5, seed=1)
    gap = np.linalg.svd(B.numpy().T @ B.numpy() - A.numpy() @ A.numpy().T, compute_uv=False)[0]
    assert bounds.balancedness_gap(B, A) == pytest.approx(gap, rel=rounding(7 * 5, gram_cond(A, B)))
    # Jacot et al. Sec. 6's metric, which ncbook.metrics takes through Gram matrices (condition squared)
    assert metrics.balancedness(B, A) == pytest.approx(naive.balancedness(B, A), rel=rounding(35, gram_cond(A, B) ** 2))


def test_theorem_3_1_right_hand_sides_by_hand():
    # Psi = r (eps1 / (s - eps1) + sqrt(n eps2))
    assert bounds.psi(1.0, 0.0, 2.0, 3.0, 5) == pytest.approx(1.0, rel=rounding())
    assert bounds.psi(0.0, 0.04, 2.0, 3.0, 25) == pytest.approx(2.0, rel=rounding())
    # (2): r^2/N Psi^2 / (sqrt((K-1)/K) - 2 eps1/sqrt(N))^2; K = 2, N = 32, eps1 = 1, s = 2, eps2 = 0, r = 2:
    # Psi = 2, denominator (sqrt(1/2) - 2/sqrt(32))^2 = (sqrt(2)/2 - sqrt(2)/4)^2 = 1/8, so 4/32 * 4 * 8 = 4
    assert bounds.nc1_bound(1.0, 0.0, 2.0, 2.0, 7, 32, 2) == pytest.approx(4.0, rel=rounding())
    # (3) with eps2 = 0: c3^{1/L2}; with L2 = 2, r = 1, eps2 = 1/2: delta = 1, (s - eps1)^2/scale^2 = 4, e = 1/3
    assert bounds.kappa_bound(8.0, 0.5, 0.0, 1.0, 3.0, 3, 1.0) == pytest.approx(2.0, rel=rounding())
    by_hand = 2 * (4 / 3) ** 0.5 + 1 / 6
    assert bounds.kappa_bound(4.0, 1.0, 0.5, 1.0, 3.0, 2, 1.0) == pytest.approx(by_hand, rel=rounding())
    # (4): (kappa + t)/(1 - t), t = r Psi / s
    assert bounds.nc2_bound(2.0, 1.0, 0.5, 1.0) == pytest.approx(5.0, rel=rounding())
    # (5): kappa = 1, Psi = 0, eps1 = 0: (N + N) / (2N) = 1; kappa = 2, N = 4, eps1 = 0, r Psi = 1:
    # t = 2 (2 - 1/2) = 3, (4 + 1 - 16)/(16) = -11/16
    assert bounds.nc3_bound(1.0, 1.0, 0.0, 0.0, 9, 3) == pytest.approx(1.0, rel=rounding())
    assert bounds.nc3_bound(2.0, 1.0, 1.0, 0.0, 4, 2) == pytest.approx(-11 / 16, rel=rounding())


def test_theorem_3_1_nc3_bound_is_attained_at_exact_collapse():
    """At exact interpolation by an orthogonal head (kappa = 1, eps1 = eps2 = 0), NC3 = 1 = the bound (5)."""
    K = 3
    labels = torch.arange(K).repeat_interleave(4)
    X = torch.eye(K, dtype=torch.float64)[labels]
    model = MLP([K, K, K, K], 1).double()
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.copy_(torch.eye(K, dtype=torch.float64))
    th = bounds.theorem_3_1(model, X, labels)
    assert th.nc3 == pytest.approx(1.0, abs=rounding()) and th.bound_nc3 == pytest.approx(1.0, abs=rounding())
    assert th.bound_nc1 == 0.0 and th.nc1 < 1e-30


# ----------------------------------------------------------------------------------------------------------------
# Lemma C.2, with the sharp constant L2 (L2 - 1) / 2


def scalar_chain(xs):
    """1 x 1 linear layers with W_i^2 = xs[i]."""
    return [torch.tensor([[math.sqrt(x)]], dtype=torch.float64) for x in xs]


@pytest.mark.parametrize("L2", [2, 3, 5])
def test_lemma_c2_sharp_constant_is_attained_by_scalar_chains(L2):
    """W_i^2 = x - (L2 - i) eps: the gap is x^{L2} - prod(x - j eps) = (L2 (L2-1)/2) eps x^{L2-1} + O(eps^2), so the
    ratio to the sharp bound tends to 1 (exactly 1 for L2 = 2) and the paper's L2^2/2 is (L2-1)/L2 of the way."""
    eps = 1e-7 if L2 > 2 else 0.1
    Ws = scalar_chain([1.0 - (L2 - 1 - i) * eps for i in range(L2)])
    ratio = bounds.lemma_c2_gap(Ws) / bounds.lemma_c2_bound(Ws)
    # second order: ratio = 1 - eps e_2 / e_1 + ..., e_1, e_2 the elementary symmetric sums of 0..L2-1, below L2 eps;
    # the gap is a difference of numbers of size 1, so its rounding is relative to eps
    assert 1 - L2 * eps - rounding(10, 1 / eps) < ratio <= 1 + rounding(10, 1 / eps)
    assert bounds.lemma_c2_bound(Ws, as_printed=True) == pytest.approx(bounds.lemma_c2_bound(Ws) * L2 / (L2 - 1),
                                                                       rel=rounding())
    assert bounds.lemma_c2(Ws) == (bounds.lemma_c2_gap(Ws), bounds.lemma_c2_bound(Ws))


def test_lemma_c2_gap_by_hand_and_adversarial_search():
    W1, W2 = torch.tensor([[1.0, 0.0]]).double().T, torch.tensor([[2.0, 0.0], [0.0, 1.0]]).double()
    # (W2 W2^T)^2 - W2 W1 W1^T W2^T = diag(16, 1) - diag(4, 0): gap 12; eps2 = ||W2^T W2 - W1 W1^T|| = 3, r = 2
    assert bounds.lemma_c2_gap([W1, W2]) == pytest.approx(12.0, rel=rounding())
    assert bounds.lemma_c2_bound([W1, W2]) == pytest.approx(12.0, rel=rounding())       # attained
    worst = 0.0
    for L2, seed in [(2, 0), (3, 1), (4, 2)]:                 # Nelder-Mead on 2 x 2 layers from random starts
        def neg_ratio(v, L2=L2):
            Ws = [torch.as_tensor(w, dtype=torch.float64).reshape(2, 2) for w in np.split(v, L2)]
            b = bounds.lemma_c2_bound(Ws)
            return -bounds.lemma_c2_gap(Ws) / b if b > 1e-6 else 0.0        # below, rounding would dominate
        for start in np.random.default_rng(seed).normal(size=(4, 4 * L2)):
            res = scipy.optimize.minimize(neg_ratio, start, method="Nelder-Mead",
                                          options={"maxiter": 1500, "xatol": 1e-10, "fatol": 1e-12})
            worst = max(worst, -res.fun)
    assert 0.9 < worst <= 1 + rounding(10, 1e6 * 100)        # entries of size <= 10, bound >= 1e-6


# ----------------------------------------------------------------------------------------------------------------
# Section 4: Lemma C.1, Proposition 4.5, the balancing step of Theorem 4.4


def test_lemma_c1_constants_by_hand():
    assert bounds.lemma_c1_constant(2, 1.5, 2.0, [1.0, 3.0]) == pytest.approx(7 * 2 * 1.5 * 4 * 8 * 27, rel=rounding())
    assert bounds.lemma_c1_constant(2, 1.5, 0.5, [0.5, 3.0], as_printed=True) == pytest.approx(
        5 * 2 * 1.5 * 27 * 2 ** 2.5, rel=rounding())
    for L in range(2, 8):                                    # ours is the smaller for every L >= 2
        r = [1.3] * L
        assert bounds.lemma_c1_constant(5, 1.0, 1.0, r) < bounds.lemma_c1_constant(5, 1.0, 1.0, r, as_printed=True)


@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_lemma_c1_the_worst_case_we_know_is_a_seventh_of_the_constant(L):
    """A scalar linear chain with all weights 1, x = 1 and target 0: the Hessian of (1/2) f^2, f = prod w_i, is
    2 11^T - I, top eigenvalue 2L - 1 (by autograd here). The constant is 7 L^2: the lemma holds, and is loose by at
    least 7 even in this, the tightest case we found (its proof rounds L b^2 R^2 + 2 b R (beta L^2 b^2 R^2 + 2LbR)
    up to 7 beta L^2 b^3 R^3)."""
    w = torch.ones(L, dtype=torch.float64)
    H = torch.autograd.functional.hessian(lambda v: 0.5 * torch.prod(v) ** 2, w)
    top = float(torch.linalg.eigvalsh(H).max())
    assert top == pytest.approx(2 * L - 1, rel=rounding())
    assert top <= bounds.lemma_c1_constant(1, 1.0, 1.0, [1.0] * L) / 7 * (1 + rounding(L * L))


def test_shifted_pl_offset_by_hand_and_on_a_quadratic():
    """Prop. 4.5 on C_0(theta) = a ||theta - c||^2, which is alpha-PL with alpha = 8a everywhere: the shifted
    inequality holds on a ball, and at the minimiser of C_lambda the offset lam m_lambda is twice what is needed
    as lam -> 0 (the proof's (x - y)^2 >= x^2/2 - y^2 step), so the constant is not tight by a factor 2."""
    assert bounds.shifted_pl_offset(0.25, 1.0, 2.0, 1.0) == pytest.approx((1 + 1) ** 2 * 9, rel=rounding())
    a, lam = 0.5, 1e-6
    alpha = 8 * a
    c = np.array([1.0, -2.0, 0.5])
    theta0, r0 = c + 0.3, 3.0
    m = bounds.shifted_pl_offset(lam, alpha, float(np.linalg.norm(theta0)), r0)
    for theta in theta0 + r0 * RNG.uniform(-1, 1, size=(2000, 3)) / math.sqrt(3):
        C_lam = a * np.sum((theta - c) ** 2) + lam / 2 * np.sum(theta ** 2)
        grad = 2 * a * (theta - c) + lam * theta
        assert np.sum(grad ** 2) >= alpha / 4 * (C_lam - lam * m)
    star = 2 * a * c / (2 * a + lam)                          # the minimiser of C_lambda
    min_value = a * np.sum((star - c) ** 2) + lam / 2 * np.sum(star ** 2)
    needed = lam * bounds.shifted_pl_offset(lam, alpha, float(np.linalg.norm(star)), 0.0)
    assert min_value <= needed and min_value / needed == pytest.approx(0.5, rel=0.01)


def test_balancing_forcing_bound_attained_and_the_printed_exponent_fails():
    """The proof of Thm 4.4 bounds ||G_l||^2 + ||G_{l+1}||^2 for a pair of linear layers. A scalar chain (ReLU layer
    then two linear layers, all weights rho, input 1, error eps1 sqrt 2) attains 4 eps1^2 rho^{2(L-1)} ||X||^2;
    for rho < 1 the paper's exponent 2(L1 + L - 1) gives a smaller number, which this case exceeds."""
    eps1 = 0.3
    for rho in (0.5, 2.0):
        model = MLP([1, 1, 1, 1], 1).double()
        with torch.no_grad():
            for layer in model.layers:
                layer.weight.fill_(rho)
        X = torch.ones(1, 1, dtype=torch.float64)
        Y = torch.full((1, 1), rho ** 3 + eps1 * math.sqrt(2), dtype=torch.float64)
        params = [W.detach().clone().requires_grad_(True) for W in model.weights]
        grads = torch.autograd.grad(stability.regularised_loss(model, params, X, Y, 0.0), params)
        forcing = float(grads[1].norm() ** 2 + grads[2].norm() ** 2)
        ours = bounds.balancing_forcing_bound(eps1, rho, 1.0, 1, 3)
        printed = bounds.balancing_forcing_bound(eps1, rho, 1.0, 1, 3, as_printed=True)
        assert forcing == pytest.approx(ours, rel=rounding())
        assert (forcing > printed * 1.5) if rho < 1 else (forcing < printed)


def test_features_after_relu_layers_are_bounded_by_frobenius_norms_times_op_norm_of_X():
    """The step of Thm 4.4 (and Prop. 5.1): ||Z_{L1}||_F <= prod ||W_l||_F ||X||_op, since ||W A||_F <= ||W||_F
    ||A||_op and |relu(x)| <= |x|. Equality for a positive scalar chain; never above 1 in a random search."""
    worst = 0.0
    for seed in range(300):
        g = torch.Generator().manual_seed(seed)
        X = torch.randn(5, 8, generator=g, dtype=torch.float64)               # d x N
        Ws = [torch.randn(6, 5, generator=g, dtype=torch.float64), torch.randn(4, 6, generator=g, dtype=torch.float64)]
        Z = X
        for W in Ws:
            Z = torch.relu(W @ Z)
        ratio = float(Z.norm() / (math.prod(float(W.norm()) for W in Ws) * bounds.op_norm(X)))
        worst = max(worst, ratio)
    assert worst <= 1
    Z = torch.relu(torch.tensor([[0.5]]) @ torch.relu(torch.tensor([[0.5]]) @ torch.tensor([[3.0]])))
    assert float(Z) == pytest.approx(0.25 * 3.0)


# ----------------------------------------------------------------------------------------------------------------
# Section 5: Proposition 5.1, Theorem 5.2, Proposition 5.3


def test_prop_5_1_and_theorem_5_2_by_hand():
    """(17) with c = 0, L1 = 1, K = 2, (s_K(Y) - eps1) = ||X||: exp(K log K / 2) = 2. (18) with c = L1 K - L1 K log K,
    s_K(Y) - eps1 = ||X|| / 2: 2^K, and its L2-th root for kappa(W_L) (the paper's: the L1-th)."""
    assert bounds.prop_5_1_bound(0.0, 1, 2, 3.0, 1.0, 2.0) == pytest.approx(2.0, rel=rounding())
    K, L1, L2 = 3, 2, 4
    b = bounds.thm_5_2_bounds(L1 * K - L1 * K * math.log(K), L1, L2, K, 1.5, 0.5, 2.0)
    assert b["kappa_linear"] == pytest.approx(8.0, rel=rounding())
    assert b["kappa_WL"] == pytest.approx(8.0 ** (1 / L2), rel=rounding())
    assert b["kappa_WL_as_printed"] == pytest.approx(8.0 ** (1 / L1), rel=rounding())


@pytest.mark.parametrize("L2", [2, 3, 5])
def test_prop_5_1_linear_step_is_attained_by_balanced_chains(L2):
    """The step of the proof of Prop. 5.1 that the bound rests on: the smallest sum of squared Frobenius norms over
    factorisations of A into L2 factors is L2 sum_i s_i(A)^{2/L2}, attained by bounds.balanced_chain."""
    A = rand(3, 5, seed=L2)
    s = torch.linalg.svdvals(A)
    chain = bounds.balanced_chain(A, L2, width=4, seed=1)
    norm2 = sum(float((W ** 2).sum()) for W in chain)
    assert norm2 == pytest.approx(L2 * float((s ** (2 / L2)).sum()), rel=rounding(5 * L2, float(s[0] / s[-1])))
    other = [chain[0] * 1.1] + chain[1:-1] + [chain[-1] / 1.1]                # another factorisation of A
    assert sum(float((W ** 2).sum()) for W in other) > norm2


def test_prop_5_3_by_hand_and_ntk_lower_bound_attained():
    """Prop. 5.3: values by hand, and (20)'s sharp form L2 s_1(Z_L)^2 / r^2 attained by a deep linear scalar chain:
    Theta = sum_l (prod_{j != l} w_j)^2 x^2 = L2 (w^{L2} x)^2 / w^2 for equal weights w."""
    b = bounds.prop_5_3_kappa_bounds(16.0, 2.0, 4.0, K=3, M=9)
    assert b["every"] == pytest.approx(2.0, rel=rounding()) and b["some"] == pytest.approx(2.0, rel=rounding())
    assert bounds.ntk_lower_bound(3.0, 1.0, 2, 0.5, 3) == pytest.approx(12.0, rel=rounding())
    L2, w = 4, 1.3
    model = MLP([1] * (L2 + 2), 1).double()
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.fill_(w)
    X = torch.tensor([[0.7]], dtype=torch.float64)
    ntk = bounds.ntk_op_norm(model, X)
    ZL = 0.7 * w ** (L2 + 1)
    exact = (L2 + 1) * ZL ** 2 / w ** 2                       # every layer, the ReLU one included (input > 0)
    assert ntk == pytest.approx(exact, rel=rounding(10 * L2))
    # the sharp form counts the linear layers only, so it is attained up to the one non-linear layer's share
    assert L2 * ZL ** 2 / w ** 2 == pytest.approx(ntk * L2 / (L2 + 1), rel=rounding(10 * L2))
    # with s_K(Y) - eps1 = s_1(Z_L) (K = 1) the paper's form is the sharp one divided by K^2 = 1
    assert bounds.ntk_lower_bound(ZL, 0.0, 1, w, L2) == pytest.approx(ntk * L2 / (L2 + 1), rel=rounding(10 * L2))


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al.: Lemma B.1, the Hessian's lower bound and Theorem C.2's Lipschitz constant, Theorem 5.2 exactly


def test_gnc1_against_a_direct_computation():
    p = ufm.UFM(3, 4, 5, 0.5, 0.3)
    H = RNG.normal(size=(p.d, p.N))
    direct = naive.nc1_trace_ratio(H.T, ufm.labels(p.K, p.n), p.K)
    assert ufm.gnc1(H, p) == pytest.approx(direct, rel=rounding(p.N))


@pytest.mark.parametrize("lw,lh", [(0.5, 0.01), (2.0, 0.001)])
def test_lemma_b1_constant_holds_and_is_nearly_attained(lw, lh):
    """||Kn grad L(H)|| <= M ||H||, M = 1/(4 lam_W) + 1/lam_W + lam_H; for small collapsed H the ratio tends to
    |lam_H - 1/lam_W|, which is 4/5 of M as lam_H -> 0: the lemma's constant is within a factor 1.25."""
    p = ufm.UFM(3, 4, 5, lw, lh)
    M = ufm.gradient_growth_constant(p)
    assert M == pytest.approx(1.25 / lw + lh, rel=rounding())
    ratios = [np.linalg.norm(ufm.central_path_gradient(H, p)) / np.linalg.norm(H)
              for s in (1e-3, 0.1, 1.0, 10.0) for H in RNG.normal(size=(5, p.d, p.N)) * s]
    _, Hc = ufm.collapsed_minimiser(ufm.UFM(3, 4, 5, 0.5, 0.5))
    tiny = 1e-4 * Hc
    near = np.linalg.norm(ufm.central_path_gradient(tiny, p)) / np.linalg.norm(tiny)
    assert max(ratios + [near]) <= M
    curvature = np.linalg.norm(tiny, 2) ** 2 / (p.n * lw)          # the relative size of the neglected terms
    assert near == pytest.approx(1 / lw - lh, rel=10 * curvature) and near > 0.75 * M


def stationary_slack_scale(H, H0, p) -> float:
    """Relative error of ||H|| from the residual R of the stationarity condition: ||R|| / (beta - m) / ||H||."""
    R = ufm.stationarity_residual(H, H0, p)
    return rounding(p.d * p.N) + np.linalg.norm(R) / ((p.beta - max(0.0, -ufm.curvature_lower_bound(p)))
                                                      * np.linalg.norm(H))


@pytest.mark.parametrize("lw,lh,beta", [(1.0, 0.01, 10.0), (0.5, 0.2, 5.0), (2.0, 0.3, 3.0)])
def test_curvature_bound_and_lipschitz_constant_are_attained_at_zero(lw, lh, beta):
    """Kn hess L(0) has smallest eigenvalue lam_H - 1/lam_W exactly, and the Jacobian of H0 -> H at H0 = 0 has
    norm 1/(1 - m/beta), the corrected Theorem C.2 constant; a finite difference of the solver agrees."""
    p = ufm.UFM(3, 3, 4, lw, lh, beta)
    zero = np.zeros((p.d, p.N))
    hess = ufm.central_path_hessian(zero, p)
    eig = np.linalg.eigvalsh(hess)
    cond = np.abs(eig).max() / abs(eig.min())                  # eigvalsh's absolute error is ~ n eps ||hess||
    assert eig.min() == pytest.approx(ufm.curvature_lower_bound(p), rel=rounding(len(hess), cond))
    assert ufm.curvature_lower_bound(p) == pytest.approx(lh - 1 / lw, rel=rounding())
    L = ufm.lipschitz_constant(p)
    solve_cond = np.linalg.cond(p.beta * np.eye(len(hess)) + hess)
    assert np.linalg.norm(ufm.exact_map_jacobian(zero, p), 2) == pytest.approx(L, rel=rounding(len(hess), solve_cond))
    _, Hc = ufm.collapsed_minimiser(ufm.UFM(3, 3, 4, 0.5, 0.5))
    dH0 = 1e-6 * Hc                                           # along the class means: the worst direction
    _, H = ufm.solve_model2(dH0, p, H_init=dH0)
    # second-order terms of the map are relative O(||dH0||^2 / (n lam_W)); the solver adds its residual
    assert np.linalg.norm(H) / np.linalg.norm(dH0) == pytest.approx(
        L, rel=10 * np.linalg.norm(dH0, 2) ** 2 / (p.n * lw) + stationary_slack_scale(H, dH0, p))


@pytest.mark.parametrize("lw,lh,beta", [(0.5, 0.3, 100.0), (2.0, 0.1, 5.0), (0.3, 1.5, 20.0)])
def test_theorem_5_2_exact_map_blocks_in_closed_form(lw, lh, beta):
    """The blocks of the exact Jacobian of H0 -> H at a collapsed H0 against the closed forms, and the first-order
    values of Theorem 5.2 against them: they agree to O(beta^-2)."""
    p = ufm.UFM(3, 4, 5, lw, lh, beta)
    _, Hc = ufm.collapsed_minimiser(p)
    E = ufm.exact_map_jacobian(Hc, p)
    exact = np.sort(np.concatenate([[v] * m for v, m in ufm.exact_intra_block_spectrum(p).values()]))[::-1]
    for k in range(p.K):
        Ekk = ufm.block(E, p, k, k)
        np.testing.assert_allclose(np.sort(np.linalg.eigvalsh((Ekk + Ekk.T) / 2))[::-1], exact,
                                   atol=rounding(len(E), np.linalg.cond(E)))
        for k2 in range(p.K):
            if k2 != k:
                s = np.linalg.svd(ufm.block(E, p, k, k2), compute_uv=False)
                tol = rounding(len(E), np.linalg.cond(E))                 # E is an inverse, computed by a solve
                assert s[0] == pytest.approx(ufm.exact_inter_block_singular_value(p), rel=tol) and s[1] < tol
    first = ufm.spectrum_values(p)
    assert np.abs(first - exact).max() <= 2 * max(np.sqrt(lh / lw), lh, 2 * lh) ** 2 / beta ** 2


def test_block_indexing_of_F():
    """Sec. 5, eq. (6): F_{k,k'} = (e_k (x) I_dn)^T F (e_k' (x) I_dn), and vec(dH^(k)) (the n columns of class k,
    H[:, n(k-1) : nk]) is the k-th chunk of dn entries of vec(dH); the extracted text's column range dn(k-1)+1 : dnK
    mixes the two indexings."""
    p = ufm.UFM(3, 2, 4, 0.5, 0.3, 10.0)
    _, Hc = ufm.collapsed_minimiser(p)
    F = ufm.first_order_map(Hc, p)
    dn = p.d * p.n
    for k in range(p.K):
        for k2 in range(p.K):
            ek, ek2 = np.eye(p.K)[:, [k]], np.eye(p.K)[:, [k2]]
            np.testing.assert_array_equal(ufm.block(F, p, k, k2),
                                          np.kron(ek, np.eye(dn)).T @ F @ np.kron(ek2, np.eye(dn)))
    dH = RNG.normal(size=(p.d, p.N))
    for k in range(p.K):
        np.testing.assert_array_equal(dH[:, p.n * k:p.n * (k + 1)].ravel(order="F"),
                                      dH.ravel(order="F")[dn * k:dn * (k + 1)])


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


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al., Corollary 4.2 with an explicit threshold on beta


def parts(H, p):
    """Within-class parts H_w and centred class means M_c of class-ordered features."""
    M = H.reshape(p.d, p.K, p.n).mean(2)
    return H - np.repeat(M, p.n, axis=1), M - M.mean(1, keepdims=True)


def stationary_slack(H, H0, p) -> float:
    """Relative slack for the two steps of the proof at a computed stationary point: the relations
    (beta I + P) H_w = beta H0_w and (beta I + P - Q) M_c = beta M0_c hold up to the residual R of the stationarity
    condition, which moves the norms by at most ||R|| / beta; plus rounding."""
    R = ufm.stationarity_residual(H, H0, p)
    Hw0, Mc0 = parts(H0, p)
    return rounding(p.d * p.N) + np.linalg.norm(R) / (p.beta * min(np.linalg.norm(Hw0), np.linalg.norm(Mc0)))


def test_corollary_4_2_threshold_by_hand_and_the_operator_inequality_it_rests_on():
    """beta* = max(0, 1/(2 lam_W) - lam_H); the proof's key step W*^T W* <= n (H H^T + n lam_W I)^{-1}, which is tight
    (top eigenvalue ratio -> 1) for collapsed features of growing norm."""
    assert ufm.beta_threshold_nc1(ufm.UFM(3, 2, 4, 0.25, 0.5)) == pytest.approx(1.5, rel=rounding())
    assert ufm.beta_threshold_nc1(ufm.UFM(3, 2, 4, 2.0, 0.5)) == 0.0
    p = ufm.UFM(3, 4, 5, 0.5, 0.1)
    _, Hc = ufm.collapsed_minimiser(ufm.UFM(3, 4, 5, 0.5, 0.5))
    for H, tight in [(RNG.normal(size=(p.d, p.N)), False), (30 * Hc, True)]:
        W = ufm.optimal_W(H, p)
        Q = p.n * np.linalg.inv(H @ H.T + p.n * p.lam_W * np.eye(p.d))
        Qh = np.linalg.cholesky(np.linalg.inv(Q))                         # Q^{-1} = Qh Qh^T
        top = np.linalg.eigvalsh(Qh.T @ W.T @ W @ Qh).max()               # W^T W <= Q  <=>  this <= 1
        assert top <= 1 + rounding(p.d ** 2, np.linalg.cond(Q))
        if tight:
            assert top > 0.99


@pytest.mark.parametrize("lw,lh,beta_over_threshold,seed", [(0.5, 0.05, 1.0, 0), (0.25, 0.01, 1.5, 1),
                                                             (2.0, 0.3, 1.0, 2), (1.0, 0.0, 1.0, 3)])
def test_corollary_4_2_gnc1_cannot_increase_above_the_threshold(lw, lh, beta_over_threshold, seed):
    """At the minimiser, within-class parts shrink by at least beta/(beta + lam_H) and centred means by at most that
    (the two steps of the proof in chapter 3), so gNC1 does not increase, for beta at (or a little above) beta*."""
    p0 = ufm.UFM(3, 4, 5, lw, lh)
    beta = max(beta_over_threshold * ufm.beta_threshold_nc1(p0), 1e-3)
    beta = max(beta, 1.01 * max(0.0, 1 / lw - lh))           # the solver needs the unique minimiser (beta > m)
    p = ufm.UFM(3, 4, 5, lw, lh, beta)
    H0 = np.random.default_rng(seed).normal(size=(p.d, p.N)) * (1 + 3 * seed)
    _, H = ufm.solve_model2(H0, p)
    (Hw, Mc), (Hw0, Mc0) = parts(H, p), parts(H0, p)
    factor, tol = beta / (beta + lh), stationary_slack(H, H0, p)
    assert np.linalg.norm(Hw) <= factor * np.linalg.norm(Hw0) * (1 + tol)
    assert np.linalg.norm(Mc) >= factor * np.linalg.norm(Mc0) * (1 - tol)
    assert ufm.gnc1(H, p) <= ufm.gnc1(H0, p) * (1 + 4 * tol)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_corollary_4_2_holds_at_stationary_points_between_the_threshold_and_uniqueness(seed):
    """For beta* <= beta <= m = 1/lam_W - lam_H the objective need not be convex; at the stationary point the solver
    reaches (residual checked) the two steps of the proof still hold, and gNC1 does not increase."""
    lw, lh = 0.25, 0.01
    p = ufm.UFM(3, 4, 5, lw, lh, 2.5)
    assert ufm.beta_threshold_nc1(p) <= p.beta <= 1 / lw - lh
    H0 = np.random.default_rng(seed).normal(size=(p.d, p.N)) * 2
    _, H = ufm.solve_model2(H0, p)
    residual = ufm.stationarity_residual(H, H0, p)
    scale = np.linalg.norm(ufm.central_path_hessian(H, p), 2) + p.beta       # the size of the map whose zero H is
    assert np.linalg.norm(residual) < rounding(p.d * p.N, scale) * np.linalg.norm(H0)      # stationary, to rounding
    (Hw, Mc), (Hw0, Mc0) = parts(H, p), parts(H0, p)
    factor, tol = p.beta / (p.beta + lh), stationary_slack(H, H0, p)
    assert np.linalg.norm(Hw) <= factor * np.linalg.norm(Hw0) * (1 + tol)
    assert np.linalg.norm(Mc) >= factor * np.linalg.norm(Mc0) * (1 - tol)
    assert ufm.gnc1(H, p) <= ufm.gnc1(H0, p) * (1 + 4 * tol)


def test_proximal_objective_paper_constant_and_mean_cosines_by_independent_computation():
    """Three formulas not covered elsewhere: L(H) + beta ||H - H0||^2 / (2Kn) is eq. (2) at W = W*(H); the extracted
    Thm C.2 constant 1/(1 - 11 lam_H / beta) by hand; the cosines of the (uncentred) class means by numpy."""
    p = ufm.UFM(3, 4, 5, 0.5, 0.3, beta=7.0)
    H, H0 = RNG.normal(size=(p.d, p.N)), RNG.normal(size=(p.d, p.N))
    assert ufm.proximal_objective(H, H0, p) == pytest.approx(ufm.objective(ufm.optimal_W(H, p), H, p, H0),
                                                             rel=rounding(p.d * p.N))
    assert ufm.lipschitz_constant_as_extracted(ufm.UFM(3, 3, 4, 1.0, 0.01, beta=11.0)) == pytest.approx(
        1 / 0.99, rel=rounding())
    Z, y = RNG.normal(size=(40, 6)) + 1.0, np.repeat(np.arange(4), 10)
    M = np.stack([Z[y == k].mean(0) for k in range(4)])
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    np.testing.assert_allclose(metrics.class_mean_cosines(Z, y), M @ M.T, rtol=rounding(40), atol=rounding(40))


def test_stationarity_residual_is_kn_times_the_gradient_of_the_proximal_objective():
    """<Kn grad L(H) + beta (H - H0), V> / Kn is the directional derivative of L(H) + beta ||H - H0||^2 / (2Kn), by a
    central difference (error: rounding |f| eps_mach / h plus truncation h^2, each times a small constant)."""
    p = ufm.UFM(3, 4, 5, 0.5, 0.3, beta=7.0)
    H, H0, V = (RNG.normal(size=(p.d, p.N)) for _ in range(3))
    h = 1e-5
    f = ufm.proximal_objective(H, H0, p)
    fd = (ufm.proximal_objective(H + h * V, H0, p) - ufm.proximal_objective(H - h * V, H0, p)) / (2 * h)
    exact = np.sum(ufm.stationarity_residual(H, H0, p) * V) / p.N
    assert fd == pytest.approx(exact, abs=100 * (EPS * abs(f) / h + h ** 2) * np.linalg.norm(V) ** 3)
