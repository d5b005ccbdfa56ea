"""Reading an entry's notes clause by clause (issue 25): the seed's intake rule, "read the notes field
first", made mechanical and fail-closed.

The text that describes an entry's run (its ``notes``, its ``label`` or the sentence it was read from,
its ``prompt``, and key-value fields the parser kept aside in ``extra``) is split into clauses. Each
clause is read as one of:

- ``condition``: it states something that inflates the figure (a best-of, a burst, a repeat prompt, an
  aggregate, a replaying proposer, a warm cache, an estimate, a setting that computes less...). It raises
  the rule it names, with the clause quoted as evidence;
- ``benign``: a known harmless statement (run count and spread, the prompt set, the output length, the
  build, engine flags, context length, batch 1, sampling, power, drivers...), or one that only restates
  the entry's own configuration (its model, hardware, engine, figure);
- ``not_understood``: anything else. A headline whose notes hold a clause Caveat did not understand is
  never quoted as clean (basis ``unreviewed``): it goes to the reviewer, who reads the clause.

Conditions are recognised by meaning classes with their wordings in English, Chinese and Japanese
(``lexicon``), not by the phrasings of one page; numbers in a clause are checked (64 tokens or fewer is a
burst, a concurrency above 1 is an aggregate, an acceptance of 0.99 or more is a replaying proposer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.audit.rules.lexicon import (BENIGN, CJK_STOP, SPREAD_CLAUSE, STAT_CLAUSE, CJK_TRIGGERS, CONDITIONS, GENERIC, NEGATION, NUMBER_WORDS, STOPWORDS,
                                     TRIGGERS, Condition)

READ_FIELDS = ("notes", "label", "prompt", "caption", "lead", "around")
# Read for conditions only: the words around a table or a pasted tool output describe the page, and a prompt's
# words are the prompt; what Caveat does not understand there is not held against the figure.
CONTEXT_FIELDS = ("caption", "lead", "prompt", "around")
_NOTES_KEY = re.compile(r"note|remark|comment|condition|detail|descr|caveat|备注|備考|注|说明|説明|コメント", re.I)
MAX_TEXT = 4000  # characters of one field read clause by clause (a pasted log is not notes)
MAX_CLAUSES = 40

_SPLIT = re.compile(
    r"\s*(?:;|\|(?!\|)|•|·|\s[-–—]\s|(?<=[.!?])\s+(?=[A-Z(\"'])|\n+|[。；！？]|[，、](?!\d)|,(?!\d{3}\b)\s*"
    r"|\((?=[^)]{3,})|\)|（|）|:\s+(?=[a-z\u3040-\u9fff]))\s*")
_WORD = re.compile(r"[A-Za-z0-9][\w'’.\-]*[A-Za-z0-9]|[A-Za-z]|[\u3040-\u30ff\u4e00-\u9fff]+")
_IDENT = re.compile(r"\d|[_.]|\w-\w")     # a token with a digit, an underscore, a dot or an inner hyphen: a name
_STAT_WORD = re.compile(r"\b(?:max|min|peak|best|worst|fastest|slowest|highest|lowest)", re.I)
_COMMAND = re.compile(r"^\s*(?:\$|>>>|❯|PS>)\s")
_CJK = re.compile(r"^[\u3040-\u30ff\u4e00-\u9fff]+$")
_NUMBERISH = re.compile(r"^[\d.,:/x×~≈±%+\-]+$")


@dataclass
class Clause:
    field: str
    text: str
    start: int          # offset of the clause in the field's text
    end: int
    reading: str        # condition | benign | not_understood
    rule: str | None = None
    severity: str | None = None
    kind: str | None = None      # the meaning class (best_of, warm_cache, runs, describes, ...)
    detail: str | None = None    # what was understood, in words

    def as_dict(self) -> dict:
        return {"field": self.field, "text": self.text, "start": self.start, "end": self.end,
                "reading": self.reading, "rule": self.rule, "severity": self.severity, "kind": self.kind,
                "detail": self.detail}


def split(text: str) -> list[tuple[int, int]]:
    """Clause spans of ``text``: separators are sentence ends, semicolons, commas (not inside numbers),
    brackets, dashes between spaces, colons before words, and their CJK forms."""
    spans, pos = [], 0
    for m in _SPLIT.finditer(text):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = max(pos, m.end())
    if pos < len(text):
        spans.append((pos, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a] in " \t\"'“”‘’*_`[]{}":
            a += 1
        while b > a and text[b - 1] in " \t\"'“”‘’*_`.[]{}":
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def _negated(text: str, m: re.Match) -> re.Match | None:
    """The negation that takes the hit back ("no prefix caching", "not cherry-picked", "cache disabled")."""
    before = text[max(0, m.start() - 24):m.start()]
    n = NEGATION.search(before)
    if n is not None:
        return n
    after = re.match(r"\s*(?:disabled|off|turned off|not used|none|excluded|discarded)\b", text[m.end():m.end() + 16], re.I)
    # "the lossy alternative trades correctness for +10 tok/s and is deliberately disabled"
    return after or _SWITCHED_OFF.search(text, m.end(), m.end() + 160)


_SWITCHED_OFF = re.compile(r"\b(?:is|was|are|were|stays|stayed|remains|remained|kept)\s+(?:\w+ly\s+)?(?:disabled|turned off|"
                           r"switched off|not used|not enabled|off)\b", re.I)


def _conditions(text: str) -> tuple[list[tuple[Condition, re.Match]], list[tuple[int, int]]]:
    """Every condition stated in ``text`` (one per rule), and the spans of conditions a negation takes back."""
    found: dict[str, tuple[Condition, re.Match]] = {}
    taken_back: list[tuple[int, int]] = []
    for cond in CONDITIONS:
        if cond.rule in found:
            continue
        for m in cond.pattern.finditer(text):
            if cond.negatable and _negated(text, m) is not None:
                taken_back.append((max(0, m.start() - 24), m.end()))
                continue
            if cond.check is not None and not cond.check(m, text):
                continue
            found[cond.rule] = (cond, m)
            break
    return list(found.values()), taken_back


_KNOWN_FIELDS = ("model", "hardware", "engine", "engine_version", "quantization", "test", "spec_method",
                 "headline_label")


def _known_values(fields: dict) -> tuple[str, ...]:
    return _known_split(tuple(v.strip() for name in _KNOWN_FIELDS if isinstance(v := fields.get(name), str) and v.strip()))


@lru_cache(maxsize=4096)
def _known_split(values: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for v in values:
        out.append(v.lower())
        out.extend(p for p in re.split(r"[\s/_\-]+", v.lower()) if len(p) > 1)
    return tuple(sorted(set(out), key=len, reverse=True))


@lru_cache(maxsize=4096)
def _known_pattern(known: tuple[str, ...]) -> re.Pattern | None:
    if not known:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(k) for k in known) + r")(?![\w])")


def _uncovered(text: str, known: list[str], spans: list[tuple[int, int]]) -> tuple[list[str], list[str]]:
    """The words of ``text`` no benign statement, known value or stop word accounts for, and the benign
    kinds that matched. A clause is benign only when nothing is left: that is what fails closed."""
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    low = "".join(chars)
    names = {w.lower() for w in _WORD.findall(low) if w[:1].isupper() and (w[1:2].isupper() or w.lower() not in GENERIC)}
    kinds = []
    for kind, pattern in BENIGN:
        if pattern.search(low):
            kinds.append(kind)
            low = pattern.sub(" ", low)
    low = low.lower()
    pattern = _known_pattern(tuple(known))
    if pattern is not None:
        low = pattern.sub(" ", low)
    left = []
    for w in _WORD.findall(low):
        w = w.strip(".-'’")
        if not w:
            continue
        if _CJK.match(w):
            rest = [ch for ch in w if ch not in CJK_STOP]
            if any(ch in CJK_TRIGGERS for ch in rest) or len(rest) > 2:
                left.append(w)
            continue
        if TRIGGERS.match(w):
            left.append(w)      # a word that often states a condition is never passed as harmless
            continue
        if (w in STOPWORDS or w in GENERIC or w in NUMBER_WORDS or w in names or _NUMBERISH.match(w)
                or _IDENT.search(w)):
            continue
        left.append(w)
    return left, kinds


def read_text(field: str, text: str, fields: dict, known: tuple[str, ...] | None = None, key: str = "",
              conditions_only: bool = False) -> list[Clause]:
    """The clauses of one field's text. ``key``: the name of a key-value field, read with each clause when
    looking for conditions ("gen_tokens: 32") and never itself "not understood". The same text with the same
    configuration reads the same (a table's caption, a notes cell repeated on every row): it is read once."""
    known = _known_values(fields) if known is None else tuple(known)
    head = fields.get("headline_tps")
    head = float(head) if isinstance(head, (int, float)) and not isinstance(head, bool) else None
    text = text[:MAX_TEXT]
    if head is not None and not _STAT_WORD.search(text):
        head = None     # the figure only matters to a "max 31.8" clause: without one, rows share the reading
    got = _read_cached(field, text, (), head, key, conditions_only)
    if known and any(c.reading == "not_understood" for c in got):
        got = _read_cached(field, text, known, head, key, conditions_only)   # the entry's own names may explain it
    return list(got)


@lru_cache(maxsize=20_000)
def _read_cached(field: str, text: str, known: tuple[str, ...], head: float | None, key: str,
                 conditions_only: bool) -> tuple[Clause, ...]:
    out: list[Clause] = []
    for a, b in split(text)[:MAX_CLAUSES]:
        piece = text[a:b]
        if not _WORD.search(piece) and not key:
            continue   # a bare number, a unit, punctuation
        spread = SPREAD_CLAUSE.match(piece)
        if spread and head is not None and abs(float(spread.group("hi").replace(",", "")) - head) > 0.005 * abs(head):
            out.append(Clause(field, piece, a, b, "benign", kind="stats"))   # the runs' spread, the figure not its top
            continue
        stat = STAT_CLAUSE.match(piece)
        if stat and head is not None and abs(float(stat.group("v").replace(",", "")) - head) > 0.005 * abs(head):
            out.append(Clause(field, piece, a, b, "benign", kind="stats"))   # another run's figure, not this one
            continue
        hits, taken_back = _conditions(f"{key}: {piece}" if key else piece)
        if key and not hits and not _WORD.search(piece):
            continue
        if hits:
            for cond, m in hits:
                out.append(Clause(field, piece, a, b, "condition", cond.rule, cond.severity_of(m, piece), cond.kind,
                                  cond.describe(m, piece)))
            continue
        left, kinds = _uncovered(piece, known, taken_back)
        if left and _COMMAND.match(text[max(0, text.rfind("\n", 0, a) + 1):b]):
            left = []       # a command line: its flags and paths state nothing unless a condition matched
        if left and key and len(_WORD.findall(piece)) <= 2 and not _NOTES_KEY.search(key):
            left = []       # a short value of a column or key ("dual", "Host native"): a name, not a statement
        if left and conditions_only:
            out.append(Clause(field, piece, a, b, "context", detail="page context, read for conditions only"))
            continue
        if not left:
            out.append(Clause(field, piece, a, b, "benign", kind=(kinds[0] if kinds else
                                                                 ("negated" if taken_back else "describes"))))
        else:
            out.append(Clause(field, piece, a, b, "not_understood", detail="not understood: " + " ".join(left[:8])))
    return tuple(out)


def read_entry(fields: dict) -> list[Clause]:
    """Every clause of the entry's describing text, in field order; a clause a reviewer has read (the
    entry's ``clause_reviews``, from a ``clause`` correction) takes the reviewer's reading."""
    known = _known_values(fields)
    out: list[Clause] = []
    for name in READ_FIELDS:
        v = fields.get(name)
        if isinstance(v, str) and v.strip():
            out.extend(read_text(name, v, fields, known, conditions_only=name in CONTEXT_FIELDS))
    extra = fields.get("_extra") or fields.get("extra")
    if isinstance(extra, dict):
        for key, v in list(extra.items())[:50]:
            if isinstance(v, bool):
                v = "yes" if v else "no"
            if isinstance(v, (str, int, float)) and str(v).strip():
                out.extend(read_text(f"extra.{key}", str(v), fields, known, key=str(key).replace("_", " ")))
    reviews = fields.get("clause_reviews")
    if isinstance(reviews, dict) and reviews:
        out = [_reviewed(c, reviews.get(" ".join(c.text.split()))) for c in out]
    seen, unique = set(), []
    for c in out:   # the same words in two fields (a label that repeats the notes) are read once
        k = (c.text, c.reading, c.rule)
        if k not in seen:
            seen.add(k)
            unique.append(c)
    return unique


def _reviewed(c: Clause, review) -> Clause:
    """The clause as the reviewer read it: ``benign``, or a ``condition`` raising the rule they named (its
    severity is the rule's, given by the audit; ``kind`` says a reviewer chose it and ``detail`` who)."""
    if not isinstance(review, dict) or review.get("reading") not in ("benign", "condition"):
        return c
    by = review.get("by") or "a reviewer"
    if review["reading"] == "benign":
        return Clause(c.field, c.text, c.start, c.end, "benign", kind="reviewer",
                      detail=f"read as benign by {by} (correction {review.get('correction')})")
    rule = review.get("rule")
    if not isinstance(rule, str) or not rule:
        return c
    return Clause(c.field, c.text, c.start, c.end, "condition", rule, None, "reviewer",
                  f"{c.text} (read as {rule} by {by}, correction {review.get('correction')})")
