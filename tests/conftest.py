"""Shared fixtures, and the ``slow`` marker: ``pytest`` runs the quick suite (under 3 minutes on 2 cores);
``pytest --runslow`` (what ``make test`` and CI run) adds the slow tests (the ResNet18 paths, the command line in
subprocesses, the real browser)."""

import pytest
import torch

from ncbook import data


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (ResNet18, command line, browser)")
    parser.addoption("--longest-first", action="store_true", default=False,
                     help="collect the files of LONGEST_FIRST first, in that order (make unit)")


LONGEST_FIRST = ("test_browser.py", "test_captured.py", "test_first_steps.py", "test_relay.py", "test_cli.py",
                 "test_smoke.py", "test_package.py", "test_bench.py", "test_device.py", "test_book_scales.py",
                 "test_train.py", "test_exercises.py", "test_bootstrap.py", "test_batch.py", "test_attacks.py",
                 "test_codehash.py", "test_bounds.py")
"""The test files that take longest with --runslow, longest first (timed with ``--durations``: the suite in one
process, test_browser alone, on 2026-12-06); the others follow as collected. Only with ``--longest-first``: any
other run keeps the order it was given (the mutation check puts the mutated module's own file first: with
test_bounds.py first for every mutant it took 560 s, not 246). ``make unit`` hands whole files to two processes in
this order (``--dist loadfile --no-loadscope-reorder``; xdist's own order, most tests first, left the
2-minute relay and package files to the end, one process finishing them while the other stood idle): longest first,
the two processes end within a short file of each other."""


def pytest_collection_modifyitems(config, items):
    if config.getoption("--longest-first"):
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))     # stable: each file's tests stay in order
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow (make test does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _digits(per_class: int):
    X, y = data.digits(dtype=torch.float64)
    idx = torch.as_tensor(data.balanced_subset(y.numpy(), per_class, 0))
    return X[idx], y[idx]


@pytest.fixture(scope="session")
def digits100():
    """100 of scikit-learn's digits (10 a class), standardised, float64."""
    return _digits(10)


@pytest.fixture(scope="session")
def digits40():
    """40 digits (4 a class), scaled to std 1/16 as the GD experiments of chapters 6-7 scale them."""
    X, y = _digits(4)
    return X / 16, y


@pytest.fixture
def kill_at_step(monkeypatch):
    """``kill_at_step(owner, n, name="step")`` makes ``owner.name`` (an optimiser class's ``step``, or a module's
    update function) raise KeyboardInterrupt at its n-th call (an injected kill) and returns a function that
    restores the real one."""

    def install(owner, n: int, name: str = "step"):
        real, calls = getattr(owner, name), {"n": 0}

        def dying(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt("killed (injected)")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, dying)
        return lambda: monkeypatch.setattr(owner, name, real)

    return install


@pytest.fixture
def one_thread():
    """PyTorch on one thread for the test (as `make test` runs), restored after: for comparisons to the last bit of
    float32 results that batch different numbers of models together (their products split differently on more
    threads)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
