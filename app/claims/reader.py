"""The learned reader beside the rules (issue 26): which model proposes, the proposals of one parse, and
retraining it (``caveat reader train``).

``current_net(settings)`` is the newest model in the data folder (``<data_dir>/models/reader-*.json``,
written by ``caveat reader train``), else the one shipped in ``scrapers/learned/model.json``; it is loaded
once per file. ``add_proposals(settings, result, ...)`` puts on ``result.proposals`` the figures that model
is confident about (at least the threshold chosen inside its training folds) and the rules did not read,
each a ``ParsedEntry`` whose ``chosen_by`` names the model and its version; ``store_parse`` stores them
with ``status: "proposed"``. A proposal is a help, never a reason to fail a crawl: any error gives none.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Callable

from app.config import Settings
from app.errors import BadRequest
from scrapers import learned
from scrapers.learned import train as training

MODEL_GLOB = "reader-*.json"
_NAME = re.compile(r"^reader-(\d{8}T\d{6}Z)-[0-9a-f]{12}\.json$")
_cache: dict[tuple[str, float], learned.Net] = {}
_lock = threading.Lock()


def data_models(settings: Settings) -> list[Path]:
    """The trained models in the data folder, oldest first (their names sort by the time they were written)."""
    folder = settings.models_dir
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(MODEL_GLOB) if _NAME.match(p.name))


def model_path(settings: Settings) -> Path:
    found = data_models(settings)
    return found[-1] if found else learned.MODEL_PATH


def current_net(settings: Settings) -> learned.Net:
    """The model proposals come from (cached per file and modification time)."""
    path = model_path(settings)
    if path == learned.MODEL_PATH:
        return learned.load()
    key = (str(path), path.stat().st_mtime)
    with _lock:
        net = _cache.get(key)
    if net is None:
        net = learned.load(path)
        with _lock:
            _cache.clear()
            _cache[key] = net
    return net


def add_proposals(settings: Settings, result, *, kind: str, content_type: str | None = None,
                  url: str | None = None) -> list:
    """Set ``result.proposals`` (and return them): the learned reader's proposals for this parse, none when
    ``CAVEAT_LEARNED_PROPOSALS`` is off or the page gave nothing to read."""
    result.proposals = []
    if not settings.learned_proposals or not result.text:
        return result.proposals
    try:
        net = current_net(settings)
        found = learned.propose(result.text, kind=kind, content_type=content_type, url=url, entries=result.entries,
                                net=net, segmented=result.segmented)
    except Exception:  # noqa: BLE001 (a proposal is a help, never a reason to fail a crawl)
        return result.proposals
    result.proposals = [learned.as_entry(p, net) for p in found if p.selector]
    return result.proposals


@dataclass
class Trained:
    path: Path
    model_version: str
    threshold: float
    pages: int
    sets: list[str]
    seconds: float


def _from_sets(dirs: list[Path]) -> list[tuple[Path, str]]:
    out, names = [], set()
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise BadRequest(f"--from {d}: no such folder; give a folder written by `caveat corpus export DIR` "
                             "(labels/<page>.json beside pages/<page>)")
        name = f"from-{d.resolve().name}"
        while name in names:
            name += "+"
        names.add(name)
        out.append((d, name))
    return out


def train_model(settings: Settings, from_dirs: list[Path] | None = None, out: Path | None = None,
                progress: Callable[[str], None] | None = None) -> Trained:
    """Train the learned reader on the bundled labelled sets (``tests/data/real*``) and the folders
    ``from_dirs`` (the same format: what ``caveat corpus export`` writes): fixed seed, one thread, the
    threshold chosen inside the training folds. Writes ``<data_dir>/models/reader-<UTC time>-<12 hex>.json``
    (or ``out``), which the next crawl or reparse uses. BadRequest (nothing written) for a folder that is not
    a labelled set or a corpus with no page."""
    say = progress or (lambda _m: None)
    t0 = time.monotonic()
    extra = _from_sets(list(from_dirs or []))
    pages = []
    for d, name in extra:          # checked first: a bad folder fails before minutes of work
        try:
            pages += training.load_set(d, training.exported(d), name)
        except ValueError as exc:
            raise BadRequest(f"--from {d}: {exc}") from None
        say(f"loaded {d}: {len(pages)} pages so far")
    bundled = training.labelled_sets()
    if not bundled and not pages:
        raise BadRequest("no labelled pages: the bundled sets (tests/data/real*/) are not here and no --from folder "
                         "was given")
    say(f"reading {len(bundled)} bundled labelled sets (tests/data/real*/) with the rules")
    pages = training.load_corpus(log=say) + pages
    say(f"{len(pages)} pages, {sum(len(p.page.cands) for p in pages):,} candidate numbers, "
        f"{int(sum(p.y.sum() for p in pages)):,} labelled figures; training (one thread, seed {training.SEED})")
    net = training.fit(pages, log=say)
    text = training.dumps(net)
    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        out = settings.models_dir / f"reader-{stamp}-{net.model_version.rsplit('.', 1)[-1]}.json"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out)
    say(f"wrote {out} (model {net.model_version}, threshold {net.threshold})")
    return Trained(out, net.model_version, net.threshold, len(pages), sorted({p.set_name for p in pages}),
                   time.monotonic() - t0)
