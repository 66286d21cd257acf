"""ncbook.runner: results are made only by running, loaded only when current, and the shipped ones verify and fit the
budget."""

import pytest

from ncbook import cache, registry, runner


def test_missing_result_says_how_to_make_it(tmp_path):
    with pytest.raises(cache.CacheError, match=r"missing.*`make exp`"):
        cache.load("exp", "tiny", "k1", tmp_path, regen="make exp")
    with pytest.raises(cache.CacheError, match=r"missing.*python -m ncbook run jacot_mlp --scale tiny --set steps=7"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=7)


def test_changing_the_producing_code_makes_the_result_stale(tmp_path, monkeypatch):
    results = tmp_path / "results"
    runner.run_and_cache("jacot_mlp", "tiny", progress=False, root=results)
    assert runner.verify(results) == [("jacot_mlp", "tiny", "ok")]
    real = registry.code_hash      # what a real edit to code the run reaches does to it: tests/test_codehash.py
    monkeypatch.setattr(registry, "code_hash", lambda run: real(run) + "+an edit")
    [(name, tag, status)] = runner.verify(results)
    assert "stale" in status and "python -m ncbook run jacot_mlp --scale tiny" in status
    with pytest.raises(cache.CacheError, match="stale"):
        runner.get("jacot_mlp", "tiny", root=results)


def test_a_missing_result_is_never_computed_by_reading_it(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(cache.CacheError, match="missing") as err:
        runner.get("jacot_mlp", "tiny", root=tmp_path)
    assert err.value.kind == "missing" and not list(tmp_path.rglob("*.npz"))


def test_every_shipped_result_verifies():
    rows = runner.verify()
    assert rows, "no shipped results found under results/"
    assert all(status == "ok" for _, _, status in rows), rows


def test_shipped_results_fit_the_budget():
    """Every shipped result is a `cpu` one; together they regenerate in at most 3 hours of recorded wall time on the
    2-core machine that made them and take at most 50 MB (Part IV's budget)."""
    cost = runner.shipped_cost()
    assert cost and all(tag.split("--")[0] == "cpu" for _, tag in cost)
    assert sum(w for w, _ in cost.values()) <= 3 * 3600
    assert sum(b for _, b in cost.values()) <= 50e6
