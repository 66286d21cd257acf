"""ncbook.nets, ncbook.train, ncbook.experiments and ncbook.interactive."""

import io
import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from PIL import Image

from ncbook import data, metrics
from ncbook.experiments import MLPDemo
from ncbook.interactive import MAX_HTML_BYTES, SliderFigure, label_html
from ncbook.nets import MLP
from ncbook.plotting import COLUMN_IN, MIN_FONT_PT, PAGE_DPI, page_png, panels
from ncbook.train import TrainConfig, data_loss, layer_metrics, train, weight_penalty


def test_mlp_layers_are_relu_then_linear():
    torch.manual_seed(0)
    net = MLP([5, 7, 6, 4, 3], num_nonlinear=2).double()
    x = torch.randn(11, 5, dtype=torch.float64)
    feats = net.forward_features(x)
    assert [f.shape[1] for f in feats] == [7, 6, 4, 3]
    assert (feats[0] >= 0).all() and (feats[1] >= 0).all()
    # the linear head is exactly the product of its matrices
    W3, W4 = net.weights[2], net.weights[3]
    assert torch.allclose(feats[3], feats[1] @ (W4 @ W3).T, atol=1e-12)
    with pytest.raises(ValueError, match="L-1"):
        MLP([5, 3], num_nonlinear=1)


def test_regularised_mse_matches_formula_and_gd_decreases_it():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 10, 6, seed=1)
    net = MLP([6, 8, 8, 3], num_nonlinear=1).double()
    Y = torch.nn.functional.one_hot(y, 3).double()
    lam = 0.01
    direct = 0.5 * ((net(X) - Y) ** 2).sum() / 30 + 0.5 * lam * sum((w ** 2).sum() for w in net.parameters())
    objective = data_loss(net(X), y) + weight_penalty(net.weights, lam)
    assert objective.item() == pytest.approx(direct.item(), rel=1e-14)
    hist = train(net, X, y, TrainConfig(steps=200, lr=0.1, weight_decay=lam, record_every=50), progress=False)
    assert hist.steps == [0, 50, 100, 150, 200]
    assert all(np.diff(hist.loss) < 0)                      # small-step GD decreases the loss it minimises
    assert hist.series("nc1_trace_ratio", -2)[-1] < hist.series("nc1_trace_ratio", -2)[0]


def test_layer_metrics_use_ncbook_metrics():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 8, 4, seed=0)
    net = MLP([4, 32, 8, 3], num_nonlinear=1).double()
    feats = net.forward_features(X)
    out = layer_metrics(feats, net.weights, y)
    assert out["nc1_pinv"][1] == pytest.approx(metrics.nc1_pinv(feats[1].detach(), y))
    assert out["balancedness"][1] == pytest.approx(metrics.balancedness(net.weights[2], net.weights[1]))
    assert np.isnan(out["balancedness"][-1])
    assert out["nc3_cosine"][0] == pytest.approx(metrics.nc3_cosine(feats[1].detach(), y, net.weights[2].detach()))


def test_divergence_is_reported_with_step_and_cause():
    torch.manual_seed(0)
    X, y = data.gaussian_mixture(3, 10, 6, seed=1)
    net = MLP([6, 8, 8, 3], num_nonlinear=1).double()
    with pytest.raises(FloatingPointError, match=r"at step \d+.*lower the learning rate"):
        train(net, X * 100, y, TrainConfig(steps=100, lr=10.0, weight_decay=0.0), progress=False)
    with pytest.raises(ValueError, match="lr must be > 0"):
        train(net, X, y, TrainConfig(steps=10, lr=-1.0, weight_decay=0.0), progress=False)


def test_demo_config_validates_lambda():
    with pytest.raises(ValueError, match="weight_decay"):
        MLPDemo(weight_decay=-1e-3)
    with pytest.raises(ValueError, match="weight_decay"):
        MLPDemo(weight_decay=float("nan"))


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


def test_page_png_is_2x_column_sized_and_records_its_smallest_font_and_layout():
    fig, axes = panels(4)
    assert len(axes) == 4 and fig.get_figwidth() == pytest.approx(COLUMN_IN)
    axes[0].plot([0, 1])
    png, size = page_png(fig)
    image = Image.open(io.BytesIO(png))
    assert image.info["ncbook-min-font-pt"] == f"{MIN_FONT_PT:g}" and image.info["ncbook-panels-per-row"] == "2"
    assert round(image.info["dpi"][0]) == PAGE_DPI == 2 * 96
    assert size == {"width": round(image.size[0] / 2), "height": round(image.size[1] / 2)}
    assert size["width"] <= COLUMN_IN * 96 + 1                   # never wider than the column
    fig, ax = plt.subplots(1, 3, figsize=(COLUMN_IN, 2))           # what the checks must catch
    ax[0].set_title("small", fontsize=6)
    image = Image.open(io.BytesIO(page_png(fig)[0]))
    assert image.info["ncbook-min-font-pt"] == "6" and image.info["ncbook-panels-per-row"] == "3"


def test_slider_figure_rejects_bad_declarations_and_oversized_pages(monkeypatch):
    with pytest.raises(ValueError, match="empty grid"):
        SliderFigure(_draw, {"a": []})
    with pytest.raises(ValueError, match="not in its grid"):
        SliderFigure(_draw, {"a": [1, 2]}, initial={"a": 5})
    monkeypatch.setattr("ncbook.interactive.MAX_HTML_BYTES", 1000)
    with pytest.raises(ValueError, match="coarser grid"):
        SliderFigure(_draw, {"a": [1, 2]}).html()
    assert MAX_HTML_BYTES == 3 * 1024 * 1024
