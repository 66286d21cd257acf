"""Sphinx extension: figures embedded in a page's HTML become image files, slider frames loaded on demand.

A chapter's executed notebook embeds every position of a slider figure (``ncbook.interactive.SliderFigure``), in
its column and phone renderings, and each static figure's two renderings (``ncbook.plotting.PageFigure``), as base64
PNG in its HTML: megabytes a page, none of which a web server can compress. After an HTML build each PNG is written
once to ``_images/ncsf/<sha256 of the PNG>.png`` and the page keeps only its URL: the ``<picture>`` shown first
loads the rendering its screen needs, the other slider positions are fetched when a slider reaches them (the
figure's script accepts either form).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path

_FRAMES = re.compile(r'(<script type="application/json" class="ncsf-(?:phone-)?frames">)(.*?)(</script>)', re.S)
_INLINE = re.compile(r'(<(?:img|source) [^>]*?(?:src|srcset)=")data:image/png;base64,([A-Za-z0-9+/=]+)(")')


def frame_file(outdir: Path, data: str) -> Path:
    """The file holding one base64 PNG frame, written if it is not there yet."""
    png = base64.b64decode(data)
    path = outdir / "_images" / "ncsf" / f"{hashlib.sha256(png).hexdigest()[:20]}.png"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".partial")
        tmp.write_bytes(png)
        tmp.replace(path)
    return path


def externalise(page: Path, outdir: Path) -> bool:
    """Move a built page's slider frames into files; True if the page changed (a page done before is left as is)."""
    text = page.read_text(encoding="utf-8")
    if "ncsf-frames" not in text and "data:image/png;base64," not in text:
        return False

    def url(data: str) -> str:
        return Path(os.path.relpath(frame_file(outdir, data), page.parent)).as_posix()

    def frames(m: re.Match) -> str:
        table = json.loads(m.group(2))
        table = {k: v if v.endswith(".png") else url(v) for k, v in table.items()}
        return m.group(1) + json.dumps(table) + m.group(3)

    new = _FRAMES.sub(frames, text)
    new = _INLINE.sub(lambda m: m.group(1) + url(m.group(2)) + m.group(3), new)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


def _build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        outdir = Path(app.outdir)
        for page in outdir.rglob("*.html"):
            externalise(page, outdir)


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
