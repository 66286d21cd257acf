"""Naive float64 numpy implementations of each metric, written straight from its formula (per-class loops,
d x d matrices, a d x d pseudo-inverse). They are the independent reference for the tests and the benchmark."""

from __future__ import annotations

import numpy as np


def means_counts(Z: np.ndarray, y: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    Z = np.asarray(Z, dtype=np.float64)
    M = np.stack([Z[y == c].mean(0) for c in range(K)])
    n = np.array([(y == c).sum() for c in range(K)], dtype=np.float64)
    return M, n


def sigma_w(Z, y, K):
    Z = np.asarray(Z, dtype=np.float64)
    M, _ = means_counts(Z, y, K)
    S = np.zeros((Z.shape[1], Z.shape[1]))
    for c in range(K):
        for z in Z[y == c]:
            S += np.outer(z - M[c], z - M[c])
    return S / len(Z)


def sigma_w_fast(Z, y, K):
    Z = np.asarray(Z, dtype=np.float64)
    M, _ = means_counts(Z, y, K)
    S = np.zeros((Z.shape[1], Z.shape[1]))
    for c in range(K):
        C = Z[y == c] - M[c]
        S += C.T @ C
    return S / len(Z)


def sigma_b(Z, y, K, global_mean="samples"):
    Z = np.asarray(Z, dtype=np.float64)
    M, _ = means_counts(Z, y, K)
    g = Z.mean(0) if global_mean == "samples" else M.mean(0)
    return sum(np.outer(M[c] - g, M[c] - g) for c in range(K)) / K


def nc1_trace_ratio(Z, y, K, global_mean="samples"):
    return np.trace(sigma_w(Z, y, K)) / np.trace(sigma_b(Z, y, K, global_mean))


def nc1_pinv(Z, y, K, global_mean="samples", within=sigma_w):
    return np.trace(within(Z, y, K) @ np.linalg.pinv(sigma_b(Z, y, K, global_mean), hermitian=True)) / K


def nc1_per_class(Z, y, K):
    Z = np.asarray(Z, dtype=np.float64)
    M, _ = means_counts(Z, y, K)
    Bp = np.linalg.pinv(sigma_b(Z, y, K), hermitian=True)
    out = []
    for c in range(K):
        C = Z[y == c] - M[c]
        out.append(np.trace(C.T @ C / len(C) @ Bp) / K)
    return np.array(out)


def etf(K):
    return (np.eye(K) - np.ones((K, K)) / K) / np.sqrt(K - 1)


def nc2_condition_number(Z, y, K):
    M, _ = means_counts(Z, y, K)
    s = np.linalg.svd(M.T, compute_uv=False)
    return s[0] / s[K - 1]


def nc2_etf_distance(Z, y, K, global_mean="samples"):
    Z = np.asarray(Z, dtype=np.float64)
    M, _ = means_counts(Z, y, K)
    g = Z.mean(0) if global_mean == "samples" else M.mean(0)
    H = (M - g).T
    G = H.T @ H
    return np.linalg.norm(G / np.linalg.norm(G) - etf(K))


def nc2_orthogonal_frame_distance(Z, y, K):
    M, _ = means_counts(Z, y, K)
    G = M @ M.T
    return np.linalg.norm(G / np.linalg.norm(G) - np.eye(K) / np.sqrt(K))


def nc3_cosine(Z, y, W):
    Z = np.asarray(Z, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    return np.mean([z @ W[c] / np.linalg.norm(z) / np.linalg.norm(W[c]) for z, c in zip(Z, y)])


def nc3_class_mean_cosine(Z, y, W):
    K = W.shape[0]
    M, _ = means_counts(Z, y, K)
    return np.mean([M[c] @ W[c] / np.linalg.norm(M[c]) / np.linalg.norm(W[c]) for c in range(K)])


def nc3_etf_distance(Z, y, W, global_mean="samples"):
    Z = np.asarray(Z, dtype=np.float64)
    K = W.shape[0]
    M, _ = means_counts(Z, y, K)
    g = Z.mean(0) if global_mean == "samples" else M.mean(0)
    A = np.asarray(W, dtype=np.float64) @ (M - g).T
    return np.linalg.norm(A / np.linalg.norm(A) - etf(K))


def balancedness(W2, W1):
    W2 = np.asarray(W2, dtype=np.float64)
    W1 = np.asarray(W1, dtype=np.float64)
    A, B = W2.T @ W2, W1 @ W1.T
    return np.linalg.norm(A - B, 2) / min(np.linalg.norm(A, 2), np.linalg.norm(B, 2))


def negativity(Z):
    Z = np.asarray(Z, dtype=np.float64)
    return np.linalg.norm(Z - np.maximum(Z, 0), 2) / np.linalg.norm(Z, 2)


def cdnv(Z, y, K):
    """Galanti et al.'s CDNV averaged over pairs, by loops."""
    M, _ = means_counts(Z, y, K)
    Z = np.asarray(Z, dtype=np.float64)
    var = [np.mean([np.sum((z - M[c]) ** 2) for z in Z[y == c]]) for c in range(K)]
    vals = [(var[a] + var[b]) / (2 * np.sum((M[a] - M[b]) ** 2)) for a in range(K) for b in range(a + 1, K)]
    return float(np.mean(vals))


def centred_cosines(Z, y, K):
    """Cosines between centred class means (sample-weighted global mean), over pairs a < b."""
    M, n = means_counts(Z, y, K)
    C = M - (n[:, None] * M).sum(0) / n.sum()
    C = C / np.linalg.norm(C, axis=1, keepdims=True)
    return np.array([C[a] @ C[b] for a in range(K) for b in range(a + 1, K)])


def equinorm(Z, y, K):
    M, n = means_counts(Z, y, K)
    norms = np.linalg.norm(M - (n[:, None] * M).sum(0) / n.sum(), axis=1)
    return float(np.std(norms, ddof=1) / np.mean(norms))


def ncc_agreement(Z, preds, M):
    """Fraction of rows whose nearest class mean (Euclidean) is the given prediction."""
    Z = np.asarray(Z, dtype=np.float64)
    nearest = [int(np.argmin([np.sum((z - m) ** 2) for m in M])) for z in Z]
    return float(np.mean(np.array(nearest) == np.asarray(preds)))
