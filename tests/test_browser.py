"""The rendered book in a real browser: build it, open every page in headless Chromium with the network cut off, and
check that nothing is broken for a reader (no JavaScript errors, math typeset, every slider figure present and
responding to a real input event). Screenshots of every page go to ``_build/screenshots/`` for inspection.

Needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it) and the ``playwright`` package,
which drives that Chromium (no browser download). Where Chromium is missing the test is skipped, except in CI
(``CI`` set), where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build" / "browser"
SHOTS = ROOT / "_build" / "screenshots"
RAW_TEX = ("$$", "\\(", "\\[", "\\begin{", "\\frac", "\\mathrm")
# Typeset math and article elements that extend past their visible box: the nearest ancestor that clips (overflow
# not visible) or else the article column, measured with getBoundingClientRect. With allowScroll, an element whose
# clipping box visibly scrolls (overflow auto/scroll and wider content) is not counted. Returns descriptions.
CLIPPED_JS = """(allowScroll) => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  const column = article.getBoundingClientRect();
  const out = [];
  for (const el of article.querySelectorAll("mjx-math, p, li, table, img, pre, div.math, figure")) {
    if (el.closest("details:not([open])") || el.offsetParent === null) continue;     // folded or hidden
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    let box = column, scrolls = false;
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX !== "visible") {
        box = a.getBoundingClientRect();
        scrolls = ["auto", "scroll"].includes(cs.overflowX) && a.scrollWidth > a.clientWidth;
        break;
      }
    }
    if ((r.right > box.right + 1 || r.left < box.left - 1) && !(allowScroll && scrolls)) {
      let tex = "";
      const c = el.closest("mjx-container");
      if (c) for (const m of MathJax.startup.document.math) if (m.typesetRoot === c) tex = m.math;
      out.push(el.tagName.toLowerCase() + " " + Math.round(r.width) + " px: "
               + (tex || el.textContent || el.getAttribute("src") || "").trim().replace(/\\s+/g, " ").slice(0, 100));
    }
  }
  return out;
}"""


def chromium_path() -> str | None:
    """The Chromium binary itself (Debian's ``/usr/bin/chromium`` is a shell wrapper around it)."""
    for path in (os.environ.get("NCBOOK_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if path and Path(path).exists():
            return path
    return None


def toc_pages() -> list[str]:
    """Every page of the book, in table-of-contents order (paths without suffix, as in ``_toc.yml``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [c["file"] for c in part["chapters"]]
    return [str(Path(p).with_suffix("")) for p in pages]


def slider_figures_in(page: str) -> int:
    """How many slider figures the executed notebook of a page holds (0 for markdown pages)."""
    nb = ROOT / f"{page}.ipynb"
    if not nb.exists():
        return 0
    cells = json.loads(nb.read_text())["cells"]
    return sum('class="ncsf"' in "".join(o.get("data", {}).get("text/html", ""))
               for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    if exe is None:
        msg = "Chromium not found: install it with `apt-get install chromium` (or set NCBOOK_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def built_book() -> Path:
    shutil.rmtree(BUILD, ignore_errors=True)
    jb = Path(sys.executable).parent / "jupyter-book"
    subprocess.run([str(jb), "build", str(ROOT), "--path-output", str(BUILD)], check=True, capture_output=True,
                   cwd=ROOT)
    return BUILD / "_build" / "html"


@pytest.mark.parametrize("page", toc_pages())
def test_page_in_chromium(browser, built_book: Path, page: str):
    html = built_book / f"{page}.html"
    assert html.exists(), f"{html} was not built"
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
              else (errors.append(f"network request {route.request.url}"), route.abort()))
    tab = ctx.new_page()
    tab.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    tab.on("requestfailed", lambda r: errors.append(f"failed to load {r.url}"))
    tab.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    tab.goto(html.as_uri(), wait_until="load")
    SHOTS.mkdir(parents=True, exist_ok=True)

    # math: MathJax (served locally) has typeset every formula and no TeX source is left in the text
    has_math = "$" in (ROOT / f"{page}.md").read_text()
    if has_math:
        tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
        tab.evaluate("() => MathJax.startup.promise")
        assert tab.locator("mjx-container").count() > 0, f"{page}: no MathJax output"
    text = tab.inner_text("main")
    left = [t for t in RAW_TEX if t in text]
    assert not left, f"{page}: raw TeX left in the page: {left}"

    # interactive figures: all present, and each slider moved by a real key press changes the figure
    figures = tab.locator("div.ncsf")
    assert figures.count() == slider_figures_in(page), f"{page}: slider figures missing from the page"
    for i in range(figures.count()):
        fig = figures.nth(i)
        img = fig.locator("img.ncsf-frame")
        sliders = fig.locator("input.ncsf-range")
        assert sliders.count() >= 1
        for j in range(sliders.count()):
            slider = sliders.nth(j)
            fig.scroll_into_view_if_needed()
            before = img.get_attribute("src")
            at_max = slider.input_value() == slider.get_attribute("max")
            slider.focus()
            tab.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            tab.wait_for_function("([img, src]) => img.getAttribute('src') !== src", arg=[img.element_handle(), before],
                                  timeout=2_000)
            assert img.evaluate("im => im.complete && im.naturalWidth > 0"), f"{page}: new frame did not load"
        size = fig.evaluate("el => el.outerHTML.length")
        assert size <= 3 * 2**20, f"{page}: slider figure {i + 1} embeds {size / 2**20:.1f} MB (limit 3 MB)"
        fig.screenshot(path=str(SHOTS / f"{Path(page).name}-figure{i + 1}.png"))

    tab.screenshot(path=str(SHOTS / f"{Path(page).name}.png"), full_page=True)

    # nothing typeset or laid out runs past its visible box at 1280 px, not even inside a scrolling box; on a
    # 390 px phone what does (outside visibly scrolling boxes) is recorded for inspection
    clipped = tab.evaluate(CLIPPED_JS, False)
    tab.set_viewport_size({"width": 390, "height": 844})
    tab.wait_for_timeout(300)
    narrow = tab.evaluate(CLIPPED_JS, True)
    tab.screenshot(path=str(SHOTS / f"{Path(page).name}-390.png"))
    report = SHOTS / "clipped-390px.json"
    record = json.loads(report.read_text()) if report.exists() else {}
    record[page] = narrow
    report.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    ctx.close()
    assert not errors, f"{page}: " + "; ".join(errors)
    assert not clipped, f"{page}: {len(clipped)} elements run past their visible box at 1280 px: {clipped[:3]}"
