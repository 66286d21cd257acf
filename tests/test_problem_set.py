"""The problem set (book/problem_set.md) and its unpublished solutions (course/solutions.md): every number on an
``Answer`` line of the solutions is recomputed here with this file's own code, and the solutions reach neither the
book, nor its source archive, nor the students' handout."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from ncbook import metrics, ufm
from ncbook.runner import get

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "course" / "solutions.md"
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import source_archive  # noqa: E402


def answer(key: str) -> str:
    """The text of the solutions' ``Answer (key):`` up to its sentence's end."""
    found = re.search(rf"Answer \({re.escape(key)}\):\s*(.*?)(?:\.\s|\.$)", " ".join(SOLUTIONS.read_text().split()))
    assert found, f"no Answer ({key}) in {SOLUTIONS.name}"
    return found.group(1)


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w^])\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def noisy_simplex(K=5, d=20, r=2.0, sigma=0.5, n=2000, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Problem 1's draw, exactly as the problem states it."""
    M = np.zeros((K, d))
    M[:, :K] = r * np.sqrt(K / (K - 1)) * (np.eye(K) - 1 / K)
    rng, labels = np.random.default_rng(seed), np.repeat(np.arange(K), n)
    return M[labels] + sigma * rng.standard_normal((K * n, d)), labels


def test_problem_1():
    assert numbers(answer("P1.2")) == [1.25, 2, 0.3125, 4]          # d sigma^2 / r^2 at r = 2 and r = 4
    assert 20 * 0.5 ** 2 / 2 ** 2 == 1.25 and 20 * 0.5 ** 2 / 4 ** 2 == 0.3125
    value = metrics.nc1_trace_ratio(*noisy_simplex())
    stated, percent = numbers(answer("P1.3"))[:2]
    assert round(value, 4) == stated and round(100 * (value / 1.25 - 1), 2) == percent
    # the population value, on a draw large enough to see it (the claim of part 1, independently of the answer)
    assert metrics.nc1_trace_ratio(*noisy_simplex(n=40_000, seed=1)) == pytest.approx(1.25, rel=2e-3)


def test_problem_2():
    p = ufm.UFM(K=4, n=5, d=6, lam_W=0.04, lam_H=0.01)
    rho, w2, minimum = numbers(answer("P2.1"))[-3:]
    W, H = ufm.solve_model1(p)
    assert ufm.objective(W, H, p) == pytest.approx(minimum, abs=1e-10)
    assert (H ** 2).sum(0) == pytest.approx(rho, rel=1e-5) and (W ** 2).sum(1) == pytest.approx(w2, rel=1e-5)
    threshold = numbers(answer("P2.3"))[-1]
    below, at = ufm.UFM(4, 5, 6, 0.04, threshold * 0.99), ufm.UFM(4, 5, 6, 0.04, threshold)
    assert ufm.collapse_norms(below)[0] > 0 and ufm.collapse_norms(at) == (0.0, 0.0)
    W, H = ufm.solve_model1(ufm.UFM(4, 5, 6, 0.04, threshold * 1.01))      # numerically: the minimiser is 0
    assert np.abs(H).max() < 1e-4 and np.abs(W).max() < 1e-4


PROBLEM_3 = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.5]])


def balanced_factors(P: np.ndarray, L: int) -> list[np.ndarray]:
    """Problem 3's balanced factorisation W_1 = S^(1/L) V^T, W_2 = ... = S^(1/L), W_L = U S^(1/L), first to last."""
    U, s, Vt = np.linalg.svd(P)
    root = np.diag(s ** (1 / L))
    return [root @ Vt, *[root] * (L - 2), U @ root]


def test_problem_3():
    for L in (2, 3, 4):
        W = balanced_factors(PROBLEM_3, L)
        product = W[0]
        for w in W[1:]:
            product = w @ product
        assert np.allclose(product, PROBLEM_3)
        assert all(np.allclose(b.T @ b, a @ a.T) for a, b in zip(W, W[1:]))
    costs = [sum(np.linalg.norm(w) ** 2 for w in balanced_factors(PROBLEM_3, L)) / L for L in (2, 3, 4)]
    stated = numbers(answer("P3.2"))                               # "5.5000 at L = 2, 4.2274 at L = 3, ..."
    assert stated[0::2] == [round(c, 4) for c in costs] and stated[1::2] == [2, 3, 4]
    # the minimum, independently: no other factorisation of P into two (random re-balancings) costs less
    rng = np.random.default_rng(0)
    W1, W2 = balanced_factors(PROBLEM_3, 2)
    for _ in range(200):
        M = np.eye(3) + 0.5 * rng.standard_normal((3, 3))
        cost = (np.linalg.norm(M @ W1) ** 2 + np.linalg.norm(W2 @ np.linalg.inv(M)) ** 2) / 2
        assert cost >= costs[0] - 1e-9
    assert costs[0] == pytest.approx(np.linalg.svd(PROBLEM_3, compute_uv=False).sum())
    factors = [round(2 ** (1 / L) / 2, 4) for L in (2, 3, 4)]      # Q_2's cost over Q_1's
    stated = numbers(answer("P3.3"))
    assert stated[0::2] == factors and stated[1::2] == [2, 3, 4]


def test_problem_4():
    bound, two, eleven, best, nine, eleven_, rate = numbers(answer("P4.1"))
    a = np.array([1.0, 4.0, 10.0])
    contraction = lambda eta: np.abs(1 - eta * a).max()              # noqa: E731
    assert contraction(bound * 0.999) < 1 <= contraction(bound)
    etas = np.linspace(0.001, bound, 200_001)
    fastest = etas[np.argmin(np.abs(1 - np.outer(etas, a)).max(1))]
    assert fastest == pytest.approx(two / eleven, abs=1e-5) and round(fastest, 4) == best
    assert contraction(two / eleven) == pytest.approx(nine / eleven_) and round(nine / eleven_, 3) == rate


def test_problem_5():
    r = get("jacot_mlp", "cpu", seeds=(5, 6, 7, 8, 9))
    error = r["train_error"][:, 0, -1]
    wrong = np.rint(error * 5000).astype(int)
    assert numbers(answer("P5.1"))[:5] == wrong.tolist() and "seeds 8 and 9 fit" in answer("P5.1")
    assert [5 + s for s in np.flatnonzero(error <= 0.01)] == [8, 9]
    merged = []
    for s in np.flatnonzero(error > 0.01):
        c = r["class_mean_cosines"][s, 0, -1].copy()
        np.fill_diagonal(c, -2)
        i, j = sorted(np.unravel_index(np.argmax(c), c.shape))
        merged.append((5 + s, i, j, round(float(c[i, j]), 4)))
    assert merged == [(5, 5, 8, 0.9998), (6, 5, 8, 0.9998), (7, 3, 5, 0.9997)]
    text = answer("P5.2")
    assert "seeds 5 and 6 merge digits 5 and 8 (cosine 0.9998), seed 7 merges 3 and 5 (cosine 0.9997)" in text
    fits, merges = error <= 0.01, error > 0.01
    trace, plus = r["nc1_trace_ratio"][:, 0, -1, -1], r["nc1_pinv"][:, 0, -1, -1]
    # the trace ratio's ranges overlap; NC1+ separates the groups by the stated factor
    assert trace[merges].min() < trace[fits].max() and trace[fits].min() < trace[merges].max()
    factor = int(plus[merges].min() / plus[fits].max())
    assert f"NC1+ tells them apart, by at least {factor} times" in answer("P5.3")


def test_the_solutions_are_published_nowhere():
    """Not in the source archive, not among the files the site copies, not in the handout (which holds what the
    archive holds, with the student chapters)."""
    files = source_archive.source_files(ROOT, ROOT)
    assert "book/problem_set.md" in files and not any(name.startswith("course/") for name in files)
    assert source_archive.cited_file("course/solutions.md", ROOT) is None
    assert (ROOT / "book" / "problem_set.md").read_text().count("Answer (") == 0
