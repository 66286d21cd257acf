"""Sphinx extension: a page shows a figure that a chapter computed, as the chapter's executed notebook holds it.

    :::{chapter-figure} ch01_metrics.ipynb fig-first-picture
    :name: fig-index-picture
    The caption, in MyST.
    :::

takes the HTML output (a slider figure, every position precomputed) of the code cell of ``ch01_metrics.ipynb``
(relative to the page) whose figure is named ``fig-first-picture`` and shows it in a figure with the caption given.
The index opens with Chapter 1's first picture without computing it a second time; the page is rebuilt when the
notebook changes, and a notebook without that output stops the build with one line saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def figure_html(notebook: Path, name: str) -> str:
    """The HTML output of the code cell whose MyST-NB figure is called ``name``."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name") == name:
            for out in cell.get("outputs", []):
                if "text/html" in out.get("data", {}):
                    return "".join(out["data"]["text/html"])
    raise ValueError(f"{notebook.name} has no figure {name!r} with an HTML output: execute the chapter "
                     "(python scripts/execute_chapters.py)")


class ChapterFigure(SphinxDirective):
    required_arguments = 2
    has_content = True
    option_spec = {"name": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        rel, path = self.env.relfn2path(self.arguments[0])
        self.env.note_dependency(rel)
        try:
            html = figure_html(Path(path), self.arguments[1])
        except (OSError, ValueError) as err:
            raise self.error(f"chapter-figure: {err}") from None
        figure = nodes.figure()
        figure += nodes.raw("", html, format="html")
        text = " ".join(line.strip() for line in self.content)
        inline, messages = self.state.inline_text(text, self.lineno)
        figure += nodes.caption(text, "", *inline)
        self.add_name(figure)
        return [figure, *messages]


def setup(app):
    app.add_directive("chapter-figure", ChapterFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
