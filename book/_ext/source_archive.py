"""Sphinx extension: the book carries its own code. After an HTML build the site holds ``ncbook-source.zip`` (the
package, the chapters as MyST notebooks, the shipped results and what installs them) and ``ncbook-source.zip.sha256``;
every chapter's "Run this chapter yourself" box links to both (``scripts/bootstrap.py`` writes the box).

The archive is reproducible: its members are sorted and dated 1980-01-01, so the same tree gives the same bytes and
the same checksum. It unpacks into one folder, ``ncbook-source/``. The chapters are the ones this build rendered (the
student edition's have no solutions); the package and the results come from the repository the build runs in.

Every file of the repository the text cites as code (``results/README.md``, ``tests/test_claims.py``) or the
footer names (``CITATION.cff``, ``LICENSE``) opens from the page: the build copies it to ``_sources/<its path>`` (where
Sphinx already keeps each chapter's source) and the citation links there; the archive carries it too.

Beside it, the students' archive ``ncbook-student-source.zip`` (linked from the instructors' page): the same with
the chapters as the student edition has them (``scripts/student_edition.py``: no solutions, empty answer cells), the
problem set, and a README for students. Neither carries the problem set's solutions (:data:`UNPUBLISHED`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import zipfile
from pathlib import Path

from docutils import nodes
from sphinx.util.osutil import relative_uri

ARCHIVE = "ncbook-source.zip"
FOLDER = "ncbook-source"
STUDENT_ARCHIVE = "ncbook-student-source.zip"
STUDENT_FOLDER = "ncbook-student"
FILES = ("README.md", "requirements.txt", "pyproject.toml", "Makefile", "jupytext.toml", "LICENSE", "LICENSE-TEXT.md",
         "CITATION.cff", "CHANGELOG.md", "scripts/jupyterlab_overrides.json")
TREES = {"ncbook": ("*.py",), "results": ("*.json", "*.npz", "*.md"), "book": ("ch*.md", "problem_set.md")}
CITED = "_sources"
"""Where the HTML build puts the files the text cites (with Sphinx's copies of the pages' sources)."""
FOOTER = ("CITATION.cff", "LICENSE", "LICENSE-TEXT.md")
"""The files the page footer names (``_config.yml``'s ``extra_footer``)."""
UNPUBLISHED = ("course/",)
"""What neither the site nor an archive carries, even where the text names it: the problem set's solutions."""
ARCHIVE_README = """# ncbook: the book's code, to run its chapters

This archive is the code of *Neural collapse, derived and reproduced*, as the site you downloaded it from renders it:
the package `ncbook`, every chapter as a MyST notebook (`book/ch*.md`), the cached results the chapters load
(`results/`), and what installs them. It runs the chapters; it does not build the book's HTML (that needs the book's
repository, with its table of contents, extensions and assets).

    make install      # a virtual environment in .venv with everything (Python 3.11 to 3.13; a few minutes)
    make lab          # JupyterLab on book/: open a chapter (the .md opens as a notebook), then Run All

Without make: `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt`, then `.venv/bin/jupyter lab book/`
from this folder. In Colab: upload this zip beside a chapter's notebook (the page's download button) and run the
notebook: its first cell unpacks the package from the zip. `python -m ncbook verify` checks the cached results;
`python -m ncbook run NAME --scale cpu` makes one again. Only `make install` and `make lab` of the Makefile apply
here.
"""
"""The archive's README (the repository's describes the repository, whose commands need more than the archive)."""
_LITERAL = re.compile(r"`([^`\s]+)`")


def code_root(srcdir: Path) -> Path:
    """The repository a build runs in: the source folder, or the nearest folder above it holding the package."""
    for folder in (srcdir, *srcdir.parents):
        if (folder / "ncbook" / "__init__.py").is_file():
            return folder
    raise FileNotFoundError(f"no ncbook package in {srcdir} or above it: the book is built outside its repository")


def cited_file(text: str, root: Path) -> str | None:
    """``text`` as the path of a file of the repository ``root`` (``tests/test_claims.py``), or None: no such file, a
    folder, or a path leaving the repository or into a build or environment folder."""
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]*", text) or ".." in text.split("/"):
        return None
    if text.split("/")[0] in {"_build", ".venv", ".git"} or text.startswith((".venv", *UNPUBLISHED)):
        return None
    return text if (root / text).is_file() else None


def cited_files(srcdir: Path, sources: list[Path], root: Path | None = None) -> dict[str, Path]:
    """Name -> file of every repository file the ``sources`` cite as code, and the footer's."""
    root = root or code_root(srcdir)
    names = set(FOOTER)
    for source in sources:
        names |= set(_LITERAL.findall(source.read_text(encoding="utf-8")))
    # a chapter cited as code is the one this build renders (the student edition's has no solutions), not the
    # repository's: the copy under _sources/ and the page's own download must be the same file
    return {name: (srcdir if name.startswith("book/") and (srcdir / name).is_file() else root) / name
            for name in sorted(names) if cited_file(name, root)}


def source_files(srcdir: Path, root: Path | None = None) -> dict[str, Path]:
    """Name in the archive -> file: the chapters of ``srcdir``, everything else from its repository (``root``,
    found from ``srcdir`` by default), with every file the chapters cite."""
    root = root or code_root(srcdir)
    out = {f: root / f for f in FILES if (root / f).is_file()}
    out |= {name: path for name, path in cited_files(srcdir, sorted((srcdir / "book").glob("*.md")), root).items()
            if not name.startswith("book/")}
    for tree, patterns in TREES.items():
        base = srcdir if tree == "book" else root
        for pattern in patterns:
            for p in (base / tree).rglob(pattern):
                if p.is_file() and not {".locks", ".checkpoints", "__pycache__"} & set(p.relative_to(base).parts):
                    out[p.relative_to(base).as_posix()] = p
    return dict(sorted(out.items()))


def write_archive(files: dict[str, bytes], target: Path, folder: str = FOLDER) -> str:
    """Write ``files`` (name -> bytes) under ``folder/`` to the archive ``target`` (atomically) and its checksum
    beside it; returns the sha256."""
    tmp = target.with_suffix(".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    tmp.replace(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    target.with_name(target.name + ".sha256").write_text(f"{digest}  {target.name}\n")
    return digest


def student_edition(root: Path):
    """``scripts/student_edition.py`` of the repository ``root``: how the student edition removes solutions."""
    spec = importlib.util.spec_from_file_location("student_edition", root / "scripts" / "student_edition.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def student_files(srcdir: Path) -> dict[str, bytes]:
    """The students' archive: the source archive's files, its chapters without solutions, a README for students."""
    edition = student_edition(code_root(srcdir))
    files = {name: path.read_bytes() for name, path in source_files(srcdir).items()}
    for name in files:
        if re.fullmatch(r"book/ch\w+\.md", name):
            files[name] = edition.student_text(files[name].decode("utf-8")).encode("utf-8")
    files["README.md"] = edition.HANDOUT_README.encode("utf-8")
    return files


def link_cited_files(app, doctree, docname) -> None:
    """Make each code literal that names a repository file a link to its copy under ``_sources/``."""
    if app.builder.format != "html":
        return
    root = code_root(Path(app.srcdir))
    for literal in list(doctree.findall(nodes.literal)):
        name = cited_file(literal.astext(), root)
        if name is None or isinstance(literal.parent, nodes.reference):
            continue
        uri = relative_uri(app.builder.get_target_uri(docname), f"{CITED}/{name}")
        link = nodes.reference("", "", internal=False, refuri=uri, classes=["ncbook-cited"],
                               reftitle=f"open {name} (a copy of the repository's file)")
        literal.replace_self(link)
        link += literal


def link_footer(app, pagename, templatename, context, doctree) -> None:
    """Make the footer's ``<code>CITATION.cff</code>`` (and the licences) links to their copies."""
    footer = context.get("theme_extra_footer")
    if app.builder.format != "html" or not footer:
        return
    for name in FOOTER:
        href = context["pathto"](f"{CITED}/{name}", 1)
        footer = footer.replace(f"<code>{name}</code>", f'<a href="{href}"><code>{name}</code></a>')
    context["theme_extra_footer"] = footer


def _build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        srcdir, outdir = Path(app.srcdir), Path(app.outdir)
        sources = [Path(app.env.doc2path(doc)) for doc in sorted(app.env.all_docs)]
        for name, path in cited_files(srcdir, sources).items():
            target = outdir / CITED / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        files = {name: path.read_bytes() for name, path in source_files(srcdir).items()}
        write_archive(files | {"README.md": ARCHIVE_README.encode("utf-8")}, outdir / ARCHIVE)
        if srcdir.resolve() == code_root(srcdir).resolve():   # the book's build; the student edition's own
            write_archive(student_files(srcdir), outdir / STUDENT_ARCHIVE, STUDENT_FOLDER)    # zip is its code


def setup(app):
    app.connect("doctree-resolved", link_cited_files)
    app.connect("html-page-context", link_footer)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
