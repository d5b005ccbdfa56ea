"""Settings: one pydantic-settings class, read from ``CAVEAT_*`` environment variables.

Build it once and pass it in (``create_app(settings)``, ``Database(settings)``); nothing reads the
environment behind your back. Every field is documented in ``docs/settings.md`` (a test checks).
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import __version__
from archive.fetcher import parse_allowed_hosts


def parse_networks(value: str) -> tuple:
    """``"127.0.0.1, 10.0.0.0/8"`` -> ip networks; a malformed entry is a ValueError naming it."""
    out = []
    for item in (x.strip() for x in (value or "").split(",")):
        if not item:
            continue
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"CAVEAT_TRUSTED_PROXIES: {item!r} is not an IP address or network "
                             "(e.g. 127.0.0.1 or 10.0.0.0/8)") from None
    return tuple(out)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAVEAT_", extra="ignore")

    data_dir: Path = Field(Path("./data"), description="Folder for the SQLite file, WARC files and indexes.")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL. Default: a SQLite file `caveat.db` in the data folder."
    )
    allow_private_addresses: bool = Field(
        False, description="Let the crawler fetch loopback, private, link-local and other internal addresses."
    )
    allow_private_hosts: str = Field(
        "", description="Comma-separated `host:port` entries (e.g. `127.0.0.1:8765,[::1]:9000`) that the "
        "crawler may fetch although they are internal; every other internal address stays refused.",
    )
    browser_executable: str = Field("/usr/bin/chromium", description="Chromium binary for browser captures "
                                    "(`caveat capture --browser`, sources added with `--browser`).")
    browser_page_time_limit: float = Field(
        60.0, description="Hard limit in seconds for one browser capture (load, settle, scroll, DOM and "
        "screenshot); past it the capture stops and keeps what the page had loaded.",
    )
    browser_idle_time: float = Field(
        0.5, description="A browser capture's page counts as loaded when it has had no request in flight "
        "for this many seconds after its load event (network idle).",
    )
    browser_settle: float = Field(1.0, description="Seconds a browser capture waits after network idle "
                                  "before it reads the DOM (late timers, animations).")
    browser_scroll: bool = Field(False, description="Scroll browser-captured pages to the bottom (in steps) "
                                 "to trigger lazy loading before the DOM is read.")
    browser_scroll_steps: int = Field(20, description="Most viewport-height scroll steps one browser capture takes.")
    browser_max_requests: int = Field(
        1000, description="Most requests one browser-captured page may make; past it the capture stops and "
        "keeps what was loaded.",
    )
    browser_max_page_bytes: int = Field(
        200 * 1024 * 1024, description="Most body bytes one browser-captured page may load in all; further "
        "requests are refused.",
    )
    connect_timeout: float = Field(10.0, description="Seconds to wait for a TCP/TLS connection.")
    read_timeout: float = Field(30.0, description="Seconds to wait between bytes of a response.")
    max_body_bytes: int = Field(50 * 1024 * 1024, description="Largest response body a capture stores.")
    max_redirects: int = Field(10, description="Most redirect hops a capture follows.")
    fetch_time_limit: float = Field(
        300.0, description="Seconds one fetch (one redirect hop) may take, however steadily its bytes arrive."
    )
    warc_rotate_bytes: int = Field(
        1024 * 1024 * 1024, description="A WARC file is closed and a new one started past this size."
    )
    warc_gzip_level: int = Field(5, description="gzip level of each WARC record member (1 fastest, 9 smallest).")
    capture_processes: int | None = Field(
        None, description="Worker processes that fetch and compress for a capture of 32 or more URLs "
        "(0: fetch in threads of the capturing process). Default: one per concurrent fetch (8).",
    )
    learned_proposals: bool = Field(
        True, description="Store figures the learned reader is confident about and the rules did not read, as "
        "entries with status proposed (never quoted until a reviewer confirms them). Model: the newest "
        "`<data_dir>/models/reader-*.json` (`caveat reader train`), else the one shipped with Caveat.",
    )
    audit_processes: int | None = Field(
        None, description="Processes that audit one long page (20,000 entries or more) at once, this one "
        "included; each takes whole batches of recipes. 1: audit in this process only. Default: 2, or 1 "
        "on a one-core machine.",
    )
    decode_max_bytes: int = Field(
        200 * 1024 * 1024, description="Most bytes any decoding of archived data may produce (a WARC record "
        "inflated, a Content-Encoding undone); past it the decoding stops with a message naming this "
        "setting, and the stored bytes stay servable raw.",
    )
    log_public_keys: str = Field(
        "", description="Comma-separated public keys (base64, as `/log/sth.json` gives `public_key`) that may "
        "sign the tamper-evident log's tree heads; `caveat verify --log` fails on a tree head signed by any "
        "other. Empty: the key the tree heads agree on, and a change of key fails unless accepted with "
        "`--accept-key`.",
    )
    decode_max_ratio: int = Field(
        100, description="Most times larger than its encoded form a Content-Encoding-decoded body may get "
        "(bodies under 1 MiB decoded are exempt); past it decoding stops, as for CAVEAT_DECODE_MAX_BYTES.",
    )
    decode_process_bytes: int = Field(
        256 * 1024 * 1024, description="Most bytes all decodings in one server process may produce at once "
        "(each reserves its CAVEAT_DECODE_MAX_BYTES / ratio bound first and waits while others hold the "
        "budget); bounds the memory of many parallel requests on compressed records.",
    )
    redis_url: str | None = Field(
        None, description="Redis for the sign-in rate limits shared by several server processes, e.g. "
        "redis://127.0.0.1:6379/0. Default: kept in the memory of each process.",
    )
    login_limit_account: str = Field(
        "10 per 15 minutes", description="Failed sign-ins allowed per account before 429 (a `limits` rate string).")
    login_limit_client: str = Field(
        "30 per 15 minutes", description="Failed sign-ins allowed per client address before 429.")
    trusted_proxies: str = Field(
        "", description="Comma-separated addresses or networks (e.g. `127.0.0.1,10.0.0.0/8`) of reverse "
        "proxies whose `X-Forwarded-For` names the client. Default: none; the header is ignored.",
    )
    user_agent: str = Field(
        f"Caveat/{__version__} (speed-claim archiver)", description="User-Agent sent by the crawler."
    )
    base_url: str = Field(
        "http://127.0.0.1:8000", description="Public origin used in citation URLs printed by the CLI and API. "
        "Unset: the one recorded in `<data_dir>/base_url` (`caveat init --base-url`, `caveat config base-url`, "
        "or the first `caveat serve`); with none recorded the CLI prints citation ids, never a guessed URL."
    )
    replay_origin: str | None = Field(
        None,
        description="Separate origin (scheme://host[:port]) that alone serves archived bytes (`/web/{ts}id_/...`); "
        "the app's own origin then refuses them, and that origin serves nothing else. Unset: one origin.",
    )
    secret_key: str | None = Field(
        None,
        description="Key that signs session cookies and CSRF tokens. Default: generated once and kept in "
        "`<data_dir>/secret_key`.",
    )
    host: str = Field("127.0.0.1", description="Address `caveat serve` binds to.")
    port: int = Field(8000, description="Port `caveat serve` binds to.")
    # Watching the boards (issue 17): docs/watch.md
    warc_series: str | None = Field(
        None, description="Name of this process's own WARC file series (`caveat-<series>-<time>-<random>.warc.gz`, "
        "its own lock). `caveat worker` picks a free one per machine itself. Default: the main series.")
    host_delay: float = Field(1.0, description="Seconds between two requests to one host, across all workers.")
    schedule_jitter: float = Field(
        0.1, description="A scheduled re-crawl moves by up to this fraction of its interval, at random.")
    retry_after_max: float = Field(
        86400.0, description="Most seconds a 429/503 `Retry-After` (or the failure backoff) delays a source.")
    hook_timeout: float = Field(10.0, description="Seconds a webhook receiver has to answer one delivery.")
    hook_attempts: int = Field(8, description="Attempts per webhook delivery before it is logged as failed.")
    hook_retry_wait: float = Field(
        2.0, description="Seconds before the first retry of a failed webhook delivery; doubled at each attempt.")
    # The archive on S3-compatible object storage (issue 30): docs/storage.md
    archive_url: str | None = Field(
        None, description="Where sealed WARC files live: unset (the default) keeps them in `<data_dir>/warcs`; "
        "`s3://bucket/prefix` uploads each sealed file there as an immutable object and reads records back "
        "by byte range. Credentials and region come from the standard AWS_* variables.")
    s3_endpoint: str | None = Field(
        None, description="The S3 endpoint URL of an S3-compatible store (MinIO, SeaweedFS, R2, Ceph), e.g. "
        "`http://127.0.0.1:8333`. Unset: Amazon S3 itself.")
    s3_cache_bytes: int = Field(
        256 * 1024 * 1024, description="Bytes of recent record ranges kept on local disk in "
        "`<data_dir>/cache/ranges` (a read-through cache of the bucket; oldest dropped first; 0: no cache).")
    s3_upload_every: float = Field(
        5.0, description="Seconds between a `caveat worker`'s looks for sealed WARC files to upload.")
    worker_poll: float = Field(
        5.0, description="Seconds between a worker's looks for due sources and stalled jobs (its queue is "
        "also woken by PostgreSQL LISTEN/NOTIFY).")

    def model_post_init(self, __context) -> None:
        if "base_url" not in self.model_fields_set:   # not given: the public base URL recorded in the data folder
            recorded = recorded_base_url(self.data_dir)
            if recorded:
                self.base_url = recorded       # counts as given (in model_fields_set): links are minted with it

    @field_validator("allow_private_hosts")
    @classmethod
    def _hosts_parse(cls, value: str) -> str:
        parse_allowed_hosts(value)  # a bad entry is an error at start-up, not at the first fetch
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_parse(cls, value: str) -> str:
        parse_networks(value)  # a bad entry is an error at start-up
        return value

    @property
    def trusted_proxy_networks(self) -> tuple:
        return parse_networks(self.trusted_proxies)

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def warc_dir(self) -> Path:
        return self.data_dir / "warcs"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "indexes"

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'caveat.db').resolve()}"

    def get_secret_key(self) -> str:
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never readable by others, even briefly
        with os.fdopen(fd, "w") as f:
            f.write(key)
        return key


BASE_URL_FILE = "base_url"


def recorded_base_url(data_dir: Path) -> str | None:
    """The public base URL recorded in the data folder, if any."""
    try:
        text = (Path(data_dir) / BASE_URL_FILE).read_text().strip()
    except OSError:
        return None
    return text or None


def check_base_url(url: str) -> str:
    """``https://caveat.example.org`` or ``http://host:port/prefix``, without a trailing slash; ValueError otherwise."""
    text = (url or "").strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if scheme.lower() not in ("http", "https") or not sep or not rest or rest.startswith("/") \
            or any(c in text for c in "?# \t\r\n"):
        raise ValueError(f"{url!r} is not a public base URL: give scheme and host, e.g. https://caveat.example.org "
                         "or http://127.0.0.1:8000")
    return text


def record_base_url(data_dir: Path, url: str) -> str:
    """Record the public base URL in the data folder (where every later command reads it)."""
    text = check_base_url(url)
    (Path(data_dir) / BASE_URL_FILE).write_text(text + "\n")
    return text
