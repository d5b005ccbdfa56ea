"""Quotes that pin one occurrence: a W3C TextQuoteSelector (exact, prefix, suffix) and a
TextPositionSelector (start, end) into the decoded text, so a citation of "8" in row 3 never means the
"8" of row 1.

Parsers know roughly where each value came from (a cell, a row, a line, the page intro): ``pin`` looks
for the quote first inside those spans, in order, and only then in the whole text.
"""

from __future__ import annotations

CONTEXT = 32   # characters of prefix and suffix


def selector(text: str, start: int, end: int) -> dict:
    return {"exact": text[start:end], "prefix": text[max(0, start - CONTEXT):start],
            "suffix": text[end:end + CONTEXT], "start": start, "end": end}


def find(text: str, quote: str, spans: list[tuple[int, int]] = ()) -> int:
    """Offset of ``quote`` inside the first span that holds it, else its first occurrence, else -1."""
    if not quote:
        return -1
    for a, b in spans:
        if a is None or b is None:
            continue
        i = text.find(quote, max(0, a), min(len(text), b + len(quote)))
        if i >= 0 and i + len(quote) <= max(b, a + len(quote)):
            return i
    return text.find(quote)


def pin(entry, text: str, spans: list[tuple[int, int]] = ()) -> None:
    """Fill ``entry.selectors`` for every quote found verbatim in ``text``; a quote that is not is dropped."""
    if not text:
        return
    for f, q in list(entry.quotes.items()):
        if f in entry.selectors:
            continue
        i = find(text, q, spans)
        if i < 0:
            continue
        entry.selectors[f] = selector(text, i, i + len(q))
