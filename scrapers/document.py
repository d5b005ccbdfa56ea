"""Route a decoded document to its readers by kind and content.

- json: a saved tool result (``scrapers.tools.*.read_json``) or JSON Lines of them; otherwise the
  leaderboard reader (``scrapers.json_parser``);
- html: the ``<table>`` reader (``scrapers.html``), plus the text pipeline on the page's ``<pre>`` /
  ``<code>`` blocks and paragraphs when the tables give nothing;
- markdown / text: the text pipeline (``scrapers.pipeline``) on the decoded text as it is.
"""

from __future__ import annotations

import json

from scrapers.fields import ParseResult


def read(text: str, *, kind: str, content_type: str | None, result: ParseResult, raw: bytes | None = None) -> ParseResult:
    from scrapers import pipeline

    if kind == "json":
        from scrapers import jsondoc

        return jsondoc.read_json_text(text, result)
    if kind == "html":
        from scrapers.html import parse_html

        parse_html(text, result=result)
        if not result.entries:
            from scrapers.htmltext import read_html_text

            keep = list(result.warnings)
            result.warnings.clear()
            read_html_text(text, result)
            if not result.entries:
                result.warnings[:0] = keep
        return result
    ct = (content_type or "").lower()
    if "csv" in ct or "tab-separated" in ct:
        from scrapers import delimited

        return delimited.read_delimited(text, result, tsv="tab-separated" in ct)
    if (text.lstrip()[:1] in ("{", "[") and _is_json(text)) or _is_json_lines(text):
        from scrapers import jsondoc

        return jsondoc.read_json_text(text, result)
    return pipeline.read_document(text, result)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except (ValueError, RecursionError):
        return False


def _is_json_lines(text: str) -> bool:
    """Most non-empty lines are JSON objects (JSON Lines, perhaps with a tool's log lines between)."""
    lines = [ln.strip() for ln in text[:200_000].splitlines() if ln.strip()]
    if len(lines) < 1:
        return False
    objs = 0
    for ln in lines[:200]:
        if ln.startswith("{") and ln.endswith("}"):
            try:
                json.loads(ln)
                objs += 1
            except ValueError:
                return False
    return objs >= 1 and objs >= 0.5 * min(len(lines), 200)
