"""ncbook.interactive: slider figures (every frame in the static HTML, typeset labels, refused declarations)."""

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ncbook.interactive import MAX_HTML_BYTES, SliderFigure, label_html


def _draw(a, b=1.0):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    t = np.linspace(0, 1, 50)
    ax.plot(t, np.sin(2 * np.pi * a * t) * b)
    return fig


def test_slider_figure_static_html_has_every_frame_and_switches():
    sf = SliderFigure(_draw, {"a": [1, 2, 3], "b": [0.5, 1.0]}, labels={"a": "freq"}, initial={"a": 2})
    page = sf.html()
    frames = json.loads(re.search(r'class="ncsf-frames">(.*?)</script>', page).group(1))
    assert sorted(frames) == [f"{i},{j}" for i in range(3) for j in range(2)]
    assert len(set(frames.values())) == 6                    # every grid point drew a different figure
    phone = json.loads(re.search(r'class="ncsf-phone-frames">(.*?)</script>', page).group(1))
    sizes, phone_sizes = (json.loads(re.search(rf'class="ncsf-{k}sizes">(.*?)</script>', page).group(1))
                          for k in ("", "phone-"))
    assert sorted(phone) == sorted(frames) and not set(phone.values()) & set(frames.values())
    assert all(phone_sizes[k][0] <= sizes[k][0] for k in frames)     # each position drawn for a phone too
    assert '<picture><source media="(max-width: 600px)" srcset="data:image/png;base64,' in page
    assert 'data-key="1,0"' in page                          # starts at a=2 (index 1), b=0.5 (index 0)
    assert page.count('class="ncsf-range"') == 1 and page.count('type="radio"') == 2   # b has two values: a toggle
    assert sf.image(a=2, b=0.5) is sf.image(a=2, b=0.5)     # memoised
    bundle = sf._repr_mimebundle_()
    assert {"text/html", "text/plain"} <= set(bundle) and "image/png" not in bundle   # print uses the frames
    assert 'alt="figure at freq = 2, b = 0.5"' in page and "ncsfPrintLayout" in page


def test_slider_labels_typeset_subscripts_and_escape_html():
    assert label_html("λ_W") == "λ<sub>W</sub>"
    assert label_html("x_{ij} < 1") == "x<sub>ij</sub> &lt; 1"
    page = SliderFigure(_draw, {"a": [1, 2, 3]}, labels={"a": "λ_H"}).html()
    assert "λ<sub>H</sub> <input" in page and 'data-name="λ_H"' in page


def test_a_parameter_of_two_values_is_a_toggle_in_the_page_and_in_jupyter():
    """Issue 62: two positions are a choice, not a range: two radio buttons in the page (no range input), toggle
    buttons in a live kernel; three or more stay a slider."""
    import ipywidgets as w

    sf = SliderFigure(_draw, {"a": [1, 2]}, labels={"a": "λ_H"}, initial={"a": 2})
    page = sf.html()
    assert 'class="ncsf-range"' not in page and page.count('type="radio"') == 2
    assert 'role="radiogroup" aria-label="λ_H"' in page and 'value="1" checked> 2</label>' in page
    kinds = [type(c) for c in sf.widget().children[:1]]
    assert kinds == [w.ToggleButtons]
    assert isinstance(SliderFigure(_draw, {"a": [1, 2, 3]}).widget().children[0], w.SelectionSlider)


def test_slider_figure_rejects_bad_declarations_and_oversized_pages(monkeypatch):
    with pytest.raises(ValueError, match="empty grid"):
        SliderFigure(_draw, {"a": []})
    with pytest.raises(ValueError, match="not in its grid"):
        SliderFigure(_draw, {"a": [1, 2]}, initial={"a": 5})
    monkeypatch.setattr("ncbook.interactive.MAX_HTML_BYTES", 1000)
    with pytest.raises(ValueError, match="coarser grid"):
        SliderFigure(_draw, {"a": [1, 2]}).html()
    assert MAX_HTML_BYTES == 3 * 1024 * 1024


def test_live_sliders_are_lazy_and_the_export_precomputes_every_position(monkeypatch):
    """In a live kernel only the initial position is drawn when the figure is shown, another the first time a slider
    reaches it, then never again; the size cap does not apply. Executing for the book (NCBOOK_STATIC_FIGURES=1)
    draws every position into the static HTML."""
    pytest.importorskip("ipywidgets")
    calls = []

    def draw(a):
        calls.append(a)
        return _draw(a)

    monkeypatch.setattr("ncbook.interactive._in_kernel", lambda: True)
    monkeypatch.delenv("NCBOOK_STATIC_FIGURES", raising=False)
    monkeypatch.setattr("ncbook.interactive.MAX_HTML_BYTES", 1000)           # would refuse the static export
    sf = SliderFigure(draw, {"a": [1, 2, 3, 4]}, initial={"a": 2})
    box = sf.widget()
    bundle = sf._repr_mimebundle_()
    assert "text/html" not in bundle and "application/vnd.jupyter.widget-view+json" in bundle
    assert calls == [2]
    slider = box.children[0]
    slider.value = 4
    slider.value = 2
    slider.value = 4
    assert calls == [2, 4]                                                 # drawn once each, on first view
    monkeypatch.setattr("ncbook.interactive.MAX_HTML_BYTES", 3 * 1024 * 1024)
    monkeypatch.setenv("NCBOOK_STATIC_FIGURES", "1")
    assert "text/html" in sf._repr_mimebundle_() and sorted(calls) == [1, 2, 3, 4]


def test_the_books_example_of_adding_a_slider_runs():
    """The code of "Adding a slider" (book/working.md) runs as printed and makes a 3 x 3 slider figure."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "book" / "working.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    scope: dict = {}
    exec(compile(code, "working.md", "exec"), scope)
    sf = scope["slider"]
    frames = json.loads(re.search(r'class="ncsf-frames">(.*?)</script>', sf.html()).group(1))
    assert len(frames) == 9 and 'data-key="0,1"' in sf.html()
    assert "λ<sub>H</sub>" in sf.html()


def test_live_slider_says_it_is_computing_while_it_draws_a_new_position():
    """A position drawn for the first time shows "computing the figure at ..." and disables the sliders while it is
    drawn; both are undone afterwards, also when the drawing fails; a memoised position says nothing."""
    pytest.importorskip("ipywidgets")
    seen = []

    def draw(a):
        if seen is not None and len(box_ref):
            box = box_ref[0]
            seen.append((box.children[1].value, box.children[0].disabled))
        if a == 3:
            raise RuntimeError("broken position")
        return _draw(a)

    box_ref: list = []
    sf = SliderFigure(draw, {"a": [1, 2, 3]}, labels={"a": "λ_H"})
    box = sf.widget()
    box_ref.append(box)
    slider, status = box.children[0], box.children[1]
    slider.value = 2
    assert seen == [("<i>computing the figure at λ_H = 2 …</i>", True)]
    assert status.value == "" and not slider.disabled
    slider.value = 1                                                       # memoised: nothing to say
    assert len(seen) == 1
    with pytest.raises(RuntimeError):
        slider.value = 3
    assert status.value == "" and not slider.disabled
