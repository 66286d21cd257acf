"""The rendered book in a real browser: build it, open every page in headless Chromium with the network cut off, and
check what a reader sees: no JavaScript errors or missing files, math typeset and never cut off (1280 px and a 390 px
phone), no code block, code cell or printed output scrolling sideways at 1280 px, every figure numbered, captioned,
with alt text, its text at least 9 pt as displayed and at most two panels a row (on a 390 px phone: at least 9 px, from
its phone rendering, one panel a row), a click opening it full size, every
slider figure responding to a real input event, chapters numbered, the bibliography under author-year labels with
links, each page's weight and the site's; then the print edition (``scripts/make_pdf.py``, its code never cut off on
A4). Screenshots of every page (top, 1280 and 390 px), of every figure and of a proof go to ``_build/screenshots/``;
``_build/screenshots/weight.json`` records what each page loads.

Needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it) and the ``playwright`` package,
which drives that Chromium (no browser download). Where Chromium is missing the test is skipped, except in CI
(``CI`` set), where it fails.
"""

from __future__ import annotations

import base64
import gzip
import html
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
from PIL import Image

pytestmark = pytest.mark.slow       # builds the book and drives Chromium: `pytest --runslow`

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("make_pdf", ROOT / "scripts" / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)
chromium_path, toc_pages = make_pdf.chromium_path, make_pdf.toc_pages
_spec = importlib.util.spec_from_file_location("source_archive", ROOT / "book" / "_ext" / "source_archive.py")
source_archive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(source_archive)
MIN_TEXT_PT = 9.0            # smallest text of a figure at its displayed size
PHONE_MIN_PX = 9.0           # smallest text of a figure on a 390 px phone, in CSS px
PAGE_LIMIT = 1.5 * 2**20     # everything a first visit to a page loads, gzip-compressed as a web server sends it
OWN_LIMIT = 2**20            # a page's own HTML and the images it shows first, raw
STUDENT_LIMIT = 64 * 2**20   # the student edition published inside it (issue 76): its HTML (the book's images,
                             # static files and notebooks again, 39 MB) and the handout with its executed notebooks
SITE_LIMIT = 48 * 2**20      # the whole built site but the student edition (MathJax 4 and its font: 3.5 MB;
                             # the book's code: ncbook-source.zip, and the students' archive beside it, 4.8 MB
                             # each since issue 74's runs in the papers' regime joined the shipped results (3.3 MB
                             # before); every figure twice, for the column and for a phone: 12 MB of images, and
                             # again in the notebooks offered for download, 18 MB)
NO_IDENTIFIER = {"Rangamani and Banburski-Fahey 2022", "Nguyen and Mondelli 2020", "Dai et al. 2021"}
"""Bibliography entries whose DOI or arXiv number we could not confirm offline: listed without a link, not guessed."""
BUILD = ROOT / "_build" / "browser"
SHOTS = ROOT / "_build" / "screenshots"
RAW_TEX = ("$$", "\\(", "\\[", "\\begin{", "\\frac", "\\mathrm")
# Typeset math and article elements that extend past their visible box: the nearest ancestor that clips (overflow
# not visible) or else the article column, measured with getBoundingClientRect. With allowScroll, an element whose
# clipping box visibly scrolls (overflow auto/scroll and wider content) is not counted, unless it is a formula:
# MathJax 4 breaks formulas into lines, so none may be cut or hidden in a scrolling box. Returns descriptions.
CLIPPED_JS = """(allowScroll) => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  const column = article.getBoundingClientRect();
  const out = [];
  for (const el of article.querySelectorAll("mjx-math, p, li, table, img, pre, div.math, figure")) {
    if (el.closest("details:not([open])") || el.offsetParent === null) continue;     // folded or hidden
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    let box = column, scrolls = false, math = false;
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX !== "visible") {
        box = a.getBoundingClientRect();
        scrolls = ["auto", "scroll"].includes(cs.overflowX) && a.scrollWidth > a.clientWidth;
        math = a.closest("mjx-container, div.math") !== null;         // the formula's own box scrolls
        break;
      }
    }
    // a formula breaks into lines; one that cannot (an aligned block) may scroll only under the visible cue
    const cued = el.closest("div.math.ncbook-scrolls") !== null;
    if ((r.right > box.right + 1 || r.left < box.left - 1) && !(allowScroll && scrolls && (!math || cued))) {
      let tex = "";
      const c = el.closest("mjx-container");
      if (c) for (const m of MathJax.startup.document.math) if (m.typesetRoot === c) tex = m.math;
      out.push(el.tagName.toLowerCase() + " " + Math.round(r.width) + " px: "
               + (tex || el.textContent || el.getAttribute("src") || "").trim().replace(/\\s+/g, " ").slice(0, 100));
    }
  }
  return out;
}"""

# Every display that scrolls at a phone's width says so above the formula, with its equation number in the column.
CUE_JS = """() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  const column = article.getBoundingClientRect();
  const out = [];
  for (const d of document.querySelectorAll(".bd-article div.math")) {
    const c = d.querySelector("mjx-container");
    if (!c || c.scrollWidth <= c.clientWidth + 1) continue;
    const cue = getComputedStyle(d, "::before").content;
    if (!d.classList.contains("ncbook-scrolls") || !cue.includes("scroll")) out.push("a formula scrolls, no cue");
    const n = d.querySelector(".eqno"), at = n && n.getBoundingClientRect();
    if (n && (at.right > column.right + 1 || at.top > c.getBoundingClientRect().top))
      out.push("equation " + n.textContent.trim() + " is not above its scrolling formula");
  }
  return out;
}"""

# Tables wider than the text column (on a phone they must fit it, not scroll).
WIDE_TABLES_JS = """() => {
  const c = document.querySelector("article.bd-article").getBoundingClientRect();
  return [...document.querySelectorAll(".bd-article table")].filter(t => t.offsetParent)
    .map(t => t.getBoundingClientRect().width - c.width).filter(d => d > 1)
    .map(d => "a table " + Math.round(d) + " px wider than the column");
}"""

# Code blocks, code cells and printed outputs that scroll sideways: a line wider than the code column
# (ncbook.compare.WRAP characters fit at 1280 px). Returns descriptions naming the widest line.
SCROLLING_JS = """() => [...document.querySelectorAll("article.bd-article pre")]
  .filter(p => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 1)
  .map(p => (p.closest("div.cell_output") ? "output " : p.closest("div.cell_input") ? "code cell " : "code block ")
       + (p.scrollWidth - p.clientWidth) + " px too wide: "
       + p.textContent.split("\\n").reduce((a, b) => b.length > a.length ? b : a, "").trim().slice(0, 80))"""


def png_facts(png: bytes) -> dict:
    """What ``ncbook.plotting.page_png`` records in a figure's PNG: resolution, smallest font, panels per row."""
    image = Image.open(io.BytesIO(png))
    return {"dpi": float(image.info.get("dpi", (72.0,))[0]), "width": image.size[0],
            "min_pt": float(image.info.get("ncbook-min-font-pt", "0")),
            "per_row": int(image.info.get("ncbook-panels-per-row", "99"))}


def image_bytes(src: str) -> bytes:
    """The bytes of an image the page shows, from its data: URI or its file."""
    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    return Path(unquote(urlparse(src).path)).read_bytes()


def frame_bytes(page: Path, frame: str) -> bytes:
    """The PNG of one slider position: base64 data, or the URL (relative to the page) of its file."""
    if frame.endswith(".png"):
        return Path(unquote(urlparse(urljoin(page.as_uri(), frame)).path)).read_bytes()
    return base64.b64decode(frame)


def phone_text_px(tab, page: Path) -> list[str]:
    """Figures whose smallest text shows below PHONE_MIN_PX CSS px on the current (phone) screen: the rendering the
    browser chose for each figure as shown, and every phone position of a slider figure in its box."""
    small = []
    for f in tab.evaluate(FIGURES_JS):
        px = displayed_pt(png_facts(image_bytes(f["src"])), f["shown"]) * 96 / 72
        if px < PHONE_MIN_PX - 0.05:
            small.append(f"figure {f['number']}: {px:.1f} px")
        for k, frame in enumerate(f["phone"]):
            facts = png_facts(frame_bytes(page, frame))
            px = displayed_pt(facts, min(facts["width"] * 96 / facts["dpi"], f["box"])) * 96 / 72
            if px < PHONE_MIN_PX - 0.05 or facts["per_row"] > 1:
                small.append(f"figure {f['number']}, position {k + 1}: {px:.1f} px, {facts['per_row']} panels a row")
    return small


def displayed_pt(facts: dict, shown_px: float) -> float:
    """The figure's smallest text in points as displayed: font x (dpi / 96 CSS px per inch) x (shown / natural)."""
    return facts["min_pt"] * facts["dpi"] / 96 * shown_px / facts["width"]


def slider_controls(page: str) -> list[tuple[str, list[str]]]:
    """(label as text, shown values) of every slider of a page's executed notebook."""
    nb = ROOT / f"{page}.ipynb"
    if not nb.exists():
        return []
    found = []
    for cell in json.loads(nb.read_text())["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("data", {}).get("text/html", ""))
            for tag in re.findall(r'<(?:label|div) class="ncsf-control[^"]*"[^>]*>', text):
                name = html.unescape(re.search(r'data-name="([^"]*)"', tag).group(1))
                labels = json.loads(html.unescape(re.search(r'data-labels="([^"]*)"', tag).group(1)))
                found.append((re.sub(r"_\{?(\w+)\}?", r"\1", name), labels))
    return found


FIGURES_JS = """() => [...document.querySelectorAll("article.bd-article img")].filter(i => i.offsetParent !== null)
  .map(i => { const fig = i.closest("figure"), cap = fig && fig.querySelector("figcaption");
    const num = cap && cap.querySelector(".caption-number");
    const sf = i.closest("div.ncsf"), box = (sf || i.parentElement).getBoundingClientRect().width;
    return {src: i.currentSrc || i.src, alt: i.getAttribute("alt") || "", shown: i.getBoundingClientRect().width,
            natural: i.naturalWidth, id: fig ? fig.id : "", number: num ? num.textContent.trim() : "", box: box,
            frames: sf ? Object.values(JSON.parse(sf.querySelector("script.ncsf-frames").textContent)) : [],
            phone: sf ? Object.values(JSON.parse(sf.querySelector("script.ncsf-phone-frames").textContent)) : [],
            caption: cap ? cap.textContent.trim() : "",
            cited: !!(fig && fig.id && document.querySelector(`article a[href$="#${fig.id}"]`))}; })"""


def slider_figures_in(page: str) -> int:
    """How many slider figures the executed notebook of a page holds (for a markdown page: the chapters' it shows)."""
    nb = ROOT / f"{page}.ipynb"
    if not nb.exists():                 # a markdown page shows a chapter's slider figure with {chapter-figure}
        return (ROOT / f"{page}.md").read_text().count(":::{chapter-figure}")
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


def made_by_make(part: str) -> Path | None:
    """What `make test`'s own commands built (NCBOOK_BUILT=<repository>/_build): ``html`` by `make book`, ``pdf`` by
    `make pdf`, ``student`` by `make book` (or `make student`); None when the tests run on their own."""
    given = os.environ.get("NCBOOK_BUILT")
    return Path(given) / part if given else None


WAIT_S = 120
"""The most a browser test waits for one event (a frame loading, MathJax starting): far beyond what a loaded 2-core
machine needs, so that only something broken runs into it, and then the failure names what did not happen."""


def wait_until(tab, js: str, arg, what: str) -> None:
    """Wait for the JavaScript predicate ``js`` (given ``arg``) to hold, at most :data:`WAIT_S` seconds; a failure
    names ``what`` was waited for."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        tab.wait_for_function(js, arg=arg, timeout=WAIT_S * 1000)
    except PlaywrightTimeout:
        pytest.fail(f"{what}: did not happen within {WAIT_S} s")


@pytest.fixture(scope="module")
def built_book() -> Path:
    if not (ROOT / "_assets" / "mathjax").is_dir():
        msg = "the MathJax files are missing from _assets/: run `make assets` (scripts/fetch_assets.sh) first"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    given = made_by_make("html")               # `make test` builds the book once (`make book`) and passes it
    if given:
        if not (given / "index.html").is_file():
            pytest.fail(f"NCBOOK_BUILT={given.parent} holds no built book: run `make book` first, or unset it")
        return given
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
    loaded: list[str] = []
    tab.on("requestfinished", lambda r: loaded.append(r.url))
    tab.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    tab.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED"     # cut short by the reload at 390 px
           else errors.append(f"failed to load {r.url}: {r.failure}"))
    tab.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    tab.goto(html.as_uri(), wait_until="load")
    SHOTS.mkdir(parents=True, exist_ok=True)

    # math: MathJax (served locally) has typeset every formula and no TeX source is left in the text
    has_math = "$" in (ROOT / f"{page}.md").read_text()
    if has_math:
        wait_until(tab, "() => window.MathJax && MathJax.startup && MathJax.startup.promise", None,
                   f"{page}: MathJax starting")
        tab.evaluate("() => MathJax.startup.promise")
        assert tab.locator("mjx-container").count() > 0, f"{page}: no MathJax output"
    tab.evaluate("() => Promise.all([...document.images].map(i => i.complete ? 0 : i.decode().catch(() => 0)))")
    cold = list(loaded)                            # what a first visit loads, before any slider is moved
    text = tab.inner_text("main")
    left = [t for t in RAW_TEX if t in text]
    assert not left, f"{page}: raw TeX left in the page: {left}"

    # interactive figures: all present, and each slider moved by a real key press changes the figure
    figures = tab.locator("div.ncsf")
    assert figures.count() == slider_figures_in(page), f"{page}: slider figures missing from the page"
    for i in range(figures.count()):
        fig = figures.nth(i)
        img = fig.locator("img.ncsf-frame")
        controls = fig.locator(".ncsf-control")
        assert controls.count() >= 1
        for j in range(controls.count()):
            control = controls.nth(j)
            fig.scroll_into_view_if_needed()
            before = img.get_attribute("src")
            toggle = control.locator("input[type=radio]")
            if toggle.count():              # a parameter of two values is a toggle, not a slider: click the other
                assert toggle.count() == 2 and control.locator("input.ncsf-range").count() == 0
                control.locator("input[type=radio]:not(:checked)").click()
            else:                            # a slider moved by a real key press
                slider = control.locator("input.ncsf-range")
                assert int(slider.get_attribute("max")) >= 2, f"{page}: a slider of two positions (a toggle's job)"
                at_max = slider.input_value() == slider.get_attribute("max")
                slider.focus()
                tab.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            wait_until(tab, "([img, src]) => img.getAttribute('src') !== src", [img.element_handle(), before],
                       f"{page}: slider figure {i + 1}, control {j + 1}: the frame's address changing on input")
            wait_until(tab, "im => im.complete && im.naturalWidth > 0", img.element_handle(),
                       f"{page}: slider figure {i + 1}, control {j + 1}: the new frame loading")
        size = fig.evaluate("el => el.outerHTML.length")
        assert size <= 3 * 2**20, f"{page}: slider figure {i + 1} embeds {size / 2**20:.1f} MB (limit 3 MB)"
        fig.screenshot(path=str(SHOTS / f"{Path(page).name}-figure{i + 1}.png"))

    name = Path(page).name
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    tab.evaluate("() => window.scrollTo(0, 0)")
    tab.screenshot(path=str(SHOTS / f"{name}-top.png"))

    # chapters are numbered; every figure is numbered, captioned, cited by the text, described for screen readers,
    # drawn with text of at least 9 pt as displayed and at most two panels a row, and opens full size on a click
    if name.startswith("ch"):
        assert tab.locator("article.bd-article h1 .section-number").count() == 1, f"{page}: chapter not numbered"
    figures = tab.evaluate(FIGURES_JS)
    for f in figures:
        where = f"{page}: figure {f['number'] or f['src'][:60]}"
        number = r"Fig\. \d+" if name == "index" else r"Fig\. \d+\.\d+"     # the front page has no chapter number
        assert re.fullmatch(number, f["number"]), f"{where}: not a numbered figure with a caption"
        assert len(f["caption"]) > 80 and ("Look at" in f["caption"] or "Compare" in f["caption"]), \
            f"{where}: the caption must say what the figure shows and what to look at"
        assert f["cited"], f"{where}: the text never refers to it by number"
        assert len(f["alt"]) > 20 and f["alt"] != "figure", f"{where}: no alt text"
        facts = png_facts(image_bytes(f["src"]))
        assert f["natural"] == facts["width"] and round(facts["dpi"]) == 192, f"{where}: not drawn at 2x"
        pt = displayed_pt(facts, f["shown"])
        assert pt >= MIN_TEXT_PT - 0.05, f"{where}: smallest text {pt:.1f} pt as displayed (at least {MIN_TEXT_PT})"
        for k, frame in enumerate(f["frames"] or [None]):       # every position of a slider figure, as shown
            if frame:
                facts = png_facts(frame_bytes(html, frame))
            assert facts["per_row"] <= 2, f"{where}: {facts['per_row']} panels side by side (at most 2)"
            pt = displayed_pt(facts, min(facts["width"] * 96 / facts["dpi"], f["box"]))
            assert pt >= MIN_TEXT_PT - 0.05, f"{where}, position {k + 1}: smallest text {pt:.1f} pt as displayed"
    statics = tab.locator("article.bd-article figure:not(:has(div.ncsf))")
    for i in range(statics.count()):
        statics.nth(i).screenshot(path=str(SHOTS / f"{name}-static{i + 1}.png"))
    if figures:
        first = tab.locator("article.bd-article figure img").first
        first.scroll_into_view_if_needed()
        first.click()
        zoom = tab.locator("#ncbook-zoom img")
        assert zoom.count() == 1 and zoom.evaluate("z => z.naturalWidth") == figures[0]["natural"], \
            f"{page}: clicking a figure does not open it full size"
        tab.keyboard.press("Escape")
        assert tab.locator("#ncbook-zoom").count() == 0
    if name == "ch05_balanced":
        tab.locator("article .proof").first.screenshot(path=str(SHOTS / "proof.png"))

    # weight of a first visit: everything it loaded, as raw bytes and gzip-compressed as a web server sends it, and
    # the page's own part (its HTML and the images it shows first; slider frames come when a slider reaches them)
    files = {unquote(urlparse(u).path) for u in cold if u.startswith("file:")}
    raw = sum(Path(f).stat().st_size for f in files)
    sent = sum(len(gzip.compress(Path(f).read_bytes(), 6)) for f in files)
    own = sum(Path(f).stat().st_size for f in files if f == str(html) or f.endswith((".png", ".jpg", ".svg")))
    weight = SHOTS / "weight.json"
    record = json.loads(weight.read_text()) if weight.exists() else {}
    record[page] = {"files": len(files), "raw_MB": round(raw / 2**20, 2), "gzip_MB": round(sent / 2**20, 2),
                    "own_MB": round(own / 2**20, 2)}
    weight.write_text(json.dumps(record, indent=1))
    print(f"{page}: loads {len(files)} files, {raw / 2**20:.2f} MB ({sent / 2**20:.2f} MB gzip-compressed); "
          f"its HTML and first images {own / 2**20:.2f} MB")
    assert sent <= PAGE_LIMIT, f"{page}: loads {sent / 2**20:.2f} MB compressed (limit {PAGE_LIMIT / 2**20:.1f} MB)"
    assert own <= OWN_LIMIT, f"{page}: its HTML and first images weigh {own / 2**20:.2f} MB (limit 1 MB)"

    # nothing typeset or laid out runs past its visible box at 1280 px, not even inside a scrolling box; on a
    # 390 px phone only inside boxes that visibly scroll
    clipped = tab.evaluate(CLIPPED_JS, False)
    scrolling = tab.evaluate(SCROLLING_JS)
    tab.set_viewport_size({"width": 390, "height": 844})
    tab.reload(wait_until="load")                  # as a phone opens it: MathJax breaks the formulas at its width
    if has_math:
        wait_until(tab, "() => window.MathJax && MathJax.startup && MathJax.startup.promise", None,
                   f"{page}: MathJax starting")
        tab.evaluate("() => MathJax.startup.promise")
    wait_until(tab, "() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => "
               "requestAnimationFrame(() => r(true)))))", None, f"{page}: fonts and layout at 390 px")
    tab.evaluate("() => Promise.all([...document.images].map(i => i.complete ? 0 : i.decode().catch(() => 0)))")
    narrow = tab.evaluate(CLIPPED_JS, True)
    narrow += tab.evaluate(CUE_JS)
    narrow += tab.evaluate(WIDE_TABLES_JS)
    small = phone_text_px(tab, html)
    tab.screenshot(path=str(SHOTS / f"{name}-390.png"))
    ctx.close()
    assert not errors, f"{page}: " + "; ".join(errors)
    assert not clipped, f"{page}: {len(clipped)} elements run past their visible box at 1280 px: {clipped[:3]}"
    assert not narrow, f"{page}: {len(narrow)} elements run past their visible box at 390 px: {narrow[:3]}"
    assert not small, f"{page}: figure text too small at 390 px (at least {PHONE_MIN_PX} px): {small[:3]}"
    assert not scrolling, f"{page}: {len(scrolling)} code blocks or outputs scroll sideways at 1280 px: {scrolling[:3]}"


def test_bibliography_is_author_year_with_links(built_book: Path):
    page = (built_book / "book" / "bibliography.html").read_text()
    entries = page.split('<div class="citation"')[1:]
    assert len(entries) >= 15
    for entry in entries:
        label = re.sub(r"<[^>]+>", "", re.search(r'<span class="label">(.*?)</span>\s*<p', entry, re.S).group(1))
        label = label.strip("[]")
        assert re.fullmatch(r"[A-Z][\w\- ]+( et al\.| and [A-Z][\w\- ]+)? \d{4}[a-z]?", label), label
        linked = re.search(r'href="https://(doi\.org|arxiv\.org/abs)/', entry.split("</p>")[0])
        assert linked or label in NO_IDENTIFIER, f"bibliography: {label} has no DOI or arXiv link"
    assert "[Jacot et al. 2025]" in re.sub(r"<[^>]+>", "", page)


@pytest.mark.parametrize("page", ["book/ch02_ufm", "book/ch03_depth", "book/ch04_near_collapse", "book/ch05_balanced"])
def test_inline_formulas_are_whole_at_desktop_width(browser, built_book: Path, page: str):
    """Issue 62: at 1280 px no in-line formula is split across two lines (MathJax broke 18 to 48 per chapter, one
    of them "(1" / "- sqrt(c))"), and none sticks out of the page; on a phone (390 px) they may break, and the page
    still does not scroll sideways."""
    for width in (1280, 390):
        tab = browser.new_page(viewport={"width": width, "height": 900})
        tab.goto((built_book / f"{page}.html").as_uri(), wait_until="load")
        wait_until(tab, "() => window.MathJax && MathJax.startup && MathJax.startup.promise", None, f"{page}: MathJax")
        tab.evaluate("() => MathJax.startup.promise")
        split, total, wider = tab.evaluate("""() => {
            const all = [...document.querySelectorAll('mjx-container:not([display="true"])')];
            const split = all.filter(e => new Set([...e.getClientRects()].filter(r => r.width > 0)
                                                  .map(r => Math.round(r.top))).size > 1).length;
            return [split, all.length, document.documentElement.scrollWidth - document.documentElement.clientWidth];
        }""")
        tab.close()
        assert total > 100 and wider <= 0, (page, width, total, wider)
        if width == 1280:
            assert split == 0, f"{page}: {split} of {total} in-line formulas split across lines at 1280 px"


def test_exercise_bars_say_what_they_fold(built_book: Path):
    """Issue 62: a self-checking exercise's two folded cells are labelled "Your answer" and "Check", not twice "Show
    code cell source"."""
    answers = checks = 0
    for page in toc_pages():
        text = (built_book / f"{page}.html").read_text()
        for tag, label in (("tag_answer", "Your answer: show the cell"), ("tag_check", "Check: show the cell")):
            cells = re.findall(rf'<div class="cell {tag} [^"]*">\s*<details[^>]*>\s*<summary[^>]*>\s*<p[^>]*>([^<]*)<',
                               text)
            assert all(c.startswith(label) for c in cells), (page, tag, cells)
            answers, checks = answers + (tag == "tag_answer") * len(cells), checks + (tag == "tag_check") * len(cells)
    assert answers >= 13 and checks >= 13, (answers, checks)


@pytest.mark.parametrize("page", [p for p in toc_pages() if p.startswith("book/ch")])
def test_no_output_scrolls_sideways_on_a_phone(browser, built_book: Path, page: str):
    """Issue 62: at 390 px every printed output wraps inside the column (21 of ch08's 59 output blocks scrolled
    sideways before); at 1280 px the printed tables keep their columns (no wrapping there: the lines fit)."""
    tab = browser.new_page(viewport={"width": 390, "height": 844})
    tab.goto((built_book / f"{page}.html").as_uri(), wait_until="load")
    wide = tab.evaluate("""() => [...document.querySelectorAll('.cell_output pre, .cell_output .output')]
        .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.slice(0, 60))""")
    tab.close()
    assert not wide, f"{page}: {len(wide)} output blocks scroll sideways at 390 px: {wide[:3]}"


def test_each_claims_row_links_to_the_figure_of_its_experiment_and_the_paper(built_book: Path):
    """Issues 62 and 73: every link of a claims table to "our figure" (a group's heading and each row's "(fig.)")
    opens a page of Part IV at a figure whose caption names the experiment the row reads (the ResNet sweep's rows
    open the ResNet sweep's figure), and each heading links the paper too."""
    from ncbook import claims

    experiment_of = {f"{page}.html#{anchor}": name.split("@")[0] for name, (page, anchor) in claims.FIGURES.items()}
    for page, paper in (("book/ch08_jacot_experiments", "2410.04887"), ("book/ch09_tirer_experiments", "2210.16658")):
        text = (built_book / f"{page}.html").read_text()
        table = text[text.index("<table class='ncbook-claims'>"):]
        table = table[:table.index("</table>")]
        ours = re.findall(r"<a href='([\w.-]+#[\w-]+)'>ours</a>, <a href='https://arxiv.org/abs/([\d.]+)'>paper</a>",
                          table)
        rows = re.findall(r"class='claim-fig' href='([\w.-]+#[\w-]+)'", table)
        assert len(ours) >= 5 and len(rows) >= 10, (page, ours, rows)
        assert all(arxiv == paper for _, arxiv in ours), page
        for link in {link for link, _ in ours} | set(rows):
            target, anchor = link.split("#")
            html = (built_book / page).parent.joinpath(target).read_text()
            at = html.find(f'id="{anchor}"')
            assert at >= 0, (page, link)
            caption = html[at:html.index("</figcaption>", at)]
            assert f"cached <code class=\"docutils literal notranslate\"><span class=\"pre\">{experiment_of[link]}" \
                in caption, (page, link, caption[-300:])


PART_IV_HEIGHT = {1280: 15_000, 390: 25_000}
"""Issue 73: the tallest a page of Part IV may be at each width (px): a hub, or a page per figure of the paper."""


@pytest.mark.parametrize("page", [p for p in toc_pages() if p.startswith(("book/ch08", "book/ch09"))])
def test_part_iv_pages_are_short(browser, built_book: Path, page: str):
    """Issue 73, point 3: Part IV is a hub per paper and a page per figure; no page is taller than 15,000 px at
    1280 px (chapter 8 was 55,723 px in one page) or 25,000 px at 390 px."""
    heights = {}
    for width in PART_IV_HEIGHT:
        tab = browser.new_page(viewport={"width": width, "height": 900})
        tab.goto((built_book / f"{page}.html").as_uri(), wait_until="load")
        heights[width] = tab.evaluate("() => document.documentElement.scrollHeight")
        tab.close()
    print(f"{page}: {heights}")
    assert all(heights[w] <= limit for w, limit in PART_IV_HEIGHT.items()), (page, heights, PART_IV_HEIGHT)


def test_every_page_has_a_favicon(built_book: Path):
    """Issue 62: the tab shows the book's icon, and a browser asking for /favicon.ico has its answer in the page (no
    console error for a missing icon)."""
    for page in toc_pages():
        found = re.search(r'<link rel="icon" href="([^"]+)"', (built_book / f"{page}.html").read_text())
        assert found, f"{page}: no favicon"
        assert ((built_book / page).parent / found.group(1)).resolve().is_file(), (page, found.group(1))


def test_site_weight(built_book: Path):
    files = [f for f in built_book.rglob("*") if f.is_file()]
    student = [f for f in files if f.relative_to(built_book).parts[0] in ("student", "ncbook-student.zip")]
    size = sum(f.stat().st_size for f in files if f not in set(student))
    edition = sum(f.stat().st_size for f in student)
    print(f"built site: {size / 2**20:.1f} MB, its student edition {edition / 2**20:.1f} MB")
    assert size <= SITE_LIMIT, f"the built site is {size / 2**20:.1f} MB (limit {SITE_LIMIT / 2**20:.0f} MB)"
    assert edition <= STUDENT_LIMIT, f"the student edition is {edition / 2**20:.1f} MB (limit 64 MB)"


def test_no_launch_button_while_the_repository_is_unset(built_book: Path):
    """The shipped config names no repository, so no page offers Colab or Binder (a button would open nothing);
    test_bootstrap builds the book with an address and finds them."""
    for page in toc_pages():
        text = (built_book / f"{page}.html").read_text(encoding="utf-8")
        assert "colab.research.google.com" not in text and "mybinder.org" not in text, page


def test_every_page_states_its_licences(built_book: Path):
    """The footer of every page says under which licences its text and figures (CC BY 4.0) and code (MIT) are."""
    for page in toc_pages():
        text = (built_book / f"{page}.html").read_text(encoding="utf-8")
        assert "CC BY 4.0" in text and "code: MIT" in text and "CITATION.cff" in text, f"{page}: no licence footer"


def test_every_file_the_text_cites_opens_from_the_page(built_book: Path):
    """Issue 62: a repository file the text names as code (``results/README.md``, ``tests/test_claims.py``) or the
    footer names (``CITATION.cff``, ``LICENSE``) is a link to a copy in the site, byte for byte the repository's."""
    code = re.compile(r'(<a [^>]*href="([^"]+)"[^>]*>)?<code[^>]*>(.*?)</code>', re.S)
    cited = 0
    for page in toc_pages():
        for link, href, inner in code.findall((built_book / f"{page}.html").read_text(encoding="utf-8")):
            name = html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()
            if (not re.fullmatch(r"[\w./-]+", name) or not (ROOT / name).is_file() or name.startswith(".")
                    or name.startswith("_build/")):          # a build output (make book's handout), not a source
                continue
            assert link, f"{page}: {name} is cited but does not open"
            target = ((built_book / page).parent / unquote(href)).resolve()
            assert target.is_file() and target.read_bytes() == (ROOT / name).read_bytes(), (page, name, href)
            cited += 1
    assert cited >= 40, f"only {cited} citations of repository files found: the pattern no longer matches the HTML"


def test_the_students_archive_and_the_problem_set_carry_no_solution(built_book: Path):
    """Issue 62: the instructors' page links the students' archive that the site's build wrote (its checksum
    matching): every chapter without its solutions, the problem set, the package; the problem set's solutions
    (course/solutions.md) are in no archive and on no page."""
    import hashlib
    import zipfile

    page = (built_book / "book" / "instructors.html").read_text(encoding="utf-8")
    assert 'href="../ncbook-student-source.zip"' in page and 'href="problem_set.html"' in page
    archive = built_book / "ncbook-student-source.zip"
    digest = (built_book / "ncbook-student-source.zip.sha256").read_text().split()
    assert digest == [hashlib.sha256(archive.read_bytes()).hexdigest(), archive.name]
    with zipfile.ZipFile(archive) as z:
        members = {n.removeprefix("ncbook-student/"): z.read(n).decode("utf-8", "replace") for n in z.namelist()}
    chapters = [n for n in members if re.fullmatch(r"book/ch\d\d_\w+\.md", n)]
    assert len(chapters) == 17 and "book/problem_set.md" in members and "ncbook/exercises.py" in members
    for name in chapters:
        assert "{solution" not in members[name], f"{name} in the students' archive keeps a solution"
    assert sum(members[name].count(":tags: [answer]\n") for name in chapters) == 13    # emptied for the student
    solutions = (ROOT / "course" / "solutions.md").read_text()
    marker = re.search(r"Answer \(P1\.2\): [^.]*", solutions).group(0)
    for archive_name in ("ncbook-source.zip", "ncbook-student-source.zip"):
        with zipfile.ZipFile(built_book / archive_name) as z:
            assert not [n for n in z.namelist() if "/course/" in n], archive_name
    published = [p for p in built_book.rglob("*") if p.is_file() and p.suffix in (".html", ".md", ".ipynb", ".js")
                 and marker in p.read_text(encoding="utf-8", errors="replace")]
    assert not published, f"the problem set's solutions are published: {published[:3]}"


WIDE_DISPLAYS_JS = """() => [...document.querySelectorAll("mjx-container[display]")]
  .filter(c => c.offsetParent !== null && c.scrollWidth > c.clientWidth + 1)
  .map(c => "a display " + c.scrollWidth + " px wide in " + c.clientWidth + " px: " + c.textContent.slice(0, 40))"""


def settled(tab, js: str, what: str):
    """``js`` evaluated on the loaded page, again if a script of the page moved it on meanwhile (the theme rewrites
    its address on load): at most three tries, each after the page has loaded."""
    from playwright.sync_api import Error

    for attempt in range(3):
        try:
            return tab.evaluate(js)
        except Error as e:
            if "context was destroyed" not in str(e) or attempt == 2:
                raise AssertionError(f"{what}: {e}") from None
            tab.wait_for_load_state("load")


def site_pages(site: Path) -> list[Path]:
    """Every HTML page of the book's site, chapters or not (the index, the library reference, the general index,
    the search page), without the student edition published inside it, which has its own build."""
    return [p for p in sorted(site.rglob("*.html"))
            if not {"student", "_sources", "_static"} & set(p.relative_to(site).parts)]


def test_no_display_is_wider_than_its_column_and_no_page_scrolls_on_a_phone(browser, built_book: Path):
    """Issue 76, point 5, over every page of the site: at 1280 px no displayed formula is wider than its box (an
    aligned block, which MathJax cannot break into lines, scrolled in chapter 3); at 390 px no page is wider than the
    phone (the library reference's signatures and the general index did)."""
    found = []
    for width in (1280, 390):
        ctx = browser.new_context(viewport={"width": width, "height": 900})
        ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                  else route.abort())
        tab = ctx.new_page()
        for page in site_pages(built_book):
            tab.goto(page.as_uri(), wait_until="load")
            name = page.relative_to(built_book).as_posix()
            measure = (WIDE_DISPLAYS_JS if width == 1280 else
                       "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            measured = settled(tab, "() => (window.MathJax && MathJax.startup ? MathJax.startup.promise : "
                               f"Promise.resolve()).then({measure})", name)
            if width == 1280:
                found += [f"{name} at 1280 px: {d}" for d in measured]
            elif measured > 1:
                found.append(f"{name} at 390 px: the page is {measured} px wider than the phone")
        ctx.close()
    assert len(site_pages(built_book)) >= 30
    assert not found, found


TEXT_SUFFIXES = (".html", ".md", ".ipynb", ".js", ".txt", ".py", ".json", ".yml", ".cff", ".toml")


def served_texts(folder: Path):
    """(name, text) of every text file under ``folder`` and of every text member of every zip there: what a site or
    a handout serves. HTML comes as its visible text (tags removed, entities decoded, whitespace joined)."""
    import zipfile

    def text_of(name: str, data: bytes) -> str:
        text = data.decode("utf-8", "replace")
        if name.endswith(".html"):
            text = html.unescape(re.sub(r"<[^>]+>", " ", text))
        return " ".join(text.split())

    for path in sorted(folder.rglob("*")):
        if "_static" in path.parts and not path.name.startswith("ncbook"):
            continue                          # the theme's and MathJax's files, not the book's text
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            yield path.relative_to(folder).as_posix(), text_of(path.name, path.read_bytes())
        elif path.is_file() and path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                for member in z.namelist():
                    if member.endswith(TEXT_SUFFIXES):
                        yield f"{path.name}:{member}", text_of(member, z.read(member))


def solution_phrases() -> list[str]:
    """Phrases of the book's solutions that a rendered page keeps verbatim: from each line of a solution, its longest
    run of plain words (no markup, math, quotes or dashes, which the HTML build renders otherwise), cut to about 36
    characters, where no part of the student text (nor the exercises' checker, ``ncbook/exercises.py``) holds it."""
    edition = source_archive.student_edition(ROOT)
    # the self-checking exercises' checker recomputes their answers (the instructors' page says so: feedback, not an
    # exam); code it shares with a solution is not the solution's text
    checker = " ".join((ROOT / "ncbook" / "exercises.py").read_text().split())
    phrases = []
    for md in sorted((ROOT / "book").glob("ch*.md")):
        full = md.read_text()
        kept = " ".join(edition.student_text(full).split())
        removed = set(full.splitlines()) - set(edition.student_text(full).splitlines())
        for line in sorted(removed):
            runs = re.findall(r"[A-Za-z0-9 ,.;()]{36,}", " ".join(line.split()))   # between markup and math
            phrase = max(runs, key=len, default="").strip()[:36].strip()
            if len(phrase) >= 30 and phrase not in kept and phrase not in checker:
                phrases.append(phrase)
    return phrases


def solutions_served(folder: Path, phrases: list[str]) -> list[str]:
    """Where ``folder`` serves a solution: a solution block's directive or class, or one of ``phrases``."""
    found = []
    for name, text in served_texts(folder):
        hit = next((p for p in phrases if p in text), None) or next(
            (m for m in ("{solution", "solution-start", 'class="solution', "solution_") if m in text), None)
        if hit:
            found.append(f"{name}: {hit!r}")
    return found


def test_the_student_edition_serves_no_solution_anywhere(built_book: Path, tmp_path: Path):
    """Issue 76, point 1: every file the student edition serves (its HTML, its `_sources` downloads, the
    "Run this chapter yourself" archive, the students' archives) and the handout hold no solution block and no
    phrase of a solution; the edition and the handout are published with the book and linked from the instructors'
    page. The check itself finds a planted solution."""
    site = made_by_make("html")
    if site is None:
        pytest.skip("reads the student edition that `make book` published with the book: run by `make test`")
    student = site / "student"
    assert (student / "index.html").is_file(), "`make book` did not publish the student edition in the site"
    assert (site / "ncbook-student.zip").is_file(), "`make book` did not publish the handout in the site"
    page = (site / "book" / "instructors.html").read_text(encoding="utf-8")
    assert 'href="../student/index.html"' in page and 'href="../ncbook-student.zip"' in page
    phrases = solution_phrases()
    assert len(phrases) >= 60, f"only {len(phrases)} solution phrases: the pattern no longer finds them"
    assert sum(any(p in t for p in phrases) for _, t in served_texts(site / "book")) >= 9   # the book shows them
    for folder in (student, made_by_make("student") / "ncbook-student"):
        assert not solutions_served(folder, phrases), solutions_served(folder, phrases)[:5]
    for archive in ("ncbook-student.zip", "ncbook-student-source.zip"):
        shutil.copy(site / archive, tmp_path / archive)
    assert not solutions_served(tmp_path, phrases)
    (tmp_path / "planted.html").write_text(f"<p>{phrases[7]}</p>")
    assert solutions_served(tmp_path, phrases) == [f"planted.html: {phrases[7]!r}"]


ANSWERS = {"P1.2": [r"0\.3125"], "P1.3": [r"1\.2536"], "P2.1": [r"1\.96\b.{1,40}?0\.49\b"],
           "P3.2": [r"4\.2274", r"3\.7848"], "P3.3": [r"0\.5946", r"0\.6300"], "P4.1": [r"0\.1818", r"9/11"],
           "P5.1": [r"502\D{1,12}510\D{1,12}1,?005"], "P5.2": [r"0\.9997"], "P5.3": [r"340 times"]}
"""What gives each answer of the problem set away: its distinctive numbers (an answer such as P2.3's 25 is too
common a number to search for; its problem's other answers stand for it)."""


def test_the_problem_sets_answers_are_published_nowhere(built_book: Path, tmp_path: Path):
    """Issue 76, point 2: no answer of the problem set (course/solutions.md) is on the site, in the student edition,
    in an archive or in the handout; each searched pattern is in the solutions (it is an answer), and a planted one is
    found."""
    solutions = " ".join((ROOT / "course" / "solutions.md").read_text().split())
    for key, patterns in ANSWERS.items():
        line = re.search(rf"Answer \({re.escape(key)}\):[^.]*(?:\.\d[^.]*)*", solutions).group(0)
        assert all(re.search(p, line) for p in patterns), (key, line)
    folders = [built_book] + ([made_by_make("student") / "ncbook-student"] if made_by_make("student") else [])
    patterns = [(k, re.compile(p)) for k, ps in ANSWERS.items() for p in ps]
    found = [f"{name}: {key}" for folder in folders for name, text in served_texts(folder)
             for key, p in patterns if p.search(text)]
    assert not found, f"the problem set's answers are published: {found[:5]}"
    (tmp_path / "planted.md").write_text("seed 7 ends with 1005 misclassified: 502, 510, 1005, 7, 3")
    assert [k for _, text in served_texts(tmp_path) for k, p in patterns if p.search(text)] == ["P5.1"]


def test_print_edition(browser, built_book: Path):
    """``make pdf``'s route: every page printed with the print stylesheet and joined; every figure there (each
    slider figure as all its positions), solutions unfolded, no slider controls."""
    from pypdf import PdfReader

    made = made_by_make("pdf")                 # in `make test`: the PDF that `make pdf` printed
    out = made / "ncbook.pdf" if made else make_pdf.print_book(browser, built_book, BUILD / "ncbook.pdf")
    assert out.is_file(), f"{out} is missing: `make pdf` did not print the book"
    reader = PdfReader(out)
    text = "\n".join(p.extract_text() or "" for p in reader.pages)
    images = 0
    for p in reader.pages:
        xobjects = p.get("/Resources", {}).get("/XObject", {})
        images += sum(1 for x in xobjects.values() if x.get_object().get("/Subtype") == "/Image")
    frames = statics = 0
    numbers = set()
    for page in toc_pages():
        html = (built_book / f"{page}.html").read_text()
        numbers |= set(re.findall(r'<span class="caption-number">(Fig\. \d+\.\d+) </span>', html))
        frames += sum(min(4, len(json.loads(f))) for f in re.findall(r'class="ncsf-frames">(.*?)</script>', html))
        statics += len(re.findall(r'<figure[^>]*>\s*<div class="cell_output[^"]*">\s*<img', html))
    print(f"print edition: {len(reader.pages)} pages, {images} images ({frames} slider frames, {len(numbers)} "
          f"figures), {out.stat().st_size / 2**20:.1f} MB")
    assert len(reader.pages) >= 3 * len(toc_pages())
    assert images >= frames + statics, f"the PDF holds {images} images, the book {frames + statics}"
    flat = re.sub(r"\s+", " ", text)
    missing = [n for n in sorted(numbers) if n not in flat]
    assert not missing, f"figures missing from the PDF: {missing}"
    worded = 0
    for page in toc_pages():
        for label, values in slider_controls(page):
            if len(label) < 5:            # "λW 1" also comes out of typeset math: only worded labels are telling
                continue
            worded += 1
            for v in values:
                assert not re.search(re.escape(label) + r" " + re.escape(v) + r"(?![\d.])", flat), \
                    f"slider control text '{label} {v}' printed"
            for v in (values[0], values[-1]):              # at most four positions print: the ends among them
                assert f"{label} = {v}" in flat, f"the print edition lacks the position '{label} = {v}'"
    assert worded >= 10 and "Solution" in flat

    # the print layout itself, on one page: no control is displayed, each slider figure prints at most four of its
    # positions, each with its position, and the figure with its caption fits one A4 page (267 mm of height)
    ctx = browser.new_context(viewport={"width": round((210 - 28) / 25.4 * 96), "height": 1000})
    tab = ctx.new_page()
    tab.goto((built_book / "book" / "ch03_depth.html").as_uri(), wait_until="load")
    tab.emulate_media(media="print")
    tab.evaluate("() => ncsfPrintLayout()")
    shown = tab.evaluate("""() => [...document.querySelectorAll('.ncsf-control, img.ncsf-frame, input')]
        .filter(e => getComputedStyle(e).display !== 'none' && e.getClientRects().length).length""")
    frames = tab.evaluate("() => [...document.querySelectorAll('.ncsf-print')].map(g => "
                          "[...g.querySelectorAll('figure')].map(f => f.textContent))")
    tall = tab.evaluate("() => [...document.querySelectorAll('.bd-article figure')].filter(f => "
                        "f.querySelector('.ncsf-print')).map(f => f.getBoundingClientRect().height)")
    ctx.close()
    assert shown == 0, f"{shown} slider controls would print"
    assert len(frames) == 2 and [len(f) for f in frames] == [4, 4] and all(" = " in t for f in frames for t in f)
    assert tall and max(tall) <= 267 / 25.4 * 96, f"a slider figure and its caption need {max(tall):.0f} px in print"

    # code on paper: at the A4 text width (210 mm less the 14 mm margins, at 96 px an inch) no code block scrolls,
    # which in print would cut its lines off
    ctx = browser.new_context(viewport={"width": round((210 - 28) / 25.4 * 96), "height": 1000})
    tab = ctx.new_page()
    tab.emulate_media(media="print")
    cut = {}
    for page in toc_pages():
        tab.goto((built_book / f"{page}.html").as_uri(), wait_until="load")
        cut[page] = tab.evaluate(SCROLLING_JS)
    ctx.close()
    cut = {page: c for page, c in cut.items() if c}
    assert not cut, f"code cut off in print on {len(cut)} pages: {list(cut.items())[:2]}"


def test_make_student_and_make_pdf_made_the_student_edition_and_its_handout():
    """In `make test`, after `make student` and `make pdf` ran as documented: the student edition's PDF (exercises and
    their answer cells, no solution) and the handout archive (notebooks, package, results, README)."""
    from pypdf import PdfReader

    pdf, student = made_by_make("pdf"), made_by_make("student")
    if pdf is None:
        pytest.skip("reads what `make student` and `make pdf` made: run by `make test` (NCBOOK_BUILT)")
    out = pdf / "ncbook-student.pdf"
    assert out.is_file(), f"{out} is missing: `make pdf` did not print the student edition"
    reader = PdfReader(out)
    flat = re.sub(r"\s+", " ", "\n".join(p.extract_text() or "" for p in reader.pages))
    assert len(reader.pages) >= 3 * len(toc_pages())
    assert "Exercise 1.1" in flat and "Exercise 9.3" in flat and "Solution to Exercise" not in flat
    assert flat.count(", your answer:") == 13
    archive = student / "ncbook-student.zip"
    assert archive.is_file(), f"{archive} is missing: `make student` made no handout"
    import zipfile

    with zipfile.ZipFile(archive) as z:
        names = set(z.namelist())
    for name in ("README.md", "Makefile", "requirements.txt", "ncbook/exercises.py", "book/ch01_metrics.ipynb",
                 "book/ch09_tirer_experiments.md", "results/README.md"):
        assert f"ncbook-student/{name}" in names, f"the handout lacks {name}"


PAPER_WORDS = re.compile(r"et al\.|their|the paper|Tirer|Jacot|Bruna|Nguyen|Papyan|Zhu|Galanti|printed|as stated", re.I)
NAMED = re.compile(r"\b(Theorem|Thm\.?|Lemma|Proposition|Prop\.|Corollary|Cor\.|Assumption) ([A-Z]?\d+\.\d+)")
OWN_NUMBERING = {"book/working", "book/notation"}    # pages that explain how the book numbers (the examples are ours)


def _visible_text(page: str) -> str:
    """A page's prose: no code, no statement headings, the book's own numbered references as LINK."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r'<div class="cell_input.*?</div>\s*</div>', " ", page, flags=re.S)
    page = re.sub(r"<pre\b.*?</pre>", " ", page, flags=re.S)
    page = re.sub(r'<p class="admonition-title">.*?</p>', " ", page, flags=re.S)
    page = re.sub(r'<a class="reference internal"[^>]*>(.*?)</a>',
                  lambda m: " LINK " if NAMED.search(re.sub(r"<[^>]+>", "", m.group(1))) else m.group(1), page,
                  flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def unqualified_results(page: str) -> list[str]:
    """Every "Theorem 3.1", "Lemma C.2", ... of a page's prose that is neither a link to the book's own statement
    nor qualified by its paper in the same sentence or in the heading of its section."""
    out = []
    for section in re.split(r"(?=<h[12]\b)", page):
        heading = re.match(r"<h[12][^>]*>(.*?)</h[12]>", section, re.S)
        if heading and PAPER_WORDS.search(re.sub(r"<[^>]+>", "", heading.group(1))):
            continue
        for sentence in re.split(r"(?<=[.;!?])\s+(?=[A-Z*(])|\n\n", _visible_text(section)):
            out += [f"{m.group(0)}: {sentence.strip()[:120]!r}" for m in NAMED.finditer(sentence)
                    if not PAPER_WORDS.search(sentence)]
    return out


def test_titles_and_references_read_right(built_book: Path):
    """On every page: statement, exercise and solution titles with one pair of parentheses ("Exercise 1.1 (basic)",
    never "((basic))"); every link to a chapter reads as its number, once ("Chapter 4", never "Chapter Chapter 4", as
    when the source breaks the line between the two), with the chapter's title on hover, not spelled in the line
    (issue 62); every theorem, lemma, ... named by a number
    that is not a link to the book's own statement is qualified by its paper within the same sentence."""
    chapters = {}
    for page in toc_pages():
        page_html = (built_book / f"{page}.html").read_text()
        m = re.search(r"<h1>((?:(?!<h1>).)*?)<a class=\"headerlink\"", page_html, re.S)     # the article's h1
        if page.startswith("book/ch") and m:
            chapters[re.sub(r"^\d+\.\s*", "", html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip())] = page
    assert len(chapters) == 17, chapters                     # Part IV: hubs and pages
    bad: list[str] = []
    for page in toc_pages():
        page_html = (built_book / f"{page}.html").read_text()
        for title in re.findall(r'class="admonition-title">(.*?)</p>', page_html, re.S):
            text = html.unescape(re.sub(r"<[^>]+>", "", title))
            if "((" in text or "))" in text:
                bad.append(f"{page}: title {text!r}")
        article = page_html[page_html.find('<article class="bd-article"'):page_html.find("</article>")]
        for attrs, link in re.findall(r'<a class="reference internal"([^>]*)>(.*?)</a>', article, re.S):
            text = html.unescape(re.sub(r"<[^>]+>", "", link)).strip()
            if text in chapters:
                bad.append(f"{page}: chapter link without its number: {text!r}")
            to_chapter = re.search(r'href="(?:\.\./)?(?:book/)?(ch\d\d_\w+)\.html#ch-[\w-]+"', attrs)
            hover = re.search(r'title="Chapter (\d+): ([^"]*)"', attrs)
            if to_chapter and not re.fullmatch(r"(Chapter )?\d+", text):
                bad.append(f"{page}: a chapter link spells more than its number: {text!r}")
            elif to_chapter and (
                    not hover or text.removeprefix("Chapter ") != hover.group(1)
                    or chapters.get(html.unescape(hover.group(2))) != f"book/{to_chapter.group(1)}"):
                bad.append(f"{page}: chapter link {text!r} without the chapter's title on hover ({attrs.strip()!r})")
        if page not in OWN_NUMBERING:
            bad += [f"{page}: without its paper: {u}" for u in unqualified_results(page_html)]
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page_html)).split())
        bad += [f"{page}: {text[m.start() - 30:m.end() + 10]!r}" for m in re.finditer(r"Chapters? Chapter", text)]
    assert not bad, f"{len(bad)} titles or references read wrong:\n" + "\n".join(bad[:40])


@pytest.mark.parametrize("query", ["balancedness", "Theorem 3.1", "weight decay"])
def test_search_snippets_read_as_prose(browser, built_book: Path, query: str):
    """The search page, served over HTTP as a reader gets it: every snippet is prose (formulas written out as text,
    no TeX source, no page furniture such as the download buttons or the contents sidebar)."""
    import http.server
    import threading
    from functools import partial

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = partial(Quiet, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        tab = browser.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/search.html?q={query.replace(' ', '+')}")
        # finished, with every page result's snippet in place (the theme may start the same search twice; wait for
        # the last one to finish); a function of the library reference shows its kind in a <span>, not a snippet
        tab.wait_for_function("() => (document.querySelector('p.search-summary') || {}).textContent"
                              "?.includes('Search finished') && document.querySelectorAll('ul.search li').length"
                              " && [...document.querySelectorAll('ul.search li')].every(li => li.querySelector("
                              "'p.context') || li.querySelector(':scope > span'))", timeout=120_000)
        snippets = tab.eval_on_selector_all("ul.search li p.context", "ps => ps.map(p => p.textContent)")
        tab.close()
    finally:
        server.shutdown()
    assert len(snippets) >= 3, f"{query!r}: {len(snippets)} snippets"
    bad = [s for s in snippets if re.search(r"\\[A-Za-z(\[]|\$|\.pdf|\.ipynb|\bContents\b|\.md\b", s)]
    assert not bad, f"{query!r}: {len(bad)} of {len(snippets)} snippets show TeX or page furniture: {bad[:2]}"


def test_the_site_carries_its_code_and_a_downloaded_chapter_runs_from_it(built_book: Path, tmp_path: Path):
    """The built site offers ncbook-source.zip from every chapter's "Run this chapter yourself" box, with a checksum
    that matches; the archive holds the repository's package, results and install files and the chapters as built.
    A chapter downloaded from its page (the .ipynb of the download button), put next to the archive in a fresh
    environment without ncbook, installs ncbook from it in its first cell and runs to the end."""
    import hashlib
    import zipfile

    from test_bootstrap import _fresh_venv

    from helpers import execute_notebook

    archive = built_book / "ncbook-source.zip"
    digest = (built_book / "ncbook-source.zip.sha256").read_text().split()
    assert digest == [hashlib.sha256(archive.read_bytes()).hexdigest(), "ncbook-source.zip"]
    with zipfile.ZipFile(archive) as z:
        members = {n.removeprefix("ncbook-source/"): z.read(n) for n in z.namelist()}
    for name in ("ncbook/__init__.py", "ncbook/exercises.py", "results/README.md", "requirements.txt", "Makefile",
                 "pyproject.toml", "jupytext.toml", "book/ch01_metrics.md", "book/ch09_tirer_experiments.md"):
        assert name in members, f"the archive lacks {name}"
    # its README says what the archive is for (issue 76: the repository's begins with `make book`, which the
    # archive cannot do): its commands are those the archive's Makefile can run
    readme = members.pop("README.md").decode()
    assert readme == source_archive.ARCHIVE_README and "make book" not in readme and "make test" not in readme
    assert set(re.findall(r"^    make (\w+)", readme, re.M)) == {"install", "lab"}
    for name, data in members.items():                  # what was built is what the repository holds
        assert (ROOT / name).read_bytes() == data, f"{name} in the archive differs from the repository's"
    for page in toc_pages():
        if page.startswith("book/ch"):
            html_text = (built_book / f"{page}.html").read_text()
            assert 'href="../ncbook-source.zip"' in html_text and 'href="../ncbook-source.zip.sha256"' in html_text

    python = _fresh_venv(tmp_path)
    here = tmp_path / "downloads"
    here.mkdir()
    shutil.copy(archive, here / archive.name)
    nb = json.loads((built_book / "_sources" / "book" / "ch02_ufm.ipynb").read_text())
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "where", "metadata": {}, "outputs": [],
                        "source": "import ncbook; print('ncbook from', ncbook.__file__)"})
    (here / "ch02_ufm.ipynb").write_text(json.dumps(nb))
    env = {k: v for k, v in os.environ.items() if k != "NCBOOK_RESULTS"} | {
        "NCBOOK_HOME": str(tmp_path / "home"), "PIP_NO_INDEX": "1", "TQDM_DISABLE": "1"}
    rc, stderr = execute_notebook(python, here / "ch02_ufm.ipynb", here, env)
    assert rc == 0, stderr
    done = json.loads((here / "ch02_ufm.ipynb").read_text())
    where = "".join(done["cells"][-1]["outputs"][0]["text"])
    assert where.strip() == f"ncbook from {tmp_path / 'home' / 'main' / 'ncbook' / '__init__.py'}"
    outputs = json.dumps([c.get("outputs", []) for c in done["cells"]])
    assert "✓ Exercise 2.2: right." in outputs or "\\u2713 Exercise 2.2: right." in outputs


@pytest.mark.parametrize("page", ["book/ch08_jacot_experiments", "book/ch09_tirer_experiments"])
def test_claims_tables_can_be_scanned(browser, built_book: Path, page: str):
    """At 1280 px each claims table shows where, claim, why and verdict (a dot per run) in at most 1,500 px (about 40
    rows of two lines: 1,200 before the why column), headed by what its cells hold;
    the full detail sits in a folded second table whose numbers are never split across lines and whose governing
    ratios read "ours / paper = ..."."""
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto((built_book / f"{page}.html").as_uri(), wait_until="load")
    # the tables a reader sees unfolded (a folded one, the notes or the full detail, is laid out but not shown)
    tables = tab.evaluate("""() => [...document.querySelectorAll(
            'table.ncbook-claims:not(.ncbook-claims-full):not(.ncbook-figure-summaries)')]
        .filter(t => !t.closest('details:not([open])'))
        .map(t => [t.getBoundingClientRect().height, [...t.querySelectorAll('thead th')].map(h => h.textContent)])""")
    assert tables, f"{page}: no claims table"
    for height, heads in tables:
        assert height <= 1500, f"{page}: a claims table is {height:.0f} px tall at 1280 px"
        assert heads[-1] == "verdict: runs in which it holds", heads
    tab.evaluate("() => document.querySelectorAll('details.ncbook-claims-detail').forEach(d => d.open = true)")
    split = tab.evaluate("() => [...document.querySelectorAll('table.ncbook-claims-full .n')]"
                         ".filter(n => n.getClientRects().length > 1).map(n => n.textContent)")
    text = tab.inner_text("main")
    tab.close()
    assert not split, f"{page}: numbers split across lines: {split[:5]}"
    assert "ours / paper = " in text and "paper x" not in text
