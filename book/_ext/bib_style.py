"""Sphinx extension: the bibliography lists works under author-year labels ("Jacot et al. 2025"), the form the
text cites them in, sorted by author and year, with a DOI or arXiv link where the entry has one.

It registers a pybtex label style ``authoryear`` and a formatting style ``ncbook`` (pybtex's ``unsrt`` with those
labels and that order), selected in ``_config.yml`` with ``bibtex_default_style: ncbook``."""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


def _surname(person) -> str:
    return " ".join(str(part) for part in person.rich_last_names).replace("{", "").replace("}", "")


def author_year_label(entry) -> str:
    """"Surname year", "Surname and Surname year" or "Surname et al. year", as sphinxcontrib-bibtex cites."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_surname(p) for p in people]
    who = (names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2
           else f"{names[0]} et al." if names else entry.fields.get("title", "?"))
    return f"{who} {entry.fields.get('year', '')}".strip()


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        seen: dict[str, int] = {}
        for entry in sorted_entries:
            label = author_year_label(entry)
            seen[label] = seen.get(label, 0) + 1
            yield label if seen[label] == 1 else f"{label}{'abcdefghij'[seen[label] - 1]}"


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "authoryear"
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", "ncbook", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
