"""Benchmark of ncbook.metrics (run it, don't time it in a test):

    python benchmarks/bench_metrics.py [--n 50000] [--d 512] [--k 10] [--repeats 3]

All timings are taken side by side in one run and reported as ratios:
(a) the naive float64 implementation (d x d covariances with per-class loops, d x d pseudo-inverse) over ncbook;
(b) ncbook's full metric suite over one pass that computes the class means;
(c) streaming, batches of 1,000: ncbook's two-pass ``streamed_class_stats`` and one-pass ``StreamingClassStats``
(target: at most 1.5 Grams, at most 1e-6 relative error), and (d) the peers' metrics (CDNV, equinorm,
equiangularity, coherence from the class statistics; NC4's nearest-class-mean pass)
    against a two-pass accumulator of the usual kind (class means, then a d x d float64 within-class scatter),
    written here, against the route of rhubarbwu/neural-collapse's accumulators at their defaults (float32 one-hot
    class totals, then a pooled float32 d x d scatter; also written here; target: the one-pass at least as fast),
    and against one float32 Gram X^T X; and the one-shot ``class_stats`` against the class-means pass (the ratio
    within each of many interleaved rounds: median and range) and against one skinny BLAS product (N x d times d x
    K), the projection its second pass fuses with the shift.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ncbook import metrics  # noqa: E402

import naive  # noqa: E402

CLOCK = time.perf_counter
"""What the timings read: wall time, or with ``--cpu-time`` this process's CPU time (on one thread), which the other
work of a loaded machine does not add to."""


def timings(fns: dict, repeats: int) -> dict[str, np.ndarray]:
    """Times (seconds, :data:`CLOCK`) of each function in ``repeats`` rounds, the functions interleaved within each
    round so that a slow spell of the machine hits all of them alike; one warm-up round first (numba compiles
    there)."""
    times = {name: [] for name in fns}
    for round_ in range(repeats + 1):
        for name, fn in fns.items():
            t0 = CLOCK()
            fn()
            if round_:
                times[name].append(CLOCK() - t0)
    return {name: np.array(v) for name, v in times.items()}


def best_times(fns: dict, repeats: int) -> dict[str, float]:
    """Best wall time (seconds) of each function over ``repeats`` interleaved rounds (:func:`timings`)."""
    return {name: float(v.min()) for name, v in timings(fns, repeats).items()}


def paired(times: dict[str, np.ndarray], name: str, base: str) -> str:
    """The ratio of two functions' times within each round: median and range over the rounds."""
    r = times[name] / times[base]
    return f"{np.median(r):5.2f} x  (range {r.min():.2f}-{r.max():.2f} over {len(r)} rounds)"


def naive_suite(Z: np.ndarray, y: np.ndarray, W: np.ndarray, K: int) -> dict[str, float]:
    """The same metrics as ``metrics.nc_metrics(Z, y, W)``, from the naive formulas (NC3 cosine vectorised)."""
    Z = Z.astype(np.float64)
    Sw, Sb = naive.sigma_w_fast(Z, y, K), naive.sigma_b(Z, y, K)
    cos = (Z * W[y]).sum(1) / np.linalg.norm(Z, axis=1) / np.linalg.norm(W, axis=1)[y]
    return {
        "nc1_trace_ratio": np.trace(Sw) / np.trace(Sb),
        "nc1_pinv": np.trace(Sw @ np.linalg.pinv(Sb, hermitian=True)) / K,
        "nc2_etf_distance": naive.nc2_etf_distance(Z, y, K),
        "nc2_condition_number": naive.nc2_condition_number(Z, y, K),
        "nc2_orthogonal_frame_distance": naive.nc2_orthogonal_frame_distance(Z, y, K),
        "nc3_cosine": cos.mean(),
        "nc3_class_mean_cosine": naive.nc3_class_mean_cosine(Z, y, W),
        "nc3_etf_distance": naive.nc3_etf_distance(Z, y, W),
    }


def two_pass_accumulator(batches, K: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The usual streaming route: pass 1 the class means, pass 2 the d x d float64 within-class scatter."""
    sums, counts = torch.zeros(K, d, dtype=torch.float64), torch.zeros(K, dtype=torch.float64)
    for Z, y in batches:
        sums.index_add_(0, y, Z.double())
        counts += torch.bincount(y, minlength=K)
    means = sums / counts[:, None]
    Sw = torch.zeros(d, d, dtype=torch.float64)
    for Z, y in batches:
        C = Z.double() - means[y]
        Sw += C.T @ C
    return means, Sw


def peer_two_pass(batches, K: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The route of rhubarbwu/neural-collapse's accumulators at their defaults (float32), written here: pass 1 the
    class totals by a one-hot product, pass 2 the pooled d x d scatter of the rows less their class means."""
    sums, counts = torch.zeros(K, d), torch.zeros(K)
    for Z, y in batches:
        onehot = torch.nn.functional.one_hot(y, K).T.to(Z.dtype)
        sums += onehot @ Z
        counts += onehot.sum(1)
    means = sums / counts[:, None]
    Sw = torch.zeros(d, d)
    for Z, y in batches:
        diff = Z - means[y]
        Sw += diff.T @ diff
    return means, Sw


def one_pass(batches, K: int, d: int) -> metrics.ClassStats:
    acc = metrics.StreamingClassStats(K, d)
    for Z, y in batches:
        acc.update(Z, y)
    return acc.finalize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--cpu-time", action="store_true", help="time CPU time on one thread instead of wall time (for a "
                   "loaded machine)")
    a = p.parse_args()
    if a.cpu_time:
        global CLOCK
        CLOCK = time.process_time
        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    y = rng.integers(0, a.k, a.n)
    Z = (3 * rng.normal(size=(a.k, a.d))[y] + rng.normal(size=(a.n, a.d))).astype(np.float32)
    W = rng.normal(size=(a.k, a.d))
    Zt, yt, Wt = torch.from_numpy(Z), torch.from_numpy(y), torch.from_numpy(W)

    t = best_times({"means": lambda: metrics.class_means(Zt, yt), "ours": lambda: metrics.nc_metrics(Zt, yt, Wt),
                    "naive": lambda: naive_suite(Z, y, W, a.k)}, a.repeats)
    t_means, t_ours, t_naive = t["means"], t["ours"], t["naive"]
    ours, ref = metrics.nc_metrics(Zt, yt, Wt), naive_suite(Z, y, W, a.k)

    print(f"N={a.n} d={a.d} K={a.k} float32 on CPU, torch threads={torch.get_num_threads()}, "
          f"{'CPU time' if a.cpu_time else 'wall time'}")
    print(f"  one class-means pass        {t_means * 1e3:9.1f} ms")
    print(f"  ncbook, all metrics         {t_ours * 1e3:9.1f} ms")
    print(f"  naive float64 (d x d pinv)  {t_naive * 1e3:9.1f} ms")
    print(f"  (a) naive / ncbook          {t_naive / t_ours:9.1f} x   (target >= 20)")
    print(f"  (b) ncbook / class means    {t_ours / t_means:9.1f} x   (target <= 10)")
    for k, v in ref.items():
        print(f"  {k:22s} ncbook {ours[k]:.10g}  naive {v:.10g}  rel.diff {abs(ours[k] - v) / abs(v):.1e}")

    batches = [(Zt[i:i + 1000], yt[i:i + 1000]) for i in range(0, a.n, 1000)]
    Q = metrics.mean_basis(metrics.class_means(Zt, yt, a.k)).float()     # what the one-shot's second pass projects on
    T = timings({"means": lambda: metrics.class_means(Zt, yt), "gram": lambda: Zt.T @ Zt,
                 "two-pass ncbook": lambda: metrics.streamed_class_stats(batches, a.k),
                 "two-pass accumulator": lambda: two_pass_accumulator(batches, a.k, a.d),
                 "peer two-pass (float32)": lambda: peer_two_pass(batches, a.k, a.d),
                 "one-pass ncbook": lambda: one_pass(batches, a.k, a.d)}, max(3, a.repeats // 3))
    oneshot = timings({"means": lambda: metrics.class_means(Zt, yt), "one-shot": lambda: metrics.class_stats(Zt, yt),
                       "product": lambda: Zt @ Q}, 3 * a.repeats)     # the fast ones, in many more rounds
    t = {name: float(v.min()) for name, v in T.items()}
    t["one-shot ncbook"], t["product Z Q (d x K)"] = float(oneshot["one-shot"].min()), float(oneshot["product"].min())
    exact = metrics.class_stats(Zt.double(), yt, a.k)
    streamed = metrics.streamed_class_stats(batches, a.k)
    onepass = one_pass(batches, a.k, a.d)
    checked = (metrics.nc1_pinv, metrics.nc1_trace_ratio, metrics.nc2_etf_distance, metrics.cdnv, metrics.equinorm,
               metrics.equiangularity, metrics.coherence)

    def worst(stats):
        return max(abs(f(stats) - f(exact)) / abs(f(exact)) for f in checked)

    rel, rel_one = worst(streamed), worst(onepass)
    peers = timings({"gram": lambda: Zt.T @ Zt, "stats": lambda: metrics.class_stats(Zt, yt),
                     "peers": lambda: [f(exact) for f in checked[3:]],
                     "nc4": lambda: metrics.nc4_ncc_agreement(Zt, yt, exact.means)}, a.repeats)
    print("\nstreaming over batches of 1000 (float32):")
    for name, v in t.items():
        print(f"  {name:22s} {v * 1e3:9.1f} ms")
    print(f"  (c) two-pass accumulator / ncbook two-pass   {t['two-pass accumulator'] / t['two-pass ncbook']:6.1f} x")
    print(f"      ncbook two-pass / one float32 Gram        {t['two-pass ncbook'] / t['gram']:6.2f} x   (target <= 1)")
    print(f"      two-pass accumulator / ncbook one-shot     {t['two-pass accumulator'] / t['one-shot ncbook']:6.1f} x"
          "   (target >= 10)")
    best = t["one-shot ncbook"] / oneshot["means"].min()
    print(f"      ncbook one-shot / class-means pass, best times  {best:5.2f} x")
    print(f"      the same, paired in each round           {paired(oneshot, 'one-shot', 'means')}   (target <= 3)")
    print(f"      one skinny product Z Q (MKL) / means     {paired(oneshot, 'product', 'means')}   (what a BLAS takes "
          "for the projection alone, without the shift)")
    one_pass_grams = t["one-pass ncbook"] / t["gram"]
    print(f"      ncbook one-pass (mergeable) / Gram        {one_pass_grams:6.2f} x   (target <= 1.5)")
    print(f"      the same, paired in each round            {paired(T, 'one-pass ncbook', 'gram')}")
    print(f"      peer's float32 two-pass / ncbook one-pass {paired(T, 'peer two-pass (float32)', 'one-pass ncbook')}"
          "   (target >= 1: the peer's speed or better)")
    print(f"      peer's float32 two-pass / ncbook two-pass {paired(T, 'peer two-pass (float32)', 'two-pass ncbook')}")
    print(f"      largest relative difference from float64 of NC1, gNC1, NC2, CDNV, equinorm, equiangularity, "
          f"coherence: two-pass {rel:.1e}, one-pass {rel_one:.1e}   (target <= 1e-6)")
    g = float(peers["gram"].min())
    print("\nthe peers' metrics, from the class statistics (one-shot, float32 input), against one float32 Gram:")
    print(f"  class_stats (the pass every metric reads)       {float(peers['stats'].min()) / g:6.3f} Gram")
    print(f"  CDNV, equinorm, equiangularity, coherence       {float(peers['peers'].min()) / g:6.3f} Gram   (no pass "
          "over the features)")
    print(f"  NC4 (nearest class mean of every sample)        {float(peers['nc4'].min()) / g:6.3f} Gram   (one more "
          "pass)")


if __name__ == "__main__":
    main()
