"""Benchmark of ncbook.cost's time estimates (run it, don't time it in a test):

    python benchmarks/bench_cost.py [--threads 1]

In one run: this machine's large-product rates and per-layer step overhead, measured now with ``--threads`` threads,
beside the fixed rates of the machine that made the shipped results (``cost.REFERENCE_CPU``), as ratios; then, for
every shipped result, its recorded wall time over the estimate at each set of rates. The first column moves with
this machine and its load, the second does not (it is what ``tests/test_cost.py`` checks).
"""

from __future__ import annotations

import argparse
import json

import torch

from ncbook import cache, cost
from ncbook.registry import EXPERIMENTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the Part IV results used one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ref = cost.REFERENCE_CPU
    live = {"float32": cost.matmul_rate("cpu", "float32"), "float64": cost.matmul_rate("cpu", "float64"),
            "layer_step": cost.layer_step_seconds("cpu")}
    print(f"rates with {args.threads} thread(s), this machine now / {ref['name']}:")
    for k, v in live.items():
        print(f"  {k:>10}: {v:.3g} / {ref[k]:.3g} = {v / ref[k]:.2f}")
    print(f"\n{'result':<48} {'wall s':>8} {'wall / est. now':>16} {'wall / est. ref':>16}")
    for path in sorted(cache.results_dir().glob("*/*.json")):
        m = json.loads(path.read_text())
        c = cost.estimate(EXPERIMENTS[m["experiment"]].config(m["base_scale"], **m["overrides"]))
        wall = m["provenance"]["wall_time_s"]
        now = c.flops / live[c.dtype] + c.layer_steps * live["layer_step"]
        print(f"{m['experiment'] + '/' + path.stem:<48.48} {wall:>8.0f} {wall / now:>16.2f} "
              f"{wall / cost.reference_seconds(c, ref):>16.2f}")


if __name__ == "__main__":
    main()
