"""Benchmark of the training core (run it, don't time it in a test):

    python benchmarks/bench_training.py [--device cpu|cuda] [--steps 30] [--repeats 9] [--cases minibatch digits]

(1) Throughput on the Jacot et al. MLP setting (9 layers of width 256, MNIST-5k, full batch, float32): achieved
    FLOP/s of a training step divided by the dense matmul FLOP/s of the same device, measured in the same run.
(2) 8 models (8 weight decays) trained together as one vectorised Ensemble (`train_ensemble`) vs one after another,
    per training step, in three arms measured side by side: together; one after another with ncbook's `train`; and
    one after another with a plain PyTorch loop (nn.Module, torch.optim.SGD with weight_decay, the same loss), the
    fastest sequential baseline a user would write. Cases: chapter 1's small network (784-64-64-32-32-10, 500 digits)
    full batch and with minibatches of 128 (the SGD regime of the Tirer et al. experiments), the digits network
    (1,797 samples) full batch, and the Jacot-size network. A step's time is (time of S+1 steps - time of 1 step)/S,
    which leaves out the set-up and the metric recording every run does at its first and last step; the arms are
    interleaved and repeated; each ratio is taken within a repeat, where the arms ran seconds apart, and the
    median of those ratios is reported with their spread (min-max), which cancels most of a shared machine's drift.
    For every case it also prints the ceiling on that ratio. Whatever the implementation, a step of the 8
    models takes at least (a) the time of all its matrix products at the dense matmul rate, and (b) the time of
    those same products (forward, weight gradient and input gradient of every layer), each timed in its fastest
    form (median time, as for the arms): one batched product in either orientation, or model by model, and for
    the first layer, whose input all models share, also one wide product. The plain loop's time divided by the
    larger of (a) and (b) bounds what training together can gain on this machine: (b) leaves out every elementwise
    operation. (With minibatches, N is the batch size: all models draw the same batch, so they share its input.)
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import torch

from ncbook import data
from ncbook.nets import MLP, Ensemble
from ncbook.train import TrainConfig, one_hot_targets, train, train_ensemble


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_flops(device: str, n: int = 2048, repeats: int = 20, dtype: torch.dtype = torch.float32) -> float:
    """Best dense matmul rate (FLOP/s) on an n x n product (float32 unless ``dtype`` says otherwise)."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
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


def plain_loop(model: MLP, X: torch.Tensor, y: torch.Tensor, cfg: TrainConfig, gen: torch.Generator) -> None:
    """The sequential baseline: the textbook PyTorch training loop (same loss, weight decay and minibatches)."""
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    Y = one_hot_targets(y, int(y.max()) + 1, X.dtype)
    for _ in range(cfg.steps):
        idx = torch.randperm(len(y), generator=gen)[:cfg.batch_size].to(X.device) if cfg.batch_size else None
        xb, yb = (X, Y) if idx is None else (X[idx], Y[idx])
        loss = 0.5 * ((model(xb) - yb) ** 2).sum() / len(xb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


CASES = ("fullbatch", "minibatch", "digits", "jacot")
"""The cases of (2), in the order they run."""

ARMS = {
    "together": lambda models, X, y, cfgs: train_ensemble(Ensemble(models), X, y, cfgs, progress=False),
    "ncbook one by one": lambda models, X, y, cfgs: [train(m, X, y, c, progress=False) for m, c in zip(models, cfgs)],
    "plain loop one by one": lambda models, X, y, cfgs: [plain_loop(m, X, y, c, torch.Generator().manual_seed(0))
                                                         for m, c in zip(models, cfgs)],
}


def step_products(widths: list[int], n: int, models: int) -> list[list[tuple[int, int, int, int]]]:
    """Every matrix product of one step on n samples of ``models`` stacked networks, each as its possible
    decompositions (B, p, q, r): B products of a (p x q) by a (q x r) matrix. The first layer's input is shared, so
    its forward and weight gradient are one wide product or one per model; a later layer's forward, weight gradient
    and input gradient are one product per model."""
    M, (d0, d1) = models, widths[:2]
    out = [[(1, n, d0, M * d1), (M, n, d0, d1)], [(1, M * d1, n, d0), (M, d1, n, d0)]]
    for a, b in zip(widths[1:-1], widths[2:]):
        out += [[(M, b, a, n)], [(M, b, n, a)], [(M, a, b, n)]]
    return out


def product_floor(widths: list[int], n: int, models: int, dev: str, repeats: int = 10) -> float:
    """Seconds for all the products of a step on n samples of ``models`` networks, each timed (median of ``repeats``,
    like the arms) in the fastest of its forms: every decomposition, as one (batched) product in either orientation,
    or product by product."""
    total = 0.0
    for decompositions in step_products(widths, n, models):
        forms = []
        for B, p, q, r in decompositions:
            a, b = torch.randn(B, p, q, device=dev), torch.randn(B, q, r, device=dev)
            at, bt = torch.randn(B, r, q, device=dev), torch.randn(B, q, p, device=dev)
            forms += [lambda a=a, b=b: torch.bmm(a, b), lambda at=at, bt=bt: torch.bmm(at, bt),
                      lambda a=a, b=b: [u @ v for u, v in zip(a, b)]]
        for f in forms:
            f()
        total += min(statistics.median(time_training(f, dev) for _ in range(repeats)) for f in forms)
    return total


def step_times(widths, L1, X, y, batch, steps, repeats, dev) -> dict[str, list[float]]:
    """Seconds per training step of all 8 models, per arm and repeat: (t(steps + 1) - t(1)) / steps."""
    lams = [1e-4 * 2 ** i for i in range(8)]
    out = {arm: [] for arm in ARMS}
    for _ in range(repeats):
        for arm, fn in ARMS.items():
            t = []
            for n in (steps + 1, 1):
                cfgs = [TrainConfig(steps=n, lr=0.01, weight_decay=lam, momentum=0.9, batch_size=batch,
                                    record_every=10 ** 9) for lam in lams]
                torch.manual_seed(0)
                models = [MLP(widths, L1).to(dev) for _ in lams]
                t.append(time_training(partial(fn, models, X, y, cfgs), dev))
            out[arm].append((t[0] - t[1]) / steps)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=30, help="steps timed for the throughput (1)")
    p.add_argument("--ensemble-steps", type=int, default=100, help="steps timed per run in (2)")
    p.add_argument("--repeats", type=int, default=9, help="interleaved repeats of every arm in (2)")
    p.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES),
                   help="which cases of (2) to run (default: all; jacot takes minutes)")
    a = p.parse_args()
    dev = a.device
    if dev.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {dev}: no CUDA device is available here; run with --device cpu")
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
    peak = max(peak, matmul_flops(dev))     # again after the step: a slow moment cannot inflate the ratio
    per_step = (t_one - t_rec) / (a.steps - 1)
    achieved = step_flops(widths, len(y)) / per_step
    print(f"device {dev}, torch threads {torch.get_num_threads()}")
    print(f"(1) dense float32 matmul: {peak / 1e9:.1f} GFLOP/s; training step ({len(widths) - 1} layers of width 256,"
          f" N={len(y)}): {per_step * 1e3:.1f} ms = {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.0%} of matmul "
          f"(target >= 40%)")

    mnist500 = data.mnist5k(per_class=50, device=dev)
    cases = {"fullbatch": ("chapter-1 net 784-64-64-32-32-10, N=500, full batch", [784, 64, 64, 32, 32, 10], 2,
                           mnist500, None, a.ensemble_steps, a.repeats),
             "minibatch": ("chapter-1 net, minibatches of 128", [784, 64, 64, 32, 32, 10], 2, mnist500, 128,
                           a.ensemble_steps, a.repeats),
             "digits": ("digits net 64-32-32-32-16-16-10, N=1797, full batch", [64, 32, 32, 32, 16, 16, 10], 3,
                        data.digits(device=dev), None, a.ensemble_steps, a.repeats),
             "jacot": ("Jacot-size net 9 x 256, N=5000, full batch", widths, 5, (X, y), None, 10, min(a.repeats, 2))}
    for label, w, L1, (Xs, ys), batch, steps, reps in (cases[c] for c in CASES if c in a.cases):
        res = step_times(w, L1, Xs, ys, batch, steps, reps, dev)
        bad = [r for r in range(reps) if min(v[r] for v in res.values()) <= 0]
        if bad:     # t(steps + 1) <= t(1): something else took the cores during that repeat
            print(f"(2) {label}: warning: repeat(s) {bad} measured a step time <= 0 (the machine was busy); left out")
            res = {arm: [x for r, x in enumerate(v) if r not in bad] for arm, v in res.items()}
            if not res["together"]:
                print("    no repeat left: run it again on an idle machine")
                continue
        t = {arm: statistics.median(v) for arm, v in res.items()}
        spread = ", ".join(f"{arm} {1e3 * t[arm]:.1f} ms ({1e3 * min(v):.1f}-{1e3 * max(v):.1f})"
                           for arm, v in res.items())
        print(f"(2) {label}: per step of all 8 models, median of {len(res['together'])}: {spread}")
        ratio = {arm: sorted(a / b for a, b in zip(res[arm], res["together"]))
                 for arm in ("plain loop one by one", "ncbook one by one")}    # each repeat's arms ran side by side
        print("    together is " + ", ".join(f"{statistics.median(r):.1f}x ({r[0]:.1f}-{r[-1]:.1f}) faster than the "
                                          f"{arm}" for arm, r in ratio.items()) + " (median of the repeats' ratios; "
              "target >= 3x)")
        n = batch or len(ys)        # a minibatch step's products have the batch's size; all models share it
        at_peak = 8 * step_flops(w, n) / peak
        floor = product_floor(w, n, 8, dev)
        print(f"    ceiling: the step's products take {1e3 * at_peak:.1f} ms at the matmul rate and "
              f"{1e3 * floor:.1f} ms each in its fastest form, so training together can beat the plain loop by "
              f"at most {t['plain loop one by one'] / max(at_peak, floor):.1f}x on this machine")


if __name__ == "__main__":
    main()
