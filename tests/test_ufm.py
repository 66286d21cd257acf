"""The unconstrained features models of Tirer et al. (2023): closed forms against solvers, the flow's monotonicity
(Theorem 4.1), Corollaries 3.1 and 4.2, and the perturbation map's spectra (Theorems 5.1 and 5.2)."""

import numpy as np
import pytest

from ncbook import metrics, ufm

SETTINGS = [(4, 3, 6, 0.5, 0.3), (3, 5, 3, 2.0, 0.1), (5, 2, 8, 0.3, 1.5)]   # K, n, d, lam_W, lam_H


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
    with pytest.raises(ValueError, match="lam_W must be > 0"):
        ufm.UFM(3, 2, 4, 0.0, 0.5)
    with pytest.raises(ValueError, match="lam_H must be >= 0"):
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
