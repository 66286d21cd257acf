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
    assert 'data-key="1,0"' in page                          # starts at a=2 (index 1), b=0.5 (index 0)
    assert page.count('class="ncsf-range"') == 2
    assert sf.image(a=2, b=0.5) is sf.image(a=2, b=0.5)     # memoised
    bundle = sf._repr_mimebundle_()
    assert {"text/html", "text/plain"} <= set(bundle) and "image/png" not in bundle   # print uses the frames
    assert 'alt="figure at freq = 2, b = 0.5"' in page and "ncsfPrintLayout" in page


def test_slider_labels_typeset_subscripts_and_escape_html():
    assert label_html("λ_W") == "λ<sub>W</sub>"
    assert label_html("x_{ij} < 1") == "x<sub>ij</sub> &lt; 1"
    page = SliderFigure(_draw, {"a": [1, 2]}, labels={"a": "λ_H"}).html()
    assert "λ<sub>H</sub> <input" in page and 'data-name="λ_H"' in page


def test_slider_figure_rejects_bad_declarations_and_oversized_pages(monkeypatch):
    with pytest.raises(ValueError, match="empty grid"):
        SliderFigure(_draw, {"a": []})
    with pytest.raises(ValueError, match="not in its grid"):
        SliderFigure(_draw, {"a": [1, 2]}, initial={"a": 5})
    monkeypatch.setattr("ncbook.interactive.MAX_HTML_BYTES", 1000)
    with pytest.raises(ValueError, match="coarser grid"):
        SliderFigure(_draw, {"a": [1, 2]}).html()
    assert MAX_HTML_BYTES == 3 * 1024 * 1024
