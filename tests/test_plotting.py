"""ncbook.plotting: figures drawn for the page (size, resolution, smallest font, panels a row)."""

import io

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from ncbook.plotting import COLUMN_IN, MIN_FONT_PT, PAGE_DPI, page_png, panels


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
