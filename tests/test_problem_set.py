"""The problem set (book/problem_set.md) and its unpublished solutions (course/solutions.md): every number on an
``Answer`` line of the solutions is recomputed here with this file's own code, and the solutions reach neither the
book, nor its source archive, nor the students' handout."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

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


def balancedness_ratio(eta: float, steps: int, lam: float = 0.05) -> float:
    """Problem 3's gradient descent: ||D||_F at the end over its start."""
    torch.manual_seed(0)
    X, Y = torch.randn(5, 20, dtype=torch.float64), torch.randn(3, 20, dtype=torch.float64)
    W1, W2 = torch.randn(8, 5, dtype=torch.float64) * 0.5, torch.randn(3, 8, dtype=torch.float64) * 0.5
    D0 = torch.linalg.norm(W2.T @ W2 - W1 @ W1.T)
    for _ in range(steps):
        G = 2 * (W2 @ W1 @ X - Y) @ X.T / 40                     # the gradient of ||PX - Y||^2 / 40 in P
        W1, W2 = W1 - eta * (W2.T @ G + lam * W1), W2 - eta * (G @ W1.T + lam * W2)
    return float(torch.linalg.norm(W2.T @ W2 - W1 @ W1.T) / D0)


def test_problem_3():
    ratio, percent = numbers(answer("P3.2"))[:2]
    value = balancedness_ratio(1e-3, 20_000)
    assert round(value, 5) == ratio and abs(value / np.exp(-2) - 1) < percent / 100
    half = balancedness_ratio(5e-4, 40_000)                     # part 3: halving the rate halves the difference
    assert (half - np.exp(-2)) / (value - np.exp(-2)) == pytest.approx(0.5, abs=0.05)


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
    r = get("jacot_mlp", "cpu", seeds=(0, 1, 2, 3, 4))
    error = r["train_error"][:, 0, -1]
    wrong = np.rint(error * 5000).astype(int)
    assert numbers(answer("P5.1"))[:5] == wrong.tolist() and "seeds 0 and 1 fit" in answer("P5.1")
    assert list(np.flatnonzero(error <= 0.01)) == [0, 1]
    kappa = r["nc2_condition_number"][:, 0, -1, -1]
    assert np.round(kappa[:2], 2).tolist() == [1.02, 1.02] and (kappa[2:] > 1e6).all()
    assert "1.02 for seeds 0 and 1 and above 10^6 for seeds 2, 3 and 4" in answer("P5.2")
    nc1 = r["nc1_trace_ratio"][:, 0, -1, -1]
    assert nc1[2:].max() < nc1[:2].min()                     # part 3's premise: the merged seeds' NC1 is smaller


def test_the_solutions_are_published_nowhere():
    """Not in the source archive, not among the files the site copies, not in the handout (which holds what the
    archive holds, with the student chapters)."""
    files = source_archive.source_files(ROOT, ROOT)
    assert "book/problem_set.md" in files and not any(name.startswith("course/") for name in files)
    assert source_archive.cited_file("course/solutions.md", ROOT) is None
    assert (ROOT / "book" / "problem_set.md").read_text().count("Answer (") == 0
