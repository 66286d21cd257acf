"""Exercises that check themselves: each check recomputes what an exercise asks with ``ncbook`` and tells the student,
in one sentence, whether their ``answer`` is right.

In a chapter an exercise with a computational answer is followed by two cells, kept by the student edition and folded
in the book: an *answer* cell (``answer = ...``; the student edition leaves ``answer = None``) and a *check* cell,
``exercises.check("ex-ch1-two-classes", answer)``. :data:`CHECKS` lists every checked exercise with the number the
book gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class WrongAnswer(AssertionError):
    """A wrong answer; Jupyter shows its one-line message instead of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"✗ {self}"]


@dataclass(frozen=True)
class Check:
    """One checked exercise: its number in the book, what ``answer`` must hold, and the test (None: right)."""

    number: str
    asks: str
    test: Callable[[Any], str | None]


def _as_array(answer: Any, shape: tuple[int, ...]) -> np.ndarray | str:
    """``answer`` as a float64 array of ``shape``, or why it is not one (a string)."""
    try:
        a = np.asarray(answer.detach().cpu() if hasattr(answer, "detach") else answer, dtype=np.float64)
    except (TypeError, ValueError):
        return f"expected numbers, got {type(answer).__name__}"
    if a.shape != shape:
        want = "one number" if shape == () else f"{int(np.prod(shape))} numbers (an array of shape {shape})"
        have = "one number" if a.shape == () else f"an array of shape {a.shape}"
        return f"expected {want}, got {have}"
    if not np.all(np.isfinite(a)):
        return "your answer holds NaN or infinite values"
    return a


def close(answer: Any, expected: Any, rtol: float, hint: str = "") -> str | None:
    """None when ``answer`` equals ``expected`` (a number or an array) to relative tolerance ``rtol``; else why not."""
    want = np.asarray(expected, dtype=np.float64)
    got = _as_array(answer, want.shape)
    if isinstance(got, str):
        return got
    errors = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    err = float(np.max(errors))
    if err <= rtol:
        return None
    if got.ndim == 0:
        shown = f"{float(got):.6g} is off by {err:.1%} (relative) from the value the book computes"
    else:
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(errors), errors.shape))
        shown = f"your array is off by {err:.1%} (relative) at its entry {worst if len(worst) > 1 else worst[0]}"
    return shown + (f"; {hint}" if hint else "")


def equal(answer: Any, expected: bool | int, hint: str) -> str | None:
    """None when ``answer == expected`` (a boolean, or a whole number); else what is wrong, with the hint."""
    if isinstance(expected, bool):
        if not isinstance(answer, (bool, np.bool_)):
            return f"expected True or False, got {type(answer).__name__}"
    elif isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, np.integer)):
        return f"expected a whole number, got {type(answer).__name__}"
    return None if answer == expected else f"{answer!r} is not it: {hint}"


# --- the checks, in the book's order -------------------------------------------------------------------------------

def two_classes(answer: Any) -> str | None:
    """Exercise 1.1: the two-class formula for NC1_+ on ``data.gaussian_mixture(2, 50, 5, seed=1)``."""
    from ncbook import data, metrics

    Z, y = data.gaussian_mixture(2, 50, 5, seed=1)
    return close(answer, metrics.nc1_pinv(Z, y), 1e-8,
                 "the formula is one half of u^T Sigma_W u over the squared half-distance ||mu_1 - mu_2||^2 / 4")


def float32_offset(answer: Any) -> str | None:
    """Exercise 1.3: relative error of ``metrics.nc1_pinv`` on float32 features offset by 10 (float64 reference)."""
    from ncbook import data, metrics

    Z64, y = data.gaussian_mixture(10, 500, 512, between=1.0, within=1e-4, seed=0)
    Z32 = Z64.float() + 10
    exact = metrics.nc1_pinv(Z32.double(), y)
    return close(answer, abs(metrics.nc1_pinv(Z32, y) / exact - 1), 0.5,
                 "compare metrics.nc1_pinv(Z32, y) with metrics.nc1_pinv(Z32.double(), y), with the offset added")


def streaming(answer: Any) -> str | None:
    """Exercise 1.4: NC1_+ of the MNIST-5k pixels accumulated by ``StreamingClassStats`` (equals the one-shot value)."""
    import torch

    from ncbook import data, metrics

    X, y = data.mnist5k(dtype=torch.float64)
    return close(answer, metrics.nc1_pinv(X, y), 1e-9,
                 "pass every batch to update() once, then metrics.nc1_pinv(acc.finalize())")


def scaling(answer: Any) -> str | None:
    """Exercise 2.2: the map (lambda_W, lambda_H, n) -> Tirer and Bruna's (lambda_W~, lambda_H~); their objective
    must be K n times ours at every (W, H) (checked at random points)."""
    from ncbook import ufm

    if not callable(answer):
        return "expected a function of (lam_W, lam_H, n) returning (their lam_W, their lam_H)"
    rng = np.random.default_rng(0)
    for K, n, d, lw, lh in [(3, 2, 4, 0.3, 0.7), (4, 5, 6, 1.5, 0.2), (2, 10, 3, 0.01, 2.0)]:
        p = ufm.UFM(K, n, d, lw, lh)
        W, H = rng.normal(size=(K, d)), rng.normal(size=(d, K * n))
        try:
            tw, th = (float(v) for v in answer(lw, lh, n))
        except Exception as e:                          # noqa: BLE001 - the student's code, reported in one line
            return f"your function failed on (lam_W={lw}, lam_H={lh}, n={n}): {type(e).__name__}: {e}"
        theirs = (0.5 * np.sum((W @ H - ufm.targets(K, n)) ** 2) + tw / 2 * np.sum(W ** 2) + th / 2 * np.sum(H ** 2))
        if not np.isclose(theirs, K * n * ufm.objective(W, H, p), rtol=1e-10):
            return (f"with lam_W={lw}, lam_H={lh}, n={n} your ({tw:g}, {th:g}) do not give K n times the book's "
                    "objective; multiply eq-ufm by K n and read off the coefficients")
    return None


def lam_h_zero(answer: Any) -> str | None:
    """Exercise 3.1: whether ||H_t||_F stays bounded under the flow with lambda_H = 0 (it does not)."""
    return equal(answer, False, "with lambda_H = 0 the coefficient of the centred means is positive semi-definite, "
                                "so they never shrink; look at ||H_t||_F over a long run of ufm.flow")


def implicit(answer: Any) -> str | None:
    """Exercise 3.2: the order q in 1/beta of both steps' distance to the flow at t = 1/beta (errors O(beta^-q))."""
    return equal(answer, 2, "both steps are first-order accurate, so their error after a step of length t is of "
                            "order t^2; compare the distances at beta = 10 and 100")


def full_f(answer: Any) -> str | None:
    """Exercise 4.2: the distinct eigenvalues of the full first-order map F at the collapsed minimiser of
    ``ufm.UFM(3, 4, 5, 0.5, 0.3, 100.0)``, in increasing order."""
    from ncbook import ufm

    p = ufm.UFM(3, 4, 5, 0.5, 0.3, 100.0)
    values = np.unique(np.round(np.linalg.eigvalsh(ufm.first_order_map(ufm.collapsed_minimiser(p)[1], p)), 8))
    return close(answer, values, 1e-7, "np.unique(np.round(np.linalg.eigvalsh(F), 8)) lists them")


def kernel(answer: Any) -> str | None:
    """Exercise 5.3: the exponents a in leak^a of 1 - NC3, eps2 and the kernel mass on
    ``bounds.kernel_leaking_network(3, 8, 4, leak)`` (log-log slopes between leak = 1e-3 and 1e-2)."""
    from ncbook import bounds

    keys = ("1 - NC3", "eps2", "kernel mass")
    if not isinstance(answer, dict) or set(answer) != set(keys):
        return f"expected a dict with the keys {list(keys)} and whole-number exponents"
    measured = []
    for leak in (1e-3, 1e-2):
        model, X, y = bounds.kernel_leaking_network(3, 8, 4, leak)
        th, t = bounds.theorem_3_1(model, X, y), bounds.nc3_terms(model, X, y)
        measured.append([1 - th.nc3, th.eps2, float((t["kernel"] ** 2).sum())])
    slopes = np.log10(np.array(measured[1]) / np.array(measured[0]))
    for key, slope in zip(keys, slopes):
        if answer[key] != round(float(slope)):
            return f"{key} does not grow like leak^{answer[key]!r}: print it for the three leaks and compare"
    return None


def lambda_trade(answer: Any) -> str | None:
    """Exercise 6.2: C_lambda at the end for the largest weight decay over that for the smallest, at the first
    learning rate of the cached ``jacot_phases`` sweep."""
    from ncbook.runner import get

    res = get("jacot_phases", "cpu")
    end = res["loss"][0, :, -1]
    decays = np.asarray(res["weight_decays"])
    return close(answer, end[np.argmax(decays)] / end[np.argmin(decays)], 1e-9,
                 "read res['loss'][0, :, -1], the last C_lambda at the first learning rate, for each weight decay")


def depth_needed(answer: Any) -> str | None:
    """Exercise 7.3: the fewest linear layers L2 with kappa(W_L) <= 1.1 when kappa(W_{L:L1+1}) <= 1e6, by the
    corrected eq-thm52, kappa(W_L) <= kappa(W_{L:L1+1})^(1/L2)."""
    need = next(L2 for L2 in range(1, 10_000) if 1e6 ** (1 / L2) <= 1.1)
    return equal(answer, need, "solve 10^(6/L2) <= 1.1 for the smallest whole L2")


def eos_bound(answer: Any) -> str | None:
    """Exercise 7.4: the bound r sqrt(2/eta) / s_K(Z_L) at each learning rate of the cached ``trained_ntk`` result."""
    from ncbook.runner import get

    ntk = get("trained_ntk", "cpu")
    return close(answer, ntk["r"] * np.sqrt(2 / ntk["lrs"]) / ntk["sK_ZL"], 1e-9,
                 "use ntk['r'], ntk['lrs'] and ntk['sK_ZL'], one value per learning rate")


def average(answer: Any) -> str | None:
    """Exercise 8.2: the last layer's NC2 per depth, averaged over seeds and both weight decays (``jacot_head_depth``
    at lr = 0.05, as the chapter loads it)."""
    from ncbook import compare
    from ncbook.runner import book_result

    hd, _ = book_result("jacot_head_depth", lr=0.05)
    last = compare.head_values(hd, "nc2_condition_number")["last"]       # [depth, seed, weight decay]
    return close(answer, last.mean(axis=(1, 2)), 1e-9, "average over the seeds and the weight decays, per depth")


def per_class(answer: Any) -> str | None:
    """Exercise 9.1: the mean over classes of the per-class NC1 at the last record of ``tirer_blur``, per setting and
    seed; it must equal the overall NC1 to rounding (classes are balanced)."""
    from ncbook import compare
    from ncbook.runner import book_result

    bl, _ = book_result("tirer_blur")
    return close(answer, compare.final_at(bl, "nc1_pinv", "deepest"), 1e-10,
                 "take bl['nc1_per_class'][:, :, -1, :] and average over the classes")


CHECKS: dict[str, Check] = {
    "ex-ch1-two-classes": Check("1.1", "NC1_+ by the two-class formula (a float)", two_classes),
    "ex-ch1-float32": Check("1.3", "the relative error of metrics.nc1_pinv on the float32 features offset by 10 "
                                   "(a float)", float32_offset),
    "ex-ch1-streaming": Check("1.4", "NC1_+ of the MNIST-5k pixels streamed in batches of 256 (a float)", streaming),
    "ex-ch2-scaling": Check("2.2", "a function (lam_W, lam_H, n) -> (their lam_W, their lam_H)", scaling),
    "ex-ch3-lam-h-zero": Check("3.1", "whether ||H_t||_F stays bounded (True or False)", lam_h_zero),
    "ex-ch3-implicit": Check("3.2", "the whole number q such that both steps are O(beta^-q) from the flow", implicit),
    "ex-ch4-full-F": Check("4.2", "the distinct eigenvalues of the full F for ufm.UFM(3, 4, 5, 0.5, 0.3, 100.0), "
                                  "increasing", full_f),
    "ex-ch5-kernel": Check("5.3", "a dict of the exponents of the leak: {'1 - NC3': ., 'eps2': ., "
                                  "'kernel mass': .}", kernel),
    "ex-ch6-lambda-trade": Check("6.2", "the final C_lambda for the largest weight decay over that for the smallest, "
                                        "at the first learning rate (a float)", lambda_trade),
    "ex-ch7-depth": Check("7.3", "the fewest linear layers L2, by the corrected bound (a whole number)", depth_needed),
    "ex-ch7-eos-bound": Check("7.4", "r sqrt(2/eta) / s_K(Z_L) per learning rate of trained_ntk (an array)",
                              eos_bound),
    "ex-ch8-average": Check("8.2", "the mean last-layer NC2 per depth over seeds and both weight decays (an array)",
                            average),
    "ex-ch9-per-class": Check("9.3", "the mean per-class NC1 at the last record, per setting and seed (an array)",
                              per_class),
}


def check(label: str, answer: Any) -> None:
    """Tell the student whether ``answer`` to exercise ``label`` is right: prints a tick; None (not answered yet) prints
    what to do; a wrong answer raises :class:`WrongAnswer` saying why (``CHECKS[label].test`` for a program)."""
    if label not in CHECKS:
        raise ValueError(f"no check for exercise {label!r}; checked exercises: {', '.join(CHECKS)}")
    c = CHECKS[label]
    if answer is None:
        print(f"Exercise {c.number}: no answer yet. Set `answer` in the cell above to {c.asks}, then run this cell.")
        return
    problem = c.test(answer)
    if problem:
        raise WrongAnswer(f"Exercise {c.number}, not yet right: {problem}.")
    print(f"✓ Exercise {c.number}: right.")


__all__ = ["CHECKS", "Check", "WrongAnswer", "check", "close", "equal"]
