"""Sphinx extension: small fixes to every page that a real browser showed to be needed.

1. The theme's colour mode. pydata-sphinx-theme writes ``data-mode="{{ default_mode }}"`` and logs
   "Got invalid theme mode" on the console when nothing sets ``default_mode``: we set it to "auto".

2. Repeated scripts.
sphinx-thebe registers its configuration script (`const THEBE_JS_URL = ...`) once per `env-before-read-docs`
event, which Jupyter Book fires twice, so every page declared the constant twice and the browser reported
"Identifier 'THEBE_JS_URL' has already been declared". Keeping the first copy of each script fixes it.

3. Weight. The theme ships source maps (``*.map``, 3.4 MB, for browser developer tools only), its translation
catalogues (``_static/locales``, used at build time, never by a page) and TrueType copies of its icon fonts (the
stylesheet lists WOFF2 first, which every current browser loads); they are removed from the built site. So is
Font Awesome's JavaScript (1.5 MB on every page), which redraws the theme's dozen icons as SVG: the theme's
stylesheet already draws them from the (much smaller) icon font. The browser test fails if any page requests a file
that is not there.

4. Launch buttons. With no repository URL in _config.yml the theme would fail (an empty URL) or link to nothing:
the buttons are dropped until the book has a public repository.

5. Exercise bars. A self-checking exercise's answer and check cells are folded, and myst-nb labels every folded cell
"Show code cell source": two identical bars under each exercise. They are labelled by what they hold (the cells'
tags ``answer`` and ``check``).

6. Pasted values stay current. A page that pastes a value glued in another notebook (``{glue:text}`
`ch08_jacot_experiments.ipynb::key```, the Results index) is read again whenever that notebook changed: Sphinx does
not know the dependency, and an incremental build (``make book`` twice) kept the page with the values it pasted
before.

7. Chapters with pages. sphinx-external-toc 1.1.0 renumbers the sections of every document when parts continue
one numbering (``use_multitoc_numbering``), and its second pass writes each update under the document and anchor
left over from its first pass (``env.toc_secnumbers[doc][anchor]`` where it means ``[docname][anchorname]``): as soon
as a chapter has pages of its own (Part IV: a hub and a page per figure) the build stops with ``KeyError``. The
method is recompiled here with the right names, and only if the faulty line is there.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path


def _fixed_section_numbering() -> None:
    """Point 7: sphinx-external-toc's ``assign_section_numbers`` with its second pass writing where it reads."""
    import inspect
    import textwrap

    from sphinx_external_toc import collectors

    cls = collectors.TocTreeCollectorWithStyles
    source = textwrap.dedent(inspect.getsource(cls.assign_section_numbers))
    wrong = "            env.toc_secnumbers[doc][anchor] = copy.deepcopy(update_secnumber)\n\n    # Now"
    if source.count(wrong) != 1:
        return                                  # a release that fixed it, or changed it: leave it as it is
    source = source.replace(wrong, wrong.replace("[doc][anchor]", "[docname][anchorname]"))
    source = source.replace("super().assign_section_numbers(env)", "TocTreeCollector.assign_section_numbers(self, env)")
    namespace: dict = {}                        # compiled in a class of the same name: its private names match
    exec(compile(f"class {cls.__name__}:\n" + textwrap.indent(source, "    "), collectors.__file__, "exec"),
         vars(collectors), namespace)
    cls.assign_section_numbers = namespace[cls.__name__].assign_section_numbers


_FONTAWESOME_JS = re.compile(r'<(script|link)[^>]*_static/scripts/fontawesome\.js[^>]*>(</script>)?\n?')


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {})
        key = (getattr(js, "filename", None) or "", attributes.get("body", ""),
               tuple(sorted((k, str(v)) for k, v in attributes.items() if k not in ("body", "priority"))))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    scripts[:] = kept


def _default_mode(app, pagename, templatename, context, doctree) -> None:
    context.setdefault("default_mode", "auto")


def _prune(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for source_map in static.rglob("*.map"):
        source_map.unlink()
    shutil.rmtree(static / "locales", ignore_errors=True)
    for font in (static / "vendor").rglob("*.ttf"):
        font.unlink()
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "fontawesome.js" in text:
            page.write_text(_FONTAWESOME_JS.sub("", text), encoding="utf-8")
    (static / "scripts" / "fontawesome.js").unlink(missing_ok=True)


def launch_buttons_need_a_repository(app, config) -> None:
    """No launch button without a repository URL (_config.yml ``repository.url``): the theme would build links to
    nothing (or, with an empty URL, fail), so the buttons are dropped until the book has a public repository."""
    options = config.html_theme_options
    if not str(options.get("repository_url") or "").strip():
        options.pop("launch_buttons", None)


EXERCISE_BARS = {"tag_answer": ("Your answer: show the cell", "Hide your answer's cell"),
                 "tag_check": ("Check: show the cell that checks the answer", "Hide the check")}
"""The labels of a self-checking exercise's folded cells, by the cell's tag."""


def _label_exercise_bars(app, doctree, docname) -> None:
    for node in doctree.findall(lambda n: type(n).__name__ == "HideCodeCellNode"):
        tags = set(node.parent.get("classes", [])) if node.parent is not None else set()
        for tag, (show, hide) in EXERCISE_BARS.items():
            if tag in tags:
                node["prompt_show"], node["prompt_hide"] = show, hide


_PASTED_FROM = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)\.ipynb::")


def _pasting_pages_follow_their_notebooks(app, env, added, changed, removed) -> list[str]:
    """The pages that paste from a notebook that changed (point 6), to be read again."""
    updated = {Path(d).as_posix() for d in (*added, *changed)}
    out = []
    for doc in env.found_docs:
        source = Path(env.doc2path(doc))
        if doc in updated or source.suffix != ".md" or not source.is_file():
            continue
        folder = Path(doc).parent
        if any((folder / name).as_posix() in updated for name in _PASTED_FROM.findall(source.read_text())):
            out.append(doc)
    return out


def setup(app):
    _fixed_section_numbering()
    app.connect("env-get-outdated", _pasting_pages_follow_their_notebooks)
    app.connect("doctree-resolved", _label_exercise_bars)
    app.connect("config-inited", launch_buttons_need_a_repository)
    app.connect("html-page-context", _dedupe, priority=900)
    app.connect("html-page-context", _default_mode)
    app.connect("build-finished", _prune)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
