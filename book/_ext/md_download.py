"""Sphinx extension: offer each chapter's MyST source (the jupytext-paired ``.md``) in the page's download menu,
beside the ``.ipynb`` that sphinx-book-theme already offers, and copy it into ``_sources/`` so the link works."""

from __future__ import annotations

import shutil
from pathlib import Path


def _paired_md(app, pagename: str) -> Path | None:
    if pagename not in app.env.all_docs:
        return None
    source = Path(app.env.doc2path(pagename))
    md = source.with_suffix(".md")
    return md if source.suffix == ".ipynb" and md.exists() else None


def _add_button(app, pagename, templatename, context, doctree) -> None:
    if _paired_md(app, pagename) is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(1, {
                "type": "link", "url": f"{context['pathto']('_sources', 1)}/{pagename}.md", "text": ".md",
                "tooltip": "Download the MyST markdown source (jupytext-paired with the notebook)",
                "icon": "fas fa-file-lines", "label": "download-md-button"})


def _copy_sources(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for pagename in app.env.all_docs:
        md = _paired_md(app, pagename)
        if md is not None:
            target = Path(app.outdir) / "_sources" / f"{pagename}.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(md, target)


def setup(app):
    app.connect("html-page-context", _add_button, priority=502)
    app.connect("build-finished", _copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
