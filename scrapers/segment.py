"""Segment any text document (markdown, plain text, pasted terminal output, an HTML page's text) into
typed blocks with character spans and section paths.

Found, in order: fenced code blocks (their content is segmented again: a log holds tables too), then in
the rest headings, tables of every shape and plain text. Table shapes:

- pipe tables, one row per line or flattened onto one line (``| a | b | | --- | --- | | 1 | 2 |``),
- box-drawing tables (``╭─┬─╮ │ a │ b │ ├─┼─┤ … ╰─┴─╯``), one row per line or flattened, and panels
  (a box with one column: its lines are read as text),
- ``+---+---+`` grids (tabulate, MySQL), whitespace-aligned columns (two or more spaces between cells,
  the columns lining up), CSV and TSV (a header row and rows with the same number of cells).

Every span is bounded: a table is cut at ``MAX_ROWS`` rows and ``MAX_COLS`` columns with a warning, so a
100,000-row table or a 10,000-column row costs linear time and bounded memory.
"""

from __future__ import annotations

import csv
import io
import re

from scrapers.blocks import Block, Cell, Table, make_cell

MAX_ROWS = 5000
MAX_COLS = 64
MAX_HEADING = 120

_FENCE = re.compile(r"(?:^|(?<=\s))(```+|~~~+)([\w+-]*)")
# delimiter rows: cells of hyphens with optional colons ("-:" is one), at least one cell of two or more
_SEP_PIPE = re.compile(r"\|(?=[ \t:|-]*(?:-{2}|:-|-:))(?:[ \t]*:?-+:?[ \t]*\|)+")   # "|:-:|" aligns with one dash
_SEP_LINE = re.compile(r"^(?=[ \t:|-]*(?:-{2}|:-|-:))[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$", re.M)
_HEAD_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_HEAD_INLINE = re.compile(r"(?:(?<=---)|(?<=```)|(?<=\|)|(?<=\.))[ \t]+(#{1,6})[ \t]+(?=[A-Z0-9\[(])")
_HEAD_END = re.compile(r"\s(?:\*\*|\||```|`|-{3,}|#{1,6}\s)|[.:!?](?=\s)|\s{2,}")
# a line cut short by the page's own width ("┏━━━┳━━�", a pasted terminal) ends without its corner
_CUT = r"(?:�|(?=[ \t]*(?:\n|$)))"
_BOX_TOP = re.compile(r"[╭┌┏╔]([─━═┬┳╦ \w…:()/.,'@+&%=-]*?)(?:[╮┐┓╗]|" + _CUT + ")")
_BOX_ROW_SEP = re.compile(r"[├┝┠╞┡╟┣╠][─━═┼╋╬┿╂╇╈╉╊╀╁╃╄╅╆]*(?:[┤┥┨╡┩╢┫╣]|" + _CUT + ")")
_BOX_BOTTOM = re.compile(r"[╰└┗╚][─━═┴┻╩╧╨]*(?:[╯┘┛╝]|" + _CUT + ")")
_BOX_V = "│┃║"
_GRID_BORDER = re.compile(r"^[ \t]*\+(?:[-=]{2,}\+)+[ \t]*$", re.M)


def _line_bounds(text: str, i: int) -> tuple[int, int]:
    a = text.rfind("\n", 0, i) + 1
    b = text.find("\n", i)
    return a, (len(text) if b < 0 else b)


# --- pipe tables ------------------------------------------------------------------------------------

def _split_pipes(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Cell spans of the row ``text[a:b]`` (outer pipes optional); escaped pipes stay in the cell."""
    s = text[a:b]
    lead = len(s) - len(s.lstrip())
    i0 = a + lead
    if text.startswith("|", i0):
        i0 += 1
    j = b
    while j > i0 and text[j - 1] in " \t\r":
        j -= 1
    if j > i0 and text[j - 1] == "|" and text[j - 2:j] != "\\|":
        j -= 1
    out, start = [], i0
    k = i0
    while k < j:
        if text[k] == "|" and text[k - 1] != "\\":
            out.append((start, k))
            start = k + 1
            if len(out) >= MAX_COLS * 4:
                break
        k += 1
    out.append((start, j))
    return out


def _pipe_table_lines(text: str, sep: re.Match, warnings: list[str]) -> Table | None:
    """A pipe table whose separator is a line of its own: header on the line above, rows below."""
    s_a, s_b = sep.start(), sep.end()
    if s_a == 0:
        return None
    h_a, h_b = _line_bounds(text, s_a - 1)
    if "|" not in text[h_a:h_b]:
        return None
    header = [make_cell(text, a, b) for a, b in _split_pipes(text, h_a, h_b)]
    width = text[s_a:s_b].strip().strip("|").count("|") + 1
    if len(header) < 2 or abs(len(header) - width) > 1:
        return None
    rows, pos, end = [], s_b + 1, s_b
    while pos < len(text):
        a, b = _line_bounds(text, pos)
        line = text[a:b]
        if "|" not in line or not line.strip():
            break
        if len(rows) < MAX_ROWS:
            rows.append([make_cell(text, x, y) for x, y in _split_pipes(text, a, b)][:MAX_COLS])
        end, pos = b, b + 1
    if len(rows) >= MAX_ROWS:
        warnings.append(f"a pipe table of more than {MAX_ROWS} rows was cut at {MAX_ROWS} rows")
    return Table("pipe", header[:MAX_COLS], rows, h_a, end)


_PIPE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.M)


def _pipe_tables_without_separator(text: str, a: int, b: int) -> list[Table]:
    """Three or more consecutive lines that open and close with a pipe and split into the same number
    of cells (at least 2), with no alignment row: a pasted table that lost its "|---|" line. The first
    line is the header; the header must name something (a cell with a letter) and the rows hold numbers."""
    out: list[Table] = []
    lines = list(_PIPE_ROW.finditer(text, a, b))
    i = 0
    while i < len(lines):
        run = [lines[i]]
        while i + len(run) < len(lines) and lines[i + len(run)].start() == run[-1].end() + 1:
            run.append(lines[i + len(run)])
        i += len(run)
        if len(run) < 3 or any(_SEP_LINE.match(text, m.start(), m.end()) for m in run):
            continue
        cells = [[make_cell(text, x, y) for x, y in _split_pipes(text, m.start(), m.end())] for m in run]
        width = len(cells[0])
        if width < 2 or any(len(c) != width for c in cells) or width > MAX_COLS:
            continue
        if not any(re.search(r"[A-Za-z]", c.value) for c in cells[0]):
            continue
        if not any(re.search(r"\d", c.value) for row in cells[1:] for c in row[1:]):
            continue
        out.append(Table("pipe", cells[0], cells[1:MAX_ROWS + 1], run[0].start(), run[-1].end()))
    return out


def _pipe_table_flat(text: str, sep: re.Match, warnings: list[str]) -> Table | None:
    """A pipe table flattened onto one line: ``| h1 | h2 | | --- | --- | | a | b | | c | d |``."""
    s_a, s_b = sep.start(), sep.end()
    n = text[s_a:s_b].count("|") - 1
    if n < 1:
        return None
    # header: the n cells before the separator, i.e. back to the (n+1)-th pipe
    k, pipes = s_a - 1, []
    while k >= 0 and text[k] in " \t":
        k -= 1
    lo = max(0, s_a - 4000)
    while k >= lo and len(pipes) < n + 1:
        if text[k] == "|":
            pipes.append(k)
        elif text[k] == "\n":
            break
        k -= 1
    if len(pipes) < n + 1:
        return None
    pipes.reverse()
    header = [make_cell(text, pipes[i] + 1, pipes[i + 1]) for i in range(n)]
    rows, pos, end = [], s_b, s_b
    cut = False
    while True:
        p = pos
        while p < len(text) and text[p] in " \t":
            p += 1
        if p >= len(text) or text[p] != "|":
            break
        cells, q = [], p
        ok = True
        for _ in range(n):
            nxt = text.find("|", q + 1, q + 4000)
            nl = text.find("\n", q + 1, nxt if nxt >= 0 else q + 4000)
            if nxt < 0 or nl >= 0:
                ok = False
                break
            cells.append(make_cell(text, q + 1, nxt))
            q = nxt
        if not ok:
            break
        if _SEP_PIPE.match(text, p) and all(re.fullmatch(r":?-{2,}:?", c.text or "-") for c in cells):
            break  # the separator of a following table
        if len(rows) < MAX_ROWS:
            rows.append(cells)
        else:
            cut = True
        end = pos = q + 1
    if cut:
        warnings.append(f"a pipe table of more than {MAX_ROWS} rows was cut at {MAX_ROWS} rows")
    return Table("pipe", header[:MAX_COLS], [r[:MAX_COLS] for r in rows], pipes[0], end)


# --- box-drawing tables -----------------------------------------------------------------------------

def _box_table(text: str, top: re.Match, warnings: list[str]) -> tuple[Table | None, int]:
    """A box table from its top border; returns (table or None for a panel, end offset)."""
    border = top.group(1)
    n = sum(border.count(c) for c in "┬┳╦") + 1
    title = re.sub(r"[─━═┬┳╦]+", " ", border).strip()
    rows: list[list[Cell]] = []
    pos, end = top.end(), top.end()
    header_done = n == 1
    header: list[Cell] | None = None
    guard = 0
    while pos < len(text) and guard < MAX_ROWS * 4:
        guard += 1
        p = pos
        while p < len(text) and text[p] in " \t\r\n":
            p += 1
        m = _BOX_ROW_SEP.match(text, p)
        if m:
            if header is None and rows:   # a header wrapped over several lines: join it per column
                header = [Cell(" ".join(r[i].text for r in rows if r[i].text).strip(), rows[0][i].start,
                               rows[-1][i].end) for i in range(n)]
                rows = []
            header_done = True
            pos = end = m.end()
            continue
        m = _BOX_BOTTOM.match(text, p)
        if m:
            end = m.end()
            break
        if p >= len(text) or text[p] not in _BOX_V:
            break
        cells, q, ok = [], p, True
        for _ in range(n):
            nxt = -1
            for ch in _BOX_V:
                j = text.find(ch, q + 1, q + 4000)
                if j >= 0 and (nxt < 0 or j < nxt):
                    nxt = j
            if nxt < 0:
                ok = False
                break
            cells.append(make_cell(text, q + 1, nxt))
            q = nxt
        if not ok:
            break
        if len(rows) < MAX_ROWS:
            rows.append(cells)
        pos = end = q + 1
    if n == 1:
        return Table("panel", [Cell(title, top.start(1), top.end(1))], rows, top.start(), end, title=title), end
    if header is None:
        header, rows = (rows[0], rows[1:]) if rows else ([], [])
    if not header_done and not rows:
        return None, end
    return Table("box", header[:MAX_COLS], rows, top.start(), end, title=title), end


# --- grids, aligned columns, CSV --------------------------------------------------------------------

def _grid_table(text: str, a: int, b: int) -> Table | None:
    """``+----+----+`` grids: header row, ``+====+`` or ``+----+`` border, rows."""
    rows, header = [], None
    pos = a
    for line_m in re.finditer(r"[^\n]*", text[a:b]):
        la, lb = a + line_m.start(), a + line_m.end()
        line = text[la:lb].strip()
        if not line or line.startswith("+"):
            continue
        if line.startswith("|"):
            cells = [make_cell(text, x, y) for x, y in _split_pipes(text, la, lb)]
            if header is None:
                header = cells
            elif len(rows) < MAX_ROWS:
                rows.append(cells[:MAX_COLS])
            pos = lb
    if header is None or not rows:
        return None
    return Table("grid", header[:MAX_COLS], rows, a, b)


_WS_SPLIT = re.compile(r"\S+(?: \S+)*")


def columns_table(text: str, a: int, b: int) -> Table | None:
    """Whitespace-aligned columns (two or more spaces between cells) over lines ``text[a:b]``."""
    lines = []
    for m in re.finditer(r"[^\n]+", text[a:b]):
        la = a + m.start()
        cells = [(la + c.start(), la + c.end()) for c in re.finditer(r"\S+(?: \S+)*", m.group(0))]
        if len(cells) >= 2:
            lines.append(cells)
        elif lines:
            break
    if len(lines) < 2 or len({len(x) for x in lines[:MAX_ROWS]}) > 2:
        return None
    n = len(lines[0])
    if n < 2 or any(abs(len(x) - n) > 0 for x in lines[1:3]):
        return None
    header = [make_cell(text, x, y) for x, y in lines[0]]
    rows = [[make_cell(text, x, y) for x, y in ln][:MAX_COLS] for ln in lines[1:MAX_ROWS] if len(ln) == n]
    return Table("columns", header[:MAX_COLS], rows, lines[0][0][0], lines[-1][-1][1]) if rows else None


def delimited_table(text: str, a: int, b: int, delim: str | None = None) -> Table | None:
    """CSV / TSV over ``text[a:b]``: a header and rows with the same number of cells (quotes allowed)."""
    chunk = text[a:b]
    if delim is None:
        first = chunk.lstrip().split("\n", 1)[0]
        delim = "\t" if first.count("\t") >= 1 and first.count("\t") >= first.count(",") else ","
        if first.count(delim) < 1:
            return None
    rows: list[list[Cell]] = []
    header = None
    pos = a
    for m in re.finditer(r"[^\n]*\n?", chunk):
        line = m.group(0).rstrip("\r\n")
        la = a + m.start()
        if not line.strip():
            if header is not None and rows:
                break
            continue
        try:
            vals = next(csv.reader(io.StringIO(line), delimiter=delim))
        except (csv.Error, StopIteration):
            return None
        cells, q = [], la
        for v in vals[:MAX_COLS]:
            i = text.find(v, q, la + len(line)) if v else q
            if i < 0:
                i = q
            cells.append(make_cell(text, i, i + len(v)))
            q = i + len(v)
        if header is None:
            header = cells
            continue
        if len(vals) != len(header) and abs(len(vals) - len(header)) > 1 and not (
                len(header) >= 8 and len(header) // 2 <= len(vals) <= 2 * len(header)):
            break   # (a wide tool CSV keeps rows of an older or newer schema: its reader aligns them)
        if len(rows) < MAX_ROWS:
            rows.append(cells)
        pos = la + len(line)
    if header is None or not rows or len(header) < 2:
        return None
    return Table("csv" if delim == "," else "tsv", header, rows, a, pos)


# --- headings ----------------------------------------------------------------------------------------

def _heading_title(text: str, a: int, limit: int) -> int:
    """End of an inline heading's title: the first sentence/marker break, at most MAX_HEADING chars."""
    stop = min(limit, a + MAX_HEADING)
    m = _HEAD_END.search(text, a + 3, stop)
    return m.start() if m else stop


# --- the segmenter ----------------------------------------------------------------------------------

def _find_tables(text: str, a: int, b: int, warnings: list[str], in_code: bool) -> list[Table]:
    found: list[Table] = []
    chunk_has_pipe = "|" in text[a:b]
    if chunk_has_pipe and "-" in text[a:b]:
        for m in _SEP_LINE.finditer(text, a, b):
            t = _pipe_table_lines(text, m, warnings)
            if t:
                found.append(t)
        for m in _SEP_PIPE.finditer(text, a, b):
            if any(t.start <= m.start() < t.end for t in found):
                continue
            la, _ = _line_bounds(text, m.start())
            if not text[la:m.start()].strip():
                t = _pipe_table_lines(text, m, warnings)
            else:
                t = _pipe_table_flat(text, m, warnings)
            if t and not any(x.start <= t.start < x.end for x in found):
                found.append(t)
    if chunk_has_pipe:
        for t in _pipe_tables_without_separator(text, a, b):
            if not any(x.start <= t.start < x.end or t.start <= x.start < t.end for x in found):
                found.append(t)
    if any(ch in text[a:b] for ch in "╭┌┏╔"):
        pos = a
        while True:
            m = _BOX_TOP.search(text, pos, b)
            if not m:
                break
            t, end = _box_table(text, m, warnings)
            if t:
                found.append(t)
            pos = max(end, m.end())
    if in_code and chunk_has_pipe and "+-" in text[a:b]:
        ms = list(_GRID_BORDER.finditer(text, a, b))
        if len(ms) >= 2:
            t = _grid_table(text, ms[0].start(), ms[-1].end())
            if t and not any(x.start <= t.start < x.end for x in found):
                found.append(t)
    found.sort(key=lambda t: t.start)
    out, last = [], -1
    for t in found:
        if t.start >= last:
            out.append(t)
            last = t.end
    return out


def _code_spans(text: str) -> list[tuple[int, int, int, int, str]]:
    """(start, content start, content end, end, lang) of each fenced code block; an unclosed one runs on."""
    out, pos = [], 0
    while True:
        m = _FENCE.search(text, pos)
        if not m:
            break
        fence = m.group(1)
        close = text.find(fence[:3], m.end())
        c_a = m.end()
        if close < 0:
            out.append((m.start(), c_a, len(text), len(text), m.group(2)))
            break
        end = close + len(fence[:3])
        while end < len(text) and text[end] == fence[0]:
            end += 1
        out.append((m.start(), c_a, close, end, m.group(2)))
        pos = end
    return out


def segment(text: str, warnings: list[str] | None = None) -> list[Block]:
    """Blocks of ``text`` in document order; code blocks carry what was found inside as ``children``."""
    warnings = [] if warnings is None else warnings
    blocks: list[Block] = []
    pos = 0
    for c_start, c_a, c_b, c_end, lang in _code_spans(text):
        if c_start > pos:
            _segment_prose(text, pos, c_start, blocks, warnings)
        code = Block("code", c_start, c_end, text[c_a:c_b], lang=lang.lower())
        code.children = _segment_code(text, c_a, c_b, warnings, lang.lower())
        code.caption, code.caption_start = _caption_before(text, c_start, blocks)
        blocks.append(code)
        pos = c_end
    if pos < len(text):
        _segment_prose(text, pos, len(text), blocks, warnings)
    _assign_sections(blocks)
    return blocks


def _caption_before(text: str, at: int, blocks: list[Block], floor: int = 0) -> tuple[str, int]:
    """The words right before ``at`` on the same line, or the last line of the previous text block."""
    a = max(floor, at - 300)
    for blk in reversed(blocks):
        if blk.kind != "text":
            a = max(a, blk.end)
            break
    seg = text[a:at]
    cut = max(seg.rstrip().rfind("\n\n"), seg.rfind(". "), seg.rfind("```"), seg.rfind("|"), seg.rfind(":** "))
    if cut >= 0:
        seg_a = a + cut + (3 if seg.startswith("```", cut) else 1)
    else:
        seg_a = a
    cap = text[seg_a:at].strip(" \t\r\n*:")
    if not cap:
        lines = [x for x in text[a:at].split("\n") if x.strip()]
        cap = lines[-1].strip(" *:") if lines else ""
    return cap[-200:], seg_a


_KV_LINE = re.compile(r"^\s*[^:=|]{2,60}?\s*[:=]\s+\S", re.M)


def _plain_tables(text: str, a: int, b: int, lang: str) -> list[Table]:
    """CSV/TSV and whitespace-aligned columns in a code block: groups of 3+ consecutive lines with the same
    number of cells (key/value lines such as ``Output token throughput (tok/s):   151.04`` are not columns)."""
    out: list[Table] = []
    groups, cur = [], []
    for m in re.finditer(r"[^\n]*\n?", text[a:b]):
        line = m.group(0)
        if line.strip():
            cur.append((a + m.start(), a + m.start() + len(line.rstrip("\r\n"))))
        elif cur:
            groups.append(cur)
            cur = []
        if not line:
            break
    if cur:
        groups.append(cur)
    for g in groups:
        if len(g) < 3:
            continue
        lines = [text[x:y] for x, y in g]
        if lang in ("csv", "tsv") or all(ln.count(",") >= 2 for ln in lines[:5]) or all("\t" in ln for ln in lines[:5]):
            t = delimited_table(text, g[0][0], g[-1][1], "\t" if lang == "tsv" or "\t" in lines[0] else ",")
            if t and len(t.header) >= 3:
                out.append(t)
            continue
        if sum(1 for ln in lines if _KV_LINE.match(ln)) >= len(lines) / 2 or any("│" in ln or "|" in ln for ln in lines):
            continue
        widths = [len(re.findall(r"\S+(?: \S+)*", ln)) for ln in lines]
        n = widths[0]
        if n >= 3 and sum(1 for w in widths if w == n) >= 0.8 * len(widths) and not re.search(r"\d", lines[0]):
            t = columns_table(text, g[0][0], g[-1][1])
            if t:
                out.append(t)
    return out


def _segment_code(text: str, a: int, b: int, warnings: list[str], lang: str = "") -> list[Block]:
    out: list[Block] = []
    pos = a
    found = _find_tables(text, a, b, warnings, in_code=True)
    if not found:
        found = _plain_tables(text, a, b, lang)
    for t in found:
        if t.start > pos:
            out.append(Block("text", pos, t.start, text[pos:t.start], in_code=True))
        blk = Block("table", t.start, t.end, text[t.start:t.end], table=t, in_code=True)
        blk.caption, blk.caption_start = _caption_before(text, t.start, out, floor=a)
        out.append(blk)
        pos = t.end
    if pos < b:
        out.append(Block("text", pos, b, text[pos:b], in_code=True))
    return out


def _segment_prose(text: str, a: int, b: int, blocks: list[Block], warnings: list[str]) -> None:
    pos = a
    for t in _find_tables(text, a, b, warnings, in_code=False):
        if t.start > pos:
            _text_and_headings(text, pos, t.start, blocks)
        blk = Block("table", t.start, t.end, text[t.start:t.end], table=t)
        blk.caption, blk.caption_start = _caption_before(text, t.start, blocks)
        blocks.append(blk)
        pos = t.end
    if pos < b:
        _text_and_headings(text, pos, b, blocks)


def _text_and_headings(text: str, a: int, b: int, blocks: list[Block]) -> None:
    heads = []
    for m in _HEAD_LINE.finditer(text, a, b):
        title_a = m.start(2)
        line_end = m.end()
        if line_end - title_a > MAX_HEADING:
            line_end = _heading_title(text, title_a, line_end)
        heads.append((m.start(), title_a, line_end, len(m.group(1))))
    for m in _HEAD_INLINE.finditer(text, a, b):
        if any(h[0] <= m.start() < h[2] for h in heads):
            continue
        title_a = m.end()
        heads.append((m.start(1), title_a, _heading_title(text, title_a, b), len(m.group(1))))
    heads.sort()
    pos = a
    for h_a, t_a, t_b, level in heads:
        if h_a < pos:
            continue
        if h_a > pos and text[pos:h_a].strip():
            blocks.append(Block("text", pos, h_a, text[pos:h_a]))
        title = text[t_a:t_b].strip(" #*`")
        blocks.append(Block("heading", h_a, t_b, title, level=level))
        pos = t_b
    if pos < b and text[pos:b].strip():
        blocks.append(Block("text", pos, b, text[pos:b]))


def _assign_sections(blocks: list[Block]) -> None:
    stack: list[tuple[int, str, int]] = []
    for i, blk in enumerate(blocks):
        if blk.kind == "heading":
            while stack and stack[-1][0] >= blk.level:
                stack.pop()
            stack.append((blk.level, blk.text, i))
        blk.section = tuple(s[1] for s in stack)
        blk.section_id = stack[-1][2] if stack else -1
        for ch in blk.children:
            ch.section, ch.section_id = blk.section, blk.section_id


def iter_blocks(blocks: list[Block]):
    """Every block, code blocks followed by what they hold."""
    for blk in blocks:
        yield blk
        yield from blk.children
