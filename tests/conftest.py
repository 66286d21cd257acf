"""Shared test helpers."""

import pytest


@pytest.fixture
def kill_at_step(monkeypatch):
    """``kill_at_step(cls, n)`` makes optimiser class ``cls`` raise KeyboardInterrupt at its n-th ``step`` (an
    injected kill) and returns a function that restores the real ``step``."""

    def install(cls, n: int):
        real_step, calls = cls.step, {"n": 0}

        def dying_step(self, *args, **kwargs):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt("killed (injected)")
            return real_step(self, *args, **kwargs)

        monkeypatch.setattr(cls, "step", dying_step)
        return lambda: monkeypatch.setattr(cls, "step", real_step)

    return install
