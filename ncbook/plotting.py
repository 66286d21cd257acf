"""Shared figure styles and the figures the chapters reuse."""

from __future__ import annotations

import base64
import functools
import html
import io

from . import require_extra

require_extra("ncbook.plotting", "figures")

import matplotlib.pyplot as plt
import matplotlib.text as mtext
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.gridspec import GridSpec
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from . import metrics
from .train import History

COLUMN_IN = 688 / 96
"""Width of the book's text column in inches (688 CSS px at 96 px per inch): every figure is drawn this wide, so
its text shows at its size in points."""
PAGE_DPI = 192
"""Resolution of every figure on the page: 2x the CSS pixel density, for sharp screens."""
MIN_FONT_PT = 9
"""Smallest text in any figure, in points at the displayed size."""
PHONE_IN = 358 / 96
"""Width of the text column on a 390 px phone, in inches: the phone rendering of a figure is drawn this wide, so its
text shows at its size in points there too (a column-wide figure shrunk to a phone would show 9 pt as 6 px)."""
PHONE_MEDIA = "(max-width: 600px)"
"""Screens that get the phone rendering (below 600 px the column is too narrow for the desktop one at 9 px)."""

plt.rcParams.update({"figure.dpi": 96, "savefig.dpi": PAGE_DPI, "axes.grid": True, "grid.alpha": 0.3,
                     "axes.spines.top": False, "axes.spines.right": False, "font.size": MIN_FONT_PT,
                     "axes.titlesize": MIN_FONT_PT + 0.5, "axes.labelsize": MIN_FONT_PT,
                     "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT, "legend.fontsize": MIN_FONT_PT,
                     "figure.titlesize": MIN_FONT_PT + 1, "legend.framealpha": 0.8})


def panels(n: int, row_height: float = 2.6, **kw) -> tuple[Figure, list]:
    """A figure of n panels filling the text column, at most two per row (so each is at least half the column)."""
    cols = 1 if n == 1 else 2
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(COLUMN_IN, row_height * rows), squeeze=False, **kw)
    axes = list(axes.flat)
    for ax in axes[n:]:
        ax.remove()
    return fig, axes[:n]


def min_font_pt(fig: Figure) -> float:
    """The smallest size, in points, of any visible text drawn in a figure."""
    sizes = [t.get_fontsize() for t in fig.findobj(mtext.Text) if t.get_visible() and t.get_text().strip()]
    return float(min(sizes, default=MIN_FONT_PT))


def panels_per_row(fig: Figure) -> int:
    """The largest number of panels (axes other than colour bars) side by side in one row of a figure."""
    boxes = [ax.get_position() for ax in fig.axes if ax.get_visible() and not hasattr(ax, "_colorbar")]
    return max((sum(1 for b in boxes if b.y0 < a.y1 and a.y0 < b.y1) for a in boxes), default=0)


def page_png(fig: Figure, close: bool = True) -> tuple[bytes, dict[str, int]]:
    """PNG of a figure at PAGE_DPI with its display size in CSS px (half its pixels), for Jupyter and the book.

    The PNG records its smallest font and how many panels share a row (tEXt ``ncbook-min-font-pt``,
    ``ncbook-panels-per-row``), so that the displayed text size and the layout can be checked from the file; no
    software or date metadata, so equal figures give equal bytes."""
    fig.canvas.draw()
    small, per_row = min_font_pt(fig), panels_per_row(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PAGE_DPI, bbox_inches="tight", pad_inches=0.04, facecolor="white")
    if close:
        plt.close(fig)
    image = Image.open(buf).convert("RGB").quantize(256)      # a palette: a third of the bytes, same look
    info = PngInfo()
    info.add_text("ncbook-min-font-pt", f"{small:g}")
    info.add_text("ncbook-panels-per-row", str(per_row))
    out = io.BytesIO()
    image.save(out, format="png", optimize=True, dpi=(PAGE_DPI, PAGE_DPI), pnginfo=info)
    w, h = image.size
    return out.getvalue(), {"width": round(w * 96 / PAGE_DPI), "height": round(h * 96 / PAGE_DPI)}


def _wrap_in_two(text: str) -> str:
    """A title split into two lines at the space nearest its middle that is not inside $...$ (unchanged if none)."""
    spaces = [i for i, ch in enumerate(text) if ch == " " and text[:i].count("$") % 2 == 0]
    if not spaces:
        return text
    i = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return text[:i] + "\n" + text[i + 1:]


def phone_layout(fig: Figure) -> None:
    """Lay a figure out again, in place, for a phone: at most PHONE_IN wide, its panels one under another in reading
    order, each as tall as before (colour bars stay beside their panel), titles wider than the figure on two lines."""
    cells: list = []                       # each panel's cell in the figure's own grid, in reading order
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is not None and spec.get_topmost_subplotspec() not in cells:
            cells.append(spec.get_topmost_subplotspec())
    rows = cells[0].get_gridspec().nrows if cells else 1
    grid = GridSpec(max(len(cells), 1), 1, figure=fig)
    moves = []
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None:
            raise ValueError("phone_layout moves panels of a grid: draw every axes in one (a colour bar with "
                             "fig.colorbar(..., ax=one_panel), not ax=several)")
        top = spec.get_topmost_subplotspec()
        new = grid[cells.index(top)]
        if spec == top:
            moves.append((ax.set_subplotspec, new))
        else:                              # a panel and its colour bar share a grid inside the cell: move that grid
            inner = spec.get_gridspec()
            # (matplotlib has no public way to move a nested grid: GridSpecFromSubplotSpec keeps its cell here)
            while inner._subplot_spec != top:  # type: ignore[attr-defined]
                inner = inner._subplot_spec.get_gridspec()  # type: ignore[attr-defined]
            moves.append((functools.partial(setattr, inner, "_subplot_spec"), new))
    for move, new in moves:
        move(new)
    height = fig.get_figheight() / rows * max(len(cells), 1)
    fig.set_size_inches(min(PHONE_IN, fig.get_figwidth()), height)
    fig.subplots_adjust(**{k: plt.rcParamsDefault[f"figure.subplot.{k}"]  # type: ignore[index]  # a valid key
                           for k in ("left", "right", "bottom", "top", "wspace", "hspace")})
    width = fig.get_figwidth() * fig.dpi
    # (the figure's and the axes' title texts: matplotlib keeps the side titles private)
    titles = [fig._suptitle] + [t for ax in fig.axes  # type: ignore[attr-defined]
                                for t in (ax.title, ax._left_title, ax._right_title)]  # type: ignore[attr-defined]
    fig.canvas.draw()
    for t in titles:
        if t is not None and t.get_text() and t.get_window_extent().width > 0.98 * width:
            t.set_text(_wrap_in_two(t.get_text()))
    for _ in range(2):                     # the second pass lays out text measured at the new size
        fig.canvas.draw()
        fig.tight_layout()


def page_pngs(fig: Figure) -> tuple[tuple[bytes, dict[str, int]], tuple[bytes, dict[str, int]]]:
    """``page_png`` of a figure as drawn (for the column, Jupyter and print) and of its ``phone_layout``; closes it."""
    column = page_png(fig, close=False)
    phone_layout(fig)
    return column, page_png(fig)


def picture_html(column: tuple[bytes, dict[str, int]], phone: tuple[bytes, dict[str, int]], alt: str,
                 attrs: str = "") -> str:
    """An HTML ``<picture>`` that shows the phone rendering on screens matching PHONE_MEDIA, the column one elsewhere
    (both inline as base64; the book's build moves them to files, ``book/_ext/slider_frames.py``)."""
    def uri(png: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(png).decode()

    (png, size), (ppng, psize) = column, phone
    return (f'<picture><source media="{PHONE_MEDIA}" srcset="{uri(ppng)}" width="{psize["width"]}" '
            f'height="{psize["height"]}"/><img {attrs} width="{size["width"]}" '
            f'height="{size["height"]}" style="max-width:100%;height:auto" alt="{html.escape(alt)}" '
            f'src="{uri(png)}"/></picture>')


class PageFigure:
    """A finished figure shown in a notebook: its column PNG for Jupyter, print and the PDF; in the HTML book a
    ``picture_html`` with its phone rendering too. ``PageFigure(fig, alt)`` draws both and closes ``fig``."""

    def __init__(self, fig: Figure, alt: str):
        self.alt = alt
        self.column, self.phone = page_pngs(fig)

    def _repr_png_(self) -> tuple[bytes, dict[str, int]]:
        return self.column

    def _repr_html_(self) -> str:
        return picture_html(self.column, self.phone, self.alt)

    def __repr__(self) -> str:
        """No memory address, so that re-executing a chapter gives the same notebook."""
        return "<ncbook.plotting.PageFigure>"


def _show_figures_at_page_size() -> None:
    """In a Jupyter kernel, display matplotlib figures through ``page_png`` (sharp, column-sized, font recorded)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return
    import matplotlib_inline.backend_inline  # noqa: F401  (its own set-up runs first, so it cannot replace ours)

    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda fig: page_png(fig, close=False))


_show_figures_at_page_size()


def layer_colors(n: int) -> list:
    """n colours from light (early layers) to dark (last layer)."""
    return [plt.cm.viridis(0.85 - 0.75 * i / max(n - 1, 1)) for i in range(n)]


def plot_history(hist: History, title: str = "", layers: list[int] | None = None) -> Figure:
    """NC1 (trace ratio), NC2 (condition number of class means) and NC3 over training, one line per layer."""
    nl = len(hist.layers["nc1_trace_ratio"][0])
    layers = layers if layers is not None else list(range(nl))
    colors = layer_colors(nl)
    fig, axes = panels(4, 2.5)
    for name, ax, label in [("nc1_trace_ratio", axes[0], r"NC1 = tr$\Sigma_W$/tr$\Sigma_B$"),
                            ("nc2_condition_number", axes[1], r"NC2 = $\kappa(\bar Z)$")]:
        for i in layers:
            vals = hist.series(name, i)
            if np.all(np.isfinite(vals)):
                ax.semilogy(hist.steps, vals, color=colors[i], label=f"layer {i + 1}")
        ax.set_title(label)
        ax.set_xlabel("GD step")
    axes[0].legend(ncol=2)
    axes[2].plot(hist.steps, hist.series("nc3_cosine", 0), color="k")
    axes[2].set_ylim(0, 1.02)
    axes[2].set_title(r"NC3 = mean cos($z_{ci}$, $W_{L,c:}$)")
    axes[2].set_xlabel("GD step")
    axes[3].semilogy(hist.steps, hist.loss, color="C3", label="loss")
    axes[3].semilogy(hist.steps, np.maximum(hist.train_error, 1e-4), color="C0", ls="--", label="train error")
    axes[3].set_title("regularised loss, training error")
    axes[3].set_xlabel("GD step")
    axes[3].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_gram(features: torch.Tensor, labels: torch.Tensor, ax=None, title: str = "") -> Figure:
    """Heat map of the cosines between the (uncentred) class means of one layer."""
    G = metrics.class_mean_cosines(features, labels)
    fig = ax.figure if ax is not None else plt.figure(figsize=(COLUMN_IN / 2, 2.8))
    ax = ax if ax is not None else fig.add_subplot()
    im = ax.imshow(G, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_title(title)
    ax.grid(False)
    ax.set_xticks(range(len(G)))
    ax.set_yticks(range(len(G)))
    fig.colorbar(im, ax=ax, fraction=0.046)
    return fig


def plot_grams(features: list[torch.Tensor], labels: torch.Tensor, layers: list[int]) -> Figure:
    """Side-by-side class-mean cosine Gram matrices of the given layers (0-based indices into ``features``)."""
    fig, axes = panels(len(layers), 3.0)
    for ax, layer in zip(axes, layers):
        plot_gram(features[layer], labels, ax=ax, title=f"layer {layer + 1}: cos($\\mu_c$, $\\mu_{{c'}}$)")
    fig.tight_layout()
    return fig


def plot_layer_metric(result: dict[str, np.ndarray], name: str, title: str, wd_index: int = 0,
                      log: bool = True) -> Figure:
    """A cached result's per-layer metric at the end of training against the layer, one line per seed."""
    values = result[name][:, wd_index, -1, :]                 # (seeds, layers)
    layers = np.arange(1, values.shape[1] + 1)
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 2.8))
    for s, seed in enumerate(result["seeds"]):
        ok = np.isfinite(values[s])
        ax.plot(layers[ok], values[s][ok], "o-", label=f"seed {seed}")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("layer")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_ufm_solution(p, lam_Hs: np.ndarray, seed: int = 0) -> Figure:
    """Theorem 2.2 of Tirer et al. at one (lam_W, lam_H): the closed-form rho(lam_H) curve with the solver's value,
    and the cosines between the solver's class means."""
    from . import ufm

    W, H = ufm.solve_model1(p, seed=seed)
    means = H.reshape(p.d, p.K, p.n).mean(2)
    rho_curve = [ufm.collapse_norms(ufm.UFM(p.K, p.n, p.d, p.lam_W, lh))[0] for lh in lam_Hs]
    fig, (a, b) = panels(2, 3.0)
    a.semilogx(lam_Hs, rho_curve, color="k", label=r"closed form $\rho=\sqrt{\lambda_W/\lambda_H}(1-\sqrt{c})$")
    a.axvline(1 / p.lam_W, color="C3", ls="--", lw=1, label=r"$\lambda_H=1/\lambda_W$ ($c=1$)")
    a.plot([p.lam_H], [np.mean(np.sum(means ** 2, 0))], "o", color="C0", ms=8, label=r"solver: mean $\|h_k\|^2$")
    a.set_xlabel(r"$\lambda_H$")
    a.set_ylabel(r"$\|h_k\|^2$")
    a.set_title(rf"$\lambda_W={p.lam_W:g}$, $\lambda_H={p.lam_H:g}$, $c={p.c:.3g}$")
    a.legend()
    norms = np.linalg.norm(means, axis=0)
    if p.c < 1:                                        # a collapsed minimiser: show the solver's geometry
        G = (means / norms).T @ (means / norms)
        im = b.imshow(G, vmin=-1, vmax=1, cmap="RdBu_r")
        fig.colorbar(im, ax=b, fraction=0.046)
        b.set_title("cosines of the solver's class means")
    else:
        b.text(0.5, 0.5, f"c ≥ 1: trivial minimiser\nH = 0, W = 0\n(solver: max |h_k| ≈ {max(norms.max(), 1e-12):.0e})",
               ha="center", va="center", transform=b.transAxes)
        b.set_title("solver's class means")
    b.set_xticks(range(p.K))
    b.set_yticks(range(p.K))
    b.grid(False)
    fig.tight_layout()
    return fig


def plot_flow(out: dict, lam_W: float, lam_H: float) -> Figure:
    """Theorem 4.1 along the central-path flow: gNC1, e^{2 lam_H t} tr Sigma_W and e^{2 lam_H t} tr Sigma_B."""
    fig, axes = panels(3, 2.5)
    axes[0].semilogy(out["t"], out["gnc1"], color="k")
    axes[0].set_title(r"gNC1 = tr$\Sigma_W$ / tr$\Sigma_B$")
    axes[1].semilogy(out["t"], out["trace_W"], color="C0")
    axes[1].set_title(r"$e^{2\lambda_H t}\,$tr$\Sigma_W(H_t)$ (non-increasing)")
    axes[2].plot(out["t"], out["trace_B"], color="C3")
    axes[2].set_title(r"$e^{2\lambda_H t}\,$tr$\Sigma_B(H_t)$ (increasing)")
    for ax in axes:
        ax.set_xlabel("t")
    fig.suptitle(rf"gradient flow on the central path, $\lambda_W={lam_W:g}$, $\lambda_H={lam_H:g}$")
    fig.tight_layout()
    return fig


def plot_layerwise(Hs: list, K: int, n: int, depth: int) -> Figure:
    """Features after ``depth`` layers of eq. (2) applied in turn (2-D view: the first two principal directions of
    the input's class means) and gNC1 layer by layer."""
    from . import ufm

    H0 = Hs[0]
    means0 = H0.reshape(H0.shape[0], K, n).mean(2)
    U = np.linalg.svd(means0 - means0.mean(1, keepdims=True), full_matrices=False)[0][:, :2]
    fig, (a, b) = panels(2, 3.2)
    P = U.T @ Hs[depth]
    for k in range(K):
        a.scatter(P[0, k * n:(k + 1) * n], P[1, k * n:(k + 1) * n], s=10, color=f"C{k}", label=f"class {k + 1}")
    a.set_title(f"features after {depth} layer(s)")
    a.legend()
    lim = np.abs(U.T @ H0).max() * 1.1
    a.set_xlim(-lim, lim)
    a.set_ylim(-lim, lim)
    a.set_aspect("equal")
    g = [metrics.nc1_trace_ratio(H.T, ufm.labels(K, n)) for H in Hs]     # gNC1, eq. (3)
    b.semilogy(range(len(Hs)), g, "o-", color="k", ms=4)
    b.semilogy([depth], [g[depth]], "o", color="C3", ms=9)
    b.set_xlabel("layer")
    b.set_title("gNC1 layer by layer")
    fig.tight_layout()
    return fig


def plot_intra_spectrum(p, ax=None) -> Figure:
    """Theorem 5.2 / the paper's Figure 1: the singular values of an intra-class block F_kk at a collapsed input,
    computed from the first-order map (line) and from the closed form (dots)."""
    from . import ufm

    _, H = ufm.collapsed_minimiser(p)
    F = ufm.first_order_map(H, p)
    numeric = np.linalg.svd(ufm.block(F, p, 0, 0), compute_uv=False)
    closed = np.sort(np.abs(ufm.spectrum_values(p)))[::-1]
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 3.0)) if ax is None else (ax.figure, ax)
    ax.plot(numeric, color="k", lw=1.5, label="numerical, from F")
    ax.plot(closed, "o", color="C3", ms=2.5, label="closed form (Thm 5.2, App. D)")
    ax.set_xlabel("index")
    ax.set_ylabel(r"singular value of $F_{kk}$")
    ax.set_title(rf"$\beta={p.beta:g}$, $K={p.K}$, $d={p.d}$, $n={p.n}$, $\lambda_W={p.lam_W:g}$, "
                 rf"$\lambda_H={p.lam_H:g}$")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_bounds(result: dict, i: int, j: int) -> Figure:
    """Theorem 3.1 on one trained network of a cached ``jacot_bounds`` result (depth index i, weight-decay index j):
    each measured quantity next to the bound the theorem gives for it (or 'vacuous')."""
    specs = [(r"NC1 = tr$\Sigma_W$ / tr$\Sigma_B$", "nc1", "bound_nc1", "≤", True),
             (r"$\kappa(W_L)$", "kappa_WL", "bound_kappa_WL_fixed", "≤", True),
             ("NC2 = κ(class means)", "nc2", "bound_nc2", "≤", True),
             ("NC3 = mean cos", "nc3", "bound_nc3", "≥", False)]
    fig, axes = panels(4, 2.4)
    for ax, (title, m, b, rel, log) in zip(axes, specs):
        measured, bound = float(result[m][i, j]), float(result[b][i, j])
        vacuous = (not np.isfinite(bound)) or (m == "nc3" and bound <= -1) or (m != "nc3" and m != "nc1"
                                                                             and bound > 1e6)
        ax.bar([0], [measured], color="C0", width=0.6)
        if not vacuous:
            ax.bar([1], [bound], color="C3", width=0.6)
        else:
            ax.text(1, 0.5, "bound\nvacuous", ha="center", va="center", transform=ax.get_xaxis_transform(),
                    color="C3")
        if log:
            ax.set_yscale("log")
        ax.set_xticks([0, 1], ["measured", f"bound ({rel})"])
        ax.set_xlim(-0.6, 1.6)
        ax.set_title(title)
    depth, lam = int(result["depths"][i]), float(result["weight_decays"][j])
    fig.suptitle(rf"$L_2={depth}$ linear layers, $\lambda={lam:g}$:  $\epsilon_1={result['eps1'][i, j]:.2g}$, "
                 rf"$\epsilon_2={result['eps2'][i, j]:.2g}$, $r={result['r'][i, j]:.3g}$")
    fig.tight_layout()
    return fig


def plot_head_conditioning(result: dict, j: int, L1: int) -> Figure:
    """kappa(W_L) of trained networks against the L2-th root (balancedness) and the L1-th root (as printed in
    Jacot et al. Thm 5.2) of kappa(W_{L:L1+1}), over the depth L2 of the head, for weight decay index j."""
    depths = np.asarray(result["depths"])
    kWL, kP = result["kappa_WL"][:, j], result["kappa_linear"][:, j]
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 3.2))
    ax.semilogy(depths, kWL, "o-", color="k", label=r"measured $\kappa(W_L)$")
    ax.semilogy(depths, kP ** (1 / depths), "s--", color="C0", label=r"$\kappa(W_{L:L_1+1})^{1/L_2}$ (balanced)")
    ax.semilogy(depths, kP ** (1 / L1), "^:", color="C3", label=r"$\kappa(W_{L:L_1+1})^{1/L_1}$ (as printed)")
    ax.set_xlabel(r"linear layers $L_2$")
    ax.set_xticks(depths)
    ax.set_title(f"trained networks, L1 = {L1}, weight decay λ = {float(result['weight_decays'][j]):g}")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_sharpness(result: dict, i: int) -> Figure:
    """The edge of stability: the loss and the top Hessian eigenvalue along GD at learning rate index i."""
    lr = float(result["lrs"][i])
    fig, (a, b) = panels(2, 3.0)
    a.semilogy(result["loss"][i], color="C0")
    a.set_xlabel("GD step")
    a.set_title(r"regularised loss $C_\lambda$")
    b.plot(result["sharpness_steps"], result["sharpness"][i], "o-", color="k", ms=3, label="sharpness")
    b.axhline(2 / lr, color="C3", ls="--", label=r"$2/\eta$")
    b.set_xlabel("GD step")
    b.set_title(rf"top Hessian eigenvalue, $\eta={lr:g}$")
    b.legend()
    fig.tight_layout()
    return fig


def plot_gd_phases(result: dict, i: int, j: int) -> Figure:
    """Jacot et al. Thm 4.4's two phases for learning-rate index i and weight-decay index j: the regularised loss,
    and the balancedness of the linear layers against the (1 - eta lambda)^{2k} decay."""
    lr, lam = float(result["lrs"][i]), float(result["weight_decays"][j])
    steps = result["step"]
    fig, (a, b) = panels(2, 3.0)
    a.semilogy(steps, result["loss"][i, j], color="C0", label=r"$C_\lambda$")
    a.semilogy(steps, result["loss0"][i, j], color="C2", ls="--", label=r"$C_0=\frac{1}{2}\|Z_L-Y\|^2$")
    a.set_xlabel("GD step")
    a.legend()
    a.set_title("phase 1: the loss falls")
    bal = result["balance"][i, j]
    for p in range(bal.shape[1]):
        b.semilogy(steps, bal[:, p], label=f"layers {p + 1}, {p + 2} of the head")
    ref = bal[len(steps) // 2, 0] * (1 - lr * lam) ** (2 * (steps - steps[len(steps) // 2]))
    b.semilogy(steps, ref, "k:", label=r"$(1-\eta\lambda)^{2k}$")
    b.set_xlabel("GD step")
    b.set_title(rf"phase 2: balancedness, $\eta={lr:g}$, $\lambda={lam:g}$")
    b.legend()
    fig.tight_layout()
    return fig


def plot_activation(params: list[tuple[float, float]]) -> Figure:
    """The smoothed leaky ReLU of Jacot et al. eq. (7) for several (gamma, beta), with the ReLU."""
    from .nets import SmoothLeakyReLU

    x = torch.linspace(-2, 2, 401, dtype=torch.float64)
    fig, (a, b) = panels(2, 2.8)
    a.plot(x, torch.relu(x), color="0.6", lw=3, label="ReLU")
    for g, beta in params:
        act = SmoothLeakyReLU(g, beta)
        xg = x.clone().requires_grad_(True)
        y = act(xg)
        d, = torch.autograd.grad(y.sum(), xg)
        a.plot(x, y.detach(), label=rf"$\gamma={g:g}$, $\beta={beta:g}$")
        b.plot(x, d, label=rf"$\gamma={g:g}$, $\beta={beta:g}$")
    a.set_title(r"$\sigma(x)$, eq. (7)")
    b.set_title(r"$\sigma'(x)\in[\gamma,1]$")
    a.legend()
    fig.tight_layout()
    return fig


def plot_head_depth(singular_values: dict, depth: int) -> Figure:
    """Singular values of W_L (divided by the largest) for balanced heads of several depths L2 factorising the
    same product, and kappa(W_L) against L2 (Jacot et al. Sec. 5: kappa(W_L) = kappa(W_{L:L1+1})^{1/L2})."""
    depths = sorted(singular_values)
    kappas = [s[0] / s[-1] for s in (singular_values[d] for d in depths)]
    fig, (a, b) = panels(2, 3.0)
    s = singular_values[depth]
    a.bar(range(1, len(s) + 1), s / s[0], color="C0")
    a.set_ylim(0, 1.05)
    a.set_xlabel("k")
    a.set_title(rf"$s_k(W_L)/s_1(W_L)$, $L_2={depth}$: $\kappa(W_L)={s[0] / s[-1]:.3f}$")
    b.plot(depths, kappas, "o-", color="k")
    b.plot([depth], [s[0] / s[-1]], "o", color="C3", ms=9)
    b.axhline(1, color="0.6", ls=":")
    b.set_xlabel(r"linear layers $L_2$")
    b.set_title(r"$\kappa(W_L)\to1$ as the head deepens")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------------------------------
# Part IV: the papers' figures from cached results


def _band(ax, x, values, color, label, log: bool = True, **kw) -> None:
    """Mean over the first axis with a +-1 sd band (NaNs ignored), as in the papers' figures."""
    v = np.asarray(values, dtype=float)
    mean, sd = np.nanmean(v, axis=0), np.nanstd(v, axis=0)
    ax.plot(x, mean, color=color, label=label, **kw)
    lo = np.maximum(mean - sd, mean * 1e-3) if log else mean - sd
    ax.fill_between(x, lo, mean + sd, color=color, alpha=0.2, lw=0)
    if log:
        ax.set_yscale("log")


def plot_layer_dynamics(result: dict, seeds: list[int], first: str, wd_index: int = 0) -> Figure:
    """Jacot et al. Fig. 1 / 4 (top): NC1, NC2, balancedness and negativity of the layers from the one named
    ``first`` (:func:`~ncbook.compare.layer_index`) to the output over training, mean +- 1 sd over the listed seed
    indices; the learning-rate drop is marked."""
    from .compare import layer_index, layer_names

    steps, names = result["steps"], layer_names(result)
    layers = list(range(layer_index(result, first), len(names)))
    colors = layer_colors(len(layers))
    fig, axes = panels(4, 2.5)
    specs = [("nc1_trace_ratio", r"NC1 = tr$\Sigma_W$/tr$\Sigma_B$"),
             ("nc2_condition_number", r"NC2 = $\kappa(\bar Z)$"),
             ("balancedness", "balancedness of $(W_\\ell, W_{\\ell+1})$"), ("negativity", "negativity of layer ℓ")]
    for ax, (name, title) in zip(axes, specs):
        for c, layer in zip(colors, layers):
            v = result[name][seeds, wd_index, :, layer]
            if np.isfinite(v).any():
                _band(ax, steps, v, c, names[layer])
        ax.set_title(title)
        ax.set_xlabel("GD step")
    axes[0].legend(ncol=2)
    fig.tight_layout()
    return fig


def plot_class_mean_cosines(result: dict, seed: int, layers: list[str], wd_index: int = 0) -> Figure:
    """Jacot et al. Fig. 1 (bottom): cosines between class means of the named layers at the end of training."""
    from .compare import layer_index

    fig, axes = panels(len(layers), 3.0)
    for ax, layer in zip(axes, layers):
        im = ax.imshow(result["class_mean_cosines"][seed, wd_index, layer_index(result, layer)], vmin=-1, vmax=1,
                       cmap="RdBu_r")
        ax.set_title(layer)
        ax.grid(False)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def plot_head_depth_sweep(result: dict, j: int) -> Figure:
    """Jacot et al. Fig. 2: NC1 and NC2 of the first layer of the linear head (the last non-linear output) and of
    its last layer (the input of the classifier) against the head's depth, weight decay index j, mean +- 1 sd over
    seeds."""
    from .compare import head_values

    depths = np.asarray(result["depths"])
    fig, axes = panels(2, 3.0)
    for ax, name, title in [(axes[0], "nc1_trace_ratio", r"NC1 = tr$\Sigma_W$/tr$\Sigma_B$"),
                            (axes[1], "nc2_condition_number", r"NC2 = $\kappa(\bar Z)$")]:
        values = head_values(result, name)
        for which, color in (("first", "C0"), ("last", "C3")):
            v = values[which][:, :, j].T
            _band(ax, depths, v, color, f"{which} layer of the linear head", marker="o")
        ax.set_xlabel("linear layers $L_2$")
        ax.set_xticks(depths)
        ax.set_title(title)
    axes[1].legend()
    fig.suptitle(f"weight decay λ = {float(result['weight_decays'][j]):g}")
    fig.tight_layout()
    return fig


def plot_nonlinear_depth(result: dict, backbone: int) -> Figure:
    """Jacot et al. Fig. 3: min and mean balancedness and negativity of the measured non-linear layers against the
    non-linear depth, one colour per learning rate, mean +- 1 sd over seeds."""
    from .compare import nonlinear_layer_summary

    depths = np.asarray(result["depths"])
    fig, axes = panels(4, 2.5)
    for name, pair in (("balancedness", axes[:2]), ("negativity", axes[2:])):
        s = nonlinear_layer_summary(result, name, backbone)
        for ax, kind in zip(pair, ("min", "mean")):
            for i, lr in enumerate(result["lrs"]):
                _band(ax, depths, s[kind][:, i].T, f"C{i}", f"lr {float(lr):g}", log=name == "balancedness",
                      marker="o")
            ax.set_title(f"{kind} {name}")
            ax.set_xlabel("non-linear layers $L_1$")
            ax.set_xticks(depths)
    axes[0].legend()
    fig.tight_layout()
    return fig


def plot_layerwise_training(result: dict) -> Figure:
    """Tirer et al. Fig. 2: NC1 and gNC1 of the deepest features as hidden layers are added and trained one by one."""
    k = result["hidden_layers"]
    fig, axes = panels(3, 2.5)
    for ax, name, title in [(axes[0], "nc1_pinv", r"NC1 = tr($\Sigma_W\Sigma_B^\dagger$)/K"),
                            (axes[1], "nc1_trace_ratio", r"gNC1 = tr$\Sigma_W$/tr$\Sigma_B$"),
                            (axes[2], "train_error", "training error")]:
        _band(ax, k, result[name], "C0", "mean ± sd over seeds", log=name != "train_error", marker="o")
        ax.set_xlabel("hidden layers")
        ax.set_xticks(k)
        ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_wd_ablation(result: dict, loss_index: int, layer: str = "deepest") -> Figure:
    """Tirer et al. Fig. 3-5: NC1 and NC2 of the deepest (or another named, :func:`~ncbook.compare.layer_index`)
    features over training for the five weight-decay settings (doubling on the left, zeroing on the right),
    mean +- 1 sd over seeds."""
    from .compare import layer_index
    from .reproduce import ABLATIONS

    index = layer_index(result, layer)

    x = result["epochs"]
    fig, axes = panels(4, 2.5)
    groups = [(0, 1, 2), (0, 3, 4)]
    for col, (name, title) in enumerate([("nc1_pinv", "NC1"), ("nc2_etf_distance", "NC2")]):
        for g, settings in enumerate(groups):
            ax = axes[2 * col + g]
            for s in settings:
                _band(ax, x, result[name][loss_index, :, s, :, index], ["k", "C0", "C3", "C0", "C3"][s],
                      ABLATIONS[s], ls="--" if s in (3, 4) else "-")
            ax.set_title(f"{title}, weight decay {('doubled', 'zeroed')[g]}")
            ax.set_xlabel("epoch")
            ax.legend()
    fig.tight_layout()
    return fig


def plot_blur(result: dict, blurred: tuple[int, ...], seed: int = 0) -> Figure:
    """Tirer et al. Fig. 6: per-class NC1 of the deepest features over training, for the clean baseline and for each
    last-layer weight decay on the data with blurred classes (thick lines), one seed."""
    x = result["epochs"]
    titles = ["clean data, baseline"] + [f"blurred, last-layer WD {float(w):g}" for w in result["weight_decays_last"]]
    fig, axes = panels(len(titles), 2.6, sharey=True)
    for ax, s, title in zip(axes, range(len(titles)), titles):
        per = result["nc1_per_class"][s, seed]
        for k in range(per.shape[-1]):
            ax.plot(x, per[:, k], color="C3" if k in blurred else "0.6", lw=2 if k in blurred else 0.8,
                    label=("blurred classes" if k == blurred[0] else None) if k in blurred else
                    ("other classes" if k == 0 else None))
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("epoch")
    axes[0].set_ylabel(r"per-class NC1$^{(k)}$")
    axes[0].legend()
    fig.tight_layout()
    return fig


def plot_beta(p, betas: list[float], ratios: np.ndarray, beta: float) -> Figure:
    """Model (2) as beta varies (Tirer et al. Thm 5.1-5.2; chapter 4): the spectrum of the intra-class block at a
    collapsed input, exact map against first order, at ``p.beta``; and the within-class shrink factor
    tr Sigma_W(H) / tr Sigma_W(H0) of the solution, measured and predicted, against beta (``ratios``: one row
    (measured, exact, first order) per beta)."""
    from . import ufm

    exact = np.sort(np.concatenate([[v] * m for v, m in ufm.exact_intra_block_spectrum(p).values()]))[::-1]
    fig, (a, b) = panels(2, 3.0)
    a.plot(exact, color="k", lw=1.5, label="exact map $E_{kk}$")
    a.plot(ufm.spectrum_values(p), "o", color="C3", ms=2.5, label="first order $F_{kk}$")
    a.set_xlabel("index")
    a.set_title(rf"intra-class block spectrum, $\beta={p.beta:g}$")
    a.legend()
    b.semilogx(betas, ratios[:, 0], "o", color="k", ms=6, label="measured")
    b.semilogx(betas, ratios[:, 1], "-", color="C0", label="exact map")
    b.semilogx(betas, ratios[:, 2], "--", color="C3", label="first order")
    b.axvline(beta, color="0.6", ls=":")
    b.set_xlabel(r"$\beta$")
    b.set_title(r"tr$\Sigma_W(H)$ / tr$\Sigma_W(H_0)$")
    b.legend()
    fig.tight_layout()
    return fig


def plot_decay_curves(panels_: list, ylog: bool = True) -> Figure:
    """Each claim's metric against λt over training (:func:`ncbook.compare.jacot_decay_curves`,
    :func:`~ncbook.compare.tirer_decay_curves`): the median over seeds as a line, the seeds' range shaded, the
    paper's λt as a dashed vertical line per label; where asked, the exp(-2 λt) decay of Jacot et al. Sec. 4.2."""
    fig, axes = panels(len(panels_), row_height=2.9)
    for ax, p in zip(axes, panels_):
        colors = layer_colors(len(p.lines))
        for (label, t, v), color in zip(p.lines, colors):
            ok = np.isfinite(v).all(axis=0)
            ax.plot(t[ok], np.nanmedian(v, axis=0)[ok], color=color, label=label)
            ax.fill_between(t[ok], np.nanmin(v, axis=0)[ok], np.nanmax(v, axis=0)[ok], color=color, alpha=0.2)
            if label in p.paper:
                ax.axvline(p.paper[label], color=color, ls="--", lw=1)
        for label, x in p.paper.items():
            if label not in [line[0] for line in p.lines]:
                ax.axvline(x, color="k", ls="--", lw=1, label=f"paper: {label}")
        if p.guide:
            _, t, v = p.lines[0]
            grid = np.linspace(0, max(t.max(), *p.paper.values()), 50)
            ax.plot(grid, np.nanmean(v[:, 0]) * np.exp(-2 * grid), "k:", label="exp(-2λt)")
        if ylog:
            ax.set_yscale("log")
        ax.set(xlabel="λt (dashed: the paper's at the end)", ylabel=p.ylabel, title=p.title)
        ax.legend(fontsize=MIN_FONT_PT, loc="best")
    fig.tight_layout()
    return fig


def plot_collapse_picture(result: dict, index: int) -> Figure:
    """The first picture (cached ``collapse_picture``): the last hidden layer's features of three digit classes in
    the plane of their class means, at initialisation and after ``result["steps"][index]`` GD steps, with the
    class means, the triangle they span and the simplex (equilateral triangle) of the same size in grey."""
    fig, axes = panels(2, 3.3)
    coords, means, labels = result["coords"], result["mean_coords"], result["labels"]
    lim = 1.05 * max(np.percentile(np.abs(coords[0]), 99.5), 1.2)
    corners = np.array([[np.cos(a), np.sin(a)] for a in np.deg2rad([90, 210, 330, 90])])
    for ax, i in zip(axes, (0, index)):
        ax.plot(corners[:, 0], corners[:, 1], color="0.75", lw=1, zorder=1, label="simplex of the same size")
        for c, digit in enumerate(result["digits"]):
            z = coords[i][labels == c]
            ax.scatter(z[:, 0], z[:, 1], s=5, alpha=0.45, color=f"C{c}", lw=0, zorder=2)
            ax.plot(*means[i][c], "o", ms=9, color=f"C{c}", mec="k", zorder=4, label=f"digit {int(digit)}")
        ax.plot(*np.vstack([means[i], means[i][:1]]).T, "k--", lw=1, zorder=3)
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xticks=[], yticks=[])
        ax.spines[:].set_visible(True)
        ax.spines[:].set_color("0.6")
        cos = ", ".join(f"{v:.2f}".replace("-", "−") for v in result["mean_cosines"][i])
        ax.set_title(f"GD step {int(result['steps'][i]):,}: NC1 = {result['nc1'][i]:.2g}\n"
                     f"cosines of the means {cos}")
    axes[1].legend(loc="lower center", ncol=2, fontsize=MIN_FONT_PT, framealpha=0.9, columnspacing=1)
    fig.tight_layout()
    return fig
