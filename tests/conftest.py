"""Shared test helpers."""

import pytest


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
