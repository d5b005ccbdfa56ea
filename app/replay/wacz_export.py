"""``export_wacz(session, settings, out, source=None, since=None)``: a WACZ of selected snapshots.

The selected records (each response or revisit, its request record, and the original a revisit
points at) are copied gzip member by gzip member, byte for byte, into one new WARC inside the
package, so every WARC digest still verifies there. Each record's digests are checked before it is
copied; a record that fails is left out and reported. ``pages/pages.jsonl`` gets one line per
top-level page (``is_page``: 2xx document responses, not redirects, images or errors) with its citation
id, URL, time, title and page text. A `caveat measure` measurement whose exchanges are all exported
brings its ``metadata`` evidence record along (not indexed: it is no page to replay). The CDXJ carries Caveat's 17-digit timestamps, so a viewer asked
for a capture's own timestamp opens that capture. Withdrawn and restricted captures are left out.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import __version__
from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Measurement, Snapshot, Source
from app.storage.snapshots import load_record
from archive import textquote
from archive.cdxj import CdxjRow
from app.storage.objects import archive_store, read_stored
from archive.reader import RecordUnreadable
from archive.timestamps import ts17
from archive.wacz import Page, write_wacz
from archive.warcwriter import WarcWriter
from archive import signing
import lxml.html

TEXT_KINDS = ("html", "json", "markdown", "text")


@dataclass
class ExportReport:
    path: str
    snapshots: int = 0
    records: int = 0
    pages: int = 0
    measurements: int = 0
    skipped: list[str] = field(default_factory=list)  # what should have gone in and could not (exit 1)
    notes: list[str] = field(default_factory=list)    # left out by the selection itself


def parse_since(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"--since {text!r} is not a date; use YYYY-MM-DD or an ISO date-time") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def _select(session: Session, source: str | None, since: datetime | None) -> list[Snapshot]:
    q = select(Snapshot).where(Snapshot.access == "public").order_by(Snapshot.timestamp, Snapshot.id)
    if source:
        src = session.scalars(select(Source).where(Source.name == source)).first()
        if src is None:
            raise NotFound(f"no source named {source!r}; `caveat source list` lists them")
        q = q.where(Snapshot.source_id == src.id)
    if since:
        q = q.where(Snapshot.timestamp >= ts17(since))
    return list(session.scalars(q))


def signing_key_path(settings: Settings) -> Path:
    return settings.data_dir / "signing_key.pem"


def wacz_signer(settings: Settings):
    """Sign with the installation's key (made by ``caveat init``; made here if an older data folder has none)."""
    path = signing_key_path(settings)
    signing.ensure_key(path)
    key = signing.load_key(path)
    return lambda package_hash: signing.wacz_signed_data(key, package_hash, software=f"Caveat {__version__}",
                                                         version=__version__)


def _title(body: bytes, kind: str) -> str | None:
    if kind != "html":
        return None

    try:
        t = lxml.html.document_fromstring(body).findtext(".//title")
    except Exception:  # noqa: BLE001 - a title is optional
        return None
    return " ".join(t.split()) if t else None


def export_wacz(session: Session, settings: Settings, out: Path | str, *, source: str | None = None,
                since: str | None = None) -> ExportReport:
    out = Path(out)
    snaps = _select(session, source, parse_since(since))
    if not snaps:
        raise NotFound("nothing to export: no snapshots match" + (f" source {source!r}" if source else "")
                       + (f" since {since}" if since else "") + ". Capture something first: caveat capture URL")
    report = ExportReport(str(out))
    wanted: dict[int, Snapshot] = {}
    kept = []
    for s in snaps:
        chain, ref = [], s.refers_to
        while ref is not None and ref.id not in wanted and ref not in chain:
            chain.append(ref)
            ref = ref.refers_to
        if any((r.access or "public") != "public" for r in chain):  # its bytes are a withdrawn capture's
            report.skipped.append(f"{s.citation_id} {s.url}: a revisit of a withdrawn or restricted capture; left out")
            continue
        kept.append(s)
        wanted[s.id] = s
        for r in chain:
            wanted[r.id] = r
    snaps = kept
    selected = {s.id for s in snaps}
    measured = _measurements(session, {s.citation_id for s in snaps}, report)
    rows, pages = [], []
    store = archive_store(settings)
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as tmp:
        name = f"caveat-export-{ts17(datetime.now(timezone.utc))}.warc.gz"
        warc = Path(tmp) / name
        WarcWriter(warc, software=f"Caveat/{__version__}", info=[("description", "Caveat WACZ export")]).close()
        with open(warc, "ab") as f:
            pos = f.tell()
            for s in sorted(wanted.values(), key=lambda r: (r.timestamp, r.id)):
                if not _verified(settings, s.warc_file, s.offset, s.length, f"{s.citation_id} {s.url}", report):
                    continue
                members = [(s.offset, s.length, True)]
                if s.request_offset is not None and s.request_length:
                    members.append((s.request_offset, s.request_length, False))
                for off, length, main in members:  # by range: from the spool, or from the bucket's object
                    data = store.read_range(s.warc_file, off, length)
                    if main:
                        rows.append(CdxjRow(
                            urlkey=s.surt, timestamp=s.timestamp, url=s.url,  # 17 digits, as Caveat cites
                            mime="warc/revisit" if s.record_type == "revisit" else (s.mime or "unk"),
                            status=s.status, digest=s.payload_digest, length=length, offset=pos, filename=name))
                    f.write(data)
                    pos += length
                    report.records += 1
                if s.id in selected:
                    report.snapshots += 1
                    if is_page(s):
                        pages.append(_page(settings, session, s))
            for m in measured:  # each measurement's evidence record, after the exchanges it names
                if not _verified(settings, m.warc_file, m.offset, m.length, f"measurement {m.citation_id}", report):
                    continue
                f.write(store.read_range(m.warc_file, m.offset, m.length))
                pos += m.length
                report.records += 1
                report.measurements += 1
            f.flush()
        pages = [p for p in pages if p is not None]
        report.pages = len(pages)
        write_wacz(out, warcs=[warc], cdxj_lines=[r.line() for r in rows], pages=pages,
                   title=f"Caveat export{' of ' + source if source else ''}",
                   description=f"{report.snapshots} snapshots exported by Caveat {__version__}",
                   software=f"Caveat {__version__}", main_page=pages[0] if pages else None,
                   sign=wacz_signer(settings))
    return report


def _verified(settings: Settings, name: str, offset: int, length: int, what: str, report: ExportReport) -> bool:
    """Whether the record at ``offset`` reads and its digests verify; when not, why goes to the report."""
    try:
        rec = read_stored(settings, name, offset, length)
    except RecordUnreadable as exc:
        report.skipped.append(f"{what}: {exc.kind}: {exc.message}")
        return False
    if rec.problems:
        report.skipped.append(f"{what}: fixity failed: {'; '.join(rec.problems)}")
        return False
    return True


def _measurements(session: Session, exported: set[str], report: ExportReport) -> list[Measurement]:
    """`caveat measure` measurements whose every exchange is exported: their ``metadata`` records go
    into the package too, so `caveat import-warc` of it restores them. One with an exchange left out
    (another source asked for, a date before --since, a withdrawn capture) is named in the report."""
    out = []
    q = select(Measurement).where(Measurement.origin == "measure", Measurement.record_id.is_not(None),
                                  Measurement.offset.is_not(None)).order_by(Measurement.id)
    for m in session.scalars(q):
        cids = [r.get("snapshot_citation_id") for r in (m.result or {}).get("requests") or []]
        have = [c for c in cids if c in exported]
        if cids and len(have) == len(cids):
            out.append(m)
        elif have:
            report.notes.append(f"measurement {m.citation_id}: {len(cids) - len(have)} of its {len(cids)} "
                                  "exchanges are not in this export, so its evidence record is left out")
    return out


PAGE_MIMES = ("text/html", "application/xhtml+xml", "application/json", "text/plain", "text/markdown",
              "text/x-markdown", "text/csv")


def is_page(s: Snapshot) -> bool:
    """A top-level page for pages.jsonl: a successful (2xx) final response of a document type, the page a
    source names; not a redirect hop, an image or other subresource, an error page or a revisit's original
    that was not itself selected."""
    mime = (s.mime or "").split(";")[0].strip().lower()
    return s.status is not None and 200 <= s.status < 300 and not s.redirect_to and mime in PAGE_MIMES


def _page(settings: Settings, session: Session, s: Snapshot) -> Page | None:
    stored = load_record(settings, s, session=session)
    ctype = stored.content_type or s.mime
    kind = textquote.text_kind(ctype, stored.body)
    text = None
    if stored.fixity == "ok" and kind in TEXT_KINDS and (s.mime or "").split("/")[0] in ("text", "application", ""):
        text = textquote.page_text(stored.body, ctype)
    return Page(url=s.url, ts=s.timestamp, title=_title(stored.body, kind), text=text, id=s.citation_id,
                status=s.status, mime=s.mime)
