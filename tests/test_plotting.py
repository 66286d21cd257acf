"""ncbook.plotting: figures drawn for the page (size, resolution, smallest font, panels a row)."""

import io

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from ncbook.plotting import (
    COLUMN_IN,
    MIN_FONT_PT,
    PAGE_DPI,
    PHONE_IN,
    PHONE_MEDIA,
    PageFigure,
    page_png,
    page_pngs,
    panels,
)


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


def test_phone_layout_stacks_the_panels_at_phone_width_with_the_same_type():
    """A column figure of three panels (two a row, one with a colour bar and a title wider than a phone) drawn again
    for a phone: one panel a row, no wider than PHONE_IN, smallest text unchanged, so at 358 CSS px it shows 9 pt
    type as 12 px where the column rendering shrunk to the phone would show 6.2 px."""
    fig, axes = panels(3)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
    im = axes[2].imshow(np.eye(3))
    fig.colorbar(im, ax=axes[2], fraction=0.046)
    fig.suptitle("a title far wider than any phone can show on one line, $\\lambda_W = 0.01$ at depth 3")
    fig.tight_layout()
    (png, size), (ppng, psize) = page_pngs(fig)
    column, phone = Image.open(io.BytesIO(png)), Image.open(io.BytesIO(ppng))
    assert column.info["ncbook-panels-per-row"] == "2" and phone.info["ncbook-panels-per-row"] == "1"
    assert phone.info["ncbook-min-font-pt"] == column.info["ncbook-min-font-pt"] == f"{MIN_FONT_PT:g}"
    assert psize["width"] <= PHONE_IN * 96 + 1 < size["width"]
    assert psize["height"] > 1.3 * size["height"]                     # three rows where there were two
    shown = 358                                                        # the column of a 390 px phone
    assert MIN_FONT_PT * 96 / 72 * min(1, shown / psize["width"]) >= 11.9
    assert MIN_FONT_PT * 96 / 72 * shown / size["width"] < 7


def test_page_figure_gives_jupyter_the_column_png_and_the_book_a_picture_with_both():
    fig, (ax,) = panels(1)
    ax.plot([0, 1])
    shown = PageFigure(fig, alt="a <line>")
    png, size = shown._repr_png_()
    html = shown._repr_html_()
    assert png.startswith(b"\x89PNG") and f'width="{size["width"]}"' in html
    assert f'<source media="{PHONE_MEDIA}" srcset="data:image/png;base64,' in html
    assert 'alt="a &lt;line&gt;"' in html and html.count("data:image/png;base64,") == 2
    assert not plt.get_fignums()                                        # closed: Jupyter shows it once


def test_phone_layout_refuses_what_it_cannot_move():
    fig, axes = panels(2)
    fig.colorbar(axes[0].imshow(np.eye(2)), ax=axes)                  # one colour bar beside two panels
    with pytest.raises(ValueError, match="ax=one_panel"):
        page_pngs(fig)
    plt.close(fig)
