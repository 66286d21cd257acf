"""The bounds of Jacot, Súkeník, Wang & Mondelli (2025): Theorem 3.1 (balancedness and interpolation imply
collapse), Lemma C.2, Proposition 5.1, Theorem 5.2 and Proposition 5.3, as functions of a network and its data.

Layout: the paper writes features as Z_l (n_l x N) and weights as W_l (n_l x n_{l-1}); ncbook's networks return
features as (N, n_l) rows, so Z_l below is ``features[l].T``. Everything is computed in float64.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch

from . import metrics
from .nets import MLP
from .train import one_hot_targets


def op_norm(A: torch.Tensor) -> float:
    """Largest singular value: the SVD's, or from metrics.LANCZOS_MIN_DIM on a Lanczos iteration of matrix-vector
    products (:func:`ncbook.metrics.operator_norm`), so the bounds cost a few products at the papers' widths."""
    A = A.detach().double()
    if min(A.shape) >= metrics.LANCZOS_MIN_DIM:
        return float(metrics.operator_norm(A))
    return float(torch.linalg.matrix_norm(A, ord=2))


def kappa(A: torch.Tensor, rank: int | None = None) -> float:
    """s_1(A) / s_k(A), the ratio of the largest to the k-th singular value, k = rank (default: min dimension)."""
    s = torch.linalg.svdvals(A.detach().double())
    k = rank or min(A.shape)
    if k > len(s) or float(s[k - 1]) == 0:
        return math.inf
    return float(s[0] / s[k - 1])


def product(weights: list[torch.Tensor]) -> torch.Tensor:
    """W_{m:l} = W_m ... W_l for weights = [W_l, ..., W_m]."""
    P = weights[0].double()
    for W in weights[1:]:
        P = W.double() @ P
    return P


def balancedness_gap(W_next: torch.Tensor, W: torch.Tensor) -> float:
    """||W_{l+1}^T W_{l+1} - W_l W_l^T||_op, the quantity epsilon_2 bounds (Jacot et al.'s Thm 3.1)."""
    return op_norm(W_next.double().T @ W_next.double() - W.double() @ W.double().T)


@dataclass(frozen=True)
class Theorem31:
    """Every quantity of Jacot et al.'s Theorem 3.1 for one network: the hypotheses (eps1, eps2, r, ...), the right-hand
    sides of (2)-(5) (``inf`` or ``-inf`` where the theorem says nothing) and the measured NC metrics of Z_{L-1}."""

    eps1: float
    eps2: float
    r: float
    s_K_Y: float
    N: int
    K: int
    n_last: int
    L1: int
    L2: int
    X_op: float
    Z_L1_op: float
    r_nonlinear: float
    psi: float
    kappa_linear: float       # kappa(W_{L:L1+1}), used as c3
    kappa_WL: float
    nc1: float
    nc2: float
    nc3: float
    bound_nc1: float          # (2)
    bound_kappa_WL: float     # (3), with the paper's ||X||_op r^{L1}
    bound_kappa_WL_fixed: float   # (3) with ||Z_{L1}||_op in place of ||X||_op r^{L1} (chapter 5)
    bound_nc2: float          # (4), with the measured kappa(W_L)
    bound_nc3: float          # (5) corrected (sqrt N instead of sqrt K), with the measured kappa(W_L)
    bound_nc3_as_printed: float   # (5) as printed

    @property
    def conditions_hold(self) -> bool:
        """eps1 <= min(s_K(Y), sqrt((K-1)N/(4K))), the theorem's restriction."""
        return self.eps1 <= min(self.s_K_Y, math.sqrt((self.K - 1) * self.N / (4 * self.K)))


def psi(eps1: float, eps2: float, r: float, s_K_Y: float, n_last: int) -> float:
    """Psi(eps1, eps2, r) = r (eps1 / (s_K(Y) - eps1) + sqrt(n_{L-1} eps2)) (Jacot et al.'s Thm 3.1)."""
    return r * (eps1 / (s_K_Y - eps1) + math.sqrt(n_last * eps2))


def nc1_bound(eps1, eps2, r, s_K_Y, n_last, N, K) -> float:
    """Right-hand side of (2): (r^2/N) Psi^2 / (sqrt((K-1)/K) - 2 eps1/sqrt(N))^2 (inf outside its conditions, and
    at eps1 = sqrt((K-1)N/(4K)), where the bracket is 0 up to rounding)."""
    top = math.sqrt((K - 1) / K)
    bracket = top - 2 * eps1 / math.sqrt(N)
    if eps1 > s_K_Y or bracket <= 1e-12 * top:
        return math.inf
    p = psi(eps1, eps2, r, s_K_Y, n_last)
    return r ** 2 / N * p ** 2 / bracket ** 2


def kappa_bound(c3: float, eps1, eps2, r, s_K_Y, L2: int, scale: float) -> float:
    """Right-hand side of (3): c3^{1/L2} (1+e)^{1/L2} + c3^{1/L2 - 1} e, with
    e = delta / ((s_K(Y) - eps1)^2 / scale^2 - delta), delta = (L2^2/2) r^{2(L2-1)} eps2, where ``scale`` bounds
    ||Z_{L1}||_op (the paper uses ||X||_op r^{L1}). inf where the denominator is not positive."""
    delta = L2 ** 2 / 2 * r ** (2 * (L2 - 1)) * eps2
    den = (s_K_Y - eps1) ** 2 / scale ** 2 - delta
    if den <= 0:
        return math.inf
    e = delta / den
    return c3 ** (1 / L2) * (1 + e) ** (1 / L2) + c3 ** (1 / L2 - 1) * e


def nc2_bound(kappa_WL: float, r: float, p: float, s_K_Y: float) -> float:
    """Right-hand side of (4): (kappa(W_L) + r Psi / s_K(Y)) / (1 - r Psi / s_K(Y)) (inf when r Psi >= s_K(Y))."""
    t = r * p / s_K_Y
    return math.inf if t >= 1 else (kappa_WL + t) / (1 - t)


def nc3_bound(kappa_WL: float, r: float, p: float, eps1: float, N: int, K: int, as_printed: bool = False) -> float:
    """Right-hand side of (5), ((sqrt N - eps1)^2 + N kappa^-2 - (r Psi + t)^2) / (2 N kappa (1 + eps1)) - m / N,
    as proved in chapter 5 for every eps2 >= 0: t = sqrt(N) (kappa - 1/kappa) >= ||(W'^+ - W'^T) Y||_F and
    m = ceil(eps1^2) - 1 (at most that many samples have an output error above 1; m = 0 for eps1 <= 1). With
    ``as_printed``: the paper's t = sqrt(K) (kappa^2 - 1), whose derivation drops a factor sqrt(n), and no m."""
    k = kappa_WL
    t = math.sqrt(K) * (k ** 2 - 1) if as_printed else math.sqrt(N) * (k - 1 / k)
    m = 0 if as_printed else max(0, math.ceil(eps1 ** 2) - 1)
    return ((math.sqrt(N) - eps1) ** 2 + N / k ** 2 - (r * p + t) ** 2) / (2 * N * k * (1 + eps1)) - m / N


def nc3_terms(model: MLP, X: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per sample, the pieces of chapter 5's proof of (5), after rescaling W' = W_L / ||W_L||_op, z' = ||W_L||_op z:
    ``cos`` = cos(z_ci, W_{L,c:}), ``a`` = <z'_ci, W'_{L,c:}> (= the c-th output), ``row`` and ``kernel`` = the norms
    of the parts of z'_ci in the row space and in the kernel of W_L, ``err`` = ||z^L_ci - y_ci||."""
    with torch.no_grad():
        feats = list(copy.deepcopy(model).double().forward_features(X.double()))
    W = model.weights[-1].detach().double()
    Z, ZL = feats[-2], feats[-1]                                     # N x n_{L-1}, N x K
    scale = op_norm(W)
    P = torch.linalg.pinv(W) @ W                                     # projection on the row space of W_L
    rows = W[labels]                                                 # W_{L,c:} for each sample's class c
    a = (Z * rows).sum(1)
    Y = one_hot_targets(labels, W.shape[0], torch.float64)
    return {"cos": a / (Z.norm(dim=1) * rows.norm(dim=1)), "a": a,
            "row": scale * (Z @ P).norm(dim=1), "kernel": scale * (Z - Z @ P).norm(dim=1),
            "err": (ZL - Y).norm(dim=1)}


def theorem_3_1(model: MLP, X: torch.Tensor, labels: torch.Tensor) -> Theorem31:
    """Measure the hypotheses of Jacot et al.'s Theorem 3.1 on a trained network and evaluate its bounds (2)-(5)."""
    L, L1 = len(model.layers), model.num_nonlinear
    L2 = L - L1
    if L2 < 2:
        raise ValueError(f"Theorem 3.1 needs at least two linear layers (L2 >= 2), got L2 = {L2}")
    with torch.no_grad():
        feats = list(copy.deepcopy(model).double().forward_features(X.double()))
    W = [w.detach().double() for w in model.weights]
    K = W[-1].shape[0]
    Y = one_hot_targets(labels, K, torch.float64).T                 # K x N
    N = Y.shape[1]
    Z = [X.double().T] + [f.T for f in feats]                        # Z[l] = Z_l, n_l x N
    eps1 = float(torch.linalg.matrix_norm(Z[L] - Y))
    eps2 = max(balancedness_gap(W[i + 1], W[i]) for i in range(L1, L - 1))
    r = max(op_norm(Z[L - 2]), op_norm(Z[L - 1]), *(op_norm(W[i]) for i in range(L1, L)))
    s_K_Y = float(torch.linalg.svdvals(Y)[K - 1])
    n_last = W[-1].shape[1]
    X_op = op_norm(Z[0])
    Z_L1_op = op_norm(Z[L1])
    r_nonlin = max([op_norm(W[i]) for i in range(L1)], default=0.0)
    th = Theorem31(
        eps1=eps1, eps2=eps2, r=r, s_K_Y=s_K_Y, N=N, K=K, n_last=n_last, L1=L1, L2=L2, X_op=X_op, Z_L1_op=Z_L1_op,
        r_nonlinear=r_nonlin, psi=math.nan, kappa_linear=kappa(product(W[L1:]), K), kappa_WL=kappa(W[-1], K),
        nc1=metrics.nc1_trace_ratio(feats[L - 2], labels), nc2=metrics.nc2_condition_number(feats[L - 2], labels),
        nc3=metrics.nc3_cosine(feats[L - 2], labels, W[-1]), bound_nc1=math.nan, bound_kappa_WL=math.nan,
        bound_kappa_WL_fixed=math.nan, bound_nc2=math.nan, bound_nc3=math.nan, bound_nc3_as_printed=math.nan)
    return at_eps2(th, eps2)


def at_eps2(th: Theorem31, eps2: float) -> Theorem31:
    """``th`` with the balancedness eps2 set to ``eps2`` and Psi and the bounds (2)-(5) evaluated there.

    On a network balanced by construction the measured eps2 (~1e-15) is rounding and differs between processors;
    it enters through sqrt(eps2) (Psi) and r^{2(L2-1)} eps2 (delta of (3)), so it moves the bounds by far more than
    1e-15: ``at_eps2(th, 0.0)`` gives the bounds of the exact network (chapter 5)."""
    e1, r, s, n, N, K, L2 = th.eps1, th.r, th.s_K_Y, th.n_last, th.N, th.K, th.L2
    p = psi(e1, eps2, r, s, n) if e1 < s else math.inf
    k = th.kappa_WL
    return replace(
        th, eps2=eps2, psi=p,
        bound_nc1=nc1_bound(e1, eps2, r, s, n, N, K),
        bound_kappa_WL=kappa_bound(th.kappa_linear, e1, eps2, r, s, L2, th.X_op * r ** th.L1),
        bound_kappa_WL_fixed=kappa_bound(th.kappa_linear, e1, eps2, r, s, L2, th.Z_L1_op),
        bound_nc2=nc2_bound(k, r, p, s) if math.isfinite(p) else math.inf,
        bound_nc3=nc3_bound(k, r, p, e1, N, K) if math.isfinite(p) else -math.inf,
        bound_nc3_as_printed=nc3_bound(k, r, p, e1, N, K, as_printed=True) if math.isfinite(p) else -math.inf)


# ----------------------------------------------------------------------------------------------------------------
# Section 4: gradient descent (Lemma C.1, Proposition 4.5, the balancing step of Theorem 4.4)


def lemma_c1_constant(N: int, beta: float, b: float, r: list[float], as_printed: bool = False) -> float:
    """Lipschitz constant of grad C_0 on {||W_j||_op <= r_j} with ||x_i|| <= b (Lemma C.1): 7 N beta L^2 b^3 R^3 as
    re-derived in chapter 6, or the paper's 5 N beta b^3 R^3 L^{5/2} (``as_printed``); R = prod max(1, r_j) and b is
    replaced by max(1, b), the lemma's b >= 1, r_j >= 1."""
    L, bb = len(r), max(1.0, b)
    R = math.prod(max(1.0, v) for v in r)
    return (5 * L ** 2.5 if as_printed else 7 * L ** 2) * N * beta * bb ** 3 * R ** 3


def shifted_pl_offset(lam: float, alpha: float, theta0_norm: float, r0: float) -> float:
    """m_lambda = (1 + sqrt(4 lam / alpha))^2 (||theta_0|| + r_0)^2 of Jacot et al.'s Proposition 4.5: C_lambda
    satisfies ||grad C_lambda||^2 >= (alpha/4)(C_lambda - lam m_lambda) on B(theta_0, r_0) when C_0 is alpha-PL
    there."""
    return (1 + math.sqrt(4 * lam / alpha)) ** 2 * (theta0_norm + r0) ** 2


def balancing_forcing_bound(eps1: float, rho: float, X_op: float, L1: int, L: int, as_printed: bool = False) -> float:
    """Bound on ||G_l||_op^2 + ||G_{l+1}||_op^2, the forcing term of the balancing recursion for a pair of linear
    layers in the proof of Jacot et al.'s Theorem 4.4, when ||Z_L - Y||_F <= eps1 sqrt 2 and every ||W_j||_F <= rho:
    4 eps1^2 rho^{2(L-1)} ||X||_op^2 (chapter 6; attained by scalar chains), or the paper's exponent 2(L1 + L - 1),
    which counts the non-linear layers twice (``as_printed``)."""
    exponent = 2 * (L1 + L - 1) if as_printed else 2 * (L - 1)
    return 4 * eps1 ** 2 * rho ** exponent * X_op ** 2


def worst_balancing_forcing(eps1: float, rho: float, X_op: float, L: int) -> float:
    """The largest forcing ||G_l||^2 + ||G_{l+1}||^2 under the standing condition of Jacot et al.'s Thm 4.4, C_lambda <=
    eps1^2 with lambda = 2 eps1^2 / rho^2: 2 eps1^2 rho^{2(L-1)} ||X||_op^2 / L^L (AM-GM over the error, the L-2
    other layers and the pair; attained by a scalar chain; chapter 6's erratum)."""
    return 2 * eps1 ** 2 * rho ** (2 * (L - 1)) * X_op ** 2 / L ** L


def printed_forcing_fails_below(L1: int, L: int) -> float:
    """The rho below which the printed forcing 4 eps1^2 rho^{2(L1+L-1)} ||X||^2 (proof of Jacot et al.'s Thm 4.4) is
    smaller than :func:`worst_balancing_forcing`: rho^{2 L1} < 1 / (2 L^L), i.e. (2 L^L)^{-1/(2 L1)} (1/sqrt 54 at L1
    = 1, L = 3)."""
    return (2 * L ** L) ** (-1 / (2 * L1))


def thm44_eps1_max(K: int, N: int, s_K_Y: float, as_printed: bool = False) -> float:
    """The largest eps1 of Jacot et al.'s Thm 4.4: its (11) is their Thm 3.1 at eps1 sqrt 2, so
    min(s_K(Y), sqrt((K-1)N/(4K))) / sqrt 2; the paper prints 1/2 sqrt((K-1)N/K) (``as_printed``): the limit of their
    Thm 3.1 taken at eps1, sqrt 2 too large, no s_K(Y)."""
    top = math.sqrt((K - 1) * N / (4 * K))
    return top if as_printed else min(s_K_Y, top) / math.sqrt(2)


# ----------------------------------------------------------------------------------------------------------------
# Lemma C.2 and Section 5


def lemma_c2_gap(linear_weights: list[torch.Tensor]) -> float:
    """||(W_L W_L^T)^{L2} - W_{L:L1+1} W_{L:L1+1}^T||_op for the linear layers [W_{L1+1}, ..., W_L] (Lemma C.2)."""
    Ws = [w.double() for w in linear_weights]
    P, WL = product(Ws), Ws[-1]
    return op_norm(torch.linalg.matrix_power(WL @ WL.T, len(Ws)) - P @ P.T)


def lemma_c2_bound(linear_weights: list[torch.Tensor], as_printed: bool = False) -> float:
    """Lemma C.2's bound on :func:`lemma_c2_gap`, (L2 (L2-1)/2) eps2 r^{2(L2-1)} as proved in chapter 5 (attained to
    first order by scalar chains), or with the paper's constant L2^2/2 (``as_printed``)."""
    Ws = [w.double() for w in linear_weights]
    L2 = len(Ws)
    eps2 = max((balancedness_gap(Ws[i + 1], Ws[i]) for i in range(L2 - 1)), default=0.0)
    r = max(op_norm(W) for W in Ws)
    constant = L2 ** 2 / 2 if as_printed else L2 * (L2 - 1) / 2
    return constant * eps2 * r ** (2 * (L2 - 1))


def lemma_c2(linear_weights: list[torch.Tensor]) -> tuple[float, float]:
    """(:func:`lemma_c2_gap`, :func:`lemma_c2_bound`) for the linear layers [W_{L1+1}, ..., W_L] (Lemma C.2)."""
    return lemma_c2_gap(linear_weights), lemma_c2_bound(linear_weights)


def balanced_chain(P: torch.Tensor, L2: int, width: int | None = None, seed: int = 0) -> list[torch.Tensor]:
    """L2 exactly balanced matrices (W_{l+1}^T W_{l+1} = W_l W_l^T) whose product is P (K x n): with the reduced
    SVD P = U S V^T, W_1 = Q_1 S^{1/L2} V^T, W_l = Q_l S^{1/L2} Q_{l-1}^T, W_L2 = U S^{1/L2} Q_{L2-1}^T for random
    Q_l (width x K) with orthonormal columns."""
    P = P.double()
    K = P.shape[0]
    width = width or K
    U, S, Vt = torch.linalg.svd(P, full_matrices=False)
    root = torch.diag(S ** (1 / L2))
    g = torch.Generator().manual_seed(seed)
    Qs = [torch.linalg.qr(torch.randn(width, K, generator=g, dtype=torch.float64))[0] for _ in range(L2 - 1)]
    if L2 == 1:
        return [P]
    chain = [Qs[0] @ root @ Vt]
    chain += [Qs[i] @ root @ Qs[i - 1].T for i in range(1, L2 - 1)]
    chain.append(U @ root @ Qs[-1].T)
    return chain


def prop_5_1_bound(c: float, L1: int, K: int, s_K_Y: float, eps1: float, X_op: float) -> float:
    """Right-hand side of (17): kappa(W_{L:L1+1}) <= exp((c + L1 K log K - 2 K log((s_K(Y) - eps1)/||X||_op))/2)."""
    return math.exp(0.5 * (c + L1 * K * math.log(K) - 2 * K * math.log((s_K_Y - eps1) / X_op)))


def thm_5_2_bounds(c: float, L1: int, L2: int, K: int, s_K_Y: float, eps1: float, X_op: float) -> dict[str, float]:
    """(18) at a global minimiser: the bound on kappa(W_{L:L1+1}), and on kappa(W_L) with the exponent 1/L2 that
    balancedness gives (chapter 7) and with the paper's 1/L1."""
    linear = (X_op / (s_K_Y - eps1)) ** K * math.exp(0.5 * (c - L1 * K + L1 * K * math.log(K)))
    return {"kappa_linear": linear, "kappa_WL": linear ** (1 / L2), "kappa_WL_as_printed": linear ** (1 / L1)}


def ntk_op_norm(model: MLP, X: torch.Tensor) -> float:
    """||Theta||_op for the NTK Theta = J J^T of the outputs (NK x NK), J the Jacobian of vec(Z_L) in the weights:
    the top eigenvalue by Lanczos (scipy's eigsh) on the products J (J^T v), each two reverse-mode passes (torch.func's
    vjp, the second through the first, which is linear in v), so that J is never formed."""
    from scipy.sparse.linalg import LinearOperator, eigsh
    from torch.func import functional_call, vjp

    net = copy.deepcopy(model).double()
    params = {k: v.detach() for k, v in net.named_parameters()}
    Xd = X.double()

    def out(p):
        return functional_call(net, p, (Xd,)).reshape(-1)

    z, pullback = vjp(out, params)  # type: ignore[misc]  # v -> J^T v

    def transpose_of_pullback(v: torch.Tensor) -> dict[str, torch.Tensor]:
        return pullback(v)[0]

    # g -> J g (the pullback is linear)
    _, forward = vjp(transpose_of_pullback, torch.zeros_like(z))  # type: ignore[misc]

    def matvec(v: np.ndarray) -> np.ndarray:
        g = pullback(torch.as_tensor(v.reshape(-1), dtype=torch.float64, device=z.device))[0]
        return forward(g)[0].cpu().numpy()

    n = z.numel()
    if n < 3:                                                       # too small for Lanczos: form Theta
        return float(np.linalg.eigvalsh(np.stack([matvec(e) for e in np.eye(n)], axis=1)).max())
    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    return float(eigsh(op, k=1, which="LA", v0=np.ones(n), return_eigenvectors=False)[0])


def ntk_lower_bound(s_K_Y: float, eps1: float, K: int, r: float, L2: int) -> float:
    """Right-hand side of (20): (s_K(Y) - eps1)^2 L2 / (K^2 r^2)."""
    return (s_K_Y - eps1) ** 2 * L2 / (K ** 2 * r ** 2)


def prop_5_3_kappa_bounds(ntk_op: float, r: float, s_K_Z_L: float, K: int, M: int) -> dict[str, float]:
    """Prop. 5.3's bounds on the conditioning of the tails W_{L:l} of the head, from ||Theta||_op, the largest
    operator norm r of a linear layer and s_K(Z_L) (>= s_K(Y) - eps1), as derived in chapter 7: ``every`` bounds
    kappa(W_{L:l}) for every l in {L1+1, ..., L}; ``some`` bounds it for some l among the first M (the paper's
    form, with ||Theta||_op in place of C L2)."""
    every = math.sqrt(ntk_op) * r / s_K_Z_L
    return {"every": every, "some": every * K / math.sqrt(M)}


def top_hessian_eigenvalue(loss_fn, params: list[torch.Tensor], iters: int = 100, seed: int = 0) -> float:
    """Largest eigenvalue of the Hessian of ``loss_fn(params)`` by power iteration on Hessian-vector products
    (double backward); for the edge-of-stability comparison with 2/eta (Sec. 5.2). The start is drawn in float64
    whatever the parameters' precision, so that float32 and float64 start from the same vector."""
    g = torch.Generator().manual_seed(seed)
    v = [torch.randn(p.shape, generator=g, dtype=torch.float64).to(device=p.device, dtype=p.dtype) for p in params]
    lam = 0.0
    for _ in range(iters):
        norm = torch.sqrt(sum((x * x).sum() for x in v))  # type: ignore[arg-type]
        v = [x / norm for x in v]
        grads = torch.autograd.grad(loss_fn(params), params, create_graph=True)
        Hv = torch.autograd.grad(grads, params, grad_outputs=v)
        lam = float(sum((h * x).sum() for h, x in zip(Hv, v)))
        v = [h.detach() for h in Hv]
    return lam


def largest_hessian_eigenvalue(loss_fn, params: list[torch.Tensor], tol: float = 1e-4,
                               which: Literal["LA", "SA"] = "LA") -> float:
    """The largest (algebraic) eigenvalue of the Hessian of ``loss_fn(params)`` (``which="SA"``: the smallest), by
    Lanczos (scipy's eigsh) on Hessian-vector products (double backward), from a fixed start: GD with step eta is
    stable at these weights only if eta < 2 / it (Sec. 5.2). Power iteration (:func:`top_hessian_eigenvalue`) finds
    the largest in magnitude, which may be a negative one, and converges at the ratio of the second largest magnitude
    to the largest: slowly where they are close, as where the most negative nearly matches the top."""
    if which != "LA" and which != "SA":
        raise ValueError(f"which must be 'LA' (the largest eigenvalue) or 'SA' (the smallest), got {which!r}")
    from scipy.sparse.linalg import LinearOperator, eigsh

    sizes = [p.numel() for p in params]
    grads = torch.autograd.grad(loss_fn(params), params, create_graph=True)

    def matvec(v: np.ndarray) -> np.ndarray:
        parts = torch.split(torch.as_tensor(np.ravel(v), dtype=params[0].dtype, device=params[0].device), sizes)
        Hv = torch.autograd.grad(grads, params, [x.reshape(p.shape) for x, p in zip(parts, params)],
                                 retain_graph=True)
        return torch.cat([h.reshape(-1) for h in Hv]).cpu().numpy()

    n = sum(sizes)
    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    return float(eigsh(op, k=1, which=which, v0=np.ones(n), tol=tol, return_eigenvectors=False)[0])


def interpolating_network(X: torch.Tensor, labels: torch.Tensor, width: int, head_width: int, L2: int,
                          noise: float = 0.0, seed: int = 0, activation: torch.nn.Module | None = None) -> MLP:
    """A network of the kind of Jacot et al.'s Theorem 3.1, built by hand: one random non-linear layer of ``width``
    units, then L2 exactly balanced linear layers whose product P maps the hidden features to the one-hot targets (P
    = Y Z_1^+, plus ``noise`` times a random matrix, which sets the interpolation error eps1)."""
    K = int(labels.max()) + 1
    g = torch.Generator().manual_seed(seed)
    Xd = X.double()
    model = MLP([X.shape[1], width, *(head_width,) * (L2 - 1), K], 1, activation=activation).double()
    with torch.no_grad():
        model.weights[0].copy_(torch.randn(width, X.shape[1], generator=g, dtype=torch.float64)
                               / math.sqrt(X.shape[1]))
        Z1 = model.activation(model.layers[0](Xd)).T                                  # width x N
        Y = one_hot_targets(labels, K, torch.float64).T
        P = Y @ torch.linalg.pinv(Z1) + noise * torch.randn(K, width, generator=g, dtype=torch.float64)
        for weight, W in zip(model.weights[1:], balanced_chain(P, L2, head_width, seed)):
            weight.copy_(W)
    return model


def kernel_leaking_network(K: int, width: int, per_class: int, leak: float, noise: float = 0.0,
                           seed: int = 0) -> tuple[MLP, torch.Tensor, torch.Tensor]:
    """A network and data on which Jacot et al.'s Theorem 3.1 is informative and Z_{L-1} leaks into the kernel of W_L
    (chapter 5): inputs ``e_c + noise |g|`` (collapsed, non-negative), one ReLU layer W_1 = I, then the linear head
    W_2 = [I; leak G], W_3 = [I 0], so that Z_L = Z_1 whatever the leak, kappa(W_L) = 1, and eps2 ~ leak ||G||."""
    if width <= K:
        raise ValueError(f"width must exceed K = {K} to leave room for a kernel of W_L; got width = {width}")
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(K).repeat_interleave(per_class)
    X = torch.eye(K, dtype=torch.float64)[labels] + noise * torch.randn(len(labels), K, generator=g,
                                                                        dtype=torch.float64).abs()
    model = MLP([K, K, width, K], 1).double()
    eye = torch.eye(K, dtype=torch.float64)
    G = torch.randn(width - K, K, generator=g, dtype=torch.float64) / math.sqrt(K)
    with torch.no_grad():
        W1, W2, W3 = model.weights
        W1.copy_(eye)
        W2.copy_(torch.cat([eye, leak * G]))
        W3.copy_(torch.cat([eye, torch.zeros(K, width - K, dtype=torch.float64)], dim=1))
    return model, X, labels
