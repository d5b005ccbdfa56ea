"""Every number on a page, with the words around it: the candidates the learned recall net scores.

A page is read as the rules read it: markdown/text through ``scrapers.segment`` (the pipeline's own typed
blocks, so a table cell keeps its column header, its row label and its table's caption), HTML as the
text the pipeline reads from it (``scrapers.htmltext.html_to_text``: tables as pipe tables, ``<pre>`` as
code), JSON with each number's key path. Each candidate keeps its span in the page's decoded text
(``ParseResult.text``), so a proposal has an exact TextQuoteSelector like the rules' entries.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from scrapers.blocks import Block
from scrapers.columns import classify
from scrapers.document import _is_json, _is_json_lines, _looks_html, uncomment_logs
from scrapers.htmltext import html_to_text
from scrapers.segment import iter_blocks, segment

MAX_CANDIDATES = 20_000          # per page: a huge table is cut (the rules read it anyway)
MAX_TEXT = 1_000_000

# a number as written: 1,234.5 / 87.5 / 12 ; not part of an identifier (Qwen3, pp512, v0.11)
NUM = re.compile(r"(?<![A-Za-z0-9_.\-/])(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:,\d{1,2}(?!\d))?)(?:\.\d+)?(?!\d)(?!\.\d)")
_DEC_COMMA = re.compile(r"^\d+,\d{1,2}$")
TOKEN = re.compile(r"[a-z]+\d*|\d+|[/%×±~]|[\u3040-\u30ff\u3400-\u9fff]")
_TEST = re.compile(r"\b((?:pp|tg) ?\d+(?:\s*\+\s*tg\d+)?(?:\s*@\s*d\d+)?)\b", re.I)


@dataclass
class Candidate:
    value: float
    exact: str
    start: int                  # in the page's decoded text (-1: not found there)
    end: int
    line_left: str = ""         # its line, before and after the number
    line_right: str = ""
    header: str = ""            # table: its column header
    row: str = ""               # table: the row's first cell(s)
    caption: str = ""
    section: str = ""           # the headings above it, innermost last
    keypath: str = ""           # JSON: the keys down to it
    kind: str = "text"          # table | code | text | heading | json
    shape: str = ""             # table shape
    col: int = -1
    n_cols: int = 0
    col_numeric: float = 0.0    # share of the column's cells that hold a number
    row_index: int = -1
    block_start: int = 0        # view offsets of its block (for the model linker)
    block_end: int = 0
    row_cells: list = field(default_factory=list)   # the row's cells (texts) and the header (for naming)
    header_cells: list = field(default_factory=list)
    vstart: int = 0             # offset in the view text
    rules_read: bool = False
    rules_span: bool = False

    def context_words(self) -> str:
        parts = [self.section, self.caption, self.header and f"[{self.header}]", self.row and f"<{self.row}>",
                 self.keypath, (self.line_left + " " + self.exact + " " + self.line_right).strip()]
        return " | ".join(p for p in parts if p)


@dataclass
class View:
    text: str                   # what was segmented
    source: str                 # the page's decoded text (ParseResult.text)
    same: bool                  # view offsets are source offsets
    title: str = ""
    kind: str = "text"


def view_of(source: str, kind: str, content_type: str | None) -> View:
    ct = (content_type or "").lower()
    if kind == "json" or (kind == "text" and source.lstrip()[:1] in "{[" and (_is_json(source) or _is_json_lines(source))):
        return View(source, source, True, kind="json")
    if kind == "html" or (kind == "text" and _looks_html(source)):
        title, text = html_to_text(source[:MAX_TEXT * 4])
        return View(text, source, False, title=title, kind="html")
    if "csv" in ct or "tab-separated" in ct:
        return View(source, source, True, kind="csv")
    return View(uncomment_logs(source[:MAX_TEXT]), source, True, kind=kind)


def _value(s: str) -> float | None:
    try:
        return float(s.replace(",", ".") if _DEC_COMMA.match(s) else s.replace(",", ""))
    except ValueError:
        return None


def _line(text: str, a: int, b: int) -> tuple[str, str]:
    la = text.rfind("\n", 0, a) + 1
    lb = text.find("\n", b)
    lb = len(text) if lb < 0 else lb
    return text[max(la, a - 160):a], text[b:min(lb, b + 160)]


def _json_paths(text: str) -> dict[int, str]:
    """Offset of each number -> the key path above it (a light scan: strings, objects, lists)."""
    out: dict[int, str] = {}
    stack: list[str] = []
    key = ""
    i, n = 0, min(len(text), MAX_TEXT)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            s = text[i + 1:j]
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] == ":":
                key = s
            i = j + 1
            continue
        if ch in "{[":
            stack.append(key if ch == "{" or key else "[]")
            key = ""
        elif ch in "}]":
            if stack:
                stack.pop()
            key = ""
        elif ch == ",":
            key = "" if not stack or stack[-1] != "[]" else key
        elif ch.isdigit() or ch == "-":
            m = NUM.match(text, i + (ch == "-"))
            if m:
                out[m.start()] = ".".join(s for s in stack[-4:] if s and s != "[]") + ("." + key if key else "")
                i = m.end()
                continue
        i += 1
    return out


def candidates(source: str, kind: str, content_type: str | None = None,
               segmented: tuple | None = None) -> tuple[View, list[Candidate]]:
    """``segmented``: the pipeline's ``(text, blocks)`` (``ParseResult.segmented``), used when it segmented
    the very text read here."""
    view = view_of(source, kind, content_type)
    text = view.text
    out: list[Candidate] = []
    taken: set[int] = set()
    blocks: list[Block] = []
    if view.kind == "json":
        paths = _json_paths(text)
        for m in NUM.finditer(text, 0, min(len(text), MAX_TEXT)):
            v = _value(m.group(0))
            if v is None:
                continue
            left, right = _line(text, m.start(), m.end())
            out.append(Candidate(v, m.group(0), m.start(), m.end(), left, right, keypath=paths.get(m.start(), ""),
                                 kind="json", vstart=m.start()))
            if len(out) >= MAX_CANDIDATES:
                break
        return view, out
    try:
        same = segmented is not None and len(segmented[0]) == len(text) and segmented[0] == text
        blocks = [b for b in iter_blocks(segmented[1] if same else segment(text, []))]
    except Exception:  # segmenting never decides a page's fate here: fall back to lines
        blocks = []
    for blk in blocks:
        if blk.kind != "table" or blk.table is None:
            continue
        tbl = blk.table
        header = [c.value for c in tbl.header]
        ncols = max([len(header)] + [len(r) for r in tbl.rows[:50]])
        numeric = [0] * ncols
        for r in tbl.rows:
            for ci, c in enumerate(r[:ncols]):
                if NUM.search(c.value):
                    numeric[ci] += 1
        nrows = max(1, len(tbl.rows))
        for ri, r in enumerate(tbl.rows):
            row_label = " ".join(c.value for c in r[:2] if not NUM.fullmatch(c.value.strip() or "x"))[:120]
            cells = [c.value for c in r]
            for ci, c in enumerate(r):
                for m in NUM.finditer(text, c.start, c.end):
                    if m.start() in taken:
                        continue
                    v = _value(m.group(0))
                    if v is None:
                        continue
                    taken.add(m.start())
                    left, right = text[c.start:m.start()], text[m.end():c.end]
                    out.append(Candidate(
                        v, m.group(0), m.start(), m.end(), left, right,
                        header=header[ci] if ci < len(header) else "", row=row_label, caption=blk.caption[:200],
                        section=" / ".join(blk.section[-3:])[:200], kind="table", shape=tbl.shape, col=ci,
                        n_cols=ncols, col_numeric=numeric[ci] / nrows if ci < ncols else 0.0, row_index=ri,
                        block_start=blk.start, block_end=blk.end, row_cells=cells, header_cells=header,
                        vstart=m.start()))
                    if len(out) >= MAX_CANDIDATES:
                        break
    # everything else: numbers in prose, code and headings, with their innermost block
    flat = sorted((b for b in blocks if b.kind != "table"), key=lambda b: (b.start, -b.end))
    starts = [b.start for b in flat]
    for m in NUM.finditer(text, 0, min(len(text), MAX_TEXT)):
        if m.start() in taken or len(out) >= MAX_CANDIDATES:
            continue
        v = _value(m.group(0))
        if v is None:
            continue
        i = bisect.bisect_right(starts, m.start()) - 1
        blk = None
        while i >= 0:
            if flat[i].start <= m.start() < flat[i].end:
                blk = flat[i] if blk is None or flat[i].in_code or flat[i].kind != "code" else blk
                if blk.kind != "code":
                    break
            i -= 1
        left, right = _line(text, m.start(), m.end())
        kindb = "text"
        if blk is not None:
            kindb = "code" if (blk.kind == "code" or blk.in_code) else blk.kind
        out.append(Candidate(
            v, m.group(0), m.start(), m.end(), left, right,
            caption=(blk.caption[:200] if blk else ""), section=(" / ".join(blk.section[-3:])[:200] if blk else ""),
            kind=kindb, block_start=blk.start if blk else 0, block_end=blk.end if blk else len(text), vstart=m.start()))
    out.sort(key=lambda c: c.vstart)
    if not view.same:
        _map_to_source(view, out)
    return view, out


def _map_to_source(view: View, cands: list[Candidate]) -> None:
    """HTML: find each number in the page source, in document order (the view keeps the page's order)."""
    src = view.source
    at = 0
    for c in cands:
        i = _find_number(src, c.exact, at)
        if i < 0:
            i = _find_number(src, c.exact, 0)
        if i < 0:
            c.start = c.end = -1
            continue
        c.start, c.end = i, i + len(c.exact)
        at = c.end


def _find_number(src: str, exact: str, at: int) -> int:
    while True:
        i = src.find(exact, at)
        if i < 0:
            return -1
        before = src[i - 1] if i else " "
        after = src[i + len(exact)] if i + len(exact) < len(src) else " "
        if not (before.isalnum() or before in "._-/") and not (after.isdigit() or (after == "." and src[i + len(exact) + 1:i + len(exact) + 2].isdigit())):
            return i
        at = i + 1


def test_name(c: Candidate) -> str | None:
    """A llama-bench style test named by the number's column header, its row label or its line."""
    for s in (c.header, c.row, c.line_left[-40:], c.line_right[:20]):
        m = _TEST.search(s or "")
        if m:
            return m.group(1)
    return None


def model_cell(c: Candidate) -> str | None:
    """The row's model, when a column of the table is headed as the model."""
    if c.kind != "table":
        return None
    for ci, h in enumerate(c.header_cells):
        if ci != c.col and ci < len(c.row_cells) and c.row_cells[ci] and classify(h).field == "model":
            return c.row_cells[ci]
    return None
