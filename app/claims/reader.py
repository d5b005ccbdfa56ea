"""The learned reader beside the rules (issue 26): which model proposes, and the proposals of one parse.

``current_net(settings)`` is the newest model in the data folder (``<data_dir>/models/reader-*.json``,
written by ``caveat reader train``), else the one shipped in ``scrapers/learned/model.json``; it is loaded
once per file. ``add_proposals(settings, result, ...)`` puts on ``result.proposals`` the figures that model
is confident about (at least the threshold chosen inside its training folds) and the rules did not read,
each a ``ParsedEntry`` whose ``chosen_by`` names the model and its version; ``store_parse`` stores them
with ``status: "proposed"``. A proposal is a help, never a reason to fail a crawl: any error gives none.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from app.config import Settings
from scrapers import learned

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
