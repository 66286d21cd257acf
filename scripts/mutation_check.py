"""Mutation check: every ncbook function that implements a formula or a bound of the papers is tested.

    python scripts/mutation_check.py [--jobs 2] [--only NAME ...]

For each function below, the theory tests are run with the function's output scaled (the function is wrapped in a
child process forked after torch and ncbook are imported, so that each mutant costs only its tests; no file is
edited):

* by (1 + 1e-3), which at least one test must notice: its value is tested against an independent computation;
* for a bound, by 1/2 (upper bounds) or 2 (lower bounds), which at least one test must notice too: the bound is
  tested where it is tight, so that the stronger, false bound is violated.

A mutant that no test notices "survives". The script prints the survivors and exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")        # before torch is imported: children are forked from here
os.environ.setdefault("TQDM_DISABLE", "1")
ROOT = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_bounds.py", "tests/test_ufm.py", "tests/test_metrics.py", "tests/test_stability.py",
         "tests/test_scaling.py"]
HOME = {"metrics": "tests/test_metrics.py", "ufm": "tests/test_ufm.py", "bounds": "tests/test_bounds.py",
        "stability": "tests/test_stability.py", "scaling": "tests/test_scaling.py"}
SMALL = 1 + 1e-3

# (module, function, kind): "value" (a formula), "upper" or "lower" (a bound of the papers, or of the book)
TARGETS: list[tuple[str, str, str]] = [
    # Tirer et al.: the UFMs, the central path, the perturbation map
    ("ufm", "objective", "value"),
    ("ufm", "proximal_objective", "value"),
    ("ufm", "collapse_norms", "value"),
    ("ufm", "minimum_value", "value"),
    ("ufm", "collapsed_minimiser", "value"),
    ("ufm", "optimal_W", "value"),
    ("ufm", "central_path_loss", "value"),
    ("ufm", "central_path_loss_closed_form", "value"),
    ("ufm", "central_path_gradient", "value"),
    ("ufm", "stationarity_residual", "value"),
    ("ufm", "central_path_hessian", "value"),
    ("ufm", "exact_map_jacobian", "value"),
    ("ufm", "first_order_map", "value"),
    ("ufm", "intra_block_spectrum", "value"),
    ("ufm", "mean_curvature", "value"),
    ("ufm", "inter_block_singular_value", "value"),
    ("ufm", "spectrum_values", "value"),
    ("ufm", "exact_intra_block_spectrum", "value"),
    ("ufm", "exact_inter_block_singular_value", "value"),
    ("ufm", "gnc1", "value"),
    ("ufm", "curvature_lower_bound", "lower"),
    ("ufm", "lipschitz_constant", "upper"),
    ("ufm", "lipschitz_constant_as_extracted", "value"),       # the paper's printed constant (shown to fail)
    ("ufm", "gradient_growth_constant", "upper"),
    # sharp for stationary points (prop-beta-sharp): below it the saddle near 0 raises gNC1, so halving it is caught
    ("ufm", "beta_threshold_nc1", "upper"),
    ("ufm", "small_input_gnc1_factor", "value"),
    ("ufm", "linearised_stationary_point", "value"),
    ("ufm", "newton_stationary", "value"),
    # Jacot et al.: Theorem 3.1 and Section 5
    ("bounds", "op_norm", "value"),
    ("bounds", "product", "value"),
    ("bounds", "balanced_chain", "value"),
    ("bounds", "nc3_terms", "value"),
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
    ("bounds", "worst_balancing_forcing", "value"),
    ("bounds", "printed_forcing_fails_below", "value"),
    ("bounds", "thm44_eps1_max", "value"),
    ("bounds", "prop_5_1_bound", "upper"),
    ("bounds", "thm_5_2_bounds", "upper"),
    ("bounds", "ntk_op_norm", "value"),
    ("bounds", "ntk_lower_bound", "lower"),
    ("bounds", "prop_5_3_kappa_bounds", "upper"),
    ("bounds", "top_hessian_eigenvalue", "value"),
    # the metrics of the collapse
    ("metrics", "class_means", "value"),
    ("metrics", "class_mean_cosines", "value"),
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
    ("metrics", "cosine_bound", "upper"),
    # the loss of Section 4
    ("stability", "regularised_loss", "value"),
    # what governs Part IV's claims
    ("scaling", "lr_sum", "value"),
    ("scaling", "decay_times", "value"),
    ("scaling", "decay_time_at", "value"),
    ("scaling", "paper_decay_time_range", "value"),
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


def mutants(only: list[str] | None) -> list[tuple[str, str, float]]:
    out = []
    for module, name, kind in TARGETS:
        if only and name not in only:
            continue
        out.append((module, name, SMALL))
        if kind != "value":
            out.append((module, name, 0.5 if kind == "upper" else 2.0))
    return out


def test_order(module: str) -> list[str]:
    """The theory tests, the mutated module's own test file first (it opens with its by-hand checks, which kill most
    mutants; with -x, the first failure ends the run)."""
    return [HOME[module]] + [t for t in TESTS if t != HOME[module]]


def run_mutant(module: str, name: str, factor: float) -> int:
    """In a forked child: wrap ncbook.<module>.<name> so that its output is scaled, run the tests, return pytest's
    exit code (0: every test passed, so the mutant survives)."""
    import pytest

    mod = importlib.import_module(f"ncbook.{module}")
    real = getattr(mod, name)

    def mutant(*args, **kwargs):
        return scale(real(*args, **kwargs), factor)

    setattr(mod, name, mutant)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    # without nbval's plugin, which no theory test needs: loading it (nbformat, jsonschema's format grammars) took
    # 3 of each mutant's 3.5 s of collection; pytest.ini's addopts (an nbval option) go with it
    return int(pytest.main(["-x", "-q", "-o", "addopts=", "-p", "no:cacheprovider", "-p", "no:nbval",
                            *test_order(module)]))


def run_all(todo: list[tuple[str, str, float]], jobs: int) -> list[bool]:
    """Each mutant in a child forked from this process, which has imported torch and ncbook once; ``jobs`` at a time.
    Returns, per mutant, whether it survived."""
    alive: dict[int, int] = {}
    codes: list[int | None] = [None] * len(todo)
    queue = list(range(len(todo)))
    while queue or alive:
        while queue and len(alive) < jobs:
            i = queue.pop(0)
            pid = os.fork()
            if pid == 0:                                     # the child never returns
                code = 3
                try:
                    code = run_mutant(*todo[i])
                finally:
                    os._exit(code)
            alive[pid] = i
        pid, status = os.wait()
        codes[alive.pop(pid)] = os.waitstatus_to_exitcode(status)
    for (module, name, factor), code in zip(todo, codes):
        if code not in (0, 1):
            raise RuntimeError(f"pytest could not run the mutant {module}.{name} x {factor:g} (exit code {code})")
    return [code == 0 for code in codes]


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
    os.chdir(ROOT)
    import pytest  # noqa: F401  (imported once here, before the children are forked)
    t0 = time.perf_counter()
    alive = run_all(todo, max(1, args.jobs))
    survivors = [f"{m}.{n} x {f:g}" for (m, n, f), a in zip(todo, alive) if a]
    print(f"mutation check: {len(todo)} mutants of {len({(m, n) for m, n, _ in todo})} functions, "
          f"{len(todo) - len(survivors)} killed, {len(survivors)} survived ({time.perf_counter() - t0:.0f} s)")
    for s in survivors:
        print(f"  survived: {s}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
