"""A quote inside an archived document, found by its selector and shown in the document's own structure.

:func:`build` reads a document once into a :class:`Document`: its visible text (for HTML, the text of
the body without scripts, styles or ``<head>``), each text piece with the offset where it starts in
the decoded source, and a plan for rendering it again as inert HTML (an allowlist of structural tags,
no attributes but ``colspan``/``rowspan``, every text escaped), so a table stays a table.

:func:`Document.find` applies a W3C TextQuoteSelector (``exact``, ``prefix``, ``suffix``; whitespace
ignored) and a TextPositionSelector start (``pos``: an offset into the decoded source, as the parsers
record it). ``prefix``/``suffix`` may be taken from the visible text or from the source (the parsers'
are source text, markup included); either form matches. :func:`Document.render` wraps the chosen
occurrences in ``<mark>`` and marks the table row and cell that hold them; :func:`Document.cell_of`
names that row and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

_IGNORED = "\u200b\ufeff"
_WS = re.compile(r"[\s\u200b\ufeff]+")
INVISIBLE = {"script", "style", "noscript", "template", "head", "iframe", "object", "svg", "canvas", "math",
             "select", "textarea", "button", "input", "embed", "audio", "video"}
KEPT = {"p", "div", "span", "table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup", "col",
        "ul", "ol", "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "blockquote",
        "b", "strong", "i", "em", "br", "hr", "section", "article", "header", "footer", "main", "nav", "aside",
        "figure", "figcaption", "sup", "sub", "small", "s", "del", "ins", "kbd", "samp", "var", "abbr", "q",
        "u", "mark", "time", "details", "summary", "address", "label"}
VOID = {"br", "hr", "col"}
BLOCKS = {"address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt", "figcaption",
          "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav",
          "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul", "caption",
          "title"}
CELLS = {"td", "th"}
_SPAN = re.compile(r"^\d{1,3}$")


def squeeze(text: str | None) -> str:
    return _WS.sub("", text or "")


def pattern(exact: str) -> re.Pattern | None:
    """A regex that finds ``exact`` whatever the whitespace inside or around its characters."""
    chars = squeeze(exact)
    if not chars:
        return None
    return re.compile(r"[\s\u200b\ufeff]*".join(re.escape(c) for c in chars))


@dataclass
class Occurrence:
    start: int                 # span in Document.text (or in Document.source when where == "source")
    end: int
    where: str                 # "text" or "source"
    source_start: int | None   # span in the decoded source, when known
    source_end: int | None


@dataclass
class Document:
    kind: str                  # "html" or "plain"
    source: str                # the decoded source the parsers' offsets refer to
    text: str = ""             # visible text, pieces in document order
    pieces: list = field(default_factory=list)   # (text_start, length, source_start | None, element | None)
    plan: list = field(default_factory=list)     # ("open", el, tag) / ("close", tag) / ("piece", i) / ("sep",)

    # -- finding ---------------------------------------------------------------------------------
    def to_source(self, text_pos: int) -> int | None:
        i = self._piece_at(text_pos)
        if i is None:
            return None
        t0, n, s0, _ = self.pieces[i]
        return None if s0 is None else s0 + (text_pos - t0)

    def _piece_at(self, text_pos: int) -> int | None:
        from bisect import bisect_right

        starts = self._starts()
        i = bisect_right(starts, text_pos) - 1
        if i < 0:
            return None
        t0, n, _, _ = self.pieces[i]
        return i if t0 <= text_pos < t0 + max(n, 1) else None

    def _starts(self) -> list[int]:
        cached = getattr(self, "_starts_cache", None)
        if cached is None or len(cached) != len(self.pieces):
            cached = [p[0] for p in self.pieces]
            object.__setattr__(self, "_starts_cache", cached)
        return cached

    def occurrences(self, exact: str) -> list[Occurrence]:
        """Every occurrence of ``exact`` in the visible text, whitespace ignored."""
        rx = pattern(exact)
        if rx is None:
            return []
        out = []
        for m in rx.finditer(self.text):
            s0 = self.to_source(m.start())
            last = self.to_source(m.end() - 1)
            out.append(Occurrence(m.start(), m.end(), "text", s0, None if last is None else last + 1))
        return out

    def source_occurrences(self, exact: str) -> list[Occurrence]:
        rx = pattern(exact)
        if rx is None:
            return []
        return [Occurrence(m.start(), m.end(), "source", m.start(), m.end()) for m in rx.finditer(self.source)]

    def _context_ok(self, occ: Occurrence, prefix: str | None, suffix: str | None) -> bool:
        pre, suf = squeeze(prefix), squeeze(suffix)
        if not pre and not suf:
            return True
        views = []
        if occ.where == "text":
            views.append((self.text, occ.start, occ.end))
        if occ.source_start is not None and occ.source_end is not None:
            views.append((self.source, occ.source_start, occ.source_end))
        for hay, a, b in views:
            ok_pre = not pre or squeeze(hay[max(0, a - 4 * len(pre) - 64):a]).endswith(pre)
            ok_suf = not suf or squeeze(hay[b:b + 4 * len(suf) + 64]).startswith(suf)
            if ok_pre and ok_suf:
                return True
        return False

    def find(self, exact: str, prefix: str | None = None, suffix: str | None = None,
             pos: int | None = None) -> tuple[list[Occurrence], int]:
        """(occurrences the selector keeps, how many occurrences of ``exact`` there are in all).

        The visible text is searched first, then the source. ``prefix``/``suffix`` keep only the
        occurrences they surround; ``pos`` keeps the one that starts at that source offset."""
        found = self.occurrences(exact)
        if not found:
            found = self.source_occurrences(exact)
        total = len(found)
        kept = [o for o in found if self._context_ok(o, prefix, suffix)]
        if pos is not None:
            at = [o for o in kept if o.source_start == pos]
            if not at and found and found[0].where == "text":
                # the position may name an occurrence in markup (an attribute), which the text does not show
                at = [o for o in self.source_occurrences(exact) if o.source_start == pos
                      and self._context_ok(o, prefix, suffix)]
            kept = at
        return kept, total

    # -- showing ---------------------------------------------------------------------------------
    def cell_of(self, occ: Occurrence) -> dict | None:
        """For an occurrence inside a table cell: its row (1-based among the table's rows), its
        column (1-based), the column's header text and the row's first cell."""
        if occ.where != "text":
            return None
        i = self._piece_at(occ.start)
        el = self.pieces[i][3] if i is not None else None
        cell = _up(el, CELLS)
        if cell is None:
            return None
        row = _up(cell, {"tr"})
        table = _up(row, {"table"})
        if row is None or table is None:
            return None
        rows = [r for r in table.iter("tr") if _up(r, {"table"}) is table]
        col = 0
        for sib in row:
            if sib is cell:
                break
            if isinstance(sib.tag, str) and sib.tag.lower() in CELLS:
                col += _span(sib)
        header = None
        for r in rows:
            cells = [c for c in r if isinstance(c.tag, str) and c.tag.lower() in CELLS]
            if cells and all(c.tag.lower() == "th" for c in cells) and r is not row:
                header = _cell_at(cells, col)
                break
        label_cells = [c for c in row if isinstance(c.tag, str) and c.tag.lower() in CELLS]
        return {"row": rows.index(row) + 1, "column": col + 1,
                "header": _clean(header.text_content()) if header is not None else None,
                "row_label": _clean(label_cells[0].text_content()) if label_cells else None}

    def render(self, marks: list[Occurrence]) -> str:
        """Inert HTML of the document with each occurrence in ``<mark>`` (the first ``id="quote"``,
        the others ``id="quote-2"``...); the rows and cells holding one get class ``quote-row`` /
        ``quote-cell``."""
        if self.kind != "html" or any(m.where == "source" for m in marks):
            return self._render_plain(marks)
        spans = sorted((m.start, m.end, n) for n, m in enumerate(marks, 1))
        hot: set[int] = set()
        for m in marks:
            i = self._piece_at(m.start)
            el = self.pieces[i][3] if i is not None else None
            for tags in (CELLS, {"tr"}):
                up = _up(el, tags)
                if up is not None:
                    hot.add(id(up))
        out: list[str] = []
        text = self.text
        for step in self.plan:
            op = step[0]
            if op == "piece":
                t0, n, _, _ = self.pieces[step[1]]
                out.append(_marked(text, t0, t0 + n, spans))
            elif op == "open":
                el, tag = step[1], step[2]
                attrs = ""
                for name in ("colspan", "rowspan"):
                    v = el.get(name)
                    if v and _SPAN.match(v.strip()):
                        attrs += f' {name}="{v.strip()}"'
                if id(el) in hot:
                    attrs += ' class="quote-row"' if tag == "tr" else ' class="quote-cell"'
                out.append(f"<{tag}{attrs}>")
            elif op == "close":
                out.append(f"</{step[1]}>")
        return "".join(out)

    def _render_plain(self, marks: list[Occurrence]) -> str:
        hay = self.source if (self.kind != "html" or any(m.where == "source" for m in marks)) else self.text
        spans = sorted((m.start, m.end, n) for n, m in enumerate(marks, 1))
        return f'<pre class="page-source">{_marked(hay, 0, len(hay), spans)}</pre>'


def _marked(text: str, a: int, b: int, spans) -> str:
    """``text[a:b]`` escaped, with the parts inside ``spans`` (start, end, n) in ``<mark>``."""
    out, cur = [], a
    for s, e, n in spans:
        if e <= cur or s >= b:
            continue
        s2, e2 = max(s, cur), min(e, b)
        out.append(escape(text[cur:s2], quote=False))
        ident = ("quote" if n == 1 else f"quote-{n}") if s2 == s else None
        id_attr = f' id="{ident}"' if ident else ""
        out.append(f'<mark{id_attr} class="quote" data-n="{n}">{escape(text[s2:e2], quote=False)}</mark>')
        cur = e2
    out.append(escape(text[cur:b], quote=False))
    return "".join(out)


def _up(el, tags: set[str]):
    while el is not None:
        if isinstance(el.tag, str) and el.tag.lower() in tags:
            return el
        el = el.getparent()
    return None


def _span(cell) -> int:
    v = (cell.get("colspan") or "1").strip()
    return int(v) if _SPAN.match(v) and int(v) > 0 else 1


def _cell_at(cells, col: int):
    at = 0
    for c in cells:
        if at <= col < at + _span(c):
            return c
        at += _span(c)
    return None


def _clean(text: str) -> str:
    return " ".join(text.split())[:200]


# -- building ---------------------------------------------------------------------------------------

def build(source: str, kind: str) -> Document:
    """Read ``source`` (already decoded) as HTML when ``kind == "html"``, else as plain text."""
    if kind != "html":
        return Document("plain", source, text=source, pieces=[(0, len(source), 0, None)], plan=[("piece", 0)])
    import lxml.html
    from lxml import etree

    doc = Document("html", source)
    try:
        root = lxml.html.document_fromstring(source)
    except ValueError:  # a str with an XML encoding declaration
        try:
            root = lxml.html.document_fromstring(source.encode("utf-8"))
        except (etree.ParserError, ValueError):
            return build(source, "plain")
    except etree.ParserError:
        return build(source, "plain")
    body = root.find("body")
    start = body if body is not None else root
    parts: list[str] = []
    pieces, plan = doc.pieces, doc.plan
    length = 0
    cursor = 0
    find = source.find

    def piece(text: str, el) -> None:
        nonlocal length, cursor
        src = None
        s0 = find(">" + text, cursor, cursor + len(text) + 65536)  # a text node follows a tag's ">"
        if s0 >= 0:
            src = s0 + 1
            cursor = src + len(text)
        pieces.append((length, len(text), src, el))
        plan.append(("piece", len(pieces) - 1))
        parts.append(text)
        length += len(text)

    def sep(ch: str) -> None:
        nonlocal length
        parts.append(ch)
        length += 1

    def walk(el, top: bool = False) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else None
        if tag is not None and tag not in INVISIBLE:
            if tag in BLOCKS:
                sep("\n")
            if tag in KEPT:
                plan.append(("open", el, tag))
            if el.text:
                piece(el.text, el)
            for child in el:
                walk(child)
            if tag in KEPT and tag not in VOID:
                plan.append(("close", tag))
            if tag in BLOCKS:
                sep("\n")
            elif tag in CELLS:
                sep(" ")
        if not top and el.tail:
            piece(el.tail, el.getparent())

    walk(start, top=True)
    doc.text = "".join(parts)
    return doc
