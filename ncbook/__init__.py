"""ncbook: neural collapse, derived and reproduced."""

import importlib.util

__version__ = "0.1.0"

EXTRAS = {"train": ("sklearn", "mlxtend", "torchvision"), "figures": ("matplotlib", "PIL")}
"""The optional dependencies of ``pip install 'ncbook[extra]'`` (``pyproject.toml``), by the module each provides."""


def require_extra(module: str, extra: str) -> None:
    """ImportError, on one line naming the extra to install, if a module of ``extra`` is missing."""
    missing = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"{module} needs {', '.join(missing)}, part of ncbook's '{extra}' extra: "
                          f"pip install 'ncbook[{extra}]'")
