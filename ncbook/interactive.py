"""Slider figures: one object, three backends.

``SliderFigure(draw, params)`` declares the parameters (name -> grid of values) and a function that draws the figure
for one value of each. Displayed in a notebook it offers, in one output:

* ``application/vnd.jupyter.widget-view+json``: ipywidgets sliders redrawing through the live kernel (Jupyter);
* ``text/html``: the same sliders over figures precomputed for every grid point, switched by a few lines of inline
  JavaScript, so the rendered book stays interactive with no kernel and no network;
* ``image/png``: a small-multiples snapshot of the grid, for print and PDF.

The book's HTML build prefers ``text/html`` (see ``nb_mime_priority_overrides`` in ``_config.yml``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

MAX_HTML_BYTES = 3 * 1024 * 1024
"""Largest static slider figure we embed in a page (all frames together)."""

_JS = """(function(){var r=document.getElementById(%(id)s);if(!r)return;
var f=JSON.parse(r.querySelector('script.ncsf-frames').textContent);
var ins=r.querySelectorAll('input.ncsf-range');
function u(){var k=[];ins.forEach(function(i){k.push(i.value);
i.parentNode.querySelector('.ncsf-value').textContent=JSON.parse(i.dataset.labels)[+i.value];});
var img=r.querySelector('img.ncsf-frame');img.src='data:image/png;base64,'+f[k.join(',')];
img.dataset.key=k.join(',');}
ins.forEach(function(i){i.addEventListener('input',u);});})();"""


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """PNG bytes of a matplotlib figure (no software/date metadata, so the bytes are reproducible); closes it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


class SliderFigure:
    """A figure with one slider per parameter; see the module docstring for the backends."""

    _count = 0

    def __init__(self, draw: Callable[..., Figure], params: dict[str, Sequence[Any]],
                 labels: dict[str, str] | None = None, fmt: Callable[[Any], str] = "{:g}".format,
                 initial: dict[str, Any] | None = None, dpi: int = 80):
        if not params:
            raise ValueError("a SliderFigure needs at least one parameter")
        for name, grid in params.items():
            if len(grid) < 1:
                raise ValueError(f"parameter {name!r} has an empty grid of values")
        self.draw, self.params, self.fmt, self.dpi = draw, {k: list(v) for k, v in params.items()}, fmt, dpi
        self.labels = {k: (labels or {}).get(k, k) for k in params}
        self.initial = {k: (initial or {}).get(k, v[0]) for k, v in self.params.items()}
        for k, v in self.initial.items():
            if v not in self.params[k]:
                raise ValueError(f"initial value {v!r} of {k!r} is not in its grid {self.params[k]}")
        self._png: dict[tuple, bytes] = {}
        SliderFigure._count += 1
        self._serial = SliderFigure._count

    def image(self, **values: Any) -> bytes:
        """PNG of the figure at one grid point (memoised)."""
        key = tuple(values[k] for k in self.params)
        if key not in self._png:
            self._png[key] = figure_png(self.draw(**values), self.dpi)
        return self._png[key]

    def grid(self) -> list[dict[str, Any]]:
        """Every grid point, in row-major order of the parameters."""
        return [dict(zip(self.params, vals)) for vals in itertools.product(*self.params.values())]

    def html(self) -> str:
        """Self-contained HTML: range inputs over precomputed frames, switched by inline JavaScript."""
        frames, index_key = {}, {}
        for point in self.grid():
            idx = ",".join(str(self.params[k].index(point[k])) for k in self.params)
            frames[idx] = base64.b64encode(self.image(**point)).decode()
            index_key[idx] = point
        digest = hashlib.sha1(json.dumps(sorted(frames), sort_keys=True).encode()).hexdigest()[:8]
        uid = f"ncsf-{self._serial}-{digest}"
        start = ",".join(str(self.params[k].index(self.initial[k])) for k in self.params)
        rows = []
        for k, grid in self.params.items():
            shown = [self.fmt(v) for v in grid]
            i0 = grid.index(self.initial[k])
            rows.append(
                f'<label style="display:block;margin:2px 0">{html.escape(self.labels[k])} '
                f'<input class="ncsf-range" type="range" min="0" max="{len(grid) - 1}" step="1" value="{i0}" '
                f'data-param="{html.escape(k)}" data-labels="{html.escape(json.dumps(shown))}" '
                f'aria-label="{html.escape(self.labels[k])}" style="vertical-align:middle;width:240px"> '
                f'<span class="ncsf-value">{html.escape(shown[i0])}</span></label>')
        out = (f'<div class="ncsf" id="{uid}">{"".join(rows)}'
               f'<img class="ncsf-frame" data-key="{start}" style="max-width:100%" alt="figure" '
               f'src="data:image/png;base64,{frames[start]}"/>'
               f'<script type="application/json" class="ncsf-frames">{json.dumps(frames)}</script>'
               f'<script>{_JS % {"id": json.dumps(uid)}}</script></div>')
        if len(out) > MAX_HTML_BYTES:
            raise ValueError(f"static slider figure would embed {len(out) / 2**20:.1f} MB (limit "
                             f"{MAX_HTML_BYTES / 2**20:.0f} MB): use a coarser grid or a lower dpi")
        return out

    def snapshot(self, max_cols: int = 4) -> Figure:
        """Small multiples of the whole grid (for print/PDF, where nothing can move)."""
        points = self.grid()
        cols = min(max_cols, len(points))
        rows = -(-len(points) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, point in zip(axes.flat, points):
            ax.imshow(plt.imread(io.BytesIO(self.image(**point)), format="png"))
            ax.set_title(", ".join(f"{self.labels[k]}={self.fmt(v)}" for k, v in point.items()), fontsize=8)
        fig.tight_layout()
        return fig

    def widget(self):
        """ipywidgets sliders driving an Image widget through the live kernel."""
        import ipywidgets as w

        sliders = {k: w.SelectionSlider(options=[(self.fmt(v), v) for v in grid], value=self.initial[k],
                                        description=self.labels[k], continuous_update=False)
                   for k, grid in self.params.items()}
        img = w.Image(value=self.image(**self.initial), format="png")

        def redraw(_=None):
            img.value = self.image(**{k: s.value for k, s in sliders.items()})

        for s in sliders.values():
            s.observe(redraw, names="value")
        return w.VBox([*sliders.values(), img])

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle: dict[str, Any] = {
            "text/plain": f"SliderFigure({', '.join(f'{k}: {len(v)} values' for k, v in self.params.items())})",
            "text/html": self.html(),
            "image/png": base64.b64encode(figure_png(self.snapshot(), self.dpi)).decode(),
        }
        if _in_kernel():
            widget_bundle = self.widget()._repr_mimebundle_()
            bundle.update({k: v for k, v in widget_bundle.items() if k != "text/plain"})
        return bundle


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
