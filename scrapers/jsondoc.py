"""JSON documents: a saved tool result (vLLM ``--save-result``, SGLang ``bench_serving``, llmperf
summaries, llama-server responses with ``timings``, llama-bench ``-o json``/``jsonl``) is read by its tool's
recogniser; anything else by the leaderboard reader (``scrapers.json_parser``). JSON Lines (one
document per line) are read line by line. Nesting deeper than ``MAX_DEPTH`` is refused with a warning
instead of exhausting the stack.
"""

from __future__ import annotations

import json
import re

from scrapers import tools
from scrapers.fields import ParseResult
from scrapers.selectors import pin, pin_in_order

MAX_DEPTH = 200
_OPEN = re.compile(r"[\[{]")


def _depth(text: str) -> int:
    """Maximum nesting depth of brackets outside strings (cheap, linear)."""
    d = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            d += 1
            if d > best:
                best = d
                if best > MAX_DEPTH:
                    return best
        elif ch in "]}":
            d -= 1
    return best


def _docs(text: str, result: ParseResult) -> list[tuple[object, int, int]] | None:
    try:
        return [(json.loads(text), 0, len(text))]
    except RecursionError:
        result.warnings.append("the JSON nests deeper than the reader allows; not read (nothing parsed)")
        return []
    except ValueError:
        pass
    out, pos, bad = [], 0, 0
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s:
            try:
                out.append((json.loads(s), pos, pos + len(line)))
            except (ValueError, RecursionError):
                if s.startswith(("{", "[")):
                    return None
                bad += 1     # a log line between JSON Lines (a tool's stderr): skipped
        pos += len(line)
    if bad:
        result.warnings.append(f"{bad} lines that are not JSON were skipped between the JSON Lines")
    return out or None


def read_json_text(text: str, result: ParseResult) -> ParseResult:
    from scrapers.json_parser import parse_json
    from scrapers.pipeline import finish_drafts

    docs = _docs(text, result)
    if docs is None:
        return parse_json(text, result=result)   # says "not valid JSON"
    if not docs:
        return result
    leftovers = []
    for doc, a, b in docs:
        drafts, _tool = tools.read_json(doc, text[a:b])
        if drafts is None:
            leftovers.append((doc, a, b))
            continue
        for d in drafts:
            d.spans = [(a + x, a + y) for x, y in d.spans] + [(a, b)]
        result.entries += finish_drafts(drafts, text)
    if leftovers:
        if len(docs) == 1:
            sub = parse_json(text, result=ParseResult(kind="json"))
        else:
            sub = ParseResult(kind="json")
            for doc, a, b in leftovers:
                part = parse_json(text[a:b], result=ParseResult(kind="json"))
                for e in part.entries:
                    pin(e, text, [(a, b)])
                sub.entries += part.entries
                sub.warnings += [w for w in part.warnings if w not in sub.warnings]
        from scrapers.pipeline import classify_entry

        for e in sub.entries:
            classify_entry(e)
        pin_in_order([e for e in sub.entries if not e.selectors], text)
        result.entries += sub.entries
        if not result.entries:
            result.warnings += sub.warnings
    return result
