"""Raw markdown: GitHub discussions, READMEs, model cards, llama-bench output.

Reads every pipe table. Layouts understood:
- a leaderboard table (one entry per row; columns recognised by ``scrapers.columns``);
- llama-bench output (``| model | size | params | backend | ngl | test | t/s |``), one entry per row, with
  the ``build: <commit> (<number>)`` line after the table as ``engine_commit`` / ``engine_version``;
- discussion tables with one tok/s column per test (``pp512 t/s | tg128 t/s``): one entry per test;
- a concurrency sweep (``| concurrency | 1 | 2 | ... |``): one entry per cell, ``concurrency`` set;
- metric rows (``| Decode C1 / C8 (tok/s) | 87.5 / 308.1 |``): one entry per listed concurrency/context.
Rows that name no model or hardware inherit them from the page title and opening paragraph.
"""

from __future__ import annotations

import re

from scrapers import pagefacts, phrases
from scrapers.columns import classify
from scrapers.fields import ParsedEntry, ParseResult
from scrapers.numbers import read, parse_tokens
from scrapers.rows import EMPTY, Builder, clean, is_entry_table, looks_llama_bench, table_entries

_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BUILD = re.compile(r"^\s*build:\s*([0-9a-f]{7,40})\s*\((\d+)\)")
_CONC_HEAD = re.compile(r"^(?:c(?:onc(?:urrency)?)?|batch|ctx\s*\\\s*conc|users|streams)$", re.I)
_C_ITEM = re.compile(r"^C(\d+)$", re.I)
_LABEL_LIST = re.compile(r"((?:C\d+|\d+k)(?:\s*/\s*(?:C\d+|\d+k))+)", re.I)


def split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip() for c in _CELL_SPLIT.split(s)]


def find_tables(lines: list[str]):
    """Yield (start, header, rows, end) for each pipe table."""
    i, n = 0, len(lines)
    while i < n - 1:
        if "|" in lines[i] and _SEP.match(lines[i + 1]) and "-" in lines[i + 1]:
            header = split_row(lines[i])
            rows, j = [], i + 2
            while j < n and "|" in lines[j] and lines[j].strip():
                rows.append(split_row(lines[j]))
                j += 1
            yield i, header, rows, j
            i = j
        else:
            i += 1


def _dedupe(entries: list[ParsedEntry]) -> list[ParsedEntry]:
    seen, out = set(), []
    for e in entries:
        key = tuple(sorted((k, repr(v)) for k, v in e.fields.items() if k not in ("label", "headline_label", "notes", "test")))
        if key in seen:
            continue
        seen.add(key)
        out.append(e)
    return out


def _sweep(header, rows, caption, page) -> list[ParsedEntry] | None:
    """``| concurrency | 1 | 2 | ... |`` (or ``| | C1 | C2 |``): one entry per cell."""
    concs = []
    for h in header[1:]:
        t = clean(h)
        m = _C_ITEM.match(t)
        v = int(m.group(1)) if m else (int(t) if t.isdigit() else None)
        if v is None:
            return None
        concs.append((v, t))
    if not concs or not (_CONC_HEAD.match(clean(header[0])) or all(_C_ITEM.match(clean(h)) for h in header[1:])):
        return None
    out = []
    for row in rows:
        label = clean(row[0]) if row else ""
        for (c, ctext), cell in zip(concs, row[1:]):
            b = Builder(context=f"{caption} {label} | concurrency {ctext} | {clean(cell)}".strip())
            r = read(clean(cell))
            if r.form not in ("one", "pm"):
                if clean(cell).lower() not in EMPTY:
                    b.warn(ctext, clean(cell), "a tok/s figure")
                    out.append(b.entry)
                continue
            b.put("headline_tps", r.value, clean(cell))
            b.put("headline_label", caption or clean(header[0]), None)
            b.put("concurrency", c, ctext)
            b.put("label", label, label)
            for f, (v, q) in page.items():
                b.put(f, v, q)
            out.append(b.finish())
    return out


def _metric_rows(header, rows, page) -> list[ParsedEntry]:
    """Rows whose first cell is a tok/s metric ("Decode C1 / C8 (tok/s)"), values per column."""
    out = []
    for row in rows:
        if not row:
            continue
        col = classify(row[0])
        if col.role != "tps":
            continue
        m = _LABEL_LIST.search(row[0])
        labels = [x.strip() for x in m.group(1).split("/")] if m else [None]
        for j, cell in enumerate(row[1:], start=1):
            items = [x.strip(" *`") for x in clean(cell).split(" / ")] if len(labels) > 1 else [clean(cell)]
            if len(items) != len(labels):
                continue
            for lab, item in zip(labels, items):
                r = read(item)
                if r.form not in ("one", "pm"):
                    continue
                b = Builder(context=" | ".join(clean(c) for c in row))
                b.put("headline_tps", r.value, item)
                b.put("headline_label", clean(row[0]), None)
                if col.phase:
                    b.put("test", col.phase, None)
                if lab and lab[0] in "Cc":
                    b.put("concurrency", int(lab[1:]), lab)
                elif lab:
                    b.put("context_length", parse_tokens(lab), lab)
                if j < len(header) and clean(header[j]):
                    b.put("label", clean(header[j]), clean(header[j]))
                for f, (v, q) in page.items():
                    b.put(f, v, q)
                out.append(b.finish())
    return out


def parse_markdown(text: str, *, result: ParseResult | None = None) -> ParseResult:
    result = result or ParseResult(kind="markdown")
    lines = text.splitlines()
    title, intro, heading = "", [], ""
    for ln in lines:
        h = _HEADING.match(ln)
        if h and not title:
            title = h.group(2)
            continue
        if "|" in ln or (h and title):
            break
        if ln.strip():
            intro.append(ln.strip())
    page = pagefacts.facts(title, " ".join(intro)[:2000])
    for ln in lines:   # the image the card names before its first table (often in a code block)
        if "|" in ln and ln.strip().startswith("|"):
            break
        if "image" not in page and "@sha256:" in ln or (":" in ln and "/" in ln and ln.strip().count(" ") == 0):
            found = phrases.extract(ln.strip())
            if "engine_image" in found:
                page.setdefault("engine_image", found["engine_image"])
                break
    entries: list[ParsedEntry] = []
    prev_end = 0
    for start, header, rows, end in find_tables(lines):
        caption = ""
        for ln in lines[prev_end:start]:
            h = _HEADING.match(ln)
            if h:
                heading = h.group(2)
            elif ln.strip():
                caption = ln.strip()
        prev_end = end
        swept = _sweep(header, rows, caption if "tok" in caption.lower() else heading, page)
        if swept is not None:
            entries += swept
            continue
        metric = _metric_rows(header, rows, page)
        if metric:
            entries += metric
            continue
        if not is_entry_table(header):
            continue
        lb = looks_llama_bench(header)
        defaults = {}
        for ln in lines[end:end + 4]:
            m = _BUILD.match(ln)
            if m:
                defaults = {"engine_commit": (m.group(1), m.group(1)), "engine_version": (m.group(2), m.group(2))}
                break
        known = {classify(h).field for h in header}
        if not known & {"model", "hardware"}:
            defaults.update({k: v for k, v in page.items() if k not in defaults})
        entries += table_entries(header, rows, defaults=defaults, llama_bench=lb, warnings=result.warnings)
    result.entries += _dedupe(entries)
    if not result.entries:
        result.warnings.append("no table of tok/s figures found in this markdown; nothing parsed "
                               "(if the page is prose, add the source with --kind text)")
    return result
