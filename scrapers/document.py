"""Route a decoded document to its readers by kind and content.

- json: a saved tool result (``scrapers.tools.*.read_json``) or JSON Lines of them; otherwise the
  leaderboard reader (``scrapers.json_parser``);
- html: the ``<table>`` reader (``scrapers.html``), plus the text pipeline on the page's ``<pre>`` /
  ``<code>`` blocks and paragraphs when the tables give nothing;
- markdown / text: the text pipeline (``scrapers.pipeline``) on the decoded text as it is.
"""

from __future__ import annotations

import json
import re

from scrapers.fields import ParseResult


MAX_CHARS = 4_000_000        # a document is read up to here (its snapshot keeps every byte)
HTML_MAX_CHARS = 64_000_000  # HTML tables are read by lxml in linear time: a 100,000-row board is ~17 M
CLASSIC_MAX_CHARS = 60_000
HTML_TEXT_MAX_CHARS = 400_000    # an HTML page's prose and <pre> blocks are read too, up to here


def read(text: str, *, kind: str, content_type: str | None, result: ParseResult, raw: bytes | None = None) -> ParseResult:
    from scrapers import pipeline

    limit = HTML_MAX_CHARS if kind == "html" else MAX_CHARS
    if len(text) > limit and kind != "json":
        result.warnings.append(f"the document has {len(text):,} characters; read the first {limit:,} "
                               "(the snapshot keeps all of it)")
        text = text[:limit]

    if kind == "json":
        from scrapers import jsondoc

        return jsondoc.read_json_text(text, result)
    if kind == "html":
        from scrapers.html import parse_html

        from scrapers.pipeline import classify_entry
        from scrapers.selectors import pin_in_order

        parse_html(text, result=result)
        for e in result.entries:
            classify_entry(e)
        pin_in_order(result.entries, text)
        if result.entries and len(text) <= HTML_TEXT_MAX_CHARS and \
                (re.search(r"<pre\b", text, re.I) or len(re.findall(r"<table\b", text[:HTML_TEXT_MAX_CHARS], re.I)) > 1):
            # the tables were read; the page's <pre> blocks and prose may hold more (pasted tool output)
            from scrapers.htmltext import read_html_text
            from scrapers.pipeline import merge_prose

            rest = read_html_text(text, ParseResult(kind="html"), tables=False)
            result.entries = merge_prose(result.entries, rest.entries)
            result.warnings += [w for w in rest.warnings if w not in result.warnings]
        if not result.entries:
            from scrapers.htmltext import read_html_text

            keep = list(result.warnings)
            result.warnings.clear()
            read_html_text(text, result)
            if not result.entries:
                if any(w.startswith("nothing parsed") for w in keep):
                    result.warnings[:] = [w for w in result.warnings if not w.startswith("nothing parsed")]
                result.warnings[:0] = keep
        return result
    ct = (content_type or "").lower()
    if "csv" in ct or "tab-separated" in ct:
        from scrapers import delimited

        return delimited.read_delimited(text, result, tsv="tab-separated" in ct)
    if kind == "text" and ((text.lstrip()[:1] in ("{", "[") and _is_json(text)) or _is_json_lines(text)):
        # plain text that is JSON (Lines): a saved result; a source declared markdown stays markdown
        from scrapers import jsondoc

        return jsondoc.read_json_text(text, result)
    if kind == "text" and _looks_html(text):
        from scrapers.htmltext import read_html_text

        read_html_text(text, result)
        return _merge_classic(text, kind, result, is_html=True)
    read_text = uncomment_logs(text)
    pipeline.read_document(read_text, result)
    _merge_classic(read_text, kind, result)
    if read_text is not text:      # same offsets; quotes and selectors are taken from the archived text
        from scrapers.selectors import selector

        for e in result.entries:
            for f, sel in list(e.selectors.items()):
                if isinstance(sel, dict) and isinstance(sel.get("start"), int) and isinstance(sel.get("end"), int):
                    e.selectors[f] = selector(text, sel["start"], sel["end"])
                    if f in e.quotes and e.quotes[f] == sel.get("exact"):
                        e.quotes[f] = text[sel["start"]:sel["end"]]
    return result


_COMMENTED = re.compile(r"(?m)^(?:#|//|;)[ \t]")
_LOG_LINE = re.compile(r"^(?:#|//|;)[ \t]+(?:[^:\n]{2,60}:[ \t]*\S|[=\-]{6,}|\d)")


def uncomment_logs(text: str) -> str:
    """Tool output kept as comments (a shell script's ``# Output token throughput (tok/s): 434.40``,
    ``// ...``): runs of 5 or more commented lines most of which read as ``key: value`` or rules get
    their comment marker blanked out, same length, so the tool readers see the output and every offset
    and quote still points at the archived text. A markdown heading is left alone (one line, no value)."""
    if not _COMMENTED.search(text):
        return text
    changed = False
    lines = text.split("\n")
    out = list(lines)
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and (_COMMENTED.match(lines[j]) or (lines[j].strip() in ("#", "//") and j > i)):
            j += 1
        run = lines[i:j]
        if len(run) >= 5 and sum(1 for ln in run if _LOG_LINE.match(ln)) >= 0.6 * len(run):
            for k in range(i, j):
                ln = lines[k]
                n = 2 if ln.startswith("//") else 1
                out[k] = " " * n + ln[n:]
                changed = True
        i = max(j, i + 1)
    return "\n".join(out) if changed else text


def _looks_html(text: str) -> bool:
    import re

    return bool(re.match(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|article|div|p)\b", text[:4096], re.I | re.S))


# fields the classic readers fill better than the pipeline's scopes when both read the same figure
_PREFER_CLASSIC = ("hardware",)
# the only fields they may lend: what one run states about itself (never speculation or model facts,
# which the scoped context decides)
_LEND = {"prompt", "tokens_stated", "seconds_stated", "n_runs", "engine_commit", "engine_version", "submitter",
         "notes", "acceptance_rate", "acceptance_length", "accepted_tokens", "drafted_tokens", "steady_low",
         "steady_high", "hardware", "gpu_count", "engine", "prompt_tokens", "gen_tokens",
         "spread", "samples", "power", "clocks", "date", "command", "output_sample"}


def _merge_classic(text: str, kind: str, result: ParseResult, is_html: bool = False) -> ParseResult:
    """The classic markdown/prose readers still run: an entry of theirs for a figure the pipeline also
    read lends the fields the pipeline left empty (prompt, stated tokens and seconds, runs, build); an
    entry with no figure (a crashed run's row) is kept as they made it."""
    from scrapers.markdown import parse_markdown
    from scrapers.pipeline import classify_entry
    from scrapers.selectors import pin
    from scrapers.text import parse_text

    if len(text) > CLASSIC_MAX_CHARS:
        return result
    try:
        old = (parse_markdown(text, result=ParseResult(kind=kind)) if kind == "markdown"
               else parse_text(text, is_html=is_html, result=ParseResult(kind=kind)))
    except Exception:  # the classic readers are a help, never a reason to fail
        return result
    by_value: dict[float, list] = {}
    for e in result.entries:
        v = e.fields.get("headline_tps")
        if v is not None:
            by_value.setdefault(round(float(v), 3), []).append(e)
    for o in old.entries:
        v = o.fields.get("headline_tps")
        if v is None:
            row = _squash(o.context)
            no_tps_table = any("no tok/s column" in w for w in o.warnings)
            if o.fields and not no_tps_table and not any(_squash(e.context) == row for e in result.entries):
                classify_entry(o)
                pin(o, text, [])
                result.entries.append(o)
            continue
        for e in by_value.get(round(float(v), 3), []):
            if e.fields.get("phase") not in (None, "decode") and "test" not in o.fields:
                continue
            for k, val in o.fields.items():
                if k not in _LEND:
                    continue
                cur = e.fields.get(k)
                better = (k in _PREFER_CLASSIC and isinstance(cur, str) and isinstance(val, str)
                          and cur != val and cur in val)
                if cur is None or better:
                    e.fields[k] = val
                    e.selectors.pop(k, None)
                    if k in o.quotes:
                        e.quotes[k] = o.quotes[k]
                    else:
                        e.quotes.pop(k, None)
            pin(e, text, [])
            break
    return result


def _squash(s: str) -> str:
    return "".join(ch for ch in (s or "") if ch.isalnum()).lower()


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


_DATA_FILE = re.compile(r"/([^/?#]+)\.(?:jsonl?|csv|tsv|txt|log|ndjson)(?:[?#].*)?$", re.I)
_STEM_TAIL = re.compile(r"(?i)[_.-](?:online|offline|output|outputs|summary|results?|bench(?:mark)?s?|run\d*|"
                        r"tp[_-]?\d+|pp[_-]?\d+|c\d+|\d{8,})(?=[_.-]|$).*$")
_SIZE = re.compile(r"(?i)\d+(?:[._]\d+)?b\b|\d+(?:[._]\d+)?b(?=[_.-])")


def model_from_url(result: ParseResult, url: str) -> None:
    """A raw result file names its model only in its file name (``llama_3_3_70b_online_output.jsonl``):
    the file name is the page's title, the weakest scope, used only for entries that name no model."""
    m = _DATA_FILE.search(url or "")
    if not m:
        return
    stem = _STEM_TAIL.sub("", m.group(1))
    if not _SIZE.search(stem):
        return
    for e in result.entries:
        if e.fields.get("headline_tps") is not None and not e.fields.get("model"):
            e.fields["model"] = stem
