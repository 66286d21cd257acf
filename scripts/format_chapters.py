"""Format the code the reader sees in each chapter: `ruff format` at the page's line length, checked in `make lint`.

    python scripts/format_chapters.py [--check] [book/ch01_metrics.md ...]

Every code cell of a chapter's MyST source whose code is shown on the page (not tagged ``remove-cell`` or
``remove-input``) is formatted with ``ruff format --line-length 88``; a trailing comment on a line that is too long
moves to its own line above first, so that the formatter does not split the statement around it. With ``--check``
nothing is written: each cell that would change, and each line still longer than 88 characters (a long string or
comment the formatter leaves alone), is one line naming the chapter and the cell's first line number, and the exit
status is 1. 88 characters (``ncbook.compare.WRAP``) is what the rendered chapter's code column holds at 1280 px
(``book/_ext/static/ncbook.css``'s code font); ``tests/test_book_structure.py`` checks the executed notebooks'
code and printed text, and the browser test the page.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

from ncbook.compare import WRAP as LINE_LENGTH

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ("remove-cell", "remove-input")
FENCE = re.compile(r"^```\{code-cell\}")


def code_cells(lines: list[str]) -> list[tuple[int, int, bool]]:
    """(first source line, end line exclusive, shown) of each code cell of a MyST notebook's lines."""
    cells, i = [], 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        j, meta = i + 1, []
        if j < len(lines) and lines[j].strip() == "---":          # a YAML metadata block
            j += 1
            while j < len(lines) and lines[j].strip() != "---":
                meta.append(lines[j])
                j += 1
            j += 1
        while j < len(lines) and lines[j].startswith(":"):          # :tags: [...] lines, then one blank line
            meta.append(lines[j])
            j += 1
        if meta and j < len(lines) and not lines[j].strip():
            j += 1
        end = j
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end >= len(lines):
            raise ValueError(f"line {i + 1}: a code cell that never closes (no ``` line after it): close it")
        shown = not any(tag in m for m in meta for tag in HIDDEN)
        cells.append((j, end, shown))
        i = end + 1
    return cells


def lift_long_comments(source: str) -> str:
    """Move each trailing comment of a line longer than LINE_LENGTH onto its own line above, at that line's indent."""
    lines = source.splitlines()
    moves = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        line = lines[row - 1]
        if line[:col].strip() and len(line) > LINE_LENGTH:
            moves[row - 1] = col
    out = []
    for k, line in enumerate(lines):
        if k in moves:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + line[moves[k]:].strip())
            out.append(line[: moves[k]].rstrip())
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def ruff_format(source: str, where: str = "a cell") -> str:
    """The cell's code as `ruff format --line-length 88` writes it."""
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run([str(ruff), "format", f"--line-length={LINE_LENGTH}", "-"], input=source, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{where}: ruff cannot format the cell (fix its code): {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


def format_chapter(path: Path, check: bool) -> list[str]:
    """Format the shown code cells of one chapter in place (or, with check, report the cells it would change);
    returns the problems, and the lines still too long in either case."""
    lines = path.read_text().split("\n")
    problems, new = [], list(lines)
    try:
        cells = code_cells(lines)
    except ValueError as e:
        raise SystemExit(f"{path.name}: {e}") from None
    for start, end, shown in reversed(cells):
        if not shown:
            continue
        source = "\n".join(lines[start:end]) + "\n"
        where = f"{path.name}:{start + 1}"
        try:
            formatted = ruff_format(lift_long_comments(source), where)
        except (SyntaxError, tokenize.TokenError) as e:
            raise SystemExit(f"{where}: the cell is not valid Python (fix its code): {e}") from None
        if check and formatted != source:
            problems.append(f"{where}: the cell is not formatted (run scripts/format_chapters.py)")
        for k, line in enumerate(formatted.splitlines()):
            if len(line) > LINE_LENGTH:
                problems.append(f"{where}: line {k + 1} of the cell has {len(line)} characters "
                                f"(at most {LINE_LENGTH}): {line.strip()[:60]}")
        new[start:end] = formatted.rstrip("\n").split("\n")
    if not check:
        path.write_text("\n".join(new))
    return problems


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or sorted((ROOT / "book").glob("ch*.md"))
    for path in paths:
        if path.suffix != ".md" or not path.is_file():
            raise SystemExit(f"{path}: not a chapter's MyST source: give book/chNN_name.md files (or none for all)")
    problems = [p for path in paths for p in format_chapter(path, check)]
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
