"""The paraphrase corpus (tests/data/paraphrases/): notes and prose stating an inflating condition, or a
benign one, in wordings nobody who wrote the rules wrote; labelled before any rule ran on them.

Each item is a small claim page. It is served from 127.0.0.1, crawled, archived, parsed from the archived
bytes, stored and audited like any page, then judged on the entry whose headline is the item's figure:

- inflating (and ``not_measurement``) items are **caught** when that figure does not end as a clean
  quotable number: its working basis is not ``headline`` (a steady state, ``unreviewed`` or none);
- benign items are **quotable** when it does end as a clean ``headline`` number;
- an item whose figure was not read as an entry at all is counted apart (``not read``): it is not a clean
  quotable number, but a reader that drops the figure has not understood the condition either.

    .venv/bin/python tests/paraphrase_corpus.py [dev|holdout|all]    # the tables
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "tests" / "data" / "paraphrases"
TYPES = {"markdown": "text/markdown; charset=utf-8", "json": "application/json", "text": "text/plain; charset=utf-8",
         "html": "text/html; charset=utf-8"}
SUFFIX = {"markdown": ".md", "json": ".json", "text": ".txt", "html": ".html"}


def load(split: str = "all") -> list[dict]:
    names = ["dev", "holdout"] if split == "all" else [split]
    items = []
    for name in names:
        for line in (CORPUS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                items.append({**json.loads(line), "split": name})
    return items


def run(tmp: Path, items: list[dict]) -> dict[str, list[dict]]:
    """Crawl every item's page; returns, per item id, its entries (fields, basis, working number, flags,
    notes reading)."""
    from sqlalchemy import select

    from app.claims.sources import add_source
    from app.config import Settings
    from app.db import Database
    from app.models import Entry, EntryVersion, Flag, Source
    from app.watch.schedule import crawl
    from tests.helpers import LocalServer

    settings = Settings(data_dir=tmp, allow_private_addresses=True, secret_key="k", base_url="http://caveat.test")
    db = Database(settings)
    db.upgrade()
    srv = LocalServer()
    srv.start()
    try:
        with db.session() as s:
            for it in items:
                url = srv.route(f"/{it['id']}/page{SUFFIX[it['kind']]}", it["page"].encode("utf-8"),
                                content_type=TYPES[it["kind"]])
                add_source(s, it["id"], url, None)
        crawl(db, settings)
        out: dict[str, list[dict]] = {it["id"]: [] for it in items}
        with db.Session() as s:
            flags: dict[int, list] = defaultdict(list)
            for eid, rule, sev in s.execute(select(Flag.entry_id, Flag.rule, Flag.severity).where(Flag.active.is_(True))):
                flags[eid].append((rule, sev))
            q = (select(Entry, EntryVersion.fields, Source.name).join(EntryVersion, EntryVersion.id == Entry.current_version_id)
                 .join(Source, Source.id == Entry.source_id).where(Entry.gone.is_(False)).order_by(Entry.id))
            for entry, fields, name in s.execute(q):
                out[name].append({"headline_tps": fields.get("headline_tps"), "basis": entry.basis,
                                  "working": entry.working_tps, "flags": sorted(flags.get(entry.id, [])),
                                  "notes_reading": fields.get("notes_reading")})
        return out
    finally:
        srv.stop()
        db.dispose()


def _same(a, b) -> bool:
    try:
        return abs(float(a) - float(b)) <= 0.005 * abs(float(b))
    except (TypeError, ValueError):
        return False


def judge(item: dict, entries: list[dict]) -> str:
    """``clean`` (the figure is quoted as a clean headline), ``held`` (read, not quoted clean: another
    basis, or its recipe quotes a lower clean figure of another row instead) or ``not_read``. A benign
    item is quotable when its recipe quotes a clean headline."""
    mine = [e for e in entries if _same(e["headline_tps"], item["figure"])]
    if not mine:
        return "not_read"
    if item["expect"] == "benign":
        return "clean" if any(e["basis"] == "headline" for e in mine) else "held"
    return "clean" if any(e["basis"] == "headline" and _same(e["working"], item["figure"]) for e in mine) else "held"


def score(items: list[dict], results: dict[str, list[dict]]) -> dict:
    per_cat: dict[str, Counter] = defaultdict(Counter)
    totals = {"inflating": Counter(), "benign": Counter()}
    misses = []
    for it in items:
        verdict = judge(it, results.get(it["id"], []))
        kind = "benign" if it["expect"] == "benign" else "inflating"
        cat = it["category"].split(":")[0] if kind == "benign" else it["category"]
        per_cat[cat][verdict] += 1
        totals[kind][verdict] += 1
        good = verdict == "clean" if kind == "benign" else verdict != "clean"
        if not good or verdict == "not_read":
            misses.append((it["id"], it["category"], verdict, it["statement"][:90]))
    inf, ben = totals["inflating"], totals["benign"]
    n_inf, n_ben = sum(inf.values()), sum(ben.values())
    return {
        "inflating_caught": (n_inf - inf["clean"]) / n_inf if n_inf else None,
        "inflating_caught_read": inf["held"] / (inf["held"] + inf["clean"]) if inf["held"] + inf["clean"] else None,
        "inflating_not_read": inf["not_read"],
        "benign_quotable": ben["clean"] / n_ben if n_ben else None,
        "benign_not_read": ben["not_read"],
        "n_inflating": n_inf, "n_benign": n_ben,
        "per_category": {k: dict(v) for k, v in sorted(per_cat.items())},
        "misses": misses,
    }


def table(name: str, s: dict) -> str:
    lines = [f"{name}: inflating caught {s['inflating_caught']:.2f} ({s['n_inflating']} statements; "
             f"{s['inflating_caught_read']:.2f} of those read, {s['inflating_not_read']} not read), "
             f"benign quotable {s['benign_quotable']:.2f} ({s['n_benign']}; {s['benign_not_read']} not read)",
             "  category               clean  held  not read"]
    for cat, c in s["per_category"].items():
        lines.append(f"  {cat:<22} {c.get('clean', 0):>5} {c.get('held', 0):>5} {c.get('not_read', 0):>9}")
    return "\n".join(lines)


if __name__ == "__main__":
    import tempfile

    split = sys.argv[1] if len(sys.argv) > 1 else "all"
    items = load(split)
    with tempfile.TemporaryDirectory() as tmp:
        results = run(Path(tmp), items)
    for name in (["dev", "holdout"] if split == "all" else [split]):
        part = [i for i in items if i["split"] == name]
        s = score(part, results)
        print(table(name, s))
        if "-v" in sys.argv:
            for m in s["misses"]:
                print("   miss", *m)
