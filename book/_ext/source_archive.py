"""Sphinx extension: the book carries its own code. After an HTML build the site holds ``ncbook-source.zip`` (the
package, the chapters as MyST notebooks, the shipped results and what installs them) and ``ncbook-source.zip.sha256``;
every chapter's "Run this chapter yourself" box links to both (``scripts/bootstrap.py`` writes the box).

The archive is reproducible: its members are sorted and dated 1980-01-01, so the same tree gives the same bytes and
the same checksum. It unpacks into one folder, ``ncbook-source/``. The chapters are the ones this build rendered (the
student edition's have no solutions); the package and the results come from the repository the build runs in.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

ARCHIVE = "ncbook-source.zip"
FOLDER = "ncbook-source"
FILES = ("README.md", "requirements.txt", "pyproject.toml", "Makefile", "jupytext.toml", "LICENSE", "LICENSE-TEXT.md",
         "CITATION.cff", "CHANGELOG.md", "scripts/jupyterlab_overrides.json")
TREES = {"ncbook": ("*.py",), "results": ("*.json", "*.npz", "*.md"), "book": ("ch*.md",)}


def code_root(srcdir: Path) -> Path:
    """The repository a build runs in: the source folder, or the nearest folder above it holding the package."""
    for folder in (srcdir, *srcdir.parents):
        if (folder / "ncbook" / "__init__.py").is_file():
            return folder
    raise FileNotFoundError(f"no ncbook package in {srcdir} or above it: the book is built outside its repository")


def source_files(srcdir: Path, root: Path | None = None) -> dict[str, Path]:
    """Name in the archive -> file: the chapters of ``srcdir``, everything else from its repository (``root``,
    found from ``srcdir`` by default)."""
    root = root or code_root(srcdir)
    out = {f: root / f for f in FILES if (root / f).is_file()}
    for tree, patterns in TREES.items():
        base = srcdir if tree == "book" else root
        for pattern in patterns:
            for p in (base / tree).rglob(pattern):
                if p.is_file() and not {".locks", ".checkpoints", "__pycache__"} & set(p.relative_to(base).parts):
                    out[p.relative_to(base).as_posix()] = p
    return dict(sorted(out.items()))


def write_archive(srcdir: Path, target: Path) -> str:
    """Write the archive of ``srcdir`` to ``target`` (atomically) and its checksum beside it; returns the sha256."""
    tmp = target.with_suffix(".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, path in source_files(srcdir).items():
            info = zipfile.ZipInfo(f"{FOLDER}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    tmp.replace(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    target.with_name(target.name + ".sha256").write_text(f"{digest}  {target.name}\n")
    return digest


def _build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        write_archive(Path(app.srcdir), Path(app.outdir) / ARCHIVE)


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
