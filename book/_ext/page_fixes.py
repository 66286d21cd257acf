"""Sphinx extension: small fixes to every page that a real browser showed to be needed.

1. The theme's colour mode. pydata-sphinx-theme writes ``data-mode="{{ default_mode }}"`` and logs
   "Got invalid theme mode" on the console when nothing sets ``default_mode``: we set it to "auto".

2. Repeated scripts.
sphinx-thebe registers its configuration script (`const THEBE_JS_URL = ...`) once per `env-before-read-docs`
event, which Jupyter Book fires twice, so every page declared the constant twice and the browser reported
"Identifier 'THEBE_JS_URL' has already been declared". Keeping the first copy of each script fixes it.
"""

from __future__ import annotations


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


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    app.connect("html-page-context", _default_mode)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
