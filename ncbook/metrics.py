"""Neural-collapse metrics: class statistics and every NC1-NC3 variant the two papers (and the field) use.

Conventions (stated once, used everywhere):

* features ``Z`` are an ``(N, d)`` array (one row per sample), labels ``y`` are integers in ``0..K-1``;
* all statistics are accumulated in float64, whatever the input dtype or device (CPU or CUDA); only short
  partial sums (one block of rows, a few hundred terms) are formed in the input precision;
* ``Sigma_W = (1/N) sum_{c,i} (z_ci - mu_c)(z_ci - mu_c)^T`` (Jacot et al. Sec. 3; Tirer et al. Sec. 4);
* ``Sigma_B = (1/K) sum_c (mu_c - mu_G)(mu_c - mu_G)^T`` where the global mean ``mu_G`` is, by default, the
  mean of all samples (``global_mean="samples"``, as in Papyan et al. 2020 and both papers); pass
  ``global_mean="class_means"`` for the mean of the class means. The two agree for balanced classes. With
  unbalanced classes they differ, and for the NC2 family (:func:`nc2_etf_distance`, :func:`equinorm`,
  :func:`equiangularity`, :func:`max_angle_deviation`, :func:`coherence`), which reads the geometry of the centred
  means, only ``"class_means"`` gives a simplex ETF of class means its ideal values whatever the class sizes: the
  sample mean is pulled towards the large classes, away from the ETF's centre (chapter 1 shows the case; the
  rhubarbwu/neural-collapse library centres at the mean of the class means). Pass ``global_mean="class_means"``
  for unbalanced data.

Nothing here forms or inverts a ``d x d`` matrix: every class-mean direction lies in the span of the (at most
``K``) class means, so the statistics are kept in an orthonormal basis ``Q`` of that span (``d x q``, ``q <= K``).
On the CPU the pass that needs every sample twice over is one numba kernel (``_shift_project``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import numba
import numpy as np
import torch
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

GlobalMean = Literal["samples", "class_means"]
ArrayLike = torch.Tensor | np.ndarray

PINV_RCOND = 1e-12
"""Eigenvalues of Sigma_B below ``PINV_RCOND * max eigenvalue`` are treated as zero in its pseudo-inverse."""


# ----------------------------------------------------------------------------------------------------------------
# input checking


def _as_tensor(x: ArrayLike, name: str) -> torch.Tensor:
    """Return ``x`` as a torch tensor (numpy arrays are wrapped without copying)."""
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    if isinstance(x, torch.Tensor):
        return x.detach()
    raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray, got {type(x).__name__}")


def check_features_labels(
    features: ArrayLike, labels: ArrayLike, num_classes: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Validate ``(N, d)`` features and ``(N,)`` integer labels in ``0..K-1``; return tensors and ``K``.

    Finiteness is checked on the class sums (``_class_sums``), which every NaN or inf reaches, at no extra cost.
    """
    Z = _as_tensor(features, "features")
    y = _as_tensor(labels, "labels")
    if Z.ndim != 2:
        raise ValueError(f"features must be 2-D (N samples x d dimensions), got shape {tuple(Z.shape)}; "
                         "flatten each sample first, e.g. Z.reshape(len(Z), -1)")
    if y.ndim != 1 or y.shape[0] != Z.shape[0]:
        raise ValueError(f"labels must be 1-D with one label per row of features: features has {Z.shape[0]} rows, "
                         f"labels has shape {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype == torch.bool or y.dtype.is_complex:
        raise TypeError(f"labels must be integers 0..K-1, got dtype {y.dtype}")
    if not Z.dtype.is_floating_point:
        Z = Z.to(torch.float64)
    y = y.to(device=Z.device, dtype=torch.long)
    if not y.numel():
        raise ValueError("no samples: features and labels are empty")
    if int(y.min()) < 0:
        raise ValueError(f"labels must lie in 0..K-1, found {int(y.min())}")
    K = int(y.max()) + 1 if num_classes is None and y.numel() else (num_classes or 0)
    if K > max(y.numel(), 2):            # every class needs a sample: this bounds the memory of what follows
        raise ValueError(f"{K} classes but only {y.numel()} samples: every class 0..{K - 1} needs at least one "
                         "(labels must be 0..K-1; relabel sparse labels first, e.g. with numpy.unique)")
    if y.numel() and int(y.max()) >= K:
        raise ValueError(f"labels must lie in 0..{K - 1} for num_classes={K}, found {int(y.max())}")
    if K < 2:
        raise ValueError(f"neural-collapse metrics need at least 2 classes, got {K}")
    counts = torch.bincount(y, minlength=K)
    if bool((counts == 0).any()):
        empty = torch.nonzero(counts == 0).flatten().tolist()
        raise ValueError(f"class(es) {empty} have no samples; every class 0..{K - 1} needs at least one "
                         "(pass num_classes only if all classes are present, or relabel)")
    return Z, y, K


def _check_dims(d: int, needed: int, metric: str) -> None:
    if d < needed:
        raise ValueError(f"{metric} needs feature dimension d >= {needed}, got d = {d}")


# ----------------------------------------------------------------------------------------------------------------
# building blocks


def class_means(features: ArrayLike, labels: ArrayLike, num_classes: int | None = None) -> torch.Tensor:
    """Class means ``mu_c = (1/n_c) sum_i z_ci`` as a ``(K, d)`` float64 tensor (one blocked pass over the data)."""
    Z, y, K = check_features_labels(features, labels, num_classes)
    Z = Z if Z.dtype in (torch.float32, torch.float64) else Z.to(torch.float32)
    return _class_sums(Z, y, K) / torch.bincount(y, minlength=K).to(torch.float64).unsqueeze(1)


def global_mean(means: torch.Tensor, counts: torch.Tensor, kind: GlobalMean = "samples") -> torch.Tensor:
    """Global mean ``mu_G``: the sample mean ``sum_c n_c mu_c / N`` or the mean of class means ``sum_c mu_c / K``."""
    if kind == "samples":
        return (counts.to(means).unsqueeze(1) * means).sum(0) / counts.sum()
    if kind == "class_means":
        return means.mean(0)
    raise ValueError(f"global_mean must be 'samples' or 'class_means', got {kind!r}")


def between_class_covariance(means: torch.Tensor, counts: torch.Tensor,
                             kind: GlobalMean = "samples") -> torch.Tensor:
    """``Sigma_B = (1/K) sum_c (mu_c - mu_G)(mu_c - mu_G)^T`` (d x d; for small d and for exposition)."""
    M = means - global_mean(means, counts, kind)
    return M.T @ M / M.shape[0]


def within_class_covariance(features: ArrayLike, labels: ArrayLike, num_classes: int | None = None) -> torch.Tensor:
    """``Sigma_W = (1/N) sum_{c,i} (z_ci - mu_c)(z_ci - mu_c)^T`` (d x d; for small d and for exposition)."""
    Z, y, K = check_features_labels(features, labels, num_classes)
    C = Z.to(torch.float64) - class_means(Z, y, K)[y]
    return C.T @ C / Z.shape[0]


@dataclass(frozen=True)
class ClassStats:
    """Sufficient statistics for every class-mean based NC metric, in float64.

    ``counts`` (K,), ``means`` (K, d), ``basis`` Q (d, q) orthonormal with span(Q) containing every class mean,
    ``scatter_q`` (K, q, q) = Q^T S_c Q and ``scatter_trace`` (K,) = tr S_c, where
    ``S_c = sum_i (z_ci - mu_c)(z_ci - mu_c)^T`` is the within-class scatter of class c. ``cos_sum`` is
    ``sum_{c,i} cos(z_ci, W_c:)`` when the statistics were gathered with a classifier W (for :func:`nc3_cosine`).
    """

    counts: torch.Tensor
    means: torch.Tensor
    basis: torch.Tensor
    scatter_q: torch.Tensor
    scatter_trace: torch.Tensor
    cos_sum: float | None = None

    @property
    def num_classes(self) -> int:
        return self.means.shape[0]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def num_samples(self) -> int:
        return int(self.counts.sum())


def mean_basis(means: torch.Tensor) -> torch.Tensor:
    """Orthonormal basis ``Q`` (d x q, q = min(d, K)) of a space containing all class means (reduced QR)."""
    Q, _ = torch.linalg.qr(means.T, mode="reduced")
    return Q


CHUNK_ELEMENTS = 1 << 20
"""Features are processed in row blocks of about this many numbers, so no temporary is as large as the input."""

DEVICE_CHUNK_ELEMENTS = 1 << 26
"""On a device other than the CPU (a GPU), where every operation is a launch that costs as much as a small block's
arithmetic, a pass over the features is one launch per this many numbers (256 MB of float32): the blocks of
:data:`CHUNK_ELEMENTS` that set the precision of the class sums are summed all at once."""


def _block_rows(d: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(d, 1))


def _class_sums(Z: torch.Tensor, y: torch.Tensor, K: int) -> torch.Tensor:
    """Per-class sums (K, d) in float64: each block of rows is summed per class in the input precision (a few
    hundred terms at most, relative error ~1e-7 in float32), and the block sums are added up in float64 (on a device
    other than the CPU, all blocks at once: :func:`_class_sums_at_once`)."""
    rows = _block_rows(Z.shape[1])
    if Z.device.type != "cpu":
        sums = _class_sums_at_once(Z, y, K, rows)
    else:
        sums = torch.zeros(K, Z.shape[1], dtype=torch.float64, device=Z.device)
        part = torch.empty(K, Z.shape[1], dtype=Z.dtype, device=Z.device)
        for s in range(0, Z.shape[0], rows):
            sums += part.zero_().index_add_(0, y[s:s + rows], Z[s:s + rows])
    if not bool(torch.isfinite(sums).all()):
        bad = int((~torch.isfinite(Z)).any(dim=1).sum())
        raise ValueError(f"features contain NaN or inf in {bad} of {Z.shape[0]} rows; "
                         "check the network output (a diverged run?) before measuring collapse")
    return sums


def _class_sums_at_once(Z: torch.Tensor, y: torch.Tensor, K: int, rows: int) -> torch.Tensor:
    """:func:`_class_sums`' blocks of ``rows`` rows, summed per class in the input precision in one launch per
    :data:`DEVICE_CHUNK_ELEMENTS` (block b's class c is row b K + c of one table), then over blocks in float64."""
    N, d = Z.shape
    per_launch = max(rows, DEVICE_CHUNK_ELEMENTS // max(d, 1) // rows * rows)      # whole blocks per launch
    block = torch.div(torch.arange(min(N, per_launch), device=Z.device), rows, rounding_mode="floor") * K
    sums = torch.zeros(K, d, dtype=torch.float64, device=Z.device)
    for s in range(0, N, per_launch):
        n = min(per_launch, N - s)
        B = -(-n // rows)
        table = torch.zeros(B * K, d, dtype=Z.dtype, device=Z.device).index_add_(0, block[:n] + y[s:s + n], Z[s:s + n])
        sums += table.view(B, K, d).to(torch.float64).sum(0)
    return sums


SHIFT_BLOCK = 256
"""Rows per thread task in ``_shift_project``; its per-class sums are float64 per block, then added in order."""


@numba.njit(parallel=True, cache=True, fastmath={"reassoc", "contract"})
def _shift_project(Z: np.ndarray, y: np.ndarray, a: np.ndarray, Rt: np.ndarray, q: int,
                   cc: np.ndarray, G: np.ndarray, scatter: np.ndarray) -> None:
    """CPU kernel of :func:`shifted_moments`, one read of each row: ``cc[i] = |c_i|^2`` and ``G[i] = Rt c_i`` (Rt
    with an even number of rows) for ``c_i = Z[i] - a[y[i]]``, in the input precision, and, in float64, ``scatter[b,
    c] = sum G[i, :q] G[i, :q]^T`` over the rows i of class c in block b. A block is one thread's, so the floats do
    not depend on the number of threads; the dot products are vectorised, two at a time, as a BLAS would."""
    N, d = Z.shape
    for b in numba.prange(scatter.shape[0]):
        c, g, Sb = np.empty(d, Z.dtype), np.empty(Rt.shape[0]), np.zeros(scatter.shape[1:])
        zero = np.zeros(1, Z.dtype)[0]
        for i in range(SHIFT_BLOCK * b, min(N, SHIFT_BLOCK * (b + 1))):
            s = zero
            for j in range(d):
                c[j] = Z[i, j] - a[y[i], j]
                s += c[j] * c[j]
            cc[i] = s
            for k in range(0, Rt.shape[0], 2):
                t0, t1 = zero, zero
                for j in range(d):
                    t0 += c[j] * Rt[k, j]
                    t1 += c[j] * Rt[k + 1, j]
                G[i, k], G[i, k + 1] = t0, t1
                g[k], g[k + 1] = t0, t1
            for k in range(q):
                for m in range(q):
                    Sb[y[i], k, m] += g[k] * g[m]
        scatter[b] = Sb


def shifted_moments(Z: torch.Tensor, y: torch.Tensor, a: torch.Tensor, R: torch.Tensor, q: int
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The second pass of :func:`class_stats`. For ``c_i = z_i - a_{y_i}`` (a: the class means in the input
    precision): ``|c_i|^2`` (N,) and ``c_i^T R`` (N, r), each formed in the input precision from one row, and per
    class ``sum_i P_i P_i^T`` (K, q, q) for ``P_i = c_i^T R[:, :q]``, all in float64. On the CPU one fused kernel
    reads every row once (``_shift_project``); elsewhere a few torch operations (``_shifted_moments_torch``)."""
    if Z.device.type == "cpu":
        return _shifted_moments_cpu(Z, y, a, R, q)
    return _shifted_moments_torch(Z, y, a, R, q)


def _shifted_moments_cpu(Z: torch.Tensor, y: torch.Tensor, a: torch.Tensor, R: torch.Tensor, q: int
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`shifted_moments` through the numba kernel, on as many threads as torch uses."""
    (N, d), r, f64 = Z.shape, R.shape[1], torch.float64
    Zn = Z.contiguous().numpy()
    Rt = torch.zeros(r + r % 2, d, dtype=Z.dtype)                     # an even number of rows, for the kernel
    Rt[:r] = R.T
    cc, G = np.empty(N, Zn.dtype), np.empty((N, len(Rt)), Zn.dtype)
    blocks = np.empty((-(-N // SHIFT_BLOCK), a.shape[0], q, q))
    threads = torch.get_num_threads()
    # numba.config's settings are made at import from the environment, so no type checker sees them
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    _shift_project(Zn, y.contiguous().numpy(), a.contiguous().numpy(), Rt.numpy(), q, cc, G, blocks)
    torch.set_num_threads(threads)          # numba's OpenMP layer resets the OpenMP thread count that torch reads
    return torch.from_numpy(cc).to(f64), torch.from_numpy(G[:, :r]).to(f64), torch.from_numpy(blocks.sum(0))


def _shifted_moments_torch(Z: torch.Tensor, y: torch.Tensor, a: torch.Tensor, R: torch.Tensor, q: int
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`shifted_moments` in torch operations (shift, norm, one product per row), on any device: one launch each
    per :data:`DEVICE_CHUNK_ELEMENTS` numbers, and the class scatters as one batched float64 product of the
    projections masked by class (no read back to the host)."""
    (N, d), f64, K = Z.shape, torch.float64, a.shape[0]
    rows = max(1, DEVICE_CHUNK_ELEMENTS // max(d, 1))
    Rw = R.to(Z.dtype)
    buf = torch.empty(min(rows, N), d, dtype=Z.dtype, device=Z.device)
    cc = torch.empty(N, dtype=Z.dtype, device=Z.device)
    G = torch.empty(N, R.shape[1], dtype=Z.dtype, device=Z.device)
    for s in range(0, N, rows):
        C = buf[:len(y[s:s + rows])]
        torch.sub(Z[s:s + rows], torch.index_select(a, 0, y[s:s + rows], out=C), out=C)
        torch.linalg.vector_norm(C, dim=1, out=cc[s:s + rows])
        torch.mm(C, Rw, out=G[s:s + rows])
    G = G.to(f64)
    scatter = torch.zeros(K, q, q, dtype=f64, device=Z.device)
    step = max(1, DEVICE_CHUNK_ELEMENTS // max(K * q, 1))
    for s in range(0, N, step):                              # sum_i [y_i = c] P_i P_i^T, for every class c at once
        P = G[s:s + step, :q]
        mask = torch.zeros(len(P), K, dtype=f64, device=Z.device).scatter_(1, y[s:s + step, None], 1.0)
        scatter += torch.bmm((mask.T[:, :, None] * P).transpose(1, 2), P.expand(K, -1, -1))
    return cc.to(f64) ** 2, G, scatter


def class_stats(features: ArrayLike, labels: ArrayLike, num_classes: int | None = None,
                classifier: ArrayLike | None = None) -> ClassStats:
    """One-shot :class:`ClassStats` in two blocked passes; no d x d matrix, no full-size temporary.

    Pass 1 sums each class (``_class_sums``). Pass 2 (:func:`shifted_moments`; on the CPU one fused read of every
    row) subtracts from every sample its class mean rounded to the input precision, a = fl(mu_c) (exact or nearly so
    for nearby float32 numbers), projects it on the span of the means and applies the shifted-scatter identity
    S_c = sum_i c_i c_i^T - n_c m_c m_c^T with c_i = z_i - a and m_c = mu_c - a (Chan, Golub & LeVeque 1983), so that
    nothing cancels; every sum over rows is float64. With a ``classifier`` W (K x d) the same pass accumulates the NC3
    cosines, through ``z.w = c.w + a.w`` and ``|z|^2 = |c|^2 + 2 c.a + |a|^2``.
    """
    Z, y, K = check_features_labels(features, labels, num_classes)
    if Z.dtype not in (torch.float32, torch.float64):
        Z = Z.to(torch.float32)
    d, f64, work = Z.shape[1], torch.float64, Z.dtype
    counts = torch.bincount(y, minlength=K)
    n = counts.to(f64)
    means = _class_sums(Z, y, K) / n.unsqueeze(1)
    a = means.to(work)                                   # the shift: the means in the input precision
    m = means - a.to(f64)                                # m_c = mu_c - a_c, exactly representable in float64
    Q = mean_basis(means)
    q = Q.shape[1]
    W = None if classifier is None else _check_classifier(classifier, K, d).to(Z.device)
    # one product per row gives the projections on Q and (with W) the products with W^T
    R = Q if W is None else torch.cat([Q, W.T], dim=1)
    cc, G, scatter = shifted_moments(Z, y, a, R, q)
    P = G[:, :q]
    mq = m @ Q
    trace = (torch.zeros(K, dtype=f64, device=Z.device).index_add_(0, y, cc) - n * (m * m).sum(1)).clamp(min=0)
    scatter_q = scatter - n[:, None, None] * mq.unsqueeze(2) * mq.unsqueeze(1)
    cos_sum = None
    if W is not None:
        pick = y.unsqueeze(1)
        a64 = a.to(f64)
        zw = G[:, q:q + K].gather(1, pick).squeeze(1) + (a64 * W).sum(1)[y]
        ca = (P * (a64 @ Q)[y]).sum(1)     # c.a = (Q^T c).(Q^T a): a is mu rounded, so a lies in span(Q) up to eps
        zz = (cc + 2 * ca + (a64 * a64).sum(1)[y]).clamp(min=0)
        denom = zz.sqrt() * torch.linalg.vector_norm(W, dim=1)[y]
        if bool((denom == 0).any()):
            raise ValueError("a feature vector or a classifier row is zero, so its cosine is undefined")
        cos_sum = float((zw / denom).sum())
    if not (bool(torch.isfinite(scatter_q).all()) and bool(torch.isfinite(trace).all())):
        raise ValueError("the features are too large for float64 (their squares overflow): divide them by a constant "
                         "first; every metric is scale-invariant")
    return ClassStats(counts, means, Q, scatter_q, trace, cos_sum)


def check_batch(features: ArrayLike, labels: ArrayLike, num_classes: int, dim: int | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of a stream as (features (n, d) float, labels (n,) long): shapes, finite values and labels in
    0..num_classes-1 checked; unlike :func:`check_features_labels`, a batch may miss classes."""
    Z, y = _as_tensor(features, "features"), _as_tensor(labels, "labels")
    if Z.ndim != 2 or (dim is not None and Z.shape[1] != dim):
        raise ValueError(f"batch features must have shape (n, {dim if dim is not None else 'd'}), got {tuple(Z.shape)}")
    if y.shape != (Z.shape[0],):
        raise ValueError(f"batch labels must have shape ({Z.shape[0]},), got {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype == torch.bool:
        raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    if not bool(torch.isfinite(Z.sum())) and not bool(torch.isfinite(Z).all()):    # a NaN or inf makes the sum one
        raise ValueError("batch features contain NaN or inf")
    y = y.to(torch.long)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"labels must lie in 0..{num_classes - 1}, found {int(y.min())}..{int(y.max())}")
    if not Z.dtype.is_floating_point:
        Z = Z.to(torch.float32)
    return Z, y


@dataclass
class _SecondPass:
    """What :class:`TwoPassClassStats` knows after its first pass, and its second pass's sums."""

    n: torch.Tensor                 # the class counts, float64
    means: torch.Tensor             # K x d, float64
    a: torch.Tensor                 # the means rounded to the working precision (the shift)
    Q: torch.Tensor                 # d x q orthonormal basis of the centred means
    W: torch.Tensor | None          # the classifier, if given
    R: torch.Tensor                 # Q, and W^T beside it
    scatter: torch.Tensor           # K x q x q
    cc_sum: torch.Tensor            # K: the sums of squared norms of the shifted samples
    seen: torch.Tensor              # K: the samples of pass 2
    cos_sum: float = 0.0


class TwoPassClassStats:
    """:class:`ClassStats` in two passes over the same batches, in K d memory plus a batch: ``first(Z, y)`` on every
    batch sums each class in float64; ``second(Z, y)`` on every batch again shifts each sample by its class mean
    rounded to the input precision and keeps only its projection on the span of the means, as :func:`class_stats`
    does; ``finalize()``. For features too wide for :class:`StreamingClassStats`' K d x d scatters (a convolutional
    layer's), or any re-readable source (:func:`streamed_class_stats`)."""

    def __init__(self, num_classes: int, classifier: ArrayLike | None = None):
        if num_classes < 2:
            raise ValueError(f"neural-collapse metrics need at least 2 classes, got num_classes={num_classes}")
        self.num_classes, self.classifier = num_classes, classifier
        self.sums: torch.Tensor | None = None
        self.counts: torch.Tensor | None = None
        self.work = torch.float32
        self.state: _SecondPass | None = None

    def first(self, Z: ArrayLike, y: ArrayLike) -> TwoPassClassStats:
        """Pass 1 on one batch: counts and class sums."""
        K = self.num_classes
        Z, y = check_batch(Z, y, K, None if self.sums is None else self.sums.shape[1])
        if self.sums is None or self.counts is None:
            self.work = Z.dtype if Z.dtype in (torch.float32, torch.float64) else torch.float32
            self.sums = torch.zeros(K, Z.shape[1], dtype=torch.float64, device=Z.device)
            self.counts = torch.zeros(K, dtype=torch.long, device=Z.device)
        self.sums += _class_sums(Z.to(self.work), y.to(self.sums.device), K)
        self.counts += torch.bincount(y.to(self.sums.device), minlength=K)
        return self

    def _second_pass(self) -> _SecondPass:
        """The state of pass 2, set up from pass 1's sums on its first call."""
        if self.state is not None:
            return self.state
        counts, sums, K, f64 = self.counts, self.sums, self.num_classes, torch.float64
        if counts is None or sums is None or bool((counts == 0).any()):
            empty = list(range(K)) if counts is None else torch.nonzero(counts == 0).flatten().tolist()
            raise ValueError(f"class(es) {empty} received no samples")
        n = counts.to(f64)
        means = sums / n.unsqueeze(1)
        Q = mean_basis(means)
        q, dev = Q.shape[1], means.device
        W = None if self.classifier is None else _check_classifier(self.classifier, K, means.shape[1]).to(dev)
        self.state = _SecondPass(n, means, means.to(self.work), Q, W, Q if W is None else torch.cat([Q, W.T], dim=1),
                                 torch.zeros(K, q, q, dtype=f64, device=dev), torch.zeros(K, dtype=f64, device=dev),
                                 torch.zeros(K, dtype=torch.long, device=dev))
        return self.state

    def second(self, Z: ArrayLike, y: ArrayLike) -> TwoPassClassStats:
        """Pass 2 on one batch: the shifted projections (and the cosines with the classifier, if given)."""
        st = self._second_pass()
        K, f64, q = self.num_classes, torch.float64, st.Q.shape[1]
        Z, y = check_batch(Z, y, K, st.means.shape[1])
        Z, y = Z.to(device=st.means.device, dtype=self.work), y.to(st.means.device)
        cc, G, batch_scatter = shifted_moments(Z, y, st.a, st.R, q)
        P = G[:, :q]
        st.scatter += batch_scatter
        st.cc_sum.index_add_(0, y, cc)
        st.seen += torch.bincount(y, minlength=K)
        if st.W is not None:
            a64, W, Q = st.a.to(f64), st.W, st.Q
            zw = G[:, q:q + K].gather(1, y.unsqueeze(1)).squeeze(1) + (a64 * W).sum(1)[y]
            zz = (cc + 2 * (P * (a64 @ Q)[y]).sum(1) + (a64 * a64).sum(1)[y]).clamp(min=0)
            denom = zz.sqrt() * torch.linalg.vector_norm(W, dim=1)[y]
            if bool((denom == 0).any()):
                raise ValueError("a feature vector or a classifier row is zero, so its cosine is undefined")
            st.cos_sum += float((zw / denom).sum())
        return self

    def finalize(self) -> ClassStats:
        """The statistics; the second pass must have seen exactly the samples of the first."""
        st = self._second_pass()
        if self.counts is None or not torch.equal(st.seen, self.counts):
            raise ValueError("the batches changed between the two passes: pass a re-iterable source (a list or a "
                             "DataLoader without shuffling), not a one-shot iterator")
        m = st.means - st.a.to(torch.float64)
        mq = m @ st.Q
        trace = (st.cc_sum - st.n * (m * m).sum(1)).clamp(min=0)
        scatter_q = st.scatter - st.n[:, None, None] * mq.unsqueeze(2) * mq.unsqueeze(1)
        return ClassStats(self.counts, st.means, st.Q, scatter_q, trace, None if st.W is None else st.cos_sum)


def streamed_class_stats(batches: Iterable[tuple[ArrayLike, ArrayLike]], num_classes: int,
                         classifier: ArrayLike | None = None) -> ClassStats:
    """:class:`ClassStats` of data that comes in batches, in two passes over a re-iterable ``batches`` (a list, a
    DataLoader; :class:`TwoPassClassStats`). Memory is K d plus one batch; the cost is that of :func:`class_stats`
    (two reads of the data), far below a d x d Gram. Per-class NC1 is available (``scatter_q`` per class). For a
    stream that can be read only once, or shards to be merged, use :class:`StreamingClassStats`."""
    acc = TwoPassClassStats(num_classes, classifier)
    for Z, y in batches:
        acc.first(Z, y)
    for Z, y in batches:
        acc.second(Z, y)
    return acc.finalize()


FLUSH_BATCHES = 16
"""StreamingClassStats keeps the shifted rows of up to this many batches (in a buffer it reuses) and then takes one
product per class over all of them: a product with 16 times the rows runs nearer the machine's peak, and the float64
additions (K d^2 / 2 each) cost a sixteenth (16 against 8: 1.12x against 1.06x the peer's speed, benchmarks/README.md).
The rows kept are at most this many batches of features, and one class's of them gathered at a flush as many again."""


FLUSH_CHUNK_BYTES = 1 << 23
"""StreamingClassStats adds a class's product to its float64 scatter a block of rows at a time, each block at most this
many bytes in float64 (8 MiB), so that no d x d temporary is made."""

SYMMETRIC_ROWS = 64
"""StreamingClassStats takes a class's product B^T B a band of at most this many rows at a time, from the diagonal
rightwards only, and mirrors the band to the lower triangle: about half the arithmetic of the full product (measured
0.63 of its CPU time at d = 512, 800 rows; benchmarks/README.md)."""


def band_rows(dim: int) -> int:
    """Rows of a band of StreamingClassStats' products: at most SYMMETRIC_ROWS, and at most FLUSH_CHUNK_BYTES in
    float64 for ``dim`` columns."""
    return min(dim, SYMMETRIC_ROWS, max(1, FLUSH_CHUNK_BYTES // (8 * dim)))


class StreamingClassStats:
    """Class statistics accumulated over batches (``update``) or shards (``merge``); ``finalize()`` -> ClassStats.

    Per class it keeps the count and, about a fixed shift a_c (the class's mean in the first batch that holds it),
    the sum of z - a_c and the scatter sum (z - a_c)(z - a_c)^T, so memory is ``K d^2`` float64 numbers (21 MB for
    K=10, d=512). A batch's products are taken in its own precision (float32 input: float32 products of the shifted
    features, which are small where the classes are tight, one product per class over FLUSH_BATCHES batches) and
    added in float64; the
    scatter about the mean is sum - n (m - a)(m - a)^T at the end. Shards with different shifts merge exactly
    (the scatter moved to the other shift). If a classifier ``W`` (K x d) is given, the sum of cosines for
    :func:`nc3_cosine` is accumulated too.
    """

    def __init__(self, num_classes: int, dim: int, device: torch.device | str = "cpu",
                 classifier: ArrayLike | None = None):
        if num_classes < 2:
            raise ValueError(f"neural-collapse metrics need at least 2 classes, got num_classes={num_classes}")
        self.num_classes, self.dim, self.device = num_classes, dim, torch.device(device)
        self.counts = torch.zeros(num_classes, dtype=torch.long, device=self.device)
        self.shift = torch.zeros(num_classes, dim, dtype=torch.float64, device=self.device)
        self.sums = torch.zeros(num_classes, dim, dtype=torch.float64, device=self.device)
        self.scatter = torch.zeros(num_classes, dim, dim, dtype=torch.float64, device=self.device)
        self._rows: list[list[torch.Tensor]] = [[] for _ in range(num_classes)]   # shifted rows not yet in scatter
        self._pending_batches = 0
        self._stage: torch.Tensor | None = None     # the rows of the batches since the last flush, by class per batch
        self._gather: torch.Tensor | None = None    # one class's rows of those batches, together
        self._filled = 0
        self._mirrored = True                       # the scatters' lower triangles are up to date
        self.classifier = None if classifier is None else _check_classifier(classifier, num_classes, dim)
        self.cos_sum = torch.zeros((), dtype=torch.float64, device=self.device)

    def update(self, features: ArrayLike, labels: ArrayLike) -> StreamingClassStats:
        """Add a batch (classes may be missing from a batch, but labels must be < num_classes)."""
        Z, y = check_batch(features, labels, self.num_classes, self.dim)
        if y.numel() == 0:
            return self
        y, Z = y.to(self.device), Z.to(self.device)
        work = torch.float64 if Z.dtype == torch.float64 else torch.float32
        counts = torch.bincount(y, minlength=self.num_classes)
        fresh = (self.counts == 0) & (counts > 0)
        if bool(fresh.any()):                              # first samples of a class: its shift is their mean, in
            sums = torch.zeros_like(self.sums).index_add_(0, y, Z.to(torch.float64))  # the batch's precision
            self.shift[fresh] = (sums / counts.clamp(min=1).unsqueeze(1))[fresh].to(work).to(torch.float64)
        order = torch.argsort(y, stable=True)
        D = self._staged(Z.shape[0], work)
        torch.index_select(Z.to(work), 0, order, out=D)   # into a buffer kept between flushes: no fresh pages
        shift = self.shift.to(work)
        for c, block in zip(range(self.num_classes), torch.split(D, counts.tolist())):
            if block.shape[0]:
                block.sub_(shift[c])                        # the shift is representable: one rounding
                self.sums[c] += block.sum(0).to(torch.float64)
                self._rows[c].append(block)
        self._pending_batches += 1
        if self._pending_batches >= FLUSH_BATCHES:
            self._flush()
        if self.classifier is not None:
            self.cos_sum += _cosines(Z, y, self.classifier).sum()
        self.counts += counts
        return self

    def _staged(self, rows: int, dtype: torch.dtype) -> torch.Tensor:
        """Room for a batch of ``rows`` rows in the staging buffer (flushing first where it is full or of another
        precision; it holds FLUSH_BATCHES batches of the largest size seen)."""
        old = self._stage
        if old is None or old.dtype != dtype or self._filled + rows > old.shape[0]:
            self._flush()
            if old is None or old.dtype != dtype or rows > old.shape[0] // FLUSH_BATCHES:
                size = FLUSH_BATCHES * max(rows, 0 if old is None else old.shape[0] // FLUSH_BATCHES)
                del old
                self._stage = self._gather = None           # free the old ones before the new is made
                self._stage = torch.empty(size, self.dim, dtype=dtype, device=self.device)
        self._filled += rows
        assert self._stage is not None
        return self._stage[self._filled - rows:self._filled]

    def _flush(self) -> None:
        """Add the scatter of the rows kept since the last flush, one product per class in their precision, to the
        float64 scatter: its upper triangle, a band of SYMMETRIC_ROWS rows at a time (:meth:`_mirror` fills the
        lower)."""
        step = band_rows(self.dim)
        for c, rows in enumerate(self._rows):
            if rows:
                B = rows[0] if len(rows) == 1 else torch.cat(rows, out=self._gathered(sum(len(r) for r in rows)))
                rows.clear()
                S = self.scatter[c]
                for i in range(0, self.dim, step):          # a band of rows, from the diagonal rightwards
                    band = S[i:i + step, i:]
                    if B.dtype == torch.float64:
                        band.addmm_(B[:, i:i + step].T, B[:, i:])
                    else:
                        band.add_(B[:, i:i + step].T @ B[:, i:])
                self._mirrored = False
        self._pending_batches = self._filled = 0

    def _gathered(self, rows: int) -> torch.Tensor:
        """A buffer of ``rows`` rows for one class's rows of the staged batches, kept between flushes."""
        assert self._stage is not None
        if self._gather is None or self._gather.shape[0] < rows:
            self._gather = None
            self._gather = torch.empty(rows, self.dim, dtype=self._stage.dtype, device=self.device)
        return self._gather[:rows]

    def _mirror(self) -> None:
        """Copy each scatter's upper triangle (what :meth:`_flush` adds to) to its lower, band by band."""
        if not self._mirrored:
            step = band_rows(self.dim)
            for S in self.scatter:
                for i in range(0, self.dim, step):
                    S[i + step:, i:i + step] = S[i:i + step, i + step:].T
            self._mirrored = True

    def merge(self, other: StreamingClassStats) -> StreamingClassStats:
        """Combine with statistics accumulated elsewhere (another shard, process or device)."""
        if (other.num_classes, other.dim) != (self.num_classes, self.dim):
            raise ValueError(f"cannot merge stats of shape (K={other.num_classes}, d={other.dim}) into "
                             f"(K={self.num_classes}, d={self.dim})")
        for acc in (self, other):
            acc._flush()
            acc._mirror()
        shift, sums = other.shift.to(self.device), other.sums.to(self.device)
        fresh = self.counts == 0
        self.shift[fresh] = shift[fresh]
        delta = shift - self.shift                          # other's scatter about its shift b, moved to ours a
        n = other.counts.to(device=self.device, dtype=torch.float64)
        for c, n_c in enumerate(n.tolist()):                # class by class: no K d x d temporary
            self.scatter[c] += other.scatter[c].to(self.device)
            self.scatter[c].addr_(sums[c], delta[c]).addr_(delta[c], sums[c]).addr_(delta[c], delta[c], alpha=n_c)
        self.sums += sums + n[:, None] * delta
        self.counts += other.counts.to(self.device)
        self.cos_sum += other.cos_sum.to(self.device)
        return self

    def finalize(self) -> ClassStats:
        """Project onto the span of the class means and return :class:`ClassStats`."""
        if bool((self.counts == 0).any()):
            empty = torch.nonzero(self.counts == 0).flatten().tolist()
            raise ValueError(f"class(es) {empty} received no samples")
        self._flush()
        self._mirror()
        n = self.counts.to(torch.float64).unsqueeze(1)
        offset = self.sums / n                              # m_c - a_c
        means = self.shift + offset
        Q = mean_basis(means)
        # the scatter about the mean, S_c - n_c o_c o_c^T (o_c = m_c - a_c), only ever projected: no d x d temporary
        offset_q = offset @ Q
        scatter_q = (Q.T.unsqueeze(0) @ self.scatter @ Q.unsqueeze(0)
                     - n.unsqueeze(2) * offset_q.unsqueeze(2) * offset_q.unsqueeze(1))
        trace = torch.diagonal(self.scatter, dim1=1, dim2=2).sum(1) - n[:, 0] * (offset**2).sum(1)
        return ClassStats(self.counts.clone(), means, Q, scatter_q, trace)

    def nc3_cosine(self) -> float:
        """Streaming value of :func:`nc3_cosine` (needs ``classifier`` at construction)."""
        if self.classifier is None:
            raise ValueError("construct StreamingClassStats with classifier=W to accumulate NC3 cosines")
        return float(self.cos_sum / self.counts.sum())


def refuse_featureless(features: ClassStats | ArrayLike) -> None:
    """Refuse features with no dimensions, shape (N, 0), in one line (every NC metric needs at least one; without
    this, "all class means coincide"). A refusal: ``codehash.REFUSALS``."""
    if not isinstance(features, ClassStats) and (len(shape := tuple(np.shape(features) if not hasattr(
            features, "shape") else features.shape)) == 2 and shape[1] == 0):
        raise ValueError(f"the features have no dimensions (shape {shape}): the NC metrics need at least one")


def _stats(stats_or_features: ClassStats | ArrayLike, labels: ArrayLike | None) -> ClassStats:
    refuse_featureless(stats_or_features)
    if isinstance(stats_or_features, ClassStats):
        if labels is not None:
            raise TypeError("pass either ClassStats or (features, labels), not both")
        return stats_or_features
    if labels is None:
        raise TypeError("labels are required when features (not ClassStats) are passed")
    return class_stats(stats_or_features, labels)


def _centred_means_q(s: ClassStats, kind: GlobalMean) -> torch.Tensor:
    """Centred class means in the basis Q, as a (q, K) matrix ``Q^T (M - mu_G 1^T)``."""
    return s.basis.T @ (s.means - global_mean(s.means, s.counts, kind)).T


def _between_pinv_q(s: ClassStats, kind: GlobalMean, rcond: float = PINV_RCOND) -> torch.Tensor:
    """``Q^T Sigma_B^+ Q`` (q x q) from the eigen-decomposition of Sigma_B restricted to span(Q)."""
    B = _centred_means_q(s, kind)
    evals, evecs = torch.linalg.eigh(B @ B.T / s.num_classes)
    keep = evals > rcond * evals.max().clamp(min=torch.finfo(torch.float64).tiny)
    if not bool(keep.any()):
        raise ValueError("all class means coincide (Sigma_B = 0): between-class variability is zero, "
                         "so NC1 is undefined")
    V = evecs[:, keep]
    return V @ torch.diag(1.0 / evals[keep]) @ V.T


# ----------------------------------------------------------------------------------------------------------------
# NC1


def nc1_trace_ratio(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
                    global_mean: GlobalMean = "samples") -> float:
    """NC1 = tr(Sigma_W) / tr(Sigma_B)  (Jacot et al. Sec. 3; Tirer et al. eq. (3), "gNC1")."""
    s = _stats(features, labels)
    tr_w = s.scatter_trace.sum() / s.num_samples
    tr_b = (_centred_means_q(s, global_mean) ** 2).sum() / s.num_classes
    if float(tr_b) == 0.0:
        raise ValueError("all class means coincide (tr Sigma_B = 0), so NC1 is undefined")
    return float(tr_w / tr_b)


def nc1_pinv(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
             global_mean: GlobalMean = "samples") -> float:
    """NC1 = (1/K) tr(Sigma_W Sigma_B^+)  (Papyan et al. 2020; Tirer et al. Sec. 6), in the span of the means: 0 also
    when the within-class spread is orthogonal to that span (ranges of Sigma_W and Sigma_B orthogonal)."""
    s = _stats(features, labels)
    Sw_q = s.scatter_q.sum(0) / s.num_samples
    value = float((Sw_q * _between_pinv_q(s, global_mean)).sum() / s.num_classes)
    return max(value, 0.0)  # tr of a product of PSD matrices: only rounding can make it negative


def nc1_per_class(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
                  global_mean: GlobalMean = "samples") -> np.ndarray:
    """Per-class NC1^(k) = (1/K) tr(Sigma_W^(k) Sigma_B^+), Sigma_W^(k) = (1/n_k) S_k (Tirer et al. App. E.2).

    The overall metric is their sample-weighted mean: nc1_pinv = sum_k (n_k / N) NC1^(k).
    """
    s = _stats(features, labels)
    Bp = _between_pinv_q(s, global_mean)
    per = (s.scatter_q * Bp.unsqueeze(0)).sum((1, 2)) / s.counts.to(torch.float64) / s.num_classes
    return per.cpu().numpy()


# ----------------------------------------------------------------------------------------------------------------
# NC2


def class_mean_cosines(features: ArrayLike, labels: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    """K x K cosines between the (uncentred) class means, Jacot et al. Fig. 1 (bottom): I when NC2 holds with
    orthogonal means, the normalised simplex ETF Gram when the centred ones form one."""
    M = class_means(features, labels, num_classes).to(torch.float64)
    norms = torch.linalg.vector_norm(M, dim=1, keepdim=True)
    if bool((norms == 0).any()):
        raise ValueError("a class mean is zero, so its cosines are undefined")
    M = M / norms
    return (M @ M.T).cpu().numpy()



def cosine_bound(kappa: ArrayLike) -> np.ndarray:
    """Wielandt's inequality: the columns of a matrix of condition number κ have every pairwise cosine at most
    (κ² - 1)/(κ² + 1) in absolute value (Horn & Johnson, Thm 7.4.34), so NC2 = κ -> 1 (Jacot et al.) bounds the
    class means' Gram matrix of cosines towards the identity; NaN stays NaN, κ = inf gives 1."""
    k2 = np.asarray(kappa, dtype=np.float64) ** 2
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(k2), 1.0, (k2 - 1) / (k2 + 1))


def simplex_etf_gram(num_classes: int) -> torch.Tensor:
    """Gram matrix of the simplex ETF normalised to unit Frobenius norm: (I - 11^T/K) / sqrt(K-1)."""
    if num_classes < 2:
        raise ValueError(f"a simplex ETF needs at least 2 classes, got {num_classes}")
    K = num_classes
    return (torch.eye(K, dtype=torch.float64) - 1.0 / K) / (K - 1) ** 0.5


def _normalised_gram_distance(G: torch.Tensor, target: torch.Tensor) -> float:
    norm = torch.linalg.matrix_norm(G)
    if float(norm) == 0.0:
        raise ValueError("the matrix compared with the target frame is zero (all class means coincide?)")
    return float(torch.linalg.matrix_norm(G / norm - target.to(G)))


def nc2_condition_number(features: ClassStats | ArrayLike, labels: ArrayLike | None = None) -> float:
    """NC2 = kappa(Zbar) = s_max / s_K of the d x K matrix of (uncentred) class means (Jacot et al. Sec. 3)."""
    s = _stats(features, labels)
    _check_dims(s.dim, s.num_classes, "nc2_condition_number (K class means must be linearly independent)")
    sv = torch.linalg.svdvals(s.basis.T @ s.means.T)
    return float(sv[0] / sv[-1]) if float(sv[-1]) > 0 else float("inf")


def nc2_etf_distance(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
                     global_mean: GlobalMean = "samples") -> float:
    """NC2 = || Mc^T Mc / ||Mc^T Mc||_F - (I - 11^T/K)/sqrt(K-1) ||_F, Mc the centred means (Tirer et al. Sec. 6);
    ``global_mean``: the centring (module docstring; "class_means" for unbalanced classes)."""
    s = _stats(features, labels)
    _check_dims(s.dim, s.num_classes - 1, "nc2_etf_distance (a simplex ETF of K vectors spans K-1 dimensions)")
    B = _centred_means_q(s, global_mean)
    return _normalised_gram_distance(B.T @ B, simplex_etf_gram(s.num_classes))


def nc2_orthogonal_frame_distance(features: ClassStats | ArrayLike, labels: ArrayLike | None = None) -> float:
    """|| M^T M / ||M^T M||_F - I/sqrt(K) ||_F for the uncentred means M (the orthogonal frame of Tirer et al.'s Thm
    2.2)."""
    s = _stats(features, labels)
    _check_dims(s.dim, s.num_classes, "nc2_orthogonal_frame_distance (K orthogonal vectors need K dimensions)")
    Mq = s.basis.T @ s.means.T
    K = s.num_classes
    return _normalised_gram_distance(Mq.T @ Mq, torch.eye(K, dtype=torch.float64) / K ** 0.5)


# ----------------------------------------------------------------------------------------------------------------
# NC3


def _check_classifier(W: ArrayLike, num_classes: int, dim: int) -> torch.Tensor:
    W = _as_tensor(W, "W")
    if W.shape != (num_classes, dim):
        raise ValueError(f"classifier W must have shape (K, d) = ({num_classes}, {dim}), got {tuple(W.shape)}")
    if not bool(torch.isfinite(W).all()):
        raise ValueError("classifier W contains NaN or inf")
    return W.to(torch.float64)


def _cosines(Z: torch.Tensor, y: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    W = W.to(Z.device)
    dots = (Z * W[y]).sum(1)
    denom = Z.norm(dim=1) * W.norm(dim=1)[y]
    if bool((denom == 0).any()):
        raise ValueError("a feature vector or a classifier row is zero, so its cosine is undefined")
    return dots / denom


def nc3_cosine(features: ArrayLike | ClassStats, labels: ArrayLike | None = None, W: ArrayLike | None = None) -> float:
    """NC3 = (1/N) sum_{c,i} cos(z_ci, W_c:)  (Jacot et al. Sec. 3; 1 at perfect alignment).

    Pass features, labels and W, or ClassStats gathered with ``class_stats(..., classifier=W)``.
    """
    if isinstance(features, ClassStats):
        if features.cos_sum is None:
            raise ValueError("these ClassStats were gathered without a classifier: use class_stats(..., classifier=W)")
        return features.cos_sum / features.num_samples
    if labels is None or W is None:
        raise TypeError("nc3_cosine needs features, labels and the classifier W")
    W = _as_tensor(W, "W")
    return nc3_cosine(class_stats(features, labels, W.shape[0] if W.ndim == 2 else None, classifier=W))


def nc3_class_mean_cosine(features: ClassStats | ArrayLike, W: ArrayLike, labels: ArrayLike | None = None) -> float:
    """NC3 = (1/K) sum_c cos(mu_c, W_c:), class means against classifier rows (Jacot et al. Sec. 6)."""
    s = _stats(features, labels)
    W = _check_classifier(W, s.num_classes, s.dim).to(s.means.device)
    return float(_cosines(s.means, torch.arange(s.num_classes, device=s.means.device), W).mean())


def nc3_etf_distance(features: ClassStats | ArrayLike, W: ArrayLike, labels: ArrayLike | None = None,
                     global_mean: GlobalMean = "samples") -> float:
    """NC3 = || W Mc / ||W Mc||_F - (I - 11^T/K)/sqrt(K-1) ||_F, Mc the centred means (Tirer et al. App. E.2)."""
    s = _stats(features, labels)
    W = _check_classifier(W, s.num_classes, s.dim).to(s.means.device)
    _check_dims(s.dim, s.num_classes - 1, "nc3_etf_distance")
    WM = (W @ s.basis) @ _centred_means_q(s, global_mean)
    return _normalised_gram_distance(WM, simplex_etf_gram(s.num_classes))


# ----------------------------------------------------------------------------------------------------------------
# weights and non-linearity (Jacot et al. Sec. 6)


LANCZOS_MIN_DIM = 256
"""From this size on, operator norms come from Lanczos iterations (a few dozen products with the matrix) instead of a
dense eigen- or singular-value decomposition, whose cubic cost dominates from about here on (on 2 cores: 50 ms
against 64 ms at 256, 0.35 s against 13 s for a balancedness at 1024)."""


def _symmetricoperator_norm(matvec: Callable[[torch.Tensor], torch.Tensor], n: int, like: torch.Tensor) -> float | None:
    """max |eigenvalue| of the symmetric n x n operator ``matvec`` (applied to n x 1 tensors like ``like``): ARPACK's
    Lanczos iteration to machine precision from a seeded random start vector; None if it does not converge."""
    def mv(v: np.ndarray) -> np.ndarray:
        return matvec(torch.as_tensor(v.reshape(n, 1), dtype=like.dtype, device=like.device)).cpu().numpy()

    v0 = np.random.default_rng(0).standard_normal(n)
    try:
        top = eigsh(LinearOperator((n, n), matvec=mv, dtype=np.float64), k=1, which="LM", v0=v0, tol=0,
                    return_eigenvectors=False)
    except (ArpackError, ArpackNoConvergence):
        return None
    return float(abs(top[0]))


def operator_norm(A: torch.Tensor) -> torch.Tensor:
    """Largest singular value. From LANCZOS_MIN_DIM on, the square root of the top eigenvalue of the smaller Gram
    operator v -> A^T (A v) (or A (A^T v)), by Lanczos; below, the SVD, or for a tall or wide matrix the eigenvalues of
    the small Gram matrix, which is many times cheaper than the SVD of A and as accurate for the top value. A matrix
    with a NaN entry has no norm: ValueError, as every metric raises for undefined input."""
    if A.ndim != 2:
        raise ValueError(f"operator_norm needs a matrix, got shape {tuple(A.shape)}")
    if bool(torch.isnan(A).any()):
        raise ValueError(f"the {A.shape[0]} x {A.shape[1]} matrix has NaN entries, so it has no operator norm")
    m, n = A.shape
    if min(m, n) >= LANCZOS_MIN_DIM:
        gram = (lambda v: A.T @ (A @ v)) if m >= n else (lambda v: A @ (A.T @ v))
        top = _symmetricoperator_norm(gram, min(m, n), A)
        if top is not None:
            return torch.tensor(top, dtype=A.dtype).sqrt()
    if max(m, n) < 2 * min(m, n):
        return torch.linalg.matrix_norm(A, ord=2)
    G = A.T @ A if m > n else A @ A.T
    return torch.linalg.eigvalsh(G)[-1].clamp_min(0).sqrt()


def _gram_difference_norm(A: torch.Tensor, B: torch.Tensor) -> float:
    """||A^T A - B B^T||_op; from LANCZOS_MIN_DIM on by Lanczos on v -> A^T (A v) - B (B^T v), four matrix-vector
    products per step and no d x d matrix formed."""
    d = A.shape[1]
    if d >= LANCZOS_MIN_DIM:
        top = _symmetricoperator_norm(lambda v: A.T @ (A @ v) - B @ (B.T @ v), d, A)
        if top is not None:
            return top
    return float(torch.linalg.matrix_norm(A.T @ A - B @ B.T, ord=2))


def balancedness(W_next: ArrayLike, W: ArrayLike) -> float:
    """||W_{l+1}^T W_{l+1} - W_l W_l^T||_op / min(||W_{l+1}^T W_{l+1}||_op, ||W_l W_l^T||_op)  (Jacot et al. Sec. 6).

    ``W`` is W_l (d_l x d_{l-1}) and ``W_next`` is W_{l+1} (d_{l+1} x d_l); 0 means exactly balanced. From
    d_l = LANCZOS_MIN_DIM on no d_l x d_l matrix is formed: the Grams' norms are the weights' squared norms,
    ||W^T W||_op = ||W||_op^2, and every norm is a Lanczos iteration of matrix-vector products, so a record costs a
    few products at the papers' widths.
    """
    A = _as_tensor(W_next, "W_next").to(torch.float64)
    B = _as_tensor(W, "W").to(A.device, torch.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"W_next (d_(l+1) x d_l) and W (d_l x d_(l-1)) must chain: got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    if A.shape[1] < LANCZOS_MIN_DIM:
        G_next, G = A.T @ A, B @ B.T
        denom = float(torch.minimum(operator_norm(G_next), operator_norm(G)))
    else:
        denom = float(torch.minimum(operator_norm(A), operator_norm(B))) ** 2
    if denom == 0.0:
        raise ValueError("a weight matrix is zero, so balancedness is undefined")
    if A.shape[1] < LANCZOS_MIN_DIM:
        return float(operator_norm(G_next - G)) / denom
    return _gram_difference_norm(A, B) / denom


def negativity(preactivations: ArrayLike) -> float:
    """||Z - relu(Z)||_op / ||Z||_op: how much of Z the ReLU removes (Jacot et al. Sec. 6; 0 = linear)."""
    Z = _as_tensor(preactivations, "preactivations").to(torch.float64)
    if Z.ndim != 2:
        raise ValueError(f"preactivations must be 2-D, got shape {tuple(Z.shape)}")
    norm = operator_norm(Z)
    if float(norm) == 0.0:
        raise ValueError("preactivations are all zero, so negativity is undefined")
    return float(operator_norm(Z - torch.relu(Z)) / norm)


# ----------------------------------------------------------------------------------------------------------------
# the peers' metrics: CDNV, Papyan et al.'s NC2 statistics, coherence, NC4 (one-shot, or from streamed ClassStats)


def _pairs(K: int) -> tuple[torch.Tensor, torch.Tensor]:
    return tuple(torch.triu_indices(K, K, 1))


def _centred_mean_cosines(s: ClassStats, kind: GlobalMean) -> torch.Tensor:
    """cos(mu_c - mu_G, mu_c' - mu_G) over the pairs c < c' (K(K-1)/2 values)."""
    C = s.means - global_mean(s.means, s.counts, kind)
    norms = torch.linalg.vector_norm(C, dim=1)
    if bool((norms == 0).any()):
        raise ValueError("a centred class mean is zero, so its angles are undefined")
    i, j = _pairs(s.num_classes)
    return (C[i] * C[j]).sum(1) / (norms[i] * norms[j])


def cdnv(features: ClassStats | ArrayLike, labels: ArrayLike | None = None) -> float:
    """Class-distance normalised variance (Galanti, György & Hutter 2022, Def. 1), averaged over the pairs c < c':
    (Var_c + Var_c') / (2 ||mu_c - mu_c'||^2), with Var_c = (1/n_c) sum_i ||z_ci - mu_c||^2; 0 under NC1."""
    s = _stats(features, labels)
    var = s.scatter_trace / s.counts.to(torch.float64)
    i, j = _pairs(s.num_classes)
    dist2 = (s.means[i] - s.means[j]).pow(2).sum(1)
    if bool((dist2 == 0).any()):
        raise ValueError("two class means coincide, so their CDNV is infinite")
    return float(((var[i] + var[j]) / (2 * dist2)).mean())


def equinorm(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
             global_mean: GlobalMean = "samples") -> float:
    """Coefficient of variation std / mean of the norms ||mu_c - mu_G|| (Papyan, Han & Donoho 2020, Fig. 2; std
    with K - 1 in the denominator, as their code's torch.std): 0 when the centred means have equal norms (NC2).
    ``global_mean``: the centring (module docstring; "class_means" for unbalanced classes)."""
    s = _stats(features, labels)
    n = torch.linalg.vector_norm(s.means - _global(s, global_mean), dim=1)
    return float(n.std() / n.mean())


def classifier_equinorm(W: ArrayLike) -> float:
    """Coefficient of variation std / mean of the row norms ||W_c:|| of a classifier (Papyan et al. 2020, Fig. 2)."""
    W = _as_tensor(W, "W").to(torch.float64)
    if W.ndim != 2 or W.shape[0] < 2:
        raise ValueError(f"classifier W must be K x d with K >= 2, got shape {tuple(W.shape)}")
    n = torch.linalg.vector_norm(W, dim=1)
    return float(n.std() / n.mean())


def equiangularity(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
                   global_mean: GlobalMean = "samples") -> float:
    """Standard deviation (K(K-1)/2 - 1 in the denominator) of the cosines between centred class means over the
    pairs c < c' (Papyan et al. 2020, Fig. 3): 0 when the means are equiangular. rhubarbwu/neural-collapse's
    ``kernel_stats`` reports a variance instead, over the P = K(K-1)/2 pairs (the population one), of a kernel of the
    normalised centred means, by default their distance sqrt(2 - 2 cos), not their cosine: with the inner product as
    its kernel it is (P-1)/P times the square of this. Needs K >= 3 (one pair has no spread). ``global_mean``: the
    centring (module docstring; "class_means" for unbalanced classes)."""
    s = _stats(features, labels)
    if s.num_classes < 3:
        raise ValueError(f"equiangularity needs K >= 3 classes (the cosine of one pair has no spread), "
                         f"got K={s.num_classes}")
    return float(_centred_mean_cosines(s, global_mean).std())


def max_angle_deviation(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
                        global_mean: GlobalMean = "samples") -> float:
    """Mean over the pairs c < c' of ``|cos(mu_c - mu_G, mu_c' - mu_G) + 1/(K-1)|`` (Papyan et al. 2020, Fig. 4):
    0 when the centred means are as far apart as K vectors can be, the simplex ETF's cosine -1/(K-1).
    ``global_mean``: the centring (module docstring; "class_means" for unbalanced classes)."""
    s = _stats(features, labels)
    return float((_centred_mean_cosines(s, global_mean) + 1 / (s.num_classes - 1)).abs().mean())


def coherence(features: ClassStats | ArrayLike, labels: ArrayLike | None = None,
              global_mean: GlobalMean = "samples") -> float:
    """Coherence of the centred class means, max over c != c' of ``|cos(mu_c - mu_G, mu_c' - mu_G)|``: at least
    1/(K-1) for K vectors spanning at most K - 1 dimensions (Welch 1974; Strohmer & Heath 2003), with equality
    exactly when their directions form an equiangular tight frame, a simplex ETF's; their norms may still differ:
    centred at the samples' mean with unbalanced classes, means of norms proportional to 1/n_c along a simplex's
    directions reach it. Centred at the mean of the class means (``global_mean="class_means"``, any class sizes) or at
    the samples' mean with balanced classes, equality holds exactly at a simplex ETF of the means.
    ``global_mean``: the centring (module docstring; "class_means" for unbalanced classes)."""
    return float(_centred_mean_cosines(_stats(features, labels), global_mean).abs().max())


def _global(s: ClassStats, kind: GlobalMean) -> torch.Tensor:
    return global_mean(s.means, s.counts, kind)


def ncc_predictions(features: ArrayLike, means: ArrayLike) -> torch.Tensor:
    """The nearest-class-mean rule argmin_c ||z - mu_c|| for every row of ``features``, by one product in their
    precision (float32 for float32 features)."""
    Z, M = _as_tensor(features, "features"), _as_tensor(means, "means").to(torch.float64)
    if Z.ndim != 2 or M.ndim != 2 or Z.shape[1] != M.shape[1]:
        raise ValueError(f"features (N, d) and means (K, d) must share d, got {tuple(Z.shape)} and {tuple(M.shape)}")
    if not bool(torch.isfinite(M).all()):
        raise ValueError("means contain NaN or inf")
    work = torch.float64 if Z.dtype == torch.float64 else torch.float32
    M = M.to(Z.device)
    # ||z - mu_c||^2 = ||z||^2 - 2 z.mu_c + ||mu_c||^2: one (N x K) product in the features' precision; a sample
    # equidistant from two means to within that rounding may go to either
    scores = M.pow(2).sum(1).to(work) - 2 * (Z.to(work) @ M.to(work).T)
    if not bool(torch.isfinite(scores).all()):        # a NaN or inf feature makes its row's scores non-finite
        raise ValueError("features contain NaN or inf")
    return scores.argmin(1)


def nc4_ncc_agreement(features: ArrayLike, predictions: ArrayLike, means: ArrayLike) -> float:
    """NC4 (Papyan et al. 2020, Fig. 7): the fraction of samples on which the network's decision equals the
    nearest-class-mean rule's, with ``means`` from the training features (``class_means`` or ``ClassStats.means``),
    on training or held-out ``features``; Papyan et al. plot the mismatch, 1 minus this."""
    p = _as_tensor(predictions, "predictions").flatten()
    ncc = ncc_predictions(features, means)
    if p.shape[0] != ncc.shape[0]:
        raise ValueError(f"{p.shape[0]} predictions for {ncc.shape[0]} feature rows")
    if ncc.numel() == 0:
        raise ValueError("no samples: NC4 is undefined")
    return float((ncc == p.to(ncc.device)).double().mean())


class StreamingNCCAgreement:
    """:func:`nc4_ncc_agreement` over batches, for means fixed beforehand (e.g. the training set's, from a first
    streamed pass): ``update(features, predictions)`` per batch, ``value()`` at the end."""

    def __init__(self, means: ArrayLike):
        self.means = _as_tensor(means, "means").to(torch.float64)
        self.agree, self.total = 0, 0

    def update(self, features: ArrayLike, predictions: ArrayLike) -> StreamingNCCAgreement:
        p = _as_tensor(predictions, "predictions").flatten()
        ncc = ncc_predictions(features, self.means)
        if p.shape[0] != ncc.shape[0]:
            raise ValueError(f"{p.shape[0]} predictions for {ncc.shape[0]} feature rows")
        self.agree += int((ncc == p.to(ncc.device)).sum())
        self.total += int(ncc.numel())
        return self

    def value(self) -> float:
        if self.total == 0:
            raise ValueError("no samples were added: NC4 is undefined")
        return self.agree / self.total


# ----------------------------------------------------------------------------------------------------------------
# everything at once


def _on_host(s: ClassStats) -> ClassStats:
    """The same statistics in host memory (one copy of each of its K d-sized tensors)."""
    return ClassStats(s.counts.cpu(), s.means.cpu(), s.basis.cpu(), s.scatter_q.cpu(), s.scatter_trace.cpu(), s.cos_sum)


def nc_metrics(features: ArrayLike, labels: ArrayLike, W: ArrayLike | None = None,
               num_classes: int | None = None, global_mean: GlobalMean = "samples") -> dict[str, float]:
    """All class-mean based metrics of one feature matrix (and NC3 if the next layer's classifier W is given). The
    pass over the features runs where they are; the metrics then read only the K d statistics, brought to the host
    once (on a GPU each small operation would be a launch and each number a wait)."""
    s = _on_host(class_stats(features, labels, num_classes, classifier=W))
    W = None if W is None else _as_tensor(W, "W").cpu()
    out = {
        "nc1_trace_ratio": nc1_trace_ratio(s, global_mean=global_mean),
        "nc1_pinv": nc1_pinv(s, global_mean=global_mean),
        "nc2_etf_distance": nc2_etf_distance(s, global_mean=global_mean),
    }
    if s.dim >= s.num_classes:
        out["nc2_condition_number"] = nc2_condition_number(s)
        out["nc2_orthogonal_frame_distance"] = nc2_orthogonal_frame_distance(s)
    if W is not None:
        out["nc3_cosine"] = nc3_cosine(s)
        out["nc3_class_mean_cosine"] = nc3_class_mean_cosine(s, W)
        out["nc3_etf_distance"] = nc3_etf_distance(s, W, global_mean=global_mean)
    return out
