"""The learned recall net: figures the rules did not read, proposed with a confidence (issue 26).

A plain library beside the rules (it imports nothing from ``app``). Every number on the page is a
candidate (``scrapers.learned.candidates``: the pipeline's own segmented blocks, so table cells keep their
header, row label and caption); a small LightGBM model (``model.json``, trained by
``scrapers/learned/train.py`` from ``tests/data/real*``) scores whether each is a labelled speed figure
and gives its phase. The model and test of a proposal come from the row (a model column, a ``pp512`` /
``tg128`` header), else from the nearest figure the rules read in the same block, else from the page.

    import scrapers, scrapers.learned
    result = scrapers.parse(body, kind=kind, content_type=ct, url=url)
    for p in scrapers.learned.propose(body, kind=kind, content_type=ct, url=url, entries=result.entries):
        p.figure, p.confidence, p.phase, p.model, p.test, p.evidence, p.selector, p.chosen_by

One thread, no GPU, no network.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402

from scrapers.decode import decode_body  # noqa: E402
from scrapers.fields import ParsedEntry  # noqa: E402
from scrapers.learned.candidates import Candidate, candidates, model_cell, test_name  # noqa: E402
from scrapers.learned.features import matrix  # noqa: E402
from scrapers.meaning import TPS_UNIT  # noqa: E402
from scrapers.pipeline import sole_model  # noqa: E402
from scrapers.selectors import selector  # noqa: E402

VERSION = 1
CHOSEN_BY = f"learned recall net v{VERSION}"
MODEL_PATH = Path(__file__).with_name("model.json")
PHASE_NAMES = ("decode", "prefill", "e2e")
TOLERANCE = 0.005        # a figure is "the same" as another within 0.5 % (the corpus matcher's tolerance)
# A board the rules read row by row (this many figures or more): the net reads only its head, where a column
# of figures the rules missed shows as well as anywhere below it (what keeps parse + store >= 5,000 rows/s)
BOARD_ENTRIES = 200
BOARD_HEAD = 32_000

__all__ = ["Proposal", "propose", "as_entry", "Net", "load", "VERSION", "CHOSEN_BY"]


@dataclass
class Proposal:
    """A figure the rules did not read and the net believes is a labelled speed figure."""
    figure: float
    quote: str                  # the figure as written
    confidence: float           # the net's probability, 0..1
    phase: str                  # decode | prefill | e2e
    phase_confidence: float
    model: str | None
    test: str | None
    evidence: str               # the words of its context: headings | caption | [header] | <row> | line
    selector: dict | None       # TextQuoteSelector + TextPositionSelector into ParseResult.text
    named_by: str               # where model/test came from: row | rules-block | rules-page | page | none
    chosen_by: str = CHOSEN_BY
    fields: dict = field(default_factory=dict)     # entry-shaped: headline_tps, model, test, phase

    def as_dict(self) -> dict:
        return {"figure": self.figure, "quote": self.quote, "confidence": round(self.confidence, 4),
                "phase": self.phase, "phase_confidence": round(self.phase_confidence, 4), "model": self.model,
                "test": self.test, "evidence": self.evidence, "selector": self.selector, "named_by": self.named_by,
                "chosen_by": self.chosen_by}


class Net:
    """The two boosters (figure yes/no, phase of a figure) and the threshold chosen in training.

    ``model_version``: ``v<VERSION>.<12 hex>``, the hex a SHA-256 of both boosters as text, so the same
    training gives the same version wherever it ran, and every proposal names the model that made it."""

    def __init__(self, figure: lgb.Booster, phase: lgb.Booster, threshold: float, meta: dict | None = None,
                 model_version: str | None = None):
        self.figure, self.phase, self.threshold, self.meta = figure, phase, threshold, meta or {}
        self.model_version = model_version or version_of(figure.model_to_string(num_iteration=-1),
                                                         phase.model_to_string(num_iteration=-1))
        self.path: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "Net":
        return cls(lgb.Booster(model_str=d["figure"]), lgb.Booster(model_str=d["phase"]), float(d["threshold"]),
                   d.get("meta"), version_of(d["figure"], d["phase"]))

    def chosen_by(self, p: "Proposal") -> dict:
        """What an entry keeps of the part that chose it (``ParsedEntry.chosen_by``)."""
        return {"part": "learned", "model": CHOSEN_BY, "model_version": self.model_version,
                "confidence": round(p.confidence, 4), "threshold": self.threshold, "phase": p.phase,
                "phase_confidence": round(p.phase_confidence, 4), "named_by": p.named_by}

    def scores(self, X) -> tuple[np.ndarray, np.ndarray]:
        if X.shape[0] == 0:
            return np.zeros(0), np.zeros((0, 3))
        return (self.figure.predict(X, num_threads=1),
                self.phase.predict(X, num_threads=1).reshape(X.shape[0], -1))


def version_of(figure_text: str, phase_text: str) -> str:
    digest = hashlib.sha256(figure_text.encode() + b"\n" + phase_text.encode()).hexdigest()
    return f"v{VERSION}.{digest[:12]}"


_NET: Net | None = None


def load(path: Path | None = None) -> Net:
    """The shipped net (cached), or the one at ``path``."""
    global _NET
    if path is not None:
        net = Net.from_dict(json.loads(Path(path).read_text()))
        net.path = str(path)
        return net
    if _NET is None:
        _NET = Net.from_dict(json.loads(MODEL_PATH.read_text()))
        _NET.path = str(MODEL_PATH)
    return _NET


def as_entry(p: Proposal, net: Net) -> ParsedEntry:
    """A proposal shaped as a parsed entry (stored with status "proposed"): its figure, model, test and
    phase, the figure's quote and selector, the evidence words as its context, and who chose it."""
    fields = {k: v for k, v in p.fields.items() if v is not None}
    return ParsedEntry(fields=fields, quotes={"headline_tps": p.quote},
                       selectors={"headline_tps": p.selector} if p.selector else {}, context=p.evidence,
                       chosen_by=net.chosen_by(p))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * abs(b) if b else a == b


@dataclass
class Page:
    """A page's candidates, their features and what the rules read (computed once; training reuses it)."""
    text: str
    view_text: str
    cands: list[Candidate]
    X: object
    entries: list                      # the rules' entries with a figure
    span_entry: dict                   # candidate index -> rules entry read from that span
    fallback_model: str | None
    page_model: str | None
    scored: list[int] | None = None    # the candidates X has rows for, in order (None: every candidate)


# every way TPS_UNIT can start ("tok", "token", "t/s", "t/sec", "tps"): a plain scan finds the places to try it
_TPS_START = re.compile(r"t(?:ok|/s|ps)", re.I)


def tps_word_count(text: str, cap: int = 50) -> int:
    """How many tok/s words the text holds, up to ``cap``: ``TPS_UNIT.finditer`` counted, tried only where one
    can start (the regex alone tries every alternative at every character)."""
    n, at = 0, 0
    for m in _TPS_START.finditer(text):
        if m.start() < at:
            continue
        hit = TPS_UNIT.match(text, m.start())
        if hit:
            n += 1
            if n >= cap:
                break
            at = hit.end()
    return n


def prepare(body: bytes | str, *, kind: str, content_type: str | None = None, url: str | None = None,
            entries: list | None = None, only_unread: bool = False, segmented: tuple | None = None) -> Page:
    """The page's candidates and features. ``only_unread`` (inference): features only for the candidates
    the rules did not read (the only ones that can be proposed), and on a board the rules read row by row
    (``BOARD_ENTRIES`` figures or more) only the numbers in its first ``BOARD_HEAD`` characters."""
    text = decode_body(body, content_type).text
    figs_n = sum(1 for e in (entries or []) if isinstance(e.fields.get("headline_tps"), (int, float)))
    head = text[:BOARD_HEAD] if only_unread and figs_n >= BOARD_ENTRIES else text
    view, cands = candidates(head, kind, content_type, segmented)
    figs = [e for e in (entries or []) if isinstance(e.fields.get("headline_tps"), (int, float))]
    values = sorted(float(e.fields["headline_tps"]) for e in figs)
    by_start = {}
    for e in figs:
        sel = e.selectors.get("headline_tps")
        if sel and isinstance(sel.get("start"), int):
            by_start.setdefault(sel["start"], e)
    span_entry = {}
    for i, c in enumerate(cands):
        j = bisect.bisect_left(values, c.value * (1 - TOLERANCE) - 1e-9)
        c.rules_read = j < len(values) and values[j] <= c.value * (1 + TOLERANCE) + 1e-9
        e = by_start.get(c.start) if c.start >= 0 else None
        c.rules_span = e is not None
        if e is not None:
            span_entry[i] = e
    rows = {(cands[i].block_start, cands[i].row_index) for i in span_entry if cands[i].kind == "table"}
    blocks = {cands[i].block_start for i in span_entry}
    n = max(1, len(view.text))
    tps_words = tps_word_count(view.text[:400_000])
    page = {"position": lambda c: c.vstart / n, "n_rules": len(figs),
            "rules_row": lambda c: (c.block_start, c.row_index) in rows,
            "rules_block": lambda c: c.block_start in blocks, "tps_words": tps_words}
    scored = [i for i, c in enumerate(cands) if not c.rules_read] if only_unread else None
    X = matrix([cands[i] for i in scored] if scored is not None else cands, page)
    models = Counter(e.fields.get("model") for e in figs if e.fields.get("model"))
    page_model = models.most_common(1)[0][0] if models else None
    return Page(text, view.text, cands, X, figs, span_entry, sole_model(view.text[:200_000]) if not page_model else None,
                page_model, scored)


def name(page: Page, i: int) -> tuple[str | None, str | None, str]:
    """(model, test, where from) for candidate ``i``."""
    c = page.cands[i]
    test = test_name(c)
    m = model_cell(c)
    if m:
        return m, test, "row"
    best, best_d = None, None
    for j, e in page.span_entry.items():
        cj = page.cands[j]
        if cj.block_start != c.block_start:
            continue
        d = abs(cj.vstart - c.vstart) + (0 if cj.row_index == c.row_index and c.kind == "table" else 1)
        if best_d is None or d < best_d:
            best, best_d = (j, e), d
    if best is not None:
        j, e = best
        same_row = page.cands[j].row_index == c.row_index and c.kind == "table"
        return e.fields.get("model"), test or (e.fields.get("test") if same_row else None), "rules-block"
    if page.page_model:
        return page.page_model, test, "rules-page"
    if page.fallback_model:
        return page.fallback_model, test, "page"
    return None, test, "none"


def ranked(page: Page, net: Net, threshold: float | None = None, *, only_unread: bool = True) -> list[Proposal]:
    """The page's proposals above ``threshold`` (default: the net's), one per figure and name."""
    thr = net.threshold if threshold is None else threshold
    if page.X.shape[0] == 0:
        return []
    p_fig = net.figure.predict(page.X, num_threads=1)
    hits = np.nonzero(p_fig >= thr)[0]
    p_phase = np.zeros((len(p_fig), len(PHASE_NAMES)))
    if len(hits):       # the phase only of what is proposed
        p_phase[hits] = net.phase.predict(page.X[hits], num_threads=1).reshape(len(hits), -1)
    return proposals_from(page, p_fig, p_phase, thr, only_unread=only_unread)


def proposals_from(page: Page, p_fig, p_phase, thr: float, *, only_unread: bool = True) -> list[Proposal]:
    best: dict[tuple, Proposal] = {}
    for row in np.nonzero(p_fig >= thr)[0]:
        i = page.scored[row] if page.scored is not None else row
        c = page.cands[i]
        if only_unread and c.rules_read:
            continue
        model, test, how = name(page, i)
        k = int(np.argmax(p_phase[row]))
        key = (round(c.value, 6), (model or "").lower(), test, k)
        conf = float(p_fig[row])
        if key in best and best[key].confidence >= conf:
            continue
        sel = selector(page.text, c.start, c.end) if c.start >= 0 else None
        best[key] = Proposal(
            figure=c.value, quote=c.exact, confidence=conf, phase=PHASE_NAMES[k], phase_confidence=float(p_phase[row][k]),
            model=model, test=test, evidence=c.context_words()[:600], selector=sel, named_by=how,
            fields={"headline_tps": c.value, "model": model, "test": test, "phase": PHASE_NAMES[k]})
    return sorted(best.values(), key=lambda p: (p.selector or {}).get("start", 0))


def propose(body: bytes | str, *, kind: str, content_type: str | None = None, url: str | None = None,
            entries: list | None = None, net: Net | None = None, threshold: float | None = None,
            segmented: tuple | None = None) -> list[Proposal]:
    """Figures on the page that the rules' ``entries`` did not read and the net is confident about (at least
    its threshold, chosen in training), each with its confidence, phase, evidence words and selector."""
    try:
        page = prepare(body, kind=kind, content_type=content_type, url=url, entries=entries, only_unread=True,
                       segmented=segmented)
        return ranked(page, net or load(), threshold)
    except Exception:  # a proposal is a help, never a reason to fail a crawl
        return []
