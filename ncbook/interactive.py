"""Slider figures: one object, two backends.

``SliderFigure(draw, params)`` declares the parameters (name -> grid of values) and a function that draws the figure
for one value of each. Displayed in a notebook it offers, in one output:

* ``application/vnd.jupyter.widget-view+json``: ipywidgets sliders redrawing through the live kernel (Jupyter). This
  is lazy: only the initial position is drawn when the figure is shown; any other is drawn the first time a slider
  reaches it (its progress bars, e.g. of a training run, show below the figure), then kept;
* ``text/html``: the same sliders over figures precomputed for every grid point, switched by a few lines of inline
  JavaScript, so the rendered book stays interactive with no kernel and no network. Only made for the static
  export: when :data:`STATIC_VARIABLE` is ``1`` (``make execute`` sets it) or outside a kernel. The size cap
  :data:`MAX_HTML_BYTES` applies to it alone;

For print (and ``make pdf``) the inline script lays every slider figure out as small multiples of all its positions,
each labelled (``ncsfPrintLayout``, run on the browser's ``beforeprint`` event).

The book's HTML build prefers ``text/html`` (see ``nb_mime_priority_overrides`` in ``_config.yml``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from . import require_extra

require_extra("ncbook.interactive", "figures")

from matplotlib.figure import Figure

from .plotting import page_pngs, picture_html

MAX_HTML_BYTES = 3 * 1024 * 1024
"""Largest static slider figure we embed in a page (all frames together)."""

STATIC_VARIABLE = "NCBOOK_STATIC_FIGURES"
"""Set to ``1`` when executing chapters for the book: slider figures then precompute every position as HTML."""

# a frame is base64 PNG data, or (in the built book, book/_ext/slider_frames.py) the URL of its own PNG file; each
# position has a column frame and a phone frame (ncbook.plotting.phone_layout): the browser shows the one it needs
_JS = """(function(){var r=document.getElementById(%(id)s);if(!r)return;
function j(c){return JSON.parse(r.querySelector('script.'+c).textContent);}
var f=j('ncsf-frames'),z=j('ncsf-sizes'),p=j('ncsf-phone-frames'),y=j('ncsf-phone-sizes');
function url(s){return /\\.png$/.test(s)?s:'data:image/png;base64,'+s;}
var cs=r.querySelectorAll('.ncsf-control');
function at(c){return (c.querySelector('input.ncsf-range')||c.querySelector('input:checked')).value;}
function u(){var k=[],t=[];cs.forEach(function(c){var n=at(c);k.push(n);var v=JSON.parse(c.dataset.labels)[+n];
var s=c.querySelector('.ncsf-value');if(s)s.textContent=v;t.push(c.dataset.name+' = '+v);});k=k.join(',');
var src=r.querySelector('picture source'),img=r.querySelector('img.ncsf-frame');
src.srcset=url(p[k]);src.width=y[k][0];src.height=y[k][1];
img.src=url(f[k]);img.width=z[k][0];img.height=z[k][1];
img.dataset.key=k;img.alt=r.dataset.alt+' at '+t.join(', ');}
r.querySelectorAll('.ncsf-control input').forEach(function(i){i.addEventListener('input',u);
i.addEventListener('change',u);});})();"""

_PRINT_JS = """(function(){if(window.ncsfPrintLayout)return;
window.ncsfPrintLayout=function(){document.querySelectorAll('div.ncsf').forEach(function(r){
if(r.querySelector('.ncsf-print'))return;var f=JSON.parse(r.querySelector('script.ncsf-frames').textContent);
var ins=[].slice.call(r.querySelectorAll('.ncsf-control'));var g=document.createElement('div');
g.className='ncsf-print';Object.keys(f).forEach(function(key){var ix=key.split(','),t=[];
var h=[];ins.forEach(function(i,n){var v=JSON.parse(i.dataset.labels)[+ix[n]];t.push(i.dataset.name+' = '+v);
var e=document.createElement('span');e.textContent=v;h.push(i.dataset.html+' = '+e.innerHTML);});
var c=document.createElement('figure'),im=document.createElement('img'),cap=document.createElement('figcaption');
im.src=/\\.png$/.test(f[key])?f[key]:'data:image/png;base64,'+f[key];
im.alt=r.dataset.alt+' at '+t.join(', ');cap.innerHTML=h.join(', ');
c.appendChild(im);c.appendChild(cap);g.appendChild(c);});r.appendChild(g);});
document.querySelectorAll('details').forEach(function(d){d.open=true;});};
window.addEventListener('beforeprint',window.ncsfPrintLayout);
window.addEventListener('afterprint',function(){document.querySelectorAll('.ncsf-print').forEach(function(g){
g.remove();});});})();"""
"""Print layout (small multiples of every slider figure, solutions unfolded), built on demand from the frames."""


def label_html(label: str) -> str:
    """A plain-text label with TeX-like subscripts (``λ_W``, ``x_{ij}``) as HTML (``λ<sub>W</sub>``)."""
    out = html.escape(label)
    out = re.sub(r"_\{([^}]*)\}", r"<sub>\1</sub>", out)
    return re.sub(r"_(\w)", r"<sub>\1</sub>", out)


class SliderFigure:
    """A figure with one slider per parameter; see the module docstring for the backends (live: lazy; static
    export: every position precomputed).

    Parameters
    ----------
    draw : function of one keyword argument per parameter, returning a matplotlib figure (drawn with
        ``ncbook.plotting``'s style: one text column wide).
    params : parameter name -> the grid of values its slider steps through.
    labels : parameter name -> the label shown beside its slider (``λ_W`` shows as λ with subscript W).
    fmt : how a value is printed beside its slider.
    initial : parameter name -> the value shown first (default: the first of its grid).
    alt : what the figure shows, for screen readers; the slider positions are appended.

    Example (two sliders; ``draw`` receives one keyword argument per parameter)::

        def draw(lam, depth):
            fig, ax = plt.subplots()
            ax.plot(np.arange(depth), lam * np.arange(depth))
            return fig

        SliderFigure(draw, {"lam": [0.01, 0.1, 1.0], "depth": [2, 4, 8]}, labels={"lam": "λ_H", "depth": "L"},
                     initial={"depth": 4}, alt="a line of slope λ_H over L points")
    """

    _count = 0

    def __init__(self, draw: Callable[..., Figure], params: dict[str, Sequence[Any]],
                 labels: dict[str, str] | None = None, fmt: Callable[[Any], str] = "{:g}".format,
                 initial: dict[str, Any] | None = None, alt: str = "figure"):
        if not params:
            raise ValueError("a SliderFigure needs at least one parameter")
        for name, grid in params.items():
            if len(grid) < 1:
                raise ValueError(f"parameter {name!r} has an empty grid of values")
        self.draw, self.params, self.fmt, self.alt = draw, {k: list(v) for k, v in params.items()}, fmt, alt
        self.labels = {k: (labels or {}).get(k, k) for k in params}
        self.initial = {k: (initial or {}).get(k, v[0]) for k, v in self.params.items()}
        for k, v in self.initial.items():
            if v not in self.params[k]:
                raise ValueError(f"initial value {v!r} of {k!r} is not in its grid {self.params[k]}")
        self._png: dict[tuple, tuple[tuple[bytes, dict[str, int]], tuple[bytes, dict[str, int]]]] = {}
        SliderFigure._count += 1
        self._serial = SliderFigure._count

    def frames(self, **values: Any) -> tuple[tuple[bytes, dict[str, int]], tuple[bytes, dict[str, int]]]:
        """Column and phone PNGs of the figure at one grid point, each with its display size in CSS px (memoised)."""
        key = tuple(values[k] for k in self.params)
        if key not in self._png:
            self._png[key] = page_pngs(self.draw(**values))
        return self._png[key]

    def frame(self, **values: Any) -> tuple[bytes, dict[str, int]]:
        """Column PNG of the figure at one grid point and its display size in CSS px."""
        return self.frames(**values)[0]

    def image(self, **values: Any) -> bytes:
        """PNG of the figure at one grid point."""
        return self.frame(**values)[0]

    def position_text(self, point: dict[str, Any]) -> str:
        """``label = value, ...`` for one grid point (alt text and print captions)."""
        return ", ".join(f"{self.labels[k]} = {self.fmt(v)}" for k, v in point.items())

    def grid(self) -> list[dict[str, Any]]:
        """Every grid point, in row-major order of the parameters."""
        return [dict(zip(self.params, vals)) for vals in itertools.product(*self.params.values())]

    def html(self) -> str:
        """Self-contained HTML: a range input per parameter (a toggle where it has two values) over precomputed
        frames, switched by inline JavaScript."""
        tables: dict[str, dict[str, Any]] = {"frames": {}, "sizes": {}, "phone-frames": {}, "phone-sizes": {}}
        for point in self.grid():
            idx = ",".join(str(self.params[k].index(point[k])) for k in self.params)
            for kind, (png, size) in zip(("", "phone-"), self.frames(**point)):
                tables[kind + "frames"][idx] = base64.b64encode(png).decode()
                tables[kind + "sizes"][idx] = [size["width"], size["height"]]
        digest = hashlib.sha1(json.dumps(sorted(tables["frames"]), sort_keys=True).encode()).hexdigest()[:8]
        uid = f"ncsf-{self._serial}-{digest}"
        start = ",".join(str(self.params[k].index(self.initial[k])) for k in self.params)
        rows = []
        for k, grid in self.params.items():
            shown = [self.fmt(v) for v in grid]
            i0 = grid.index(self.initial[k])
            data = (f'data-param="{html.escape(k)}" data-name="{html.escape(self.labels[k])}" '
                    f'data-html="{html.escape(label_html(self.labels[k]))}" '
                    f'data-labels="{html.escape(json.dumps(shown))}"')
            if len(grid) == 2:      # two positions: a toggle between them, not a slider
                choices = "".join(
                    f'<label class="ncsf-choice"><input type="radio" name="{uid}-{html.escape(k)}" value="{i}"'
                    f'{" checked" if i == i0 else ""}> {html.escape(v)}</label>' for i, v in enumerate(shown))
                rows.append(f'<div class="ncsf-control ncsf-toggle" role="radiogroup" '
                            f'aria-label="{html.escape(self.labels[k])}" {data} style="display:block;margin:2px 0">'
                            f'{label_html(self.labels[k])} {choices}</div>')
                continue
            rows.append(
                f'<label class="ncsf-control" {data} style="display:block;margin:2px 0">{label_html(self.labels[k])} '
                f'<input class="ncsf-range" type="range" min="0" max="{len(grid) - 1}" step="1" value="{i0}" '
                f'aria-label="{html.escape(self.labels[k])}" style="vertical-align:middle;width:min(240px,50vw)"> '
                f'<span class="ncsf-value">{html.escape(shown[i0])}</span></label>')
        alt = f"{self.alt} at {self.position_text(self.initial)}"
        picture = picture_html(*self.frames(**self.initial), alt, attrs=f'class="ncsf-frame" data-key="{start}"')
        scripts = "".join(f'<script type="application/json" class="ncsf-{name}">{json.dumps(table)}</script>'
                          for name, table in tables.items())
        out = (f'<div class="ncsf" id="{uid}" data-alt="{html.escape(self.alt)}">{"".join(rows)}{picture}{scripts}'
               f'<script>{_JS % {"id": json.dumps(uid)}}{_PRINT_JS}</script></div>')
        if len(out) > MAX_HTML_BYTES:
            raise ValueError(f"static slider figure would embed {len(out) / 2**20:.1f} MB (limit "
                             f"{MAX_HTML_BYTES / 2**20:.0f} MB): use a coarser grid")
        return out

    def widget(self):
        """ipywidgets sliders (toggle buttons for a parameter of two values) driving an Image widget through the
        live kernel."""
        import ipywidgets as w

        def control(k: str, grid: list) -> Any:
            options = [(self.fmt(v), v) for v in grid]
            common = dict(description=label_html(self.labels[k]), description_allow_html=True,
                          style={"description_width": "initial"})
            if len(grid) == 2:
                return w.ToggleButtons(options=options, value=self.initial[k], **common)
            return w.SelectionSlider(options=options, value=self.initial[k], continuous_update=False, **common)

        sliders = {k: control(k, grid) for k, grid in self.params.items()}
        img = w.Image(value=self.image(**self.initial), format="png")
        status = w.HTML(value="")       # "computing ..." while a position is drawn for the first time
        log = w.Output()                # progress bars of a position drawn for the first time

        def redraw(_=None):
            values = {k: s.value for k, s in sliders.items()}
            if tuple(values[k] for k in self.params) not in self._png:
                status.value = f"<i>computing the figure at {html.escape(self.position_text(values))} …</i>"
                for s in sliders.values():
                    s.disabled = True
            try:
                with log:
                    log.clear_output()
                    img.value = self.image(**values)
            finally:
                status.value = ""
                for s in sliders.values():
                    s.disabled = False

        for s in sliders.values():
            s.observe(redraw, names="value")
        return w.VBox([*sliders.values(), status, img, log])

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle: dict[str, Any] = {
            "text/plain": f"SliderFigure({', '.join(f'{k}: {len(v)} values' for k, v in self.params.items())})"}
        if static_export():
            bundle["text/html"] = self.html()
        if _in_kernel():
            widget_bundle = self.widget()._repr_mimebundle_()
            bundle.update({k: v for k, v in widget_bundle.items() if k != "text/plain"})
        return bundle


def static_export() -> bool:
    """Whether slider figures precompute every position as HTML: when executing for the book (:data:`STATIC_VARIABLE`
    is ``1``) or outside a live kernel."""
    return os.environ.get(STATIC_VARIABLE) == "1" or not _in_kernel()


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
