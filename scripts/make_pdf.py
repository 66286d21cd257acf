"""The print edition: every page of the built HTML book printed to PDF by headless Chromium, in table-of-contents
order, joined into one file.

    python scripts/make_pdf.py [_build/html] [_build/pdf/ncbook.pdf] [_toc.yml]      (or: make pdf)

Each page is printed with the book's print stylesheet (``book/_ext/static/ncbook.css``): every slider figure as small
multiples of all its positions, each labelled, with no controls; solutions unfolded; no navigation. Needs Chromium
(Debian's ``chromium``) and the ``playwright`` and ``pypdf`` packages; nothing is fetched from the network.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml
from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[1]


def chromium_path() -> str | None:
    """The Chromium binary itself (Debian's ``/usr/bin/chromium`` is a shell wrapper around it)."""
    for path in (os.environ.get("NCBOOK_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if path and Path(path).exists():
            return path
    return None


def toc_pages(toc_file: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of the book, in table-of-contents order (paths without suffix, as in ``_toc.yml``)."""
    toc = yaml.safe_load(Path(toc_file).read_text())
    pages = [toc["root"]]

    def add(entries: list[dict]) -> None:
        for entry in entries:                   # a chapter, then its pages (Part IV: a hub, then a page per figure)
            pages.append(entry["file"])
            add(entry.get("sections", []))

    for part in toc.get("parts", []):
        add(part["chapters"])
    return [str(Path(p).with_suffix("")) for p in pages]


def print_page(tab, html: Path, out: Path) -> None:
    """Print one built page to PDF with its print layout (slider figures as small multiples, solutions open)."""
    tab.goto(html.as_uri(), wait_until="load")
    tab.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    tab.emulate_media(media="print")
    tab.evaluate("() => { if (window.ncsfPrintLayout) ncsfPrintLayout(); "
                 "document.querySelectorAll('details').forEach(d => d.open = true); }")
    tab.evaluate("() => Promise.all([...document.images].map(i => i.complete ? 0 : i.decode().catch(() => 0)))")
    tab.pdf(path=str(out), format="A4", print_background=True,
            margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})


def print_book(browser, html_dir: Path, out: Path, toc_file: Path = ROOT / "_toc.yml") -> Path:
    """Print every page of the book in ``html_dir`` (its pages listed by ``toc_file``) with a running Playwright
    Chromium and join them into ``out``."""
    html_dir, out = Path(html_dir).resolve(), Path(out).resolve()        # file URIs need absolute paths
    pages = toc_pages(toc_file)
    missing = [p for p in pages if not (html_dir / f"{p}.html").exists()]
    if missing:
        raise SystemExit(f"{html_dir} has no built page for {missing[0]}: build the book first (make book)")
    writer = PdfWriter()
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
              else route.abort())
    tab = ctx.new_page()
    with tempfile.TemporaryDirectory() as tmp:
        for i, page in enumerate(pages):
            part = Path(tmp) / f"{i:02d}.pdf"
            print_page(tab, html_dir / f"{page}.html", part)
            writer.append(PdfReader(part), outline_item=page)
    ctx.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".pdf.tmp")
    with open(tmp_out, "wb") as f:
        writer.write(f)
    tmp_out.replace(out)                         # atomic: a half-written PDF never takes the final name
    return out


def make_pdf(html_dir: Path, out: Path, toc_file: Path = ROOT / "_toc.yml") -> Path:
    """Start headless Chromium, print the book in ``html_dir`` to ``out`` (see :func:`print_book`); returns ``out``."""
    exe = chromium_path()
    if exe is None:
        raise SystemExit("Chromium not found: install it with `apt-get install chromium` (or set NCBOOK_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            return print_book(browser, html_dir, out, toc_file)
        finally:
            browser.close()


if __name__ == "__main__":
    html_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "_build" / "pdf" / "ncbook.pdf"
    toc_file = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / "_toc.yml"
    path = make_pdf(html_dir, out, toc_file)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
          f"({len(PdfReader(path).pages)} pages, {path.stat().st_size / 2**20:.1f} MB)")
