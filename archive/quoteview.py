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
import time
from bisect import bisect_right
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
MAX_SHOWN = 50     # occurrences highlighted at most on one page; the rest are counted ("and N more")
BUDGET_S = 2.0     # seconds one search may spend finding and counting occurrences; past it, counting stops


def deadline(budget: float | None = None) -> float:
    """The monotonic time a search started now must stop at."""
    return time.monotonic() + (BUDGET_S if budget is None else budget)


def scan(rx: re.Pattern, hay: str, owner, until: float | None, keep=None):
    """``rx.finditer(hay)`` (only the matches ``keep`` accepts), linear, stopping once ``until`` has
    passed: then ``owner.partial`` is set, and what was found so far is all there is."""
    for k, m in enumerate(rx.finditer(hay)):
        if until is not None and not k & 255 and k and time.monotonic() > until:
            owner.partial = True
            return
        if keep is None or keep(m):
            yield m


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
    until: float | None = None                   # the search's deadline (monotonic)
    partial: bool = False                        # counting stopped at the deadline: the totals are lower bounds
    cut: bool = False                            # the last render showed only the page's head

    # -- finding ---------------------------------------------------------------------------------
    def to_source(self, text_pos: int) -> int | None:
        i = self._piece_at(text_pos)
        if i is None:
            return None
        t0, n, s0, _ = self.pieces[i]
        return None if s0 is None else s0 + (text_pos - t0)

    def _piece_at(self, text_pos: int) -> int | None:
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
        for m in scan(rx, self.text, self, self.until):
            s0 = self.to_source(m.start())
            last = self.to_source(m.end() - 1)
            out.append(Occurrence(m.start(), m.end(), "text", s0, None if last is None else last + 1))
        return out

    def source_occurrences(self, exact: str) -> list[Occurrence]:
        rx = pattern(exact)
        if rx is None:
            return []
        return [Occurrence(m.start(), m.end(), "source", m.start(), m.end())
                for m in scan(rx, self.source, self, self.until)]

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
        col = _column_of(row, cell)
        header = None
        for r in rows:
            cells = _cells(r)
            if cells and all(c.tag.lower() == "th" for c in cells) and r is not row:
                header = _cell_at(cells, col)
                break
        label_cells = _cells(row)
        return {"row": rows.index(row) + 1, "column": col + 1,
                "header": _clean(header.text_content()) if header is not None else None,
                "row_label": _clean(label_cells[0].text_content()) if label_cells else None}

    def column_header(self, text_pos: int, cache: dict) -> str | None:
        """The header text of the table column holding the visible text at ``text_pos`` (None outside a
        table cell or without a header row). ``cache`` keeps each table's header cells between calls,
        so a whole page's figures cost one pass over each table's rows."""
        i = self._piece_at(text_pos)
        cell = _up(self.pieces[i][3] if i is not None else None, CELLS)
        row = _up(cell, {"tr"})
        table = _up(row, {"table"})
        if cell is None or row is None or table is None:
            return None
        col = _column_of(row, cell)
        if id(table) not in cache:
            header = None
            for r in table.iter("tr"):
                cells = _cells(r)
                if cells and all(c.tag.lower() == "th" for c in cells) and _up(r, {"table"}) is table:
                    header = cells
                    break
            cache[id(table)] = (table, header)   # the table is kept so its id is not reused
        header = cache[id(table)][1]
        if not header or row is _up(header[0], {"tr"}):
            return None
        found = _cell_at(header, col)
        return _clean(found.text_content()) if found is not None else None

    def matched(self, occ: Occurrence) -> str:
        hay = self.text if occ.where == "text" else self.source
        return hay[occ.start:occ.end]

    def context(self, occ: Occurrence, width: int = 32) -> tuple[str, str]:
        hay = self.text if occ.where == "text" else self.source
        return (" ".join(hay[max(0, occ.start - width):occ.start].split()),
                " ".join(hay[occ.end:occ.end + width].split()))

    def around(self, occ: Occurrence, width: int = 200) -> tuple[str, str]:
        return self.context(occ, width)

    def cell(self, n: int) -> dict | None:
        marks = getattr(self, "_marks", [])
        return self.cell_of(marks[n - 1]) if 0 < n <= len(marks) else None

    def render(self, marks: list[Occurrence], *, excerpt: bool = False, head: bool = False) -> str:
        """``head``: only the page up to the block holding the last mark (``cut`` then says so)."""
        object.__setattr__(self, "_marks", list(marks))
        self.cut = False
        return self._render(marks, head)

    def render_figures(self, marks: list[Occurrence], statuses: list[str], starts: list[int]) -> str:
        """Inert HTML of the whole document with each figure in ``<mark class="fig fig-<status>">``
        carrying its position in the decoded source (``data-start``/``data-end``), for the archived page
        view where a reviewer picks a figure. The marks must not overlap and be in text order."""
        self.cut = False
        openings = [f'<mark class="fig fig-{escape(st)}" id="fig-{n}" data-n="{n}" data-start="{s}" '
                f'data-end="{s + (m.end - m.start) if m.source_end is None else m.source_end}"'
                + (' tabindex="0">' if st == "unread" else '>')
                for n, (m, st, s) in enumerate(zip(marks, statuses, starts), 1)]
        return self._render(marks, openings=openings)

    def _render(self, marks: list[Occurrence], head: bool = False, openings: list[str] | None = None) -> str:
        """Inert HTML of the document with each occurrence in ``<mark>`` (the first ``id="quote"``,
        the others ``id="quote-2"``...); the rows and cells holding one get class ``quote-row`` /
        ``quote-cell``."""
        if self.kind != "html" or any(m.where == "source" for m in marks):
            return self._render_plain(marks, head, openings)
        last = max((m.end for m in marks), default=0) if head else None
        spans = sorted((m.start, m.end, n) for n, m in enumerate(marks, 1))
        hot: set[int] = set()
        for m in (marks if openings is None else []):
            i = self._piece_at(m.start)
            el = self.pieces[i][3] if i is not None else None
            for tags in (CELLS, {"tr"}):
                up = _up(el, tags)
                if up is not None:
                    hot.add(id(up))
        out: list[str] = []
        text = self.text
        ends = [e for _, e, _ in spans]
        opened: list[str] = []
        past = False   # with ``head``: the last mark has been written, stop at the next block's end
        for step in self.plan:
            op = step[0]
            if op == "piece":
                t0, n, _, _ = self.pieces[step[1]]
                out.append(_marked(text, t0, t0 + n, spans, ends, openings))
                past = past or (last is not None and t0 + n >= last)
            elif past and op == "close" and step[1] in BLOCKS:
                out.append(f"</{step[1]}>")
                opened.pop() if opened else None
                out.extend(f"</{t}>" for t in reversed(opened))
                self.cut = True
                return "".join(out)
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
                if tag not in VOID:
                    opened.append(tag)
            elif op == "close":
                out.append(f"</{step[1]}>")
                opened.pop() if opened else None
        return "".join(out)

    def _render_plain(self, marks: list[Occurrence], head: bool = False, openings: list[str] | None = None) -> str:
        hay = self.source if (self.kind != "html" or any(m.where == "source" for m in marks)) else self.text
        spans = sorted((m.start, m.end, n) for n, m in enumerate(marks, 1))
        end = len(hay)
        if head and spans:
            nl = hay.find("\n", spans[-1][1])
            end = len(hay) if nl < 0 else nl + 1
            self.cut = end < len(hay)
        return f'<pre class="page-source">{_marked(hay, 0, end, spans, openings=openings)}</pre>'


def _marked(text: str, a: int, b: int, spans, ends: list[int] | None = None,
            openings: list[str] | None = None) -> str:
    """``text[a:b]`` escaped, with the parts inside ``spans`` (start, end, n) in ``<mark>`` (the opening
    tag ``openings[n - 1]`` when given)."""
    out, cur = [], a
    ends = [e for _, e, _ in spans] if ends is None else ends
    for k in range(bisect_right(ends, a), len(spans)):   # spans do not overlap: their ends are sorted too
        s, e, n = spans[k]
        if s >= b:
            break
        if e <= cur:
            continue
        s2, e2 = max(s, cur), min(e, b)
        out.append(escape(text[cur:s2], quote=False))
        ident = ("quote" if n == 1 else f"quote-{n}") if s2 == s else None
        id_attr = f' id="{ident}"' if ident else ""
        opening = openings[n - 1] if openings is not None else f'<mark{id_attr} class="quote" data-n="{n}">'
        out.append(f'{opening}{escape(text[s2:e2], quote=False)}</mark>')
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


def _cells(row) -> list:
    """The row's td and th children."""
    return [c for c in row if isinstance(c.tag, str) and c.tag.lower() in CELLS]


def _column_of(row, cell) -> int:
    """The 0-based column of ``cell`` in ``row``, counting each earlier cell's colspan."""
    col = 0
    for sib in row:
        if sib is cell:
            break
        if isinstance(sib.tag, str) and sib.tag.lower() in CELLS:
            col += _span(sib)
    return col


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


# -- the fast path: selectors matched in the source, the page rendered by XSLT ------------------------

import html as _html  # noqa: E402

_MARKUP = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style|head|noscript|template|textarea|title|svg|math|object)\b"
                     r".*?(?:</\1\s*>|\Z)|<[^>]*>?", re.S | re.I)
_TAG = re.compile(r"<[^>]*>?")
_BLOCK_END = re.compile(r"</(?:tr|p|li|div|pre|dd|dt|blockquote|section|article|h[1-6])\s*>", re.I)
# Our own element names inside the parsed page, with a suffix no archived page can know (so a page that
# contains <caveat-mark> itself cannot make marks or "rows not shown" notes of its own).
import secrets as _secrets  # noqa: E402

_TAG_SUFFIX = _secrets.token_hex(6)
SENTINEL = f"caveat-mark-{_TAG_SUFFIX}"
EXCERPT, OMITTED, NOTE = (f"caveat-{x}-{_TAG_SUFFIX}" for x in ("excerpt", "omitted", "note"))
_KEPT_XPATH = "|".join(sorted(KEPT))
_DROPPED_XPATH = "|".join(sorted(INVISIBLE))
_XSLT = f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8" omit-xml-declaration="yes"/>
<xsl:template match="/"><xsl:choose><xsl:when test="//body"><xsl:apply-templates select="//body/node()"/></xsl:when>
  <xsl:otherwise><xsl:apply-templates/></xsl:otherwise></xsl:choose></xsl:template>
<xsl:template match="{EXCERPT}" priority="3"><div class="excerpt"><xsl:apply-templates/></div></xsl:template>
<xsl:template match="{OMITTED}" priority="3"><tr class="omitted"><td colspan="{{@span}}"><xsl:value-of select="."/></td></tr></xsl:template>
<xsl:template match="{NOTE}" priority="3"><p class="omitted"><xsl:value-of select="."/></p></xsl:template>
<xsl:template match="{_DROPPED_XPATH}|comment()|processing-instruction()"/>
<xsl:template match="{SENTINEL}" priority="2"><mark class="quote" data-n="{{@n}}"><xsl:attribute name="id"><xsl:choose>
  <xsl:when test="@n = '1'">quote</xsl:when><xsl:otherwise>quote-<xsl:value-of select="@n"/></xsl:otherwise>
  </xsl:choose></xsl:attribute><xsl:apply-templates/></mark></xsl:template>
<xsl:template match="tr|td|th" priority="2"><xsl:element name="{{local-name()}}"><xsl:copy-of select="@colspan|@rowspan"/>
  <xsl:if test="@data-caveat-hot"><xsl:attribute name="class"><xsl:choose><xsl:when test="self::tr">quote-row</xsl:when>
  <xsl:otherwise>quote-cell</xsl:otherwise></xsl:choose></xsl:attribute></xsl:if><xsl:apply-templates/></xsl:element></xsl:template>
<xsl:template match="{_KEPT_XPATH}"><xsl:element name="{{local-name()}}"><xsl:apply-templates/></xsl:element></xsl:template>
<xsl:template match="*"><xsl:apply-templates/></xsl:template>
<xsl:template name="spans"><xsl:for-each select="@colspan|@rowspan"><xsl:if test="string-length(normalize-space(.)) &gt; 0
  and string-length(normalize-space(.)) &lt; 4 and translate(normalize-space(.), '0123456789', '') = ''">
  <xsl:attribute name="{{local-name()}}"><xsl:value-of select="normalize-space(.)"/></xsl:attribute></xsl:if></xsl:for-each></xsl:template>
</xsl:stylesheet>"""
_TRANSFORM = None


def _transform():
    global _TRANSFORM
    if _TRANSFORM is None:
        from lxml import etree

        _TRANSFORM = etree.XSLT(etree.XML(_XSLT))
    return _TRANSFORM


def visible(fragment: str) -> str:
    """The text of a piece of HTML source: tags dropped (as spaces), entities decoded."""
    return _html.unescape(_TAG.sub(" ", fragment))


class SourceDoc:
    """An HTML document read for quoting without walking it in Python: occurrences are found in the
    source (in text, not in markup, scripts, styles or ``<head>``), prefix/suffix compared with the
    visible text (or the source) around them, and the page rendered inert by one XSLT pass with the
    occurrences spliced in as marks. :func:`find` answers None when the quote is not within one text
    run of the source (it crosses markup, or uses an entity); the caller then uses :func:`build`."""

    kind = "html"

    def __init__(self, source: str):
        self.source = source
        self._starts: list[int] | None = None
        self._ends: list[int] = []
        self._lower: str | None = None
        self._cells: dict[int, dict | None] = {}
        self.shown_text: str | None = None
        self.until: float | None = None
        self.partial = False
        self.cut = False
        self.excerpted = False

    def _spans(self) -> None:
        if self._starts is None:
            starts, ends = [], []
            for m in _MARKUP.finditer(self.source):
                starts.append(m.start())
                ends.append(m.end())
            self._starts, self._ends = starts, ends

    def _in_text_here(self, a: int, b: int) -> bool:
        """One occurrence, looked at where it is: between tags, and not in a script, style, comment or
        ``<head>`` (the nearest opening of each is nearer than its closing)."""
        src = self.source
        if src.rfind("<", 0, a) > src.rfind(">", 0, a) or src.find("<", a, b) >= 0:
            return False
        if self._lower is None:
            self._lower = src.lower()
        low = self._lower
        if low.rfind("<!--", 0, a) > low.rfind("-->", 0, a):
            return False
        for name in ("script", "style", "head", "title", "textarea", "noscript", "template", "svg", "math",
                     "object"):
            opened = low.rfind("<" + name, 0, a)
            if opened >= 0 and opened > low.rfind("</" + name, 0, a):
                nxt = low[opened + 1 + len(name):opened + 2 + len(name)]
                if not nxt or not (nxt.isalnum() or nxt in "-_"):
                    return False
        return True

    def _in_text(self, a: int, b: int) -> bool:
        self._spans()
        i = bisect_right(self._starts, a) - 1
        if i >= 0 and self._ends[i] > a:
            return False
        return i + 1 >= len(self._starts) or self._starts[i + 1] >= b

    def occurrences(self, exact: str) -> list[Occurrence]:
        rx = pattern(exact)
        if rx is None:
            return []
        return [Occurrence(m.start(), m.end(), "text", m.start(), m.end())
                for m in scan(rx, self.source, self, self.until, lambda m: self._in_text(m.start(), m.end()))]

    def _context_ok(self, occ: Occurrence, prefix: str | None, suffix: str | None) -> bool:
        pre, suf = squeeze(prefix), squeeze(suffix)
        if not pre and not suf:
            return True
        a, b, src = occ.start, occ.end, self.source
        wa, wb = 4 * len(pre) + 256, 4 * len(suf) + 256
        raw_before, raw_after = src[max(0, a - wa):a], src[b:b + wb]
        if (not pre or squeeze(raw_before).endswith(pre)) and (not suf or squeeze(raw_after).startswith(suf)):
            return True
        return (not pre or squeeze(visible(raw_before)).endswith(pre)) and \
            (not suf or squeeze(visible(raw_after)).startswith(suf))

    def find(self, exact: str, prefix: str | None = None, suffix: str | None = None,
             pos: int | None = None) -> tuple[list[Occurrence], int] | None:
        rx = pattern(exact)
        if rx is None:
            return None
        if pos is not None:
            m = rx.match(self.source, pos) if 0 <= pos <= len(self.source) else None
            if m is None or not self._in_text_here(m.start(), m.end()):
                return None  # not a text occurrence at pos: the full reader decides (markup, or nothing)
            occ = Occurrence(m.start(), m.end(), "text", m.start(), m.end())
            return ([occ] if self._context_ok(occ, prefix, suffix) else []), -1   # counted by render()
        found = self.occurrences(exact)
        if not found:
            return None
        return [o for o in found if self._context_ok(o, prefix, suffix)], len(found)

    def count(self, exact: str) -> int:
        rx = pattern(exact)
        if rx is None:
            return 0
        return sum(1 for _ in scan(rx, self.source, self, self.until, lambda m: self._in_text(m.start(), m.end())))

    def matched(self, occ: Occurrence) -> str:
        return self.source[occ.start:occ.end]

    def context(self, occ: Occurrence, width: int = 32) -> tuple[str, str]:
        before = " ".join(visible(self.source[max(0, occ.start - 8 * width - 256):occ.start]).split())
        after = " ".join(visible(self.source[occ.end:occ.end + 8 * width + 256]).split())
        return before[-width:], after[:width]

    def around(self, occ: Occurrence, width: int = 200) -> tuple[str, str]:
        return self.context(occ, width)

    def render(self, marks: list[Occurrence], *, excerpt: bool = False, head: bool = False) -> str:
        """Inert HTML of the page with the occurrences in ``<mark>``. ``excerpt``: only the part around
        the (first) mark: in a table, its header and ``ROWS`` rows either side (the rows left out are
        counted), under the nearest heading; elsewhere the block holding it and its neighbours.
        ``head``: only the page up to the end of the block holding the last mark (``cut`` says so),
        so showing the first few of many occurrences does not read the rest of a long page."""
        from lxml import etree
        import lxml.html

        self.cut = False
        if excerpt and len(marks) == 1:
            fast = self._render_table_slice(marks[0])
            if fast is not None:
                return fast
        src = self.source
        pieces, cur = [], 0
        for n, m in sorted(((n, m) for n, m in enumerate(marks, 1)), key=lambda t: t[1].start):
            pieces += [src[cur:m.start], f'<{SENTINEL} n="{n}">', src[m.start:m.end], f"</{SENTINEL}>"]
            cur = m.end
        end = len(src)
        if head and marks:
            closing = _BLOCK_END.search(src, cur)
            end = closing.end() if closing else len(src)
            self.cut = end < len(src)
        pieces.append(src[cur:end])
        try:
            root = lxml.html.document_fromstring("".join(pieces))
        except ValueError:
            root = lxml.html.document_fromstring("".join(pieces).encode("utf-8"))
        self._cells = {}
        first = None
        tables: dict = {}
        for el in root.iter(SENTINEL):
            n = int(el.get("n"))
            self._cells[n] = _cell(el, tables)
            first = el if n == 1 else first
            for tags in (CELLS, {"tr"}):
                up = _up(el, tags)
                if up is not None:
                    up.set("data-caveat-hot", "1")
        self.excerpted = False
        if excerpt and first is not None:
            part = _excerpt(first)
            if part is not None:
                root, self.excerpted = part, True
        result = _transform()(etree.ElementTree(root))
        self.shown_text = None if self.excerpted or self.cut else result.xpath("string(/)")
        return str(result).strip()

    def _render_table_slice(self, m: Occurrence) -> str | None:
        """The excerpt of a quote in a table cut out of the source before parsing (a 100,000-row table is
        not parsed to show 41 rows): the nearest heading, the table's first rows (its header), ROWS rows
        either side of the quoted one, the rows left out counted. None when the quote is not plainly
        inside one table (nested tables, unclosed rows): the caller parses the whole page."""
        from lxml import etree
        import lxml.html

        src = self.source
        if self._lower is None:
            self._lower = src.lower()
        low = self._lower
        a, b = m.start, m.end
        t0 = low.rfind("<table", 0, a)
        if t0 < 0 or low.find("</table", t0, a) >= 0 or low.find("<table", t0 + 6, a) >= 0:
            return None
        t1 = low.find("</table", b)
        t1 = len(src) if t1 < 0 else t1
        if low.find("<table", b, t1) >= 0:
            return None
        row_rx = _ROW_START
        own = low.rfind("<tr", t0, a)
        if own < 0 or not row_rx.match(low, own) or low.find("</tr", own, a) >= 0:
            return None
        body0 = low.find(">", t0) + 1
        starts = [x.start() for x in row_rx.finditer(low, body0, own)]
        head_rows, rows_before = starts[:3], starts
        lo = max(0, len(rows_before) - ROWS)
        window_start = rows_before[lo] if lo < len(rows_before) else own
        after = [x.start() for x in row_rx.finditer(low, b, t1)]
        hi = min(len(after), ROWS)
        window_end = after[hi] if hi < len(after) else t1
        # the header: the table's first rows up to the first one that is not all <th>
        head_end = body0
        n_head = 0
        for k, r0 in enumerate(head_rows):
            r1 = head_rows[k + 1] if k + 1 < len(head_rows) else (starts[len(head_rows)] if len(starts) > len(head_rows) else own)
            chunk = low[r0:r1]
            if "<th" in chunk and "<td" not in chunk:
                head_end, n_head = r1, k + 1
            else:
                break
        if window_start < head_end:
            window_start, lo = head_end, n_head
        skipped_above = lo - n_head
        skipped_below = len(after) - hi
        width = max(1, low.count("<td", own, after[0] if after else t1) + low.count("<th", own, after[0] if after else t1))
        heading = ""
        hm = None
        for hm in _HEADING.finditer(low, max(0, t0 - 20000), t0):
            pass
        if hm is not None:
            heading = src[hm.start():hm.end()]
        parts = [heading, src[t0:head_end]]
        if skipped_above > 0:
            parts.append(f'<{OMITTED} span="{width}">... {skipped_above:,} row(s) above not shown</{OMITTED}>')
        parts += [src[window_start:a], f'<{SENTINEL} n="1">', src[a:b], f"</{SENTINEL}>", src[b:window_end]]
        if skipped_below > 0:
            parts.append(f'<{OMITTED} span="{width}">... {skipped_below:,} row(s) below not shown</{OMITTED}>')
        parts.append("</table>")
        try:
            root = lxml.html.document_fromstring("".join(parts))
        except (ValueError, etree.ParserError):
            return None
        mark = next(root.iter(SENTINEL), None)
        if mark is None or _up(mark, {"tr"}) is None:
            return None
        cell = _cell(mark)
        if cell is not None:
            cell["row"] += skipped_above
        self._cells = {1: cell}
        for tags in (CELLS, {"tr"}):
            up = _up(mark, tags)
            if up is not None:
                up.set("data-caveat-hot", "1")
        box = etree.Element(EXCERPT)
        body = root.find("body")
        for child in list(body if body is not None else root):
            box.append(child)
        self.excerpted = True
        self.shown_text = None
        return str(_transform()(etree.ElementTree(box))).strip()

    def total(self, exact: str) -> int:
        """Occurrences of ``exact`` in the text of the page as last rendered (scripts and styles gone)."""
        rx = pattern(exact)
        if rx is None or self.shown_text is None:
            return self.count(exact)
        return sum(1 for _ in scan(rx, self.shown_text, self, self.until))

    def cell(self, n: int) -> dict | None:
        """Row and column of mark ``n`` (1-based) of the last :func:`render`."""
        return self._cells.get(n)


def _cell(mark, tables: dict | None = None) -> dict | None:
    """Row and column of a mark in a table. ``tables`` keeps each table's rows and their positions
    between calls, so marking many rows of one table reads it once."""
    cell = _up(mark, CELLS)
    row = _up(cell, {"tr"}) if cell is not None else None
    table = _up(row, {"table"}) if row is not None else None
    if table is None:
        return None
    known = None if tables is None else tables.get(table)
    if known is None:
        rows = table.xpath(".//tr")
        known = (rows, {r: k for k, r in enumerate(rows)})
        if tables is not None:
            tables[table] = known
    rows, index = known
    col = 0
    for sib in row:
        if sib is cell:
            break
        if isinstance(sib.tag, str) and sib.tag.lower() in CELLS:
            col += _span(sib)
    header = None
    for r in rows[:20]:
        cells = _cells(r)
        if cells and r is not row and all(c.tag.lower() == "th" for c in cells):
            header = _cell_at(cells, col)
            break
    label_cells = _cells(row)
    return {"row": index[row] + 1, "column": col + 1,
            "header": _clean(header.text_content()) if header is not None else None,
            "row_label": _clean(label_cells[0].text_content()) if label_cells else None}


ROWS = 20          # rows shown either side of the quoted one in an excerpt
_ROW_START = re.compile(r"<tr[\s>/]")
_HEADING = re.compile(r"<h[1-6][^>]*>.*?</h[1-6]\s*>", re.S)
NEIGHBOURS = 4     # blocks shown either side of the quoted block
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKISH = {"p", "li", "pre", "blockquote", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "div", "section",
             "article", "figure", "tr", "ul", "ol", "dl", "table"}


def _excerpt(mark):
    """A small tree around ``mark``: the table (caption, header rows, ROWS rows either side, the rest
    counted) or the block and its neighbours, under the nearest preceding heading."""
    import copy

    from lxml import etree

    box = etree.Element(EXCERPT)
    table = _up(_up(mark, {"tr"}), {"table"}) if _up(mark, {"tr"}) is not None else None
    anchor = table if table is not None else _block_of(mark)
    if anchor is None:
        return None
    heading = anchor.xpath("preceding::*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6][1]")
    if heading and not _contains(anchor, heading[0]):
        box.append(copy.deepcopy(heading[0]))
        box[-1].tail = None
    if table is not None:
        row = _up(mark, {"tr"})
        rows = table.xpath(".//tr")
        i = rows.index(row)
        head = []
        for r in rows[:3]:
            cells = _cells(r)
            if cells and all(c.tag.lower() == "th" for c in cells):
                head.append(r)
            else:
                break
        width = max((sum(_span(c) for c in r if isinstance(c.tag, str) and c.tag.lower() in CELLS) for r in rows[i:i + 1]),
                    default=1)
        new = etree.SubElement(box, "table")
        cap = table.find("caption")
        if cap is not None:
            new.append(copy.deepcopy(cap))
        for r in head:
            new.append(copy.deepcopy(r))
        lo, hi = max(len(head), i - ROWS), min(len(rows), i + ROWS + 1)
        if lo > len(head):
            om = etree.SubElement(new, OMITTED, span=str(width))
            om.text = f"... {lo - len(head):,} row(s) above not shown"
        for r in rows[lo:hi]:
            new.append(copy.deepcopy(r))
            new[-1].tail = None
        if hi < len(rows):
            om = etree.SubElement(new, OMITTED, span=str(width))
            om.text = f"... {len(rows) - hi:,} row(s) below not shown"
        return box
    parent = anchor.getparent()
    sibs = [anchor] if parent is None else [c for c in parent if isinstance(c.tag, str)]
    i = sibs.index(anchor)
    lo, hi = max(0, i - NEIGHBOURS), min(len(sibs), i + NEIGHBOURS + 1)
    if lo > 0:
        etree.SubElement(box, NOTE).text = f"... {lo:,} block(s) above not shown"
    for el in sibs[lo:hi]:
        box.append(copy.deepcopy(el))
        box[-1].tail = None
    if hi < len(sibs):
        etree.SubElement(box, NOTE).text = f"... {len(sibs) - hi:,} block(s) below not shown"
    return box


def _block_of(mark):
    el = mark.getparent()
    while el is not None and isinstance(el.tag, str) and el.tag.lower() not in _BLOCKISH:
        if el.tag.lower() in ("body", "html"):
            return None
        el = el.getparent()
    return el if el is not None and isinstance(el.tag, str) and el.tag.lower() not in ("body", "html") else None


def _contains(outer, inner) -> bool:
    el = inner
    while el is not None:
        if el is outer:
            return True
        el = el.getparent()
    return False


def locate(source: str, kind: str, exact: str, prefix: str | None = None, suffix: str | None = None,
           pos: int | None = None, *, budget: float | None = None):
    """(document, occurrences the selector keeps, occurrences of the quote alone or None when not
    counted). HTML is first searched in its source (:class:`SourceDoc`, fast); when the quote is not
    within one text run there (it crosses markup, uses an entity) or the selector keeps nothing, the
    whole document is read (:func:`build`), which also falls back to the source's markup.

    Every search is linear in the page and stops after ``budget`` seconds (:data:`BUDGET_S`): the
    document's ``partial`` then says the occurrences were not all counted."""
    until = deadline(budget)
    if kind == "html":
        fast = SourceDoc(source)
        fast.until = until
        res = fast.find(exact, prefix, suffix, pos)
        if res is not None and res[0]:
            kept, total = res
            return fast, kept, (None if total < 0 else total)
    doc = build(source, kind)
    doc.until = until
    kept, total = doc.find(exact, prefix, suffix, pos)
    return doc, kept, total
