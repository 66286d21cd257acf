"""Sphinx extension: a reference to a chapter reads as its number, with the title on hover.

``{ref}`ch-ufm``` renders as the chapter's title alone, so "Chapter {ref}`ch-ufm`" read "Chapter The unconstrained
features model", and spelling every title made the prose long. Every internal link whose text is a numbered chapter's
title becomes "2" where the text before it already says "Chapter", "Chapters", or continues a list of chapters
("and", "to", ","), and "Chapter 2" elsewhere; the title is the link's tooltip. Numbers come from the table of
contents.
"""

from __future__ import annotations

import re

from docutils import nodes

_LEADS = re.compile(r"(?:\b[Cc]hapters?|\band|\bto|,)\s*$")


def chapter_titles(env) -> dict[str, int]:
    """Title -> number of every numbered chapter (a document whose own section number has one part)."""
    out = {}
    for doc, numbers in env.toc_secnumbers.items():
        own = numbers.get("")
        if own and len(own) == 1 and doc in env.titles:
            out[env.titles[doc].astext()] = own[0]
    return out


def number_chapter_references(app, doctree, docname) -> None:
    titles = chapter_titles(app.env)
    for ref in list(doctree.findall(nodes.reference)):
        if not ref.get("internal") or ref.astext() not in titles:
            continue
        number, title = titles[ref.astext()], ref.astext()
        before = "".join(n.astext() for n in ref.parent[:ref.parent.index(ref)])[-40:]   # a line break is a node
        text = f"{number}" if _LEADS.search(before) else f"Chapter {number}"
        ref["reftitle"] = f"Chapter {number}: {title}"
        for child in list(ref.children):
            ref.remove(child)
        ref += nodes.inline(text, text)


def setup(app):
    app.connect("doctree-resolved", number_chapter_references)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
