"""An HTML page's text for the text pipeline: headings become ``#`` lines, ``<pre>``/``<code>`` blocks
become fenced code (tool output pasted into a page), tables become pipe tables, paragraphs and list
items become lines. Quotes are then found in the decoded HTML source for their selectors."""

from __future__ import annotations

import re

from scrapers.fields import ParseResult

_BLOCKS = {"p", "li", "blockquote", "dd", "dt", "figcaption", "caption", "div"}


def _pipe_table(el) -> str:
    """An HTML table as a pipe table (the caption above it kept as a line)."""
    lines = []
    cap = el.xpath("./caption")
    if cap:
        lines.append(" ".join(cap[0].text_content().split()) + "\n")
    for i, tr in enumerate(el.xpath(".//tr")):
        cells = [" ".join(c.text_content().split()).replace("|", "/") for c in tr if c.tag in ("td", "th")]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + " --- |" * len(cells))
    return "\n".join(lines)


def html_to_text(html: str, tables: bool = True, prose: bool = True) -> tuple[str, str]:
    import lxml.html

    try:
        tree = lxml.html.document_fromstring(html)
    except Exception:  # lxml raises several types on garbage; the caller warns
        return "", ""
    for bad in tree.xpath("//script|//style|//nav|//footer|//noscript|//svg"):
        bad.drop_tree()
    title_el = tree.xpath("//title")
    title = " ".join(title_el[0].text_content().split()) if title_el else ""
    out: list[str] = []
    if not tables and not prose:
        # headings, <pre> blocks and the tables the <table> reader passed over (no walk over every cell)
        from scrapers.html import read_table as read_html_table
        from scrapers.rows import is_entry_table

        found = False
        for el in tree.xpath("//h1|//h2|//h3|//h4|//h5|//h6|//pre|//table[not(ancestor::table)]"):
            if el.tag == "pre":
                out.append("```\n" + el.text_content().strip("\n") + "\n```")
                found = True
            elif el.tag == "table":
                got = read_html_table(el)
                if got is None or is_entry_table(got[0]):
                    continue       # read already
                out.append(_pipe_table(el))
                found = True
            else:
                out.append("#" * int(el.tag[1]) + " " + " ".join(el.text_content().split()))
        return (title, "\n\n".join(out)) if found else (title, "")
    for el in tree.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            out.append("#" * int(tag[1]) + " " + " ".join(el.text_content().split()))
        elif tag == "pre":
            out.append("```\n" + el.text_content().strip("\n") + "\n```")
        elif tag == "table" and not el.xpath("ancestor::table") and tables:
            out.append(_pipe_table(el))
        elif prose and tag in _BLOCKS and not el.xpath("ancestor::pre|ancestor::table|ancestor::p|ancestor::li"):
            if tag == "div" and el.xpath(".//p|.//li|.//pre|.//table|.//div|.//h1|.//h2|.//h3"):
                continue
            t = " ".join(el.text_content().split())
            if t:
                out.append(t)
    if title and not any(x.startswith("# ") for x in out[:3]):
        out.insert(0, "# " + title)
    return title, "\n\n".join(out)


def read_html_text(html: str, result: ParseResult, tables: bool = True) -> ParseResult:
    """The text pipeline on the page's text; ``tables=False`` reads only the headings and ``<pre>`` blocks
    (pasted tool output) of a page whose tables were already read."""
    from scrapers import pipeline
    from scrapers.selectors import pin

    _title, text = html_to_text(html, tables=tables, prose=tables)
    if not text.strip():
        if tables:
            result.warnings.append("the HTML page has no readable text; nothing parsed")
        return result
    sub = pipeline.read_document(text, ParseResult(kind="html"))
    if not tables:
        sub.warnings = [w for w in sub.warnings if not w.startswith("nothing parsed")]
    for e in sub.entries:
        e.selectors.clear()
        pin(e, html, [])
        e.quotes = {f: q for f, q in e.quotes.items() if q in html or f not in e.selectors}
    result.entries += sub.entries
    result.warnings += sub.warnings
    return result
