"""The typed blocks a document is segmented into (``scrapers.segment``), each with its character span in
the decoded text and its place under the headings (section path), as ``unstructured``'s elements carry
metadata and markdown-it-py's tokens carry source maps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_STRIP = " \t\r\n*`_\u00a0"
_MARKS = re.compile(r"\*\*|\*|`|__|<br\s*/?>|</?(?:b|strong|em|i|code|sup|sub)>", re.I)


_EMPTY = frozenset(("", "-", "—", "–", "n/a", "na", "none", "?", "null", "…", "--"))


def _value(t: str) -> str:
    if "*" in t or "`" in t or "__" in t or "<" in t:
        t = _MARKS.sub("", t)
    if "  " in t or "\n" in t:
        t = " ".join(t.split())
    return t.strip()


class Cell:
    """One table cell: ``text`` as written (outer spaces and markers stripped) with its span in the decoded
    document; ``value`` the text without emphasis/code markers (``**198** t/s`` -> ``198 t/s``)."""

    __slots__ = ("text", "start", "end", "value", "empty")

    def __init__(self, text: str, start: int, end: int):
        self.text, self.start, self.end = text, start, end
        self.value = _value(text)
        self.empty = self.value.lower() in _EMPTY

    def __repr__(self) -> str:
        return f"Cell({self.text!r}, {self.start}, {self.end})"


@dataclass
class Table:
    shape: str                           # pipe | box | grid | columns | csv | tsv | html | kv
    header: list[Cell]
    rows: list[list[Cell]]
    start: int
    end: int
    title: str = ""                      # a box table's title (in its top border), else ""

    @property
    def width(self) -> int:
        return len(self.header)


@dataclass
class Block:
    kind: str                            # heading | table | code | text
    start: int
    end: int
    text: str                            # the block's text (for tables: the raw slice)
    section: tuple[str, ...] = ()        # heading titles, outermost first
    section_id: int = 0                  # index of the innermost heading block (0: before any heading)
    caption: str = ""                    # the words right before a table or code block
    caption_start: int = -1
    table: Table | None = None
    lang: str = ""                       # code blocks: the fence's info string
    in_code: bool = False                # a table or line inside a code block
    level: int = 0                       # headings: 1..6
    children: list["Block"] = field(default_factory=list)   # code blocks: what was found inside


def make_cell(doc: str, a: int, b: int) -> Cell:
    """The cell ``doc[a:b]`` with spaces and markdown markers stripped, span narrowed to match."""
    while a < b and doc[a] in _STRIP:
        a += 1
    while b > a and doc[b - 1] in _STRIP:
        b -= 1
    return Cell(doc[a:b], a, b)
