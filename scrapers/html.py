"""HTML leaderboards: one or more ``<table>`` of entries.

Tables are read with lxml (the parser BeautifulSoup's "lxml" mode wraps; used directly because the
2,000-row benchmark table must parse in tens of milliseconds). A cell's text is what
BeautifulSoup's ``get_text()`` gives for it, whitespace collapsed, so quotes can be found in the page.

Notes are read from a notes column, from a "details" row under an entry (a row with one wide cell),
and from ``title`` attributes on the row or its cells. A page without ``<table>`` whose text holds
markdown pipe tables (a rendered README in ``<pre>``) is read as markdown.
"""

from __future__ import annotations

import re

from scrapers.columns import classify
from scrapers.fields import ParseResult
from scrapers.rows import clean, is_entry_table, looks_llama_bench, table_entries

_ROWS = "./tr|./thead/tr|./tbody/tr|./tfoot/tr"


def load_tree(body: bytes | str, result: ParseResult):
    import lxml.etree
    import lxml.html

    try:
        if isinstance(body, str):
            body = body.encode("utf-8")
        if not body.strip():
            result.warnings.append("the page is empty; nothing parsed")
            return None
        return lxml.html.document_fromstring(body)
    except (lxml.etree.ParserError, ValueError, lxml.etree.XMLSyntaxError) as exc:
        result.warnings.append(f"not readable as HTML ({exc}); nothing parsed - check the capture or the --kind")
        return None


def _cells(tr) -> list:
    return [c for c in tr if isinstance(c.tag, str) and c.tag in ("td", "th")]


def _text(el) -> str:
    for bad in el.xpath(".//script|.//style"):
        bad.drop_tree()
    return clean(el.text_content())


def read_table(table):
    """(header, rows, row_notes) with details rows and title attributes folded into row_notes."""
    trs = table.xpath(_ROWS)
    if not trs:
        return None
    header, start = None, 0
    for i, tr in enumerate(trs[:3]):
        cells = _cells(tr)
        if cells and all(c.tag == "th" for c in cells) and len(cells) > 1:
            header, start = [_text(c) for c in cells], i + 1
            break
    if header is None:
        header, start = [_text(c) for c in _cells(trs[0])], 1
    rows, notes, titles = [], [], []
    width = len(header)
    for tr in trs[start:]:
        cells = _cells(tr)
        if not cells:
            continue
        texts = [clean(c.text_content()) for c in cells]
        if len(cells) == 1 and width > 2 and rows and int(cells[0].get("colspan", "1") or 1) > 1:
            if texts[0]:
                notes[-1].append(texts[0])
            continue
        extra = []
        for el in [tr, *cells]:
            t = el.get("title")
            if t and t.strip():
                extra.append(t.strip())
        rows.append(texts)
        notes.append([])
        titles.append(extra)
    return header, rows, [n + t for n, t in zip(notes, titles)]


def _caption_facts(table) -> dict:
    """Model and engine named in the paragraph just before a table that has no model column."""
    from scrapers import pagefacts

    prev = table.getprevious()
    for _ in range(3):
        if prev is None:
            return {}
        if isinstance(prev.tag, str) and prev.tag in ("p", "h2", "h3", "h4", "caption", "div"):
            facts = pagefacts.facts("", clean(prev.text_content()))
            out = {k: v for k, v in facts.items() if k in ("model", "engine", "engine_version")}
            text = clean(prev.text_content())
            from scrapers import phrases

            runs = phrases.extract(text).get("n_runs")
            if runs:
                out["n_runs"] = runs
            if "llama-bench" in text and "engine" not in out:
                out["engine"] = ("llama.cpp", None)
            return out
        prev = prev.getprevious()
    return {}


def _caption_text(table) -> str:
    """The table's <caption>, else the short paragraph or heading right before it."""
    cap = table.xpath("./caption")
    if cap:
        return clean(cap[0].text_content())[:200]
    prev, node = table.getprevious(), table
    while prev is None and node.getparent() is not None and node.getparent().tag in ("div", "figure", "section"):
        node = node.getparent()      # a table inside a scroll wrapper: the words before the wrapper
        prev = node.getprevious()
    for _ in range(2):
        if prev is None:
            return ""
        if isinstance(prev.tag, str) and prev.tag in ("p", "h2", "h3", "h4", "h5", "strong", "b"):
            t = clean(prev.text_content())
            return t if len(t) <= 200 else ""
        prev = prev.getprevious()
    return ""


def parse_html(body: bytes | str, *, result: ParseResult | None = None) -> ParseResult:
    result = result or ParseResult(kind="html")
    raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    tree = load_tree(body, result)
    if tree is None:
        return result
    opened, closed = len(re.findall(r"<table\b", raw, re.I)), len(re.findall(r"</table\s*>", raw, re.I))
    if opened != closed:
        result.warnings.append(f"the page looks truncated or malformed ({opened} <table> tags, {closed} closed); "
                               "parsed what could be read")
    tables = tree.xpath("//table[not(ancestor::table)]")
    for n, table in enumerate(tables, start=1):
        read_ = read_table(table)
        if read_ is None:
            continue
        header, rows, notes = read_
        if not is_entry_table(header):
            continue
        defaults = {}
        if not any(classify(h).field == "model" for h in header):
            defaults = _caption_facts(table)
        if not rows:
            result.warnings.append(f"table {n} has a header but no rows")
            continue
        found = table_entries(header, rows, row_notes=notes, llama_bench=looks_llama_bench(header),
                              defaults=defaults, warnings=result.warnings)
        cap = _caption_text(table)
        if cap:     # what the table calls itself ("H200 FP8 Max throughput"): the rules read it
            for e in found:
                e.fields.setdefault("caption", cap)
        result.entries += found
    if not result.entries:
        text = tree.text_content()
        if "|" in text and "---" in text:
            from scrapers.markdown import parse_markdown

            md = parse_markdown(text, result=ParseResult(kind="html"))
            if md.entries:
                result.entries = md.entries
                result.warnings.append("no HTML table of entries; read the markdown tables in the page text")
                return result
        what = "no <table> in the page" if not tables else f"{len(tables)} table(s), none with tok/s or model columns"
        result.warnings.append(f"nothing parsed: {what} (if the page is an article, add the source with --kind text)")
    return result
