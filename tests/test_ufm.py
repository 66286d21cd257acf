"""The unconstrained features models of Tirer et al. (2023): closed forms against solvers, the flow's monotonicity
(Theorem 4.1), Corollaries 3.1 and 4.2, and the perturbation map's spectra (Theorems 5.1 and 5.2)."""

import numpy as np
import pytest

from ncbook import metrics, ufm

import naive
from helpers import EPS, rounding

SETTINGS = [(4, 3, 6, 0.5, 0.3), (3, 5, 3, 2.0, 0.1), (5, 2, 8, 0.3, 1.5)]   # K, n, d, lam_W, lam_H


# ----------------------------------------------------------------------------------------------------------------
# Tirer et al.: Lemma B.1, the Hessian's lower bound and Theorem C.2's Lipschitz constant, Theorem 5.2 exactly


def test_gnc1_against_a_direct_computation():
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    p = ufm.UFM(3, 4, 5, 0.5, 0.3)
    H = rng.normal(size=(p.d, p.N))
    direct = naive.nc1_trace_ratio(H.T, ufm.labels(p.K, p.n), p.K)
    assert ufm.gnc1(H, p) == pytest.approx(direct, rel=rounding(p.N))


@pytest.mark.parametrize("lw,lh", [(0.5, 0.01), (2.0, 0.001)])
def test_lemma_b1_constant_holds_and_is_nearly_attained(lw, lh):
    """||Kn grad L(H)|| <= M ||H||, M = 1/(4 lam_W) + 1/lam_W + lam_H; for small collapsed H the ratio tends to
    |lam_H - 1/lam_W|, which is 4/5 of M as lam_H -> 0: the lemma's constant is within a factor 1.25."""
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    p = ufm.UFM(3, 4, 5, lw, lh)
    M = ufm.gradient_growth_constant(p)
    assert M == pytest.approx(1.25 / lw + lh, rel=rounding())
    ratios = [np.linalg.norm(ufm.central_path_gradient(H, p)) / np.linalg.norm(H)
              for s in (1e-3, 0.1, 1.0, 10.0) for H in rng.normal(size=(5, p.d, p.N)) * s]
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
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    p = ufm.UFM(3, 2, 4, 0.5, 0.3, 10.0)
    _, Hc = ufm.collapsed_minimiser(p)
    F = ufm.first_order_map(Hc, p)
    dn = p.d * p.n
    for k in range(p.K):
        for k2 in range(p.K):
            ek, ek2 = np.eye(p.K)[:, [k]], np.eye(p.K)[:, [k2]]
            np.testing.assert_array_equal(ufm.block(F, p, k, k2),
                                          np.kron(ek, np.eye(dn)).T @ F @ np.kron(ek2, np.eye(dn)))
    dH = rng.normal(size=(p.d, p.N))
    for k in range(p.K):
        np.testing.assert_array_equal(dH[:, p.n * k:p.n * (k + 1)].ravel(order="F"),
                                      dH.ravel(order="F")[dn * k:dn * (k + 1)])


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
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    assert ufm.beta_threshold_nc1(ufm.UFM(3, 2, 4, 0.25, 0.5)) == pytest.approx(1.5, rel=rounding())
    assert ufm.beta_threshold_nc1(ufm.UFM(3, 2, 4, 2.0, 0.5)) == 0.0
    p = ufm.UFM(3, 4, 5, 0.5, 0.1)
    _, Hc = ufm.collapsed_minimiser(ufm.UFM(3, 4, 5, 0.5, 0.5))
    for H, tight in [(rng.normal(size=(p.d, p.N)), False), (30 * Hc, True)]:
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
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    p = ufm.UFM(3, 4, 5, 0.5, 0.3, beta=7.0)
    H, H0 = rng.normal(size=(p.d, p.N)), rng.normal(size=(p.d, p.N))
    assert ufm.proximal_objective(H, H0, p) == pytest.approx(ufm.objective(ufm.optimal_W(H, p), H, p, H0),
                                                             rel=rounding(p.d * p.N))
    assert ufm.lipschitz_constant_as_extracted(ufm.UFM(3, 3, 4, 1.0, 0.01, beta=11.0)) == pytest.approx(
        1 / 0.99, rel=rounding())
    Z, y = rng.normal(size=(40, 6)) + 1.0, np.repeat(np.arange(4), 10)
    M = np.stack([Z[y == k].mean(0) for k in range(4)])
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    np.testing.assert_allclose(metrics.class_mean_cosines(Z, y), M @ M.T, rtol=rounding(40), atol=rounding(40))


def test_stationarity_residual_is_kn_times_the_gradient_of_the_proximal_objective():
    """<Kn grad L(H) + beta (H - H0), V> / Kn is the directional derivative of L(H) + beta ||H - H0||^2 / (2Kn), by a
    central difference (error: rounding |f| eps_mach / h plus truncation h^2, each times a small constant)."""
    rng = np.random.default_rng(0)     # each test its own stream, whatever the order
    p = ufm.UFM(3, 4, 5, 0.5, 0.3, beta=7.0)
    H, H0, V = (rng.normal(size=(p.d, p.N)) for _ in range(3))
    h = 1e-5
    f = ufm.proximal_objective(H, H0, p)
    fd = (ufm.proximal_objective(H + h * V, H0, p) - ufm.proximal_objective(H - h * V, H0, p)) / (2 * h)
    exact = np.sum(ufm.stationarity_residual(H, H0, p) * V) / p.N
    assert fd == pytest.approx(exact, abs=100 * (EPS * abs(f) / h + h ** 2) * np.linalg.norm(V) ** 3)


def gram_of_means(H, p):
    M = H.reshape(p.d, p.K, p.n).mean(2)
    return M.T @ M


@pytest.mark.parametrize("K,n,d,lw,lh", SETTINGS)
@pytest.mark.parametrize("seed", [0, 1])
def test_theorem_2_2_solver_reaches_the_collapsed_minimiser(K, n, d, lw, lh, seed):
    p = ufm.UFM(K, n, d, lw, lh)
    W, H = ufm.solve_model1(p, seed=seed)
    rho, w2 = ufm.collapse_norms(p)
    assert ufm.objective(W, H, p) == pytest.approx(ufm.minimum_value(p), abs=1e-10)
    assert metrics.nc1_trace_ratio(H.T, ufm.labels(K, n)) < 1e-8                      # NC1
    np.testing.assert_allclose(gram_of_means(H, p), rho * np.eye(K), atol=1e-5)       # orthogonal frame
    np.testing.assert_allclose(W, np.sqrt(lh / lw) * H.reshape(d, K, n).mean(2).T, atol=1e-5)   # w_k ~ h_k
    np.testing.assert_allclose(np.sum(W ** 2, 1), w2, atol=1e-5)
    Wc, Hc = ufm.collapsed_minimiser(p, np.linalg.qr(np.random.default_rng(seed).normal(size=(d, K)))[0])
    assert ufm.objective(Wc, Hc, p) == pytest.approx(ufm.minimum_value(p), abs=1e-14)


def test_theorem_2_2_trivial_minimiser_when_c_at_least_one():
    p = ufm.UFM(3, 2, 4, 2.0, 0.75)                      # c = 1.5
    W, H = ufm.solve_model1(p, seed=0)
    assert ufm.objective(W, H, p) == pytest.approx(0.5, abs=1e-9)
    assert np.abs(H).max() < 1e-3 and ufm.collapse_norms(p) == (0.0, 0.0)


def test_optimal_W_and_central_path_closed_forms():
    p = ufm.UFM(3, 4, 5, 0.7, 0.2)
    rng = np.random.default_rng(3)
    H = rng.normal(size=(p.d, p.N))
    W = ufm.optimal_W(H, p)
    for _ in range(5):                                   # W*(H) minimises the strictly convex f(., H)
        assert ufm.objective(W + 1e-3 * rng.normal(size=W.shape), H, p) > ufm.objective(W, H, p)
    assert ufm.central_path_loss(H, p) == pytest.approx(ufm.central_path_loss_closed_form(H, p), rel=1e-12)
    v, eps = rng.normal(size=H.shape), 1e-6
    fd = (ufm.central_path_loss(H + eps * v, p) - ufm.central_path_loss(H - eps * v, p)) / (2 * eps)
    assert fd == pytest.approx(np.sum(ufm.central_path_gradient(H, p) * v) / p.N, rel=1e-7)
    fd_g = (ufm.central_path_gradient(H + eps * v, p) - ufm.central_path_gradient(H - eps * v, p)) / (2 * eps)
    hv = ufm.central_path_hessian(H, p) @ v.ravel(order="F")
    np.testing.assert_allclose(hv, fd_g.ravel(order="F"), atol=1e-7 * np.abs(hv).max())


def test_eq_7_as_extracted_is_L_plus_a_constant_and_never_negative():
    """Tirer et al.'s eq. (7) without the constant 1/2 - d/(2K) is L(H) + (d - K)/(2K) for every H: exact for d = K,
    above f(W*(H), H) for d > K, never negative. It refutes the book's earlier erratum ("can be negative for d > K
    and collapsed H"): on collapsed H with d > K at every scale it stays above (d - K)/(2K) > 0."""
    rng = np.random.default_rng(5)
    for K, n, d in ((3, 4, 3), (3, 4, 5), (4, 2, 9), (2, 3, 12)):
        p = ufm.UFM(K, n, d, 0.5, 0.2)
        collapsed = np.repeat(rng.normal(size=(d, K)), n, axis=1)
        for H in [rng.normal(size=(d, p.N)), *(s * collapsed for s in np.geomspace(1e-4, 1e4, 33))]:
            printed = ufm.central_path_loss_closed_form(H, p, as_printed=True)
            assert printed == pytest.approx(ufm.central_path_loss(H, p) + (d - K) / (2 * K), rel=1e-9, abs=1e-12)
            assert printed >= (d - K) / (2 * K) >= 0
        if d == K:
            assert ufm.central_path_loss_closed_form(H, p, as_printed=True) == pytest.approx(
                ufm.central_path_loss(H, p), rel=1e-9)


def test_beta_threshold_is_sharp_for_stationary_points():
    """prop-beta-sharp: below beta* = 1/(2 lam_W) - lam_H the stationary point of (2) near 0 (a saddle) multiplies
    gNC1 by ((1/lam_W - lam_H - beta)/(beta + lam_H))^2 > 1 as H0 -> 0 (8.95 at beta*/2, 1.49 at 0.9 beta*, by hand
    for lam_W = 0.1, lam_H = 0.01), with an O(||H0||^2) error; just above beta* it lowers gNC1. Fails on the book's
    earlier "no increase below beta*": prop-beta-threshold cannot hold at every stationary point below beta*."""
    rng = np.random.default_rng(2)
    direction = rng.normal(size=(4, 6))                              # d = 4, K = 3, n = 2
    bstar = ufm.beta_threshold_nc1(ufm.UFM(3, 2, 4, lam_W=0.1, lam_H=0.01, beta=1.0))
    assert bstar == pytest.approx(4.99, rel=rounding())
    for frac, factor in ((0.5, 8.95), (0.9, 1.49), (0.99, None), (1.01, None)):
        p = ufm.UFM(3, 2, 4, lam_W=0.1, lam_H=0.01, beta=frac * bstar)
        limit = ufm.small_input_gnc1_factor(p)
        if factor:
            assert limit == pytest.approx(factor, abs=0.005)
        errors = []
        for size in (1e-3, 1e-5):
            H0 = size * direction
            linear = ufm.linearised_stationary_point(H0, p)
            H = ufm.newton_stationary(linear, H0, p, steps=10)
            assert np.abs(ufm.stationarity_residual(H, H0, p)).max() < 1e-12 * size
            assert np.abs(H - linear).max() < 10 * size * np.abs(H).max()            # first order in H0
            J = ufm.central_path_hessian(H, p) + p.beta * np.eye(H.size)
            assert np.linalg.eigvalsh(J).min() < 0 < np.linalg.eigvalsh(J).max()          # a saddle
            ratio = ufm.gnc1(H, p) / ufm.gnc1(H0, p)
            assert (ratio > 1) == (frac < 1)
            errors.append(abs(ratio / limit - 1))
        assert errors[1] < 1e-6 and errors[1] < errors[0] * 1e-3                         # O(||H0||^2)


def test_corollary_3_1_collapsed_input_is_kept():
    p = ufm.UFM(3, 4, 5, 0.5, 0.3, beta=7.0)
    _, Hc = ufm.collapsed_minimiser(p)
    W, H = ufm.solve_model2(Hc, p, H_init=Hc + 0.01)
    np.testing.assert_allclose(H, Hc, atol=1e-10)


@pytest.mark.parametrize("lh", [0.0, 0.2])
def test_theorem_4_1_monotone_along_the_flow(lh):
    p = ufm.UFM(3, 4, 5, 0.5, lh)
    H0 = np.random.default_rng(1).normal(size=(p.d, p.N))
    out = ufm.flow(H0, p, t_end=20.0, num=120)
    assert np.all(np.diff(out["gnc1"]) < 0)                    # strictly decreasing
    assert np.all(np.diff(out["trace_W"]) <= 1e-12)             # e^{2 lam_H t} tr Sigma_W non-increasing
    assert np.all(np.diff(out["trace_B"]) > 0)                  # e^{2 lam_H t} tr Sigma_B strictly increasing
    assert out["gnc1"][-1] < out["gnc1"][0] / 4


def test_corollary_4_2_large_beta_lowers_nc1():
    p = ufm.UFM(3, 4, 5, 0.5, 0.2, beta=50.0)
    H0 = np.random.default_rng(2).normal(size=(p.d, p.N))
    _, H = ufm.solve_model2(H0, p)
    y = ufm.labels(p.K, p.n)
    assert metrics.nc1_trace_ratio(H.T, y) < metrics.nc1_trace_ratio(H0.T, y)


@pytest.mark.parametrize("lw,lh,beta", [(0.5, 0.3, 100.0), (2.0, 0.1, 50.0), (0.3, 1.5, 1000.0)])
def test_theorem_5_2_full_spectrum_of_the_blocks(lw, lh, beta):
    p = ufm.UFM(3, 4, 5, lw, lh, beta)
    _, Hc = ufm.collapsed_minimiser(p)
    F = ufm.first_order_map(Hc, p)
    for k in range(p.K):
        Fkk = ufm.block(F, p, k, k)
        np.testing.assert_allclose(np.sort(np.linalg.eigvalsh((Fkk + Fkk.T) / 2))[::-1], ufm.spectrum_values(p),
                                   atol=1e-12)
        for k2 in range(p.K):
            if k2 != k:
                s = np.linalg.svd(ufm.block(F, p, k, k2), compute_uv=False)
                assert s[0] == pytest.approx(ufm.inter_block_singular_value(p), rel=1e-10)
                assert s[1] < 1e-12                                               # rank one
    values = ufm.spectrum_values(p)
    assert values[0] == pytest.approx(1.0) and values[-1] == pytest.approx(1 - np.sqrt(lh / lw) / beta)


def test_theorem_5_1_first_order_error_is_second_order_in_one_over_beta():
    errs = []
    for beta in (100.0, 1000.0):
        p = ufm.UFM(3, 3, 4, 0.5, 0.3, beta)
        _, Hc = ufm.collapsed_minimiser(p)
        exact = ufm.exact_map_jacobian(Hc, p)
        errs.append(np.linalg.norm(ufm.first_order_map(Hc, p) - exact, 2))
        dH0 = 1e-5 * np.random.default_rng(0).normal(size=Hc.shape)          # the true map, by finite difference
        _, H = ufm.solve_model2(Hc + dH0, p)
        lin = (exact @ dH0.ravel(order="F")).reshape(Hc.shape, order="F")
        assert np.linalg.norm(H - Hc - lin) < 1e-3 * np.linalg.norm(H - Hc)
    assert 50 < errs[0] / errs[1] < 200                                           # ~ beta^-2


def test_bad_parameters_fail_clearly():
    with pytest.raises(ValueError, match="d >= K"):
        ufm.UFM(5, 2, 3, 0.5, 0.5)
    with pytest.raises(ValueError, match="lam_W must be finite and > 0"):
        ufm.UFM(3, 2, 4, 0.0, 0.5)
    with pytest.raises(ValueError, match="lam_H must be finite and >= 0"):
        ufm.UFM(3, 2, 4, 0.5, -1.0)
    p = ufm.UFM(3, 2, 4, 0.5, 0.5, beta=10)
    with pytest.raises(ValueError, match="must be d x Kn"):
        ufm.solve_model2(np.zeros((4, 5)), p)
    with pytest.raises(ValueError, match="beta > 0"):
        ufm.solve_model2(np.zeros((4, 6)), ufm.UFM(3, 2, 4, 0.5, 0.5))


def test_flow_in_lemma_variables_equals_the_gradient_flow():
    from scipy.integrate import solve_ivp

    p = ufm.UFM(3, 4, 5, 0.5, 0.3)
    H0 = np.random.default_rng(4).normal(size=(p.d, p.N))
    out = ufm.flow(H0, p, t_end=2.0, num=3)
    direct = solve_ivp(lambda _, x: -ufm.central_path_gradient(x.reshape(H0.shape), p).ravel(), (0, 2.0),
                       H0.ravel(), method="DOP853", rtol=1e-11, atol=1e-12, t_eval=[2.0])
    np.testing.assert_allclose(out["H"][-1], direct.y[:, -1].reshape(H0.shape), atol=1e-8)
    y = ufm.labels(p.K, p.n)
    assert out["gnc1"][-1] == pytest.approx(metrics.nc1_trace_ratio(out["H"][-1].T, y), rel=1e-8)


@pytest.mark.parametrize("lw,lh", [(2.0, 1.0), (1.0, 0.5), (0.5, 3.0), (1.0, 0.01)])
def test_lemma_b1_sharp_constant_is_reached_by_a_search(lw, lh):
    """Kn grad L(H) = H (lam_H I - B), 0 <= B <= I/lam_W: the ratio never exceeds max(lam_H, 1/lam_W - lam_H) and a
    search reaches it (or its supremum); the lemma's M over it is (5/4 + c) / max(c, 1 - c), c = lam_H lam_W (issue 50:
    the results index said "tight within 1.25"; at (2, 1) it is 1.625 times the sharp constant; issue 59: 5/4 at
    c -> 0 and at c = 5, below beyond)."""
    import scipy.optimize

    p = ufm.UFM(3, 4, 5, lw, lh)
    shape = (p.d, p.N)

    def ratio(v):
        return np.linalg.norm(ufm.central_path_gradient(v.reshape(shape), p)) / np.linalg.norm(v)

    starts = np.random.default_rng(0).normal(size=(4, p.d * p.N))
    found = max(-scipy.optimize.minimize(lambda v: -ratio(v), s * x0, method="L-BFGS-B").fun
                for s in (1e-3, 1.0, 100.0) for x0 in starts)
    sharp = ufm.sharp_gradient_growth_constant(p)
    assert sharp * (1 - 1e-4) < found <= sharp * (1 + 1e-9)
    M = ufm.gradient_growth_constant(p)
    assert M / sharp == pytest.approx((1.25 + p.c) / max(p.c, 1 - p.c), rel=1e-12)


@pytest.mark.parametrize("c", [1e-9, 0.2, 0.5, 0.8, 2.0, 5.0, 7.0, 50.0])
def test_lemma_b1s_constant_over_the_sharp_one_is_a_function_of_lam_h_lam_w_equal_to_5_4_at_0_and_at_5(c):
    """Issue 59: M / max(lam_H, 1/lam_W - lam_H) = (5/4 + c) / max(c, 1 - c) with c = lam_H lam_W, whatever lam_W:
    5/4 as c -> 0, 3.5 at c = 1/2 (its largest), 5/4 again at c = 5 and below 5/4 beyond, tending to 1. The old
    wording ("5/4 of it only as lam_H -> 0") fails at c = 5 and beyond."""
    for lam_W in (0.25, 1.0, 4.0):
        p = ufm.UFM(3, 5, 4, lam_W, c / lam_W)
        ratio = ufm.gradient_growth_constant(p) / ufm.sharp_gradient_growth_constant(p)
        assert ratio == pytest.approx((1.25 + c) / max(c, 1 - c), rel=1e-12)
        assert 1 < ratio <= 3.5 * (1 + 1e-12)
        assert (ratio < 1.25 * (1 - 1e-9)) == (c > 5) and (ratio == pytest.approx(1.25, abs=1e-8)) == (c in (1e-9, 5))


@pytest.mark.parametrize("lw,lh", [(1.0, 0.5), (2.0, 1.0), (0.5, 3.0), (1.0, 6.0), (1.0, 0.2), (2.0, 0.01)])
def test_lemma_b1s_sharp_constant_is_attained_exactly_when_lam_h_lam_w_is_at_least_one_half(lw, lh):
    """Issue 59: for c = lam_H lam_W >= 1/2 the sharp constant lam_H is attained by features orthogonal to every
    class's indicator (H Y^T = 0: then B H^T = 0); for c < 1/2 it, 1/lam_W - lam_H, is only a supremum, approached as
    H -> 0 along the class means and reached by no H != 0 (B < I/lam_W on every row of H)."""
    p = ufm.UFM(3, 5, 4, lw, lh)
    sharp = ufm.sharp_gradient_growth_constant(p)
    rng = np.random.default_rng(1)
    Y = ufm.targets(p.K, p.n)
    ratio = lambda H: np.linalg.norm(ufm.central_path_gradient(H, p)) / np.linalg.norm(H)   # noqa: E731
    H = rng.normal(size=(p.d, p.N))
    H -= H @ np.linalg.pinv(Y) @ Y                               # rows orthogonal to the class indicators
    assert ratio(H) == pytest.approx(p.lam_H, rel=1e-10)
    means = rng.normal(size=(p.d, p.K)) @ Y                      # features on their class means
    along = [ratio(eps * means) for eps in (1e-1, 1e-3, 1e-5)]
    if p.c >= 0.5:
        assert ratio(H) == pytest.approx(sharp, rel=1e-10)
    else:
        assert max(ratio(H), *along) < sharp and along[-1] == pytest.approx(sharp, rel=1e-6)
        assert along == sorted(along)                            # increasing towards the supremum as H -> 0
