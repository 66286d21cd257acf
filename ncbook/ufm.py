"""Unconstrained features models (Tirer, Huang & Niles-Weed 2023): model (1), model (2) whose features stay close
to given features H0, the central path L(H) and its gradient flow, and the perturbation map of Theorems 5.1 / 5.2.

Conventions (the paper's): K classes of n samples, features H (d x Kn) ordered class by class, targets
Y = I_K (x) 1_n^T (K x Kn), classifier W (K x d). Everything is float64 numpy; vec() stacks columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize
from scipy.integrate import solve_ivp
from tqdm.auto import tqdm

from . import metrics


@dataclass(frozen=True)
class UFM:
    """Sizes and hyperparameters of model (1) (``beta = 0``) or model (2) (``beta > 0``)."""

    K: int
    n: int
    d: int
    lam_W: float
    lam_H: float
    beta: float = 0.0

    def __post_init__(self):
        if self.K < 2 or self.n < 1:
            raise ValueError(f"need K >= 2 classes of n >= 1 samples, got K={self.K}, n={self.n}")
        if self.d < self.K:
            raise ValueError(f"the models need d >= K (Theorem 2.2), got d={self.d} < K={self.K}")
        if not 0 < self.lam_W < np.inf:
            raise ValueError(f"lam_W must be finite and > 0 (W*(H) needs it), got {self.lam_W}")
        if not 0 <= self.lam_H < np.inf:
            raise ValueError(f"lam_H must be finite and >= 0, got {self.lam_H}")
        if not self.beta >= 0 or not np.isfinite(self.beta):
            raise ValueError(f"beta must be finite and >= 0 (0: model (1)), got {self.beta}")

    @property
    def c(self) -> float:
        """c = lam_H lam_W: collapse when c < 1, the trivial minimiser when c >= 1 (Tirer et al.'s Theorem 2.2)."""
        return self.lam_H * self.lam_W

    @property
    def N(self) -> int:
        return self.K * self.n


def targets(K: int, n: int) -> np.ndarray:
    """Y = I_K (x) 1_n^T, the one-hot targets of class-ordered samples (K x Kn)."""
    return np.kron(np.eye(K), np.ones((1, n)))


def labels(K: int, n: int) -> np.ndarray:
    """Class of each column of a class-ordered H."""
    return np.repeat(np.arange(K), n)


def check_features(H: np.ndarray, p: UFM, name: str = "H") -> np.ndarray:
    H = np.asarray(H, dtype=np.float64)
    if H.shape != (p.d, p.N):
        raise ValueError(f"{name} must be d x Kn = {p.d} x {p.N} (columns ordered class by class), got {H.shape}")
    if not np.isfinite(H).all():
        raise ValueError(f"{name} contains NaN or inf")
    return H


def check_classifier(W: np.ndarray, p: UFM) -> np.ndarray:
    """``W`` as a finite float64 K x d array, or ValueError naming the expected shape."""
    W = np.asarray(W, dtype=np.float64)
    if W.shape != (p.K, p.d):
        raise ValueError(f"W must be K x d = {p.K} x {p.d}, got {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError("W contains NaN or inf")
    return W


def objective(W: np.ndarray, H: np.ndarray, p: UFM, H0: np.ndarray | None = None) -> float:
    """f(W, H; H0) of eq. (2); eq. (1) when beta = 0:
    ||WH - Y||^2/(2Kn) + lam_W ||W||^2/(2K) + lam_H ||H||^2/(2Kn) + beta ||H - H0||^2/(2Kn)."""
    W, H = check_classifier(W, p), check_features(H, p)
    if p.beta:
        if H0 is None:
            raise ValueError("model (2) (beta > 0) needs the input features H0")
        H0 = check_features(H0, p, "H0")
    Y, N = targets(p.K, p.n), p.N
    f = (np.sum((W @ H - Y) ** 2) / (2 * N) + p.lam_W * np.sum(W ** 2) / (2 * p.K)
         + p.lam_H * np.sum(H ** 2) / (2 * N))
    if p.beta:
        f += p.beta * np.sum((H - H0) ** 2) / (2 * N)
    return float(f)


# ----------------------------------------------------------------------------------------------------------------
# model (1): Theorem 2.2


def collapse_norms(p: UFM) -> tuple[float, float]:
    """(rho, ||w_k||^2) of Tirer et al.'s Theorem 2.2: ||h_k||^2 = rho = sqrt(lam_W/lam_H)(1 - sqrt c) and
    ||w_k||^2 = sqrt(lam_H/lam_W)(1 - sqrt c) when c < 1; (0, 0) when c >= 1."""
    if p.lam_H == 0:
        raise ValueError("Theorem 2.2 needs lam_H > 0 (with lam_H = 0 the infimum is not attained)")
    if p.c >= 1:
        return 0.0, 0.0
    s = 1 - np.sqrt(p.c)
    return float(np.sqrt(p.lam_W / p.lam_H) * s), float(np.sqrt(p.lam_H / p.lam_W) * s)


def minimum_value(p: UFM) -> float:
    """Minimum of eq. (1): sqrt(c) - c/2 when c < 1, else 1/2 (Tirer et al.'s Theorem 2.2)."""
    return float(np.sqrt(p.c) - p.c / 2) if p.c < 1 else 0.5


def collapsed_minimiser(p: UFM, R: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A global minimiser (W*, H*) of eq. (1): H* = sqrt(rho) R (x) 1_n^T, W* = sqrt(||w||^2) R^T, for any R
    (d x K) with orthonormal columns (default: the first K standard basis vectors)."""
    R = np.eye(p.d, p.K) if R is None else np.asarray(R, dtype=np.float64)
    if R.shape != (p.d, p.K) or not np.allclose(R.T @ R, np.eye(p.K), atol=1e-10):
        raise ValueError(f"R must be d x K = {p.d} x {p.K} with orthonormal columns")
    rho, w2 = collapse_norms(p)
    return np.sqrt(w2) * R.T, np.sqrt(rho) * np.kron(R, np.ones((1, p.n)))


def solve_model1(p: UFM, seed: int = 0, scale: float = 0.1, tol: float = 1e-14) -> tuple[np.ndarray, np.ndarray]:
    """A numerical minimiser of eq. (1) from a random start: L-BFGS jointly on (W, H)."""
    rng = np.random.default_rng(seed)
    Y, N = targets(p.K, p.n), p.N

    def fg(x):
        W, H = x[:p.K * p.d].reshape(p.K, p.d), x[p.K * p.d:].reshape(p.d, N)
        R = W @ H - Y
        gW = R @ H.T / N + p.lam_W * W / p.K
        gH = W.T @ R / N + p.lam_H * H / N
        return objective(W, H, p), np.concatenate([gW.ravel(), gH.ravel()])

    x0 = scale * rng.standard_normal(p.K * p.d + p.d * N)
    res = scipy.optimize.minimize(fg, x0, jac=True, method="L-BFGS-B",
                                  options={"maxiter": 50_000, "ftol": tol, "gtol": 1e-12})
    return res.x[:p.K * p.d].reshape(p.K, p.d), res.x[p.K * p.d:].reshape(p.d, N)


# ----------------------------------------------------------------------------------------------------------------
# model (2) and the central path


def optimal_W(H: np.ndarray, p: UFM) -> np.ndarray:
    """W*(H) = Y H^T (H H^T + n lam_W I_d)^{-1}, the minimiser over W of eq. (1) or (2) (footnote 4)."""
    H = check_features(H, p)
    A = H @ H.T + p.n * p.lam_W * np.eye(p.d)
    return np.linalg.solve(A, H @ targets(p.K, p.n).T).T


def central_path_loss(H: np.ndarray, p: UFM) -> float:
    """L(H) = f(W*(H), H) of eq. (1). In closed form (App. A) it is
    tr((Sigma_W + lam_W/K I)(Sigma~_T + lam_W/K I)^{-1})/(2K) + lam_H ||H||^2/(2Kn) + 1/2 - d/(2K);
    the extracted eq. (7) omits the constant 1/2 - d/(2K)."""
    return objective(optimal_W(H, p), H, UFM(p.K, p.n, p.d, p.lam_W, p.lam_H))


def central_path_loss_closed_form(H: np.ndarray, p: UFM, as_printed: bool = False) -> float:
    """The closed form of :func:`central_path_loss` (App. A, with the constant 1/2 - d/(2K) restored); with
    ``as_printed``, eq. (7) as extracted, without it: a sum of two non-negative terms, equal to
    L(H) + (d - K)/(2K)."""
    N, mu = p.N, p.lam_W / p.K
    Sw = metrics.within_class_covariance(H.T, labels(p.K, p.n)).numpy()
    St = H @ H.T / N                                   # total, non-centred
    A = St + mu * np.eye(p.d)
    return float(np.trace(np.linalg.solve(A, Sw + mu * np.eye(p.d))) / (2 * p.K)
                 + p.lam_H * np.sum(H ** 2) / (2 * N) + (0.0 if as_printed else 0.5 - p.d / (2 * p.K)))


def central_path_gradient(H: np.ndarray, p: UFM) -> np.ndarray:
    """Kn grad L(H) = W*^T (W* H - Y) + lam_H H (envelope theorem: the W-derivative of f vanishes at W*)."""
    W = optimal_W(H, p)
    return W.T @ (W @ H - targets(p.K, p.n)) + p.lam_H * H


def stationarity_residual(H: np.ndarray, H0: np.ndarray, p: UFM) -> np.ndarray:
    """Kn grad L(H) + beta (H - H0): zero exactly at the stationary points of eq. (2)."""
    H0 = check_features(H0, p, "H0")
    return central_path_gradient(H, p) + p.beta * (H - H0)


def proximal_objective(H: np.ndarray, H0: np.ndarray, p: UFM) -> float:
    """L(H) + beta ||H - H0||^2/(2Kn): minimising it over H is minimising eq. (2)."""
    H0 = check_features(H0, p, "H0")
    return central_path_loss(H, p) + p.beta * np.sum((H - H0) ** 2) / (2 * p.N)


def solve_model2(H0: np.ndarray, p: UFM, H_init: np.ndarray | None = None,
                 gtol: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """The minimiser (W, H) of eq. (2) for given H0: L-BFGS over H on the central path, started at H0 (where
    it converges to the global minimiser for large beta), polished by Newton steps on the optimality condition
    Kn grad L(H) + beta (H - H0) = 0."""
    if not p.beta > 0:
        raise ValueError(f"model (2) needs beta > 0, got {p.beta}")
    H0 = check_features(H0, p, "H0")
    shape = H0.shape

    def fg(x):
        H = x.reshape(shape)
        return proximal_objective(H, H0, p), stationarity_residual(H, H0, p).ravel() / p.N

    x0 = (H0 if H_init is None else H_init).ravel()
    res = scipy.optimize.minimize(fg, x0, jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20_000, "ftol": 1e-16, "gtol": gtol})
    H = newton_stationary(res.x.reshape(shape), H0, p)     # Newton polish: residual to rounding level
    return optimal_W(H, p), H


def newton_stationary(H: np.ndarray, H0: np.ndarray, p: UFM, steps: int = 3) -> np.ndarray:
    """Newton steps from H on the stationarity condition Kn grad L(H) + beta (H - H0) = 0 of eq. (2): they go to
    the nearby stationary point whatever its kind, a minimiser or a saddle."""
    for _ in range(steps):
        r = stationarity_residual(H, H0, p).ravel(order="F")
        J = central_path_hessian(H, p) + p.beta * np.eye(H.size)
        H = H - np.linalg.solve(J, r).reshape(H.shape, order="F")
    return H


def linearised_stationary_point(H0: np.ndarray, p: UFM) -> np.ndarray:
    """The stationary point of eq. (2) near 0 to first order in H0 (chapter 3, prop-beta-sharp): the within-class
    part beta/(beta + lam_H) H0_w, the class means beta/(beta + lam_H - 1/lam_W) times H0's."""
    H0 = check_features(H0, p, "H0")
    means = np.repeat(H0.reshape(p.d, p.K, p.n).mean(2), p.n, axis=1)
    return p.beta / (p.beta + p.lam_H) * (H0 - means) + p.beta / (p.beta + p.lam_H - 1 / p.lam_W) * means


def small_input_gnc1_factor(p: UFM) -> float:
    """((1/lam_W - lam_H - beta) / (beta + lam_H))^2: the limit, as H0 -> 0, of gNC1(H)/gNC1(H0) at the stationary
    point H of eq. (2) near 0 (chapter 3). Above 1 exactly when beta < 1/(2 lam_W) - lam_H = beta*: the threshold
    of prop-beta-threshold is sharp for stationary points."""
    return ((1 / p.lam_W - p.lam_H - p.beta) / (p.beta + p.lam_H)) ** 2


MAX_EXPONENT = 700.0
"""The largest 2 lam_H t :func:`flow` reports at: e^700 is near float64's largest number (e^709.8)."""
MAX_FLOW_BYTES = 2 ** 30
"""The most memory :func:`flow`'s recorded features (H and the rescaled within-class parts) may take."""
MAX_FLOW_EVALS = 100_000
"""The most right-hand-side evaluations :func:`flow` spends (seconds) before it stops with an error."""
FLOW_BAR_DELAY_S = 5.0
"""A flow still integrating after this many seconds shows a progress bar (in t)."""


class _TooLong(Exception):
    def __init__(self, t: float):
        super().__init__(t)
        self.t = t


def flow(H0: np.ndarray, p: UFM, t_end: float, num: int = 200, rtol: float = 1e-10) -> dict[str, np.ndarray]:
    """The gradient flow dH/dt = -Kn grad L(H) of eq. (4) from H0, with gNC1, e^{2 lam_H t} tr Sigma_W and
    e^{2 lam_H t} tr Sigma_B at ``num`` times (Tirer et al.'s Theorem 4.1).

    Integrated (scipy's adaptive DOP853) in the variables of chapter 3's lemma: the class means M (d x K) and the
    rescaled within-class part G = e^{lam_H t} H_w, which obey
    dM/dt = C (Sigma_W + mu I) C M / K - lam_H M and dG/dt = -C Sigma~_B C G / K, with mu = lam_W/K and
    C = (Sigma_W + Sigma~_B + mu I)^{-1}. The quantities of the theorem are then read without cancellation or
    exponential amplification: e^{2 lam_H t} tr Sigma_W = ||G||^2/(Kn)."""
    H0 = check_features(H0, p, "H0")
    if not 0 < t_end < np.inf or num < 2:
        raise ValueError(f"need a finite t_end > 0 and num >= 2 times, got t_end={t_end}, num={num}")
    if p.lam_H > 0 and 2 * p.lam_H * t_end > MAX_EXPONENT:
        raise ValueError(f"t_end={t_end:g} is past t = {MAX_EXPONENT / (2 * p.lam_H):.4g}, where e^(2 lam_H t) "
                         f"(lam_H={p.lam_H:g}) overflows float64 in trace_W and trace_B: ask for an earlier t_end")
    if 2 * num * p.d * p.N * 8 > MAX_FLOW_BYTES:
        raise ValueError(f"num={num} times of a {p.d} x {p.N} feature matrix need "
                         f"{2 * num * p.d * p.N * 8 / 2 ** 30:.3g} GiB; the limit is {MAX_FLOW_BYTES / 2 ** 30:g} GiB: "
                         "ask for fewer times")
    d, K, n, N, mu = p.d, p.K, p.n, p.N, p.lam_W / p.K
    evals = [0]
    M0 = H0.reshape(d, K, n).mean(2)
    G0 = H0 - np.repeat(M0, n, axis=1)

    def rhs(t, x):
        evals[0] += 1
        bar.update(max(0.0, min(t, t_end) - bar.n))
        if evals[0] > MAX_FLOW_EVALS:
            raise _TooLong(t)
        M, G = x[:d * K].reshape(d, K), x[d * K:].reshape(d, N)
        Sw = np.exp(-2 * p.lam_H * t) * (G @ G.T) / N
        Sb = M @ M.T / K
        C = np.linalg.inv(Sw + Sb + mu * np.eye(d))
        dM = C @ (Sw + mu * np.eye(d)) @ C @ M / K - p.lam_H * M
        dG = -C @ Sb @ C @ G / K
        return np.concatenate([dM.ravel(), dG.ravel()])

    t = np.linspace(0, t_end, num)
    with tqdm(total=t_end, desc="gradient flow", unit="t", delay=FLOW_BAR_DELAY_S, leave=False,
              bar_format="{l_bar}{bar}| t = {n:.4g} of {total:.4g} [{elapsed}]") as bar:
        try:
            sol = solve_ivp(rhs, (0, t_end), np.concatenate([M0.ravel(), G0.ravel()]), method="DOP853", t_eval=t,
                            rtol=rtol, atol=1e-300)
        except _TooLong as stop:
            raise ValueError(f"the flow took more than {MAX_FLOW_EVALS} steps' evaluations and reached only t = "
                             f"{stop.t:.4g} of t_end={t_end:g}: ask for an earlier t_end (or a looser rtol)") from None
    if not sol.success:
        raise RuntimeError(f"the flow integration failed: {sol.message}")
    Ms = sol.y[:d * K].T.reshape(num, d, K)
    Gs = sol.y[d * K:].T.reshape(num, d, N)
    Hs = np.repeat(Ms, n, axis=2) + np.exp(-p.lam_H * t)[:, None, None] * Gs
    trace_W = np.sum(Gs ** 2, axis=(1, 2)) / N
    trace_B = np.exp(2 * p.lam_H * t) * np.sum((Ms - Ms.mean(2, keepdims=True)) ** 2, axis=(1, 2)) / K
    return {"t": t, "H": Hs, "gnc1": trace_W / trace_B, "trace_W": trace_W, "trace_B": trace_B}


def beta_threshold_nc1(p: UFM) -> float:
    """beta* = max(0, 1/(2 lam_W) - lam_H): for beta >= beta*, gNC1(H) <= gNC1(H0) at every stationary point H of eq.
    (2) (chapter 3's explicit form of Tirer et al.'s Corollary 4.2: within-class parts shrink by at least beta/(beta
    + lam_H), centred means by at most that)."""
    return max(0.0, 1 / (2 * p.lam_W) - p.lam_H)


def layerwise(H0: np.ndarray, p: UFM, depth: int) -> list[np.ndarray]:
    """H_0, H_1, ..., H_depth with H_{l+1} the minimiser of eq. (2) for the input H_l: one layer added at a time
    on top of fixed ones (Tirer et al., Sec. 4, after their Corollary 4.2; the layer-wise training of Sec. 6)."""
    if depth < 0:
        raise ValueError(f"depth is a number of layers, >= 0; got {depth}")
    Hs = [check_features(H0, p, "H0")]
    for _ in range(depth):
        Hs.append(solve_model2(Hs[-1], p)[1])
    return Hs


def gnc1(H: np.ndarray, p: UFM) -> float:
    """gNC1 = tr Sigma_W / tr Sigma_B of eq. (3), through ncbook.metrics."""
    return metrics.nc1_trace_ratio(H.T, labels(p.K, p.n))


# ----------------------------------------------------------------------------------------------------------------
# the perturbation map: Theorem 5.1 / C.1 and Theorem 5.2


def central_path_hessian(H: np.ndarray, p: UFM) -> np.ndarray:
    """Kn times the Hessian of L at H (dKn x dKn, vec = column stacking), as the Schur complement
    Kn (f_HH - f_HW f_WW^{-1} f_WH) of the joint objective at W = W*(H) (App. C):
    lam_H I + I_Kn (x) W^T W - (E + H^T (x) W^T) (H H^T (x) I_K + n lam_W I_dK)^{-1} (E + H^T (x) W^T)^T."""
    W = optimal_W(H, p)
    K, d, N = p.K, p.d, p.N
    Rres = W @ H - targets(K, p.n)                    # K x Kn
    # E[:, (i-1)K + k] = vec(e_{d,i} e_{K,k}^T (W H - Y)): the derivative of vec(dW^T (WH - Y)) in vec(dW)
    E = np.zeros((d * N, K * d))
    for i in range(d):
        for k in range(K):
            M = np.zeros((d, N))
            M[i] = Rres[k]
            E[:, i * K + k] = M.ravel(order="F")
    B = E + np.kron(H.T, W.T)
    S = np.kron(H @ H.T, np.eye(K)) + p.n * p.lam_W * np.eye(K * d)
    return p.lam_H * np.eye(d * N) + np.kron(np.eye(N), W.T @ W) - B @ np.linalg.solve(S, B.T)


def exact_map_jacobian(H_hat: np.ndarray, p: UFM) -> np.ndarray:
    """d vec(H)/d vec(H0) at a minimiser H_hat of eq. (2): beta (beta I + Kn hess L(H_hat))^{-1}
    (implicit-function theorem on Kn grad L(H) + beta (H - H0) = 0)."""
    J = central_path_hessian(H_hat, p)
    return p.beta * np.linalg.inv(p.beta * np.eye(len(J)) + J)


def first_order_map(H_hat: np.ndarray, p: UFM) -> np.ndarray:
    """F = I - (1/beta) Kn hess L(H_hat) of Tirer et al.'s Theorem 5.1 / C.1 (vec(dH) ~ F vec(dH0), error
    O(beta^-2))."""
    J = central_path_hessian(H_hat, p)
    return np.eye(len(J)) - J / p.beta


def block(F: np.ndarray, p: UFM, k: int, k2: int) -> np.ndarray:
    """The (k, k2) block of F (dn x dn): the effect of class k2 of dH0 on class k of dH (eq. (6))."""
    m = p.d * p.n
    return F[k * m:(k + 1) * m, k2 * m:(k2 + 1) * m]


def mean_curvature(p: UFM) -> float:
    """g = 2 lam_H (1 - sqrt c): the scale of Kn hess L on the class-mean directions at a collapsed input
    (Tirer et al.'s Theorem 5.2; chapter 4's proof of the block spectrum)."""
    return 2 * p.lam_H * (1 - np.sqrt(p.c))


def intra_block_spectrum(p: UFM) -> dict[str, tuple[float, int]]:
    """Every eigenvalue of the intra-class block F_kk at a collapsed H0 (Tirer et al.'s Theorem 5.2 and App. D), with
    its multiplicity and the directions it belongs to (s_j: an orthonormal basis of R^n with s_1 = 1_n/sqrt(n); r_i:
    of R^d with r_1..r_K the directions of the collapsed means). F_kk is symmetric, so for beta large enough that all
    are positive these are its singular values."""
    if not 0 < p.c < 1:
        raise ValueError(f"Theorem 5.2 needs 0 < lam_H lam_W < 1, got c = {p.c}")
    if not p.beta > 0:
        raise ValueError("Theorem 5.2 is about model (2): beta must be > 0")
    g = mean_curvature(p)
    return {
        "within, span R  (s_j x r_i, j >= 2, i <= K)": (1 - np.sqrt(p.lam_H / p.lam_W) / p.beta, (p.n - 1) * p.K),
        "within, outside (s_j x r_i, j >= 2, i > K)": (1 - p.lam_H / p.beta, (p.n - 1) * (p.d - p.K)),
        "mean, outside   (s_1 x r_i, i > K)": (1.0, p.d - p.K),
        "mean, other class (s_1 x r_i, i <= K, i != k)": (1 - g / p.beta, p.K - 1),
        "mean, own class (s_1 x r_k)": (1 - 2 * g / p.beta, 1),
    }


def inter_block_singular_value(p: UFM) -> float:
    """The one non-zero singular value of an inter-class block F_kk' (k != k'): 2 lam_H (1 - sqrt c) / beta
    (Tirer et al.'s Theorem 5.2)."""
    if not 0 < p.c < 1 or not p.beta > 0:
        raise ValueError("Theorem 5.2 needs 0 < lam_H lam_W < 1 and beta > 0")
    return mean_curvature(p) / p.beta


def exact_intra_block_spectrum(p: UFM) -> dict[str, tuple[float, int]]:
    """The eigenvalues of the intra-class block E_kk of the exact Jacobian E = beta (beta I + Kn hess L)^{-1} of
    H0 -> H at a collapsed H0, with the directions and multiplicities of :func:`intra_block_spectrum` (chapter 4):
    E = (2I - F)^{-1}, and on each pair {class k along r_k', class k' along r_k} Kn hess L is g [[1, 1], [1, 1]]
    (g = 2 lam_H (1 - sqrt c)), whose eigenvalues 0 and 2g average to the block's 1 - g/(beta + 2g)."""
    first = intra_block_spectrum(p)                  # validates p
    g = mean_curvature(p)
    exact = [p.beta / (p.beta + np.sqrt(p.lam_H / p.lam_W)), p.beta / (p.beta + p.lam_H), 1.0,
             1 - g / (p.beta + 2 * g), p.beta / (p.beta + 2 * g)]
    return {name: (value, mult) for (name, (_, mult)), value in zip(first.items(), exact)}


def exact_inter_block_singular_value(p: UFM) -> float:
    """The one non-zero singular value of an inter-class block E_kk' of the exact Jacobian of H0 -> H at a collapsed
    H0: g / (beta + 2g), g = 2 lam_H (1 - sqrt c); to first order in 1/beta, the g / beta of Tirer et al.'s Theorem
    5.2."""
    inter_block_singular_value(p)                    # validates p
    g = mean_curvature(p)
    return g / (p.beta + 2 * g)


def spectrum_values(p: UFM) -> np.ndarray:
    """The dn eigenvalues of F_kk from :func:`intra_block_spectrum`, in decreasing order."""
    return np.sort(np.concatenate([[v] * m for v, m in intra_block_spectrum(p).values()]))[::-1]


# ----------------------------------------------------------------------------------------------------------------
# Appendix C.2: how Lipschitz is H0 -> H? (erratum: the constant involves 1/lam_W)


def gradient_growth_constant(p: UFM) -> float:
    """M = 1/(4 lam_W) + 1/lam_W + lam_H with ||Kn grad L(H)||_F <= M ||H||_F for every H (Lemma B.1, chapter 3)."""
    return 1 / (4 * p.lam_W) + 1 / p.lam_W + p.lam_H


def sharp_gradient_growth_constant(p: UFM) -> float:
    """max(lam_H, 1/lam_W - lam_H), the smallest M of Lemma B.1: Kn grad L(H) = H (lam_H I - B) with
    0 <= B <= I / lam_W (chapter 3); attained (by H with H Y^T = 0) where lam_H lam_W >= 1/2, elsewhere a supremum
    approached as H -> 0 along the class means."""
    return max(p.lam_H, 1 / p.lam_W - p.lam_H)


def curvature_lower_bound(p: UFM) -> float:
    """lam_H - 1/lam_W: Kn hess L(H) >= (lam_H - 1/lam_W) I for every H, with equality at H = 0 (chapter 3)."""
    return p.lam_H - 1 / p.lam_W


def lipschitz_constant(p: UFM) -> float:
    """The Lipschitz constant of H0 -> H (minimiser of eq. (2)): 1 / (1 - m/beta) with m = max(0, 1/lam_W - lam_H),
    valid for beta > m (the corrected Theorem C.2)."""
    m = max(0.0, -curvature_lower_bound(p))
    if not p.beta > m:
        raise ValueError(f"the bound needs beta > 1/lam_W - lam_H = {m:g}, got beta = {p.beta:g}")
    return 1 / (1 - m / p.beta)


def lipschitz_constant_as_extracted(p: UFM) -> float:
    """The extracted Theorem C.2's constant 1/(1 - 11 lam_H/beta) (for beta > 11 lam_H), which does not hold."""
    return 1 / (1 - 11 * p.lam_H / p.beta)
