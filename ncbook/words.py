"""Words from data (issue 73): what a page says about its runs is computed and pasted, never typed.

A chapter computes each number, count or verdict it states about the runs from the arrays, and :func:`paste` glues
it (MyST-NB's ``glue``, nothing displayed); its prose shows it with ``{glue:text}`key:s```, and another page with
``{glue:text}`chapter.ipynb::key:s```. Remaking a run re-executes the chapter, and every sentence follows;
``tests/test_typed_numbers.py`` fails on a number typed into the prose of a checked page.
"""

from __future__ import annotations

from collections.abc import Iterable


def paste(**values: object) -> None:
    """Glue each value under its keyword, as the text the prose shows (a float must come formatted: a str)."""
    from myst_nb import glue  # type: ignore[import-untyped]

    for key, value in values.items():
        if isinstance(value, float):
            raise TypeError(f"{key}: format the float to the digits it means before pasting it")
        glue(key, str(value), display=False)


def of(k: int, n: int) -> str:
    """``"k of n"``."""
    return f"{k} of {n}"


def listed(items: Iterable[object]) -> str:
    """``"0, 1 and 3"``; ``"none"`` for no item."""
    words = [str(i) for i in items]
    return "none" if not words else words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def fold(ratio: float) -> str:
    """A factor as prose, to two significant figures: ``"40-fold"``, ``"1.3-fold"``."""
    return f"{ratio:.2g}-fold" if ratio < 100 else f"{ratio:,.0f}-fold"


SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def scientific(x: float, digits: int = 2) -> str:
    """A number as prose writes it in scientific notation, to ``digits`` significant figures: ``"2.9 × 10¹⁰"``
    (glued text is plain: no math markup)."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"
