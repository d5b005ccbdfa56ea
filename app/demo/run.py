"""The offline demo: serve the bundled sample leaderboards on 127.0.0.1, crawl them into a data folder,
and make a reviewer account, so ``caveat demo`` shows all of Caveat working without the network.

The sample pages live in ``app/demo_data`` (one per kind: html, json, markdown, text), listed in
``app/demo_data/sources.json``. The html page carries a GLM-5.3-Flash draft-width ladder modelled on
the seed report (1,004.9 tok/s headline, stated steady state 373-391 tok/s).
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sqlalchemy import select

from app.config import Settings
from app.db import Database
from app.errors import BadRequest
from app.models import Entry, Source, User
from app.accounts import auth
from app.crawl.workflow import SourceReport
from app.watch.schedule import crawl
from app.claims.sources import add_source

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo_data"
DEMO_USER = "demo-reviewer"
FEATURED_MODEL = "GLM-5.3-Flash"


def demo_sources() -> list[dict]:
    return json.loads((DEMO_DIR / "sources.json").read_text(encoding="utf-8"))["sources"]


class DemoSite:
    """A tiny threaded HTTP server on 127.0.0.1 serving the bundled pages at their demo paths."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        routes = {s["path"]: (DEMO_DIR / s["file"], s["content_type"]) for s in demo_sources()}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the demo's terminal readable
                pass

            def do_GET(self):  # noqa: N802
                found = routes.get(self.path.split("?")[0])
                body, ctype, status = b"not found\n", "text/plain", 404
                if found is not None:
                    body, ctype, status = found[0].read_bytes(), found[1], 200
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="caveat-demo-site", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "DemoSite":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class DemoResult:
    data_dir: Path
    site_url: str
    username: str
    password: str
    reports: list[SourceReport] = field(default_factory=list)
    entries: int = 0
    flagged: int = 0
    featured_entry: int | None = None
    reused: bool = False

    @property
    def failed(self) -> list[SourceReport]:
        return [r for r in self.reports if r.failed]


def demo_settings(settings: Settings, base_url: str) -> Settings:
    """The demo's settings: private addresses allowed (the pages are on 127.0.0.1), links to ``base_url``."""
    return settings.model_copy(update={"allow_private_addresses": True, "base_url": base_url.rstrip("/")})


def _ensure_sources(db: Database, site_url: str) -> None:
    with db.session() as session:
        for s in demo_sources():
            url = site_url + s["path"]
            existing = session.scalar(select(Source).where(Source.name == s["name"]))
            if existing is None or existing.removed_at is not None:
                add_source(session, s["name"], url, s["kind"])
            elif existing.url != url:  # a re-run serves the pages on another port
                existing.url = url


def _ensure_user(db: Database, username: str, password: str) -> None:
    with db.session() as session:
        if session.scalar(select(User).where(User.username == username)) is None:
            auth.create_user(session, username, password)
        else:
            auth.set_password(session, username, password)


def run_demo(settings: Settings, site: DemoSite, *, username: str = DEMO_USER, password: str | None = None,
             progress=None) -> DemoResult:
    """Migrate the database, add the demo sources, crawl them, and set up the reviewer account."""
    if not settings.allow_private_addresses:
        raise BadRequest("The demo crawls pages on 127.0.0.1; build its settings with demo_settings().")
    for d in (settings.data_dir, settings.warc_dir, settings.index_dir):
        d.mkdir(parents=True, exist_ok=True)
    db = Database(settings)
    try:
        reused = db.current_revision() is not None
        db.upgrade()
        password = password or secrets.token_urlsafe(9)
        _ensure_user(db, username, password)
        _ensure_sources(db, site.base_url)
        names = [s["name"] for s in demo_sources()]
        reports = crawl(db, settings, names, progress=progress) if progress else crawl(db, settings, names)
        result = DemoResult(settings.data_dir, site.base_url, username, password, reports, reused=reused)
        with db.session() as session:
            rows = session.execute(select(Entry.id, Entry.model, Entry.flag_count, Entry.headline_tps)
                                   .where(Entry.gone.is_(False))).all()
        result.entries = len(rows)
        result.flagged = sum(1 for r in rows if r.flag_count)
        glm = [r for r in rows if r.model == FEATURED_MODEL and r.headline_tps is not None]
        if glm:
            result.featured_entry = max(glm, key=lambda r: r.headline_tps).id
        return result
    finally:
        db.dispose()
