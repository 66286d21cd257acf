"""ncbook: neural collapse, derived and reproduced."""

import importlib.util
import json
import urllib.parse

__version__ = "0.1.0"

EXTRAS = {"train": ("sklearn", "mlxtend", "torchvision"), "figures": ("matplotlib", "PIL", "ipywidgets")}
"""The optional dependencies of each extra of ``pyproject.toml``, by the module each provides."""


def install_command(extra: str) -> str:
    """The pip command that adds ``extra`` to this ncbook from where it was installed (PEP 610's direct_url.json): a
    clone or an unpacked source archive (editable or not), or a wheel file; else the form for a clone (ncbook is not
    on PyPI, so ``pip install 'ncbook[extra]'`` would not find it)."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        info = json.loads(distribution("ncbook").read_text("direct_url.json") or "null")
    except (PackageNotFoundError, ValueError):
        info = None
    url = (info or {}).get("url", "")
    if url.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
        if "dir_info" in info:
            return f"pip install {'-e ' * bool(info['dir_info'].get('editable'))}'{path}[{extra}]'"
        return f"pip install 'ncbook[{extra}] @ {url}'"
    return f"pip install '.[{extra}]' in the folder of the book's source (a clone, or its source archive unpacked)"


def require_extra(module: str, extra: str) -> None:
    """ImportError, on one line naming the extra and the command that installs it, if a module of ``extra`` is
    missing."""
    missing = [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"{module} needs {', '.join(missing)}, part of ncbook's '{extra}' extra: "
                          f"{install_command(extra)}")
