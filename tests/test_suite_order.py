"""``make unit`` hands whole test files to two processes, the longest first (``conftest.LONGEST_FIRST``), so that
the two end together: every name there is a test file, named once; pytest collects them first, in that order, each
file's tests in their own order; and the Makefile keeps xdist from sorting them again (by their number of tests)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

TESTS = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("tests_conftest", TESTS / "conftest.py")
assert _spec and _spec.loader
conftest = importlib.util.module_from_spec(_spec)       # by its path: the repository's root has a conftest.py too
_spec.loader.exec_module(conftest)


def test_every_file_named_longest_first_is_a_test_file_named_once():
    assert len(set(conftest.LONGEST_FIRST)) == len(conftest.LONGEST_FIRST)
    assert all((TESTS / name).is_file() for name in conftest.LONGEST_FIRST)


NAMES = ["test_a.py", conftest.LONGEST_FIRST[1], "test_a.py", conftest.LONGEST_FIRST[0], conftest.LONGEST_FIRST[1],
         "test_b.py"]


def collected(**options: bool) -> list[tuple[str, int]]:
    """The files and places of NAMES' tests after the collection hook, given the command line's options."""
    config = SimpleNamespace(getoption=lambda name: options.get(name.lstrip("-").replace("-", "_"), False))
    items = [SimpleNamespace(path=TESTS / name, n=i, keywords={}) for i, name in enumerate(NAMES)]
    conftest.pytest_collection_modifyitems(config, items)
    return [(item.path.name, item.n) for item in items]


def test_collection_puts_the_longest_files_first_and_keeps_each_files_order():
    assert collected(runslow=True, longest_first=True) == [
        (conftest.LONGEST_FIRST[0], 3), (conftest.LONGEST_FIRST[1], 1), (conftest.LONGEST_FIRST[1], 4),
        ("test_a.py", 0), ("test_a.py", 2), ("test_b.py", 5)]


def test_any_other_run_keeps_the_order_it_was_given():
    """The mutation check names the mutated module's file first: sorting it behind the longest files for every
    mutant more than doubled the check's time."""
    assert collected(runslow=True) == [(name, i) for i, name in enumerate(NAMES)]


def test_make_unit_hands_out_files_in_collection_order():
    unit = re.search(r"^unit:\n\t(.+)$", (TESTS.parent / "Makefile").read_text(), re.M)
    assert unit and all(flag in unit.group(1) for flag in ("--dist loadfile", "--longest-first",
                                                           "--no-loadscope-reorder"))
