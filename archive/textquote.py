"""Page text and W3C TextQuoteSelector matching, whitespace-tolerant, for quote citations.

:func:`page_text` turns archived bytes into the text a reader sees: for HTML the visible text
(scripts, styles and ``<head>`` dropped, block elements on their own lines, runs of spaces
collapsed); for JSON, markdown and plain text the decoded source.

:func:`find_quote` looks for ``exact`` in that text, ignoring every difference in whitespace
(parsers quote the collapsed visible text, a reader may paste it with line breaks), and honours
``prefix`` / ``suffix`` as the selector does: when given, the text just before / after the match
must end / start with them (again ignoring whitespace). It returns the span in the original text
so :func:`highlight` can cut it into (before, quote, after) for the server-side highlighted view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPACES = re.compile(r"[ \t\f\v\r\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\n[ \n]*")
_ANY_SPACE = re.compile(r"\s+")
_INVISIBLE = {"script", "style", "noscript", "template", "head", "iframe", "object", "svg", "canvas"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul",
    "title", "caption",
}
_CELLS = {"td", "th"}


def decode(body: bytes, charset: str | None = None) -> str:
    """Decode with the declared charset, then UTF-8, then Latin-1 (which never fails)."""
    for enc in (charset, "utf-8"):
        if not enc:
            continue
        try:
            return body.decode(enc)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("latin-1")


def charset_of(content_type: str | None) -> str | None:
    m = re.search(r"charset=\"?([\w.:-]+)", content_type or "", re.I)
    return m.group(1) if m else None


def text_kind(mime: str | None, body: bytes | str = b"") -> str:
    """``html``, ``json``, ``markdown`` or ``text`` for a MIME type (sniffing HTML when unlabelled)."""
    m = (mime or "").split(";")[0].strip().lower()
    if m in ("text/html", "application/xhtml+xml"):
        return "html"
    if m.endswith("json"):
        return "json"
    if m in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if not m or m == "application/octet-stream":
        head = body[:512].lstrip().lower() if isinstance(body, bytes) else body[:512].lstrip().lower().encode()
        if head.startswith((b"<!doctype html", b"<html")):
            return "html"
        if head.startswith((b"{", b"[")):
            return "json"
    return "text"


def html_text(markup: str | bytes) -> str:
    """The visible text of an HTML document, one line per block, spaces collapsed."""
    import lxml.html
    from lxml import etree

    if isinstance(markup, str):
        markup = markup.encode("utf-8")
    if not markup.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(markup)
    except (etree.ParserError, ValueError):
        return collapse(markup.decode("utf-8", "replace"))
    parts: list[str] = []

    def add(text: str | None, pre: bool) -> None:
        if text:  # in HTML a line break in text is just a space, except inside <pre>
            parts.append(text if pre else _ANY_SPACE.sub(" ", text))

    def walk(el, pre: bool = False) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if tag in _INVISIBLE or not isinstance(el.tag, str):
            add(el.tail, pre)
            return
        block = tag in _BLOCKS
        inner = pre or tag in ("pre", "textarea")
        if block:
            parts.append("\n")
        add(el.text, inner)
        for child in el:
            walk(child, inner)
        if block:
            parts.append("\n")
        elif tag in _CELLS:
            parts.append(" ")
        add(el.tail, pre)

    body = root.find("body")
    walk(body if body is not None else root)
    return collapse("".join(parts))


def collapse(text: str) -> str:
    """Runs of spaces become one space, runs of line breaks one line break; lines are trimmed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SPACES.sub(" ", text)
    text = _BLANK_LINES.sub("\n", text.replace(" \n", "\n"))
    return text.strip()


def page_text(body: bytes | str, mime: str | None = None, *, charset: str | None = None) -> str:
    """The text a quote citation is matched against and shown in."""
    kind = text_kind(mime, body)
    if kind == "html":
        return html_text(body)
    text = decode(body, charset or charset_of(mime)) if isinstance(body, bytes) else body
    return text.replace("\r\n", "\n")


# -- matching -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuoteMatch:
    start: int  # span in the text searched
    end: int
    text: str  # the text searched (page text or raw source)
    where: str  # "text" or "source"

    def highlight(self) -> tuple[str, str, str]:
        return highlight(self.text, self.start, self.end)


def _squeeze(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace, and for each kept character its index in ``text``."""
    kept, index = [], []
    for i, ch in enumerate(text):
        if not ch.isspace() and ch not in "\u200b\ufeff":
            kept.append(ch)
            index.append(i)
    return "".join(kept), index


def _strip_ws(text: str | None) -> str:
    return "".join(ch for ch in (text or "") if not ch.isspace() and ch not in "\u200b\ufeff")


def find_span(text: str, exact: str, prefix: str | None = None, suffix: str | None = None) -> tuple[int, int] | None:
    """(start, end) of the first occurrence of ``exact`` in ``text`` that has ``prefix`` right before
    it and ``suffix`` right after it, whitespace ignored throughout; None when there is none."""
    needle = _strip_ws(exact)
    if not needle:
        return None
    hay, index = _squeeze(text)
    pre, suf = _strip_ws(prefix), _strip_ws(suffix)
    pos = hay.find(needle)
    while pos >= 0:
        end = pos + len(needle)
        if (not pre or hay[:pos].endswith(pre)) and (not suf or hay[end:].startswith(suf)):
            return index[pos], index[end - 1] + 1
        pos = hay.find(needle, pos + 1)
    return None


def find_quote(text: str, exact: str, prefix: str | None = None, suffix: str | None = None,
               *, source: str | None = None) -> QuoteMatch | None:
    """Match in the page ``text`` first, then in the raw decoded ``source`` (attributes, markup)."""
    span = find_span(text, exact, prefix, suffix)
    if span:
        return QuoteMatch(span[0], span[1], text, "text")
    if source is not None and source != text:
        span = find_span(source, exact, prefix, suffix)
        if span:
            return QuoteMatch(span[0], span[1], source, "source")
    return None


def highlight(text: str, start: int, end: int) -> tuple[str, str, str]:
    return text[:start], text[start:end], text[end:]


def context_of(text: str, start: int, end: int, width: int = 32) -> tuple[str, str]:
    """Up to ``width`` characters before and after a span: a prefix/suffix pair that pins it down."""
    return text[max(0, start - width):start], text[end:end + width]
