"""How long each page of the built book takes to become usable, in headless Chromium, cold (a fresh browser profile
per visit), from the files of ``_build/html`` (``make book`` first).

    python benchmarks/bench_pages.py [--repeats 3] [--width 1280]

Per page: the time to the first paint of text (``first-contentful-paint``), to the ``load`` event (every image and
script of a first visit, slider frames excepted), and to "usable", when every formula is typeset as well
(``MathJax.startup.promise``), the median over the repeats; the last line gives the slowest page against the
3 s budget of issue 41. The time of a 1024 x 1024 float32 matrix product is measured in the same run, so a run on a
slower or busier machine can be read as a ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from make_pdf import chromium_path, toc_pages  # noqa: E402

BUDGET_S = 3.0


def visit(browser, url: str, width: int) -> dict[str, float]:
    """One cold visit: seconds to first contentful paint, to the load event and to the last formula typeset."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    tab = ctx.new_page()
    start = time.perf_counter()
    tab.goto(url, wait_until="load")
    loaded = time.perf_counter() - start
    tab.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    usable = time.perf_counter() - start
    paint = tab.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN})"
                         ".startTime") / 1000
    formulas = tab.evaluate("() => document.querySelectorAll('mjx-container').length")
    ctx.close()
    return {"paint": paint, "load": loaded, "usable": usable, "formulas": formulas}


def matmul_ms() -> float:
    a = torch.randn(1024, 1024)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return best * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args()
    html = ROOT / "_build" / "html"
    if not (html / "book" / "index.html").exists():
        print(f"no built book in {html}: run `make book` first", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    print(f"1024 x 1024 float32 matrix product: {matmul_ms():.1f} ms (this machine, now)")
    print(f"{'page':32s} {'paint':>7s} {'load':>7s} {'usable':>7s} {'formulas':>9s}")
    worst = ("", 0.0)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path())
        for page in toc_pages():
            runs = [visit(browser, (html / f"{page}.html").as_uri(), args.width) for _ in range(args.repeats)]
            med = {k: statistics.median(r[k] for r in runs) for k in ("paint", "load", "usable")}
            print(f"{page:32s} {med['paint']:6.2f}s {med['load']:6.2f}s {med['usable']:6.2f}s "
                  f"{runs[0]['formulas']:9d}")
            worst = max(worst, (page, med["usable"]), key=lambda w: w[1])
        browser.close()
    print(f"slowest page to usable: {worst[0]}, {worst[1]:.2f} s ({worst[1] / BUDGET_S:.2f} of the {BUDGET_S:g} s "
          "budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
