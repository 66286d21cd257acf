"""Benchmark of the training core (run it, don't time it in a test):

    python benchmarks/bench_training.py [--device cpu|cuda] [--steps 30]

(1) Throughput on the Jacot et al. MLP setting (9 layers of width 256, MNIST-5k, full batch, float32): achieved
    FLOP/s of a training step divided by the dense matmul FLOP/s of the same device, measured in the same run.
(2) 8 models (8 weight decays) trained together as one vectorised Ensemble vs one after another, for chapter 1's
    small network (500 digits, widths 784-64-64-32-32-10) and for the Jacot-size network; each model records its
    metrics at the first and last step in both cases. Also reported: the same ratio for the training steps alone,
    from the difference with one-step runs (which pay the recording and the set-up only).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from functools import partial

import torch

from ncbook import data
from ncbook.nets import MLP, Ensemble
from ncbook.train import TrainConfig, train, train_ensemble


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_flops(device: str, n: int = 2048, repeats: int = 10) -> float:
    """Best dense float32 matmul rate (FLOP/s) on an n x n product."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def step_flops(widths: list[int], n: int) -> float:
    """FLOPs of one full-batch training step: forward 2N d_in d_out per layer, weight gradient the same, input
    gradient the same for every layer but the first (elementwise work is not counted)."""
    pairs = list(zip(widths[:-1], widths[1:]))
    return 2 * n * (2 * sum(a * b for a, b in pairs) + sum(a * b for a, b in pairs[1:]))


def time_training(fn, device: str) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def one_after_another(widths, L1, X, y, cfgs, dev) -> None:
    for c in cfgs:
        train(MLP(widths, L1).to(dev), X, y, c, progress=False)


def together(widths, L1, X, y, cfgs, dev) -> None:
    train_ensemble(Ensemble([MLP(widths, L1).to(dev) for _ in cfgs]), X, y, cfgs, progress=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=30, help="steps timed for the throughput (1)")
    p.add_argument("--ensemble-steps", type=int, default=200, help="steps of each of the 8 small runs in (2)")
    a = p.parse_args()
    dev = a.device
    X, y = data.mnist5k(device=dev)
    widths = [784] + [256] * 8 + [10]
    cfg = TrainConfig(steps=a.steps, lr=0.01, weight_decay=1e-3, momentum=0.9, record_every=10 ** 9)

    def fresh(seed: int, w=widths) -> MLP:
        torch.manual_seed(seed)
        return MLP(w, 5).to(dev)

    peak = matmul_flops(dev)
    train(fresh(0), X, y, TrainConfig(steps=3, lr=0.01, weight_decay=1e-3, record_every=10 ** 9), progress=False)
    t_one = min(time_training(lambda: train(fresh(0), X, y, cfg, progress=False), dev) for _ in range(3))
    # every run also records the metrics once at step 0 and once at the end: time that separately and remove it
    t_rec = min(time_training(lambda: train(fresh(0), X, y, TrainConfig(steps=1, lr=0.01, weight_decay=1e-3,
                                                                        record_every=10 ** 9), progress=False), dev)
                for _ in range(3))
    per_step = (t_one - t_rec) / (a.steps - 1)
    achieved = step_flops(widths, len(y)) / per_step
    print(f"device {dev}, torch threads {torch.get_num_threads()}")
    print(f"(1) dense float32 matmul: {peak / 1e9:.1f} GFLOP/s; training step ({len(widths) - 1} layers of width 256,"
          f" N={len(y)}): {per_step * 1e3:.1f} ms = {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.0%} of matmul "
          f"(target >= 40%)")

    cases = [("tiny (digits, 64-32-32-32-16-16-10, N=1797)", [64, 32, 32, 32, 16, 16, 10], 3, data.digits(device=dev),
              a.ensemble_steps),
             ("chapter-1 size (784-64-64-32-32-10, N=500)", [784, 64, 64, 32, 32, 10], 2,
              data.mnist5k(per_class=50, device=dev), a.ensemble_steps),
             ("Jacot-size (9 x 256, N=5000)", widths, 5, (X, y), a.steps)]
    for label, w, L1, (Xs, ys), steps in cases:
        lams = [1e-4 * 2 ** i for i in range(8)]
        cfgs = [TrainConfig(steps=steps, lr=0.01, weight_decay=lam, momentum=0.9, record_every=10 ** 9)
                for lam in lams]
        t_seq = time_training(partial(one_after_another, w, L1, Xs, ys, cfgs, dev), dev)
        t_ens = time_training(partial(together, w, L1, Xs, ys, cfgs, dev), dev)
        # the same runs cut to one step: the recording (at the first and last step) and the set-up, which both
        # arms pay; what remains of the difference is the cost of the steps alone
        short = [replace(c, steps=1) for c in cfgs]
        s_seq = min(time_training(partial(one_after_another, w, L1, Xs, ys, short, dev), dev) for _ in range(3))
        s_ens = min(time_training(partial(together, w, L1, Xs, ys, short, dev), dev) for _ in range(3))
        print(f"(2) {label}, {steps} steps: 8 models one after another {t_seq:.2f} s, together {t_ens:.2f} s: "
              f"{t_seq / t_ens:.1f}x (target >= 3x); the steps alone (less recording and set-up, "
              f"{s_seq:.2f} s vs {s_ens:.2f} s): {(t_seq - s_seq) / (t_ens - s_ens):.1f}x")


if __name__ == "__main__":
    main()
