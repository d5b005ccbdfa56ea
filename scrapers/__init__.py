"""Parsers: pure functions from archived bytes to parsed claims.

A plain library: it never imports ``app`` or ``web``.

    parse(body, kind="html" | "json" | "markdown" | "text", content_type=None, url=None) -> ParseResult
    guess_kind(body, content_type) -> (kind, reason)

``parse`` never raises on bad input: a malformed page gives a ParseResult with warnings and the
entries that could be read (possibly none). See docs/parsers.md.
"""

from __future__ import annotations

import bisect
import json
import re

from scrapers.fields import FIELDS, ParsedEntry, ParseResult

KINDS = ("json", "html", "markdown", "text")
_CHARSET = re.compile(r"charset\s*=\s*\"?([\w.:-]+)", re.I)
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|table|div|article|p)\b", re.I | re.S)
_MD_TABLE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*\|", re.M)
_MD_HEADING = re.compile(r"^#{1,6}\s+\S", re.M)

__all__ = ["parse", "guess_kind", "decode", "ParseResult", "ParsedEntry", "FIELDS", "KINDS"]


def decode(body: bytes | str, content_type: str | None, warnings: list[str] | None = None) -> str:
    """Bytes -> text: the content type's charset, else UTF-8 (with BOM), else cp1252 (with a warning)."""
    if isinstance(body, str):
        return body
    m = _CHARSET.search(content_type or "")
    if m:
        try:
            return body.decode(m.group(1))
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        if warnings is not None:
            warnings.append("the document is not valid UTF-8; read it as Windows-1252")
        return body.decode("cp1252", "replace")


def guess_kind(body: bytes | str, content_type: str | None) -> tuple[str, str]:
    """Guess a source's kind from its content type and its first bytes; the reason says what was seen."""
    raw = body.encode("utf-8", "replace") if isinstance(body, str) else (body or b"")
    ct = (content_type or "").split(";")[0].strip().lower()
    head = raw[:200_000]
    if ct.endswith("json") or ct.endswith("+json"):
        return "json", f"content type {ct}"
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            json.loads(raw.decode("utf-8-sig"))
            return "json", "the body parses as JSON" + (f" (content type {ct})" if ct else "")
        except (ValueError, UnicodeDecodeError):
            pass
    if ct in ("text/html", "application/xhtml+xml") or _HTML_START.match(head):
        seen = f"content type {ct}" if ct else "the body starts like HTML"
        if re.search(rb"<table\b", head, re.I):
            return "html", f"{seen}, with <table> elements"
        text = head.decode("utf-8", "replace")
        if _MD_TABLE.search(text):
            return "html", f"{seen}, with markdown tables in its text"
        return "text", f"{seen}, with no tables: read as an article"
    text = head.decode("utf-8", "replace")
    if ct in ("text/markdown", "text/x-markdown"):
        return "markdown", f"content type {ct}"
    if _MD_TABLE.search(text):
        return "markdown", ("content type " + ct + ", " if ct else "") + "pipe tables in the text"
    if _MD_HEADING.search(text) and "|" in text:
        return "markdown", "markdown headings and table rows"
    return "text", (f"content type {ct}, " if ct else "") + "no tables: read as prose"


_PIN_FIELDS = ("engine_version", "engine_commit", "page_pin")
_PINNED_IMAGE = re.compile(r"@sha256:[0-9a-f]{12,}|:v?\d+\.\d+[\w.+-]*$", re.I)


def _pinned(fields: dict) -> bool:
    return any(fields.get(f) for f in _PIN_FIELDS) or bool(_PINNED_IMAGE.search(str(fields.get("engine_image") or "")))


def _page_pin(result: ParseResult) -> None:
    """Give every entry whose own scopes pin no build the first version, commit, build or image digest
    the page states anywhere (``page_pin``), so a reviewer sees what the page does say about its build."""
    if not result.entries or not result.text:
        return
    if all(_pinned(e.fields) for e in result.entries):
        return
    from scrapers.pagefacts import page_pin
    from scrapers.selectors import selector

    found = page_pin(result.text)
    if not found:
        return
    quote, a, b = found
    for e in result.entries:
        if not _pinned(e.fields):
            e.fields["page_pin"] = quote
            e.quotes["page_pin"] = quote
            e.selectors["page_pin"] = selector(result.text, a, b)


_RAISED_TO = re.compile(r"(?i)\b(?:boost|improv|increas|rais|doubl|tripl|push|brought|bring|got|jump|lift)\w*"
                        r"(?:[ \t]+\S+){0,4}?[ \t]+to[ \t]+(?:about[ \t]+|around[ \t]+)?[~≈]?[ \t]*(?=\d)")
_FIGURE_AT = re.compile(r"\d[\d,]*(?:\.\d+)?")
_UP_FROM = re.compile(r"(?i)\b(?:up|improved|increased|rising|rose)[ \t]+from[ \t]+(?:about[ \t]+|around[ \t]+)?[~≈]?[ \t]*(?=\d)")
_NEAR = 600     # characters: a tuning story told in one paragraph or the next
_STORY_MAX = 2000
_STORY_TEXT = 2_000_000


def _page_engine(result: ParseResult) -> None:
    """A page that only ever names one engine: its figures that name none ran on it."""
    if not result.entries or all(e.fields.get("engine") for e in result.entries):
        return
    from scrapers.columns import ENGINE_RE

    names, first = set(), None
    for m in ENGINE_RE.finditer(result.text[:2_000_000]):
        names.add(re.sub(r"[^0-9a-z]+", "", m.group(1).lower()).replace("server", "").replace("cpp", "cpp"))
        first = first or m
        if len(names) > 1:
            return
    if first is None:
        return
    from scrapers.selectors import selector

    for e in result.entries:
        if not e.fields.get("engine"):
            e.fields["engine"] = first.group(1)
            e.quotes["engine"] = first.group(1)
            e.selectors["engine"] = selector(result.text, first.start(1), first.end(1))


def _superseded(result: ParseResult) -> None:
    """A tuning story ("Initial decode was ~20 tok/s. Enabling CUDAGraph doubled throughput to ~43 tok/s.
    Tuning NCCL further boosted it to ~57 tok/s."): a figure the page says it raised to a later one is
    superseded by it (``superseded_by``), so no working number is taken from it. One pass over the text
    for the raises, then a lookup per raise."""
    text = result.text
    if not text or not 2 <= len(result.entries) <= _STORY_MAX:
        return      # (a table of thousands of rows tells no tuning story)
    placed = []
    by_value: dict[float, list] = {}
    for e in result.entries:
        sel = e.selectors.get("headline_tps")
        v = e.fields.get("headline_tps")
        if sel and isinstance(v, (int, float)):
            placed.append((sel["start"], e))
            by_value.setdefault(round(float(v), 4), []).append(e)
    if len(placed) < 2 or not any(len(str(e.fields.get("label") or "").split()) > 6 for e in result.entries):
        return      # no figure told in a sentence: no story to read
    placed.sort(key=lambda x: x[0])
    starts = [p for p, _e in placed]

    def mark(old, new) -> None:
        v = new.fields["headline_tps"]
        if v > old.fields["headline_tps"] and "superseded_by" not in old.fields and old is not new:
            old.fields["superseded_by"] = v
            old.quotes["superseded_by"] = new.quotes.get("headline_tps") or str(v)
            if "headline_tps" in new.selectors:
                old.selectors["superseded_by"] = new.selectors["headline_tps"]

    chunk = text[:_STORY_TEXT]
    for m in _RAISED_TO.finditer(chunk):       # "... doubled throughput to ~43", "... boosted it to ~57"
        num = _FIGURE_AT.match(chunk, m.end())
        if not num:
            continue
        for later in by_value.get(round(float(num.group(0).replace(",", "")), 4), []):
            lo = bisect.bisect_left(starts, m.end() - _NEAR)
            for _p, earlier in placed[lo:bisect.bisect_left(starts, m.start())]:
                if earlier.fields.get("phase") == later.fields.get("phase"):
                    mark(earlier, later)
    for m in _UP_FROM.finditer(chunk):          # "about 13 tokens/second. Up from ~9 tokens/second"
        i = bisect.bisect_left(starts, m.end())
        if 0 < i < len(placed) and placed[i][0] - m.end() <= 3 and m.start() - placed[i - 1][0] <= 300:
            mark(placed[i][1], placed[i - 1][1])


_FEWER_EXPERTS = re.compile(r"(?i)\bfewer\s+(?:activated\s+|active\s+|routed\s+)?experts\b|\breduc\w*\s+(?:the\s+)?"
                            r"(?:number\s+of\s+)?(?:activated\s+|active\s+)?experts\b|\bexpert[_\s-]used[_\s-]count\b")
_N_EXPERTS = re.compile(r"(?i)\b(\d{1,3})\s+experts\b")


def _fewer_experts(result: ParseResult) -> None:
    """A page that says it runs a mixture-of-experts model with fewer experts than it has ("selects fewer
    experts") and labels figures "6 experts" beside "8 experts": the smaller count is a quality-for-speed
    setting (``lossy_note``)."""
    if not result.entries or not _FEWER_EXPERTS.search(result.text[:2_000_000]):
        return
    counts = {}
    for e in result.entries:
        m = _N_EXPERTS.search(" ".join(str(e.fields.get(k) or "") for k in ("label", "notes", "headline_label")))
        if m:
            counts[id(e)] = (int(m.group(1)), m.group(0))
    if len({n for n, _q in counts.values()}) < 2:
        return
    full = max(n for n, _q in counts.values())
    for e in result.entries:
        n, q = counts.get(id(e), (None, None))
        if n is not None and n < full and "lossy_note" not in e.fields:
            e.fields["lossy_note"] = f"{q} (fewer than the {full} the page also runs)"
            e.quotes["lossy_note"] = q


def parse(body: bytes | str, *, kind: str, content_type: str | None = None, url: str | None = None) -> ParseResult:
    """Parse one archived response. Never raises on bad input; problems are in ``result.warnings``.

    The body is decoded once (``scrapers.decode``); ``result.text`` is that text and every quote and
    selector offset refers to it.
    """
    kind = (kind or "").strip().lower()
    result = ParseResult(kind=kind)
    if kind not in KINDS:
        result.warnings.append(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
        return result
    try:
        from scrapers.decode import decode_body
        from scrapers.document import read

        dec = decode_body(body, content_type)
        result.text, result.encoding = dec.text, dec.encoding
        result.warnings += dec.warnings
        read(dec.text, kind=kind, content_type=content_type, result=result,
             raw=body if isinstance(body, bytes) else None)
        if url:
            from scrapers.document import model_from_url

            model_from_url(result, url)
        _page_pin(result)
        _superseded(result)
        _fewer_experts(result)
        return result
    except Exception as exc:  # a parser bug must not abort a crawl; say what happened instead
        result.entries = []
        result.warnings.append(f"the {kind} parser failed on this document ({type(exc).__name__}: {exc}); "
                               "nothing parsed - please report it with the snapshot id")
        return result
