"""Mutation check: every ncbook function that implements a formula or a bound of the papers is tested.

    python scripts/mutation_check.py [--jobs 2] [--only NAME ...]

For each function below, the theory tests are run with the function's output scaled (the function is wrapped at
import time by this file acting as a pytest plugin; no file is edited):

* by (1 + 1e-3), which at least one test must notice: its value is tested against an independent computation;
* for a bound, by 1/2 (upper bounds) or 2 (lower bounds), which at least one test must notice too: the bound is
  tested where it is tight, so that the stronger, false bound is violated.

A mutant that no test notices "survives". The script prints the survivors and exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_theory.py", "tests/test_bounds.py", "tests/test_ufm.py", "tests/test_metrics.py",
         "tests/test_stability.py"]                    # the first kills most mutants, and -x stops there
ENV_VAR = "NCBOOK_MUTANT"
SMALL = 1 + 1e-3

# (module, function, kind): "value" (a formula), "upper" or "lower" (a bound of the papers, or of the book)
TARGETS: list[tuple[str, str, str]] = [
    # Tirer et al.: the UFMs, the central path, the perturbation map
    ("ufm", "objective", "value"),
    ("ufm", "collapse_norms", "value"),
    ("ufm", "minimum_value", "value"),
    ("ufm", "optimal_W", "value"),
    ("ufm", "central_path_loss", "value"),
    ("ufm", "central_path_loss_closed_form", "value"),
    ("ufm", "central_path_gradient", "value"),
    ("ufm", "central_path_hessian", "value"),
    ("ufm", "exact_map_jacobian", "value"),
    ("ufm", "first_order_map", "value"),
    ("ufm", "intra_block_spectrum", "value"),
    ("ufm", "inter_block_singular_value", "value"),
    ("ufm", "exact_intra_block_spectrum", "value"),
    ("ufm", "exact_inter_block_singular_value", "value"),
    ("ufm", "gnc1", "value"),
    ("ufm", "curvature_lower_bound", "lower"),
    ("ufm", "lipschitz_constant", "upper"),
    ("ufm", "gradient_growth_constant", "upper"),
    # Jacot et al.: Theorem 3.1 and Section 5
    ("bounds", "op_norm", "value"),
    ("bounds", "kappa", "value"),
    ("bounds", "balancedness_gap", "value"),
    ("bounds", "psi", "value"),
    ("bounds", "nc1_bound", "upper"),
    ("bounds", "kappa_bound", "upper"),
    ("bounds", "nc2_bound", "upper"),
    ("bounds", "nc3_bound", "lower"),
    ("bounds", "lemma_c2_gap", "value"),
    ("bounds", "lemma_c2_bound", "upper"),
    ("bounds", "lemma_c1_constant", "upper"),
    ("bounds", "shifted_pl_offset", "upper"),
    ("bounds", "balancing_forcing_bound", "upper"),
    ("bounds", "prop_5_1_bound", "upper"),
    ("bounds", "thm_5_2_bounds", "upper"),
    ("bounds", "ntk_op_norm", "value"),
    ("bounds", "ntk_lower_bound", "lower"),
    ("bounds", "prop_5_3_kappa_bounds", "upper"),
    ("bounds", "top_hessian_eigenvalue", "value"),
    # the metrics of the collapse
    ("metrics", "nc1_trace_ratio", "value"),
    ("metrics", "nc1_pinv", "value"),
    ("metrics", "nc1_per_class", "value"),
    ("metrics", "within_class_covariance", "value"),
    ("metrics", "between_class_covariance", "value"),
    ("metrics", "nc2_condition_number", "value"),
    ("metrics", "nc2_etf_distance", "value"),
    ("metrics", "nc2_orthogonal_frame_distance", "value"),
    ("metrics", "nc3_cosine", "value"),
    ("metrics", "nc3_class_mean_cosine", "value"),
    ("metrics", "nc3_etf_distance", "value"),
    ("metrics", "balancedness", "value"),
    ("metrics", "negativity", "value"),
    ("metrics", "simplex_etf_gram", "value"),
    # the loss of Section 4
    ("stability", "regularised_loss", "value"),
]


def scale(x, factor: float):
    """x times factor, for floats and float arrays, recursively through tuples, lists and dicts; ints unchanged."""
    import numpy as np
    import torch

    if isinstance(x, bool) or isinstance(x, int | np.integer):
        return x
    if isinstance(x, float | np.floating):
        return type(x)(x * factor)
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        return x * factor
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x * factor
    if isinstance(x, tuple | list):
        return type(x)(scale(v, factor) for v in x)
    if isinstance(x, dict):
        return {k: scale(v, factor) for k, v in x.items()}
    return x


def pytest_configure(config) -> None:
    """As a pytest plugin: wrap the function named by $NCBOOK_MUTANT = 'module:function:factor'."""
    spec = os.environ.get(ENV_VAR)
    if not spec:
        return
    module_name, name, factor = spec.split(":")
    module = importlib.import_module(f"ncbook.{module_name}")
    real = getattr(module, name)

    def mutant(*args, **kwargs):
        return scale(real(*args, **kwargs), float(factor))

    setattr(module, name, mutant)


def mutants(only: list[str] | None) -> list[tuple[str, str, float]]:
    out = []
    for module, name, kind in TARGETS:
        if only and name not in only:
            continue
        out.append((module, name, SMALL))
        if kind != "value":
            out.append((module, name, 0.5 if kind == "upper" else 2.0))
    return out


def survives(module: str, name: str, factor: float) -> bool:
    """Run the theory tests against one mutant; True if they all pass (the mutant survives)."""
    env = {**os.environ, ENV_VAR: f"{module}:{name}:{factor!r}", "PYTHONPATH": str(ROOT / "scripts"),
           "TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "mutation_check", "-p", "no:cacheprovider", *TESTS]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        raise RuntimeError(f"pytest could not run the mutant {module}.{name} x {factor}:\n{res.stdout[-2000:]}")
    return res.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    ap.add_argument("--only", nargs="*", help="function names to check (default: all)")
    args = ap.parse_args()
    # a target that no longer exists is an error, not a pass
    for module, name, _ in [t for t in TARGETS if not args.only or t[1] in args.only]:
        if not hasattr(importlib.import_module(f"ncbook.{module}"), name):
            print(f"mutation check: ncbook.{module}.{name} does not exist; update TARGETS in {__file__}")
            return 2
    todo = mutants(args.only)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        alive = list(pool.map(lambda m: survives(*m), todo))
    survivors = [f"{m}.{n} x {f:g}" for (m, n, f), a in zip(todo, alive) if a]
    print(f"mutation check: {len(todo)} mutants of {len({(m, n) for m, n, _ in todo})} functions, "
          f"{len(todo) - len(survivors)} killed, {len(survivors)} survived ({time.perf_counter() - t0:.0f} s)")
    for s in survivors:
        print(f"  survived: {s}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
