"""The problem set's solutions for lecturers, printed outside the site: ``course/solutions.md`` to HTML and PDF.

    python scripts/make_solutions.py [course/solutions.md] [_build/solutions]      (or: make solutions)

Writes ``_build/solutions/solutions.html`` (the Markdown rendered by markdown-it, its math typeset by the book's
local MathJax) and ``_build/solutions/solutions.pdf`` (that page printed by headless Chromium, as ``make pdf`` prints
the book). Nothing here is copied into the book's site or its archives (``book/_ext/source_archive.py``'s
``UNPUBLISHED``): a lecturer prints them from the repository.
"""

from __future__ import annotations

import html
import shutil
import sys
from pathlib import Path

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_pdf import chromium_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<script>window.MathJax = {{loader: {{paths: {{"mathjax-newcm": "[mathjax]/fonts/mathjax-newcm"}}}},
  options: {{menuOptions: {{settings: {{enrich: false, speech: false, braille: false, assistiveMml: true}}}}}}}};
</script>
<script defer src="mathjax/tex-chtml.js"></script>
<style>body {{font: 16px/1.5 serif; max-width: 46em; margin: 2em auto; padding: 0 1em}}
code {{font-size: 90%}} @media print {{body {{margin: 0; max-width: none}}}}</style>
</head><body>
{body}
</body></html>
"""


def render(markdown: str) -> str:
    """The solutions as an HTML page: Markdown by markdown-it, ``$...$`` and ``$$...$$`` left for MathJax."""
    md = MarkdownIt("commonmark").use(dollarmath_plugin, double_inline=True)
    md.add_render_rule("math_inline", lambda self, tokens, idx, options, env:
                       f"\\({html.escape(tokens[idx].content)}\\)")
    md.add_render_rule("math_block", lambda self, tokens, idx, options, env:
                       f"<p>\\[{html.escape(tokens[idx].content)}\\]</p>\n")
    title = next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), "Solutions")
    return PAGE.format(title=html.escape(title), body=md.render(markdown))


def make_solutions(source: Path, out_dir: Path) -> Path:
    """Write the HTML (with the book's MathJax beside it) and print it to PDF; returns the PDF's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "solutions.html"
    page.write_text(render(source.read_text(encoding="utf-8")), encoding="utf-8")
    if not (out_dir / "mathjax").exists():
        shutil.copytree(ROOT / "_assets" / "mathjax", out_dir / "mathjax")
    exe = chromium_path()
    if exe is None:
        raise SystemExit("Chromium not found: install it with `apt-get install chromium` (or set NCBOOK_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    pdf = out_dir / "solutions.pdf"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page()
            errors: list[str] = []
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.goto(page.resolve().as_uri(), wait_until="load")
            try:
                tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                      timeout=60_000)
            except Exception as e:
                raise SystemExit(f"MathJax did not start in {page}: {'; '.join(errors) or e}") from None
            tab.evaluate("() => MathJax.startup.promise")
            tab.pdf(path=str(pdf.with_suffix(".pdf.tmp")), format="A4",
                    margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        finally:
            browser.close()
    pdf.with_suffix(".pdf.tmp").replace(pdf)
    return pdf


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "course" / "solutions.md"
    out_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "_build" / "solutions"
    print(f"wrote {make_solutions(source, out_dir)} (and solutions.html beside it): not part of the site")
