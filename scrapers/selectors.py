"""Quotes that pin one occurrence: a W3C TextQuoteSelector (exact, prefix, suffix) and a
TextPositionSelector (start, end) into the decoded text, so a citation of "8" in row 3 never means the
"8" of row 1.

Parsers know roughly where each value came from (a cell, a row, a line, the page intro): ``pin`` looks
for the quote first inside those spans, in order, and only then in the whole text.
"""

from __future__ import annotations

CONTEXT = 32   # characters of prefix and suffix


def selector(text: str, start: int, end: int) -> dict:
    a = start - CONTEXT
    return {"exact": text[start:end], "prefix": text[a if a > 0 else 0:start],
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


def pin_in_order(entries, text: str) -> None:
    """Pin the quotes of entries that follow the document's order (table rows, JSON items) without
    knowing their spans: each entry's quotes are looked for from where the previous entry's figure was
    found, so a 2,000-row table costs one pass, not 2,000."""
    if not text:
        return
    cursor = 0
    find = text.find
    n = len(text)
    for e in entries:
        sels = e.selectors
        quotes = e.quotes
        head = quotes.get("headline_tps")
        if head and "headline_tps" not in sels:
            i = find(head, cursor)
            if i < 0:
                i = find(head)
            if i >= 0:
                j = i + len(head)
                sels["headline_tps"] = {"exact": head, "prefix": text[i - CONTEXT if i > CONTEXT else 0:i],
                                        "suffix": text[j:j + CONTEXT], "start": i, "end": j}
                cursor = i
        row_a, row_b = _row(text, cursor) if head else (cursor, cursor)
        for f, q in quotes.items():
            if not q or f in sels:
                continue
            k = find(q, row_a, row_b) if row_b > row_a else -1    # the figure's own row (<tr>...</tr>, or its line)
            if k < 0:
                k = find(q, cursor, cursor + 200 if cursor + 200 < n else n)   # just after its figure
            if k < 0:
                k = find_near(text, q, cursor)
            if k >= 0:
                j = k + len(q)
                sels[f] = {"exact": q, "prefix": text[k - CONTEXT if k > CONTEXT else 0:k],
                           "suffix": text[j:j + CONTEXT], "start": k, "end": j}


def _row(text: str, at: int, reach: int = 3000) -> tuple[int, int]:
    """The table row around offset ``at``: an HTML ``<tr>`` element when one encloses it, else its line."""
    lo = at - reach if at > reach else 0
    tr = text.rfind("<tr", lo, at)
    if tr >= 0:
        end = text.find("</tr", at, at + reach)
        nxt = text.find("<tr", at, at + reach)
        if end >= 0 and (nxt < 0 or end < nxt):
            return tr, end
    a = text.rfind("\n", lo, at)
    b = text.find("\n", at, at + reach)
    if (a < 0 and lo > 0) or b < 0:
        return at, at        # no line of its own within reach (a minified document): no row to search
    return a + 1, b


def find_near(text: str, quote: str, at: int, reach: int = 4000) -> int:
    """The occurrence of ``quote`` nearest to ``at`` within ``reach`` characters, else the first one."""
    b = text.find(quote, at, at + reach)
    if 0 <= b < at + 200:
        return b      # just after the row's figure: the same row
    lo = at - reach
    a = text.rfind(quote, lo if lo > 0 else 0, at + len(quote))
    if a >= 0 and b >= 0:
        return a if at - a <= b - at else b
    if a >= 0 or b >= 0:
        return a if a >= 0 else b
    return text.find(quote)
