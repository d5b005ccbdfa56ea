"""Fetch one URL with httpx, following redirects by hand, keeping the bytes exactly as transferred.

Every hop of a redirect chain is a :class:`Hop`: the request as sent, the status line and headers
as received, and the body from ``iter_raw()`` (still ``Content-Encoding``-encoded, de-chunked) spooled
to memory or disk while it streams, never read whole first. Limits raise :class:`FetchError` with a
message that names the setting to change: connect/read timeouts, the body size limit, the redirect
limit, http/https only, and internal addresses refused after DNS resolution for every connection
(so every redirect hop too) unless private addresses are allowed.
"""

from __future__ import annotations

import functools
import hashlib
import io
import ipaddress
import socket
import ssl
import threading
import time
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO, Callable
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from archive.headers import first as first_header

SPOOL_IN_MEMORY = 1024 * 1024
REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(Exception):
    def __init__(self, url: str, message: str, kind: str = "fetch"):
        super().__init__(f"{url}: {message}")
        self.url = url
        self.message = message
        self.kind = kind


def address_problem(ip_text: str) -> str | None:
    """Why an address is internal (``"loopback"``, ``"private"``...), or None for a public one."""
    ip = ipaddress.ip_address(ip_text.split("%", 1)[0])
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for name in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    if not ip.is_global:
        return "not globally routable"
    return None


def parse_allowed_hosts(text: str | None) -> frozenset[tuple[str, int]]:
    """``CAVEAT_ALLOW_PRIVATE_HOSTS``: comma-separated ``host:port`` entries (``[::1]:8080`` for IPv6),
    each allowed past the internal-address guard; anything else raises ``ValueError`` saying why."""
    out = set()
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"CAVEAT_ALLOW_PRIVATE_HOSTS: {item!r} is not host:port (e.g. 127.0.0.1:8765)")
        out.add((host.strip("[]").lower(), int(port)))
    return frozenset(out)


LOCAL_NAMES = ("localhost", "localhost.localdomain")


def refusal(what: str, problem: str) -> str:
    """The crawler's words for an internal address (``what``: "127.0.0.1 is", "h resolves to 10.0.0.5,")."""
    return (f"refused: {what} a {problem} address. Caveat only fetches public addresses; "
            "set CAVEAT_ALLOW_PRIVATE_ADDRESSES=1 to allow internal ones, or list this "
            "host:port in CAVEAT_ALLOW_PRIVATE_HOSTS")


def written_address_problem(url: str, allow_private: bool = False,
                            allow_hosts: frozenset[tuple[str, int]] = frozenset()) -> str | None:
    """The crawler's refusal for a URL whose host is written as an internal address (``127.0.0.1``,
    ``[::1]``, ``169.254.169.254``, ``10.0.0.5``) or a localhost name, found without a DNS lookup
    (a name is checked again, resolved, at every connection); None when the crawler would try it.
    Honours the same two settings as :class:`GuardedBackend`."""
    parts = urlsplit(url)
    host = (parts.hostname or "").strip("[]").lower()
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        return None
    if allow_private or not host or (host, port) in allow_hosts:
        return None
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return refusal(f"{host} is", "loopback")
    try:
        problem = address_problem(host)
    except ValueError:
        return None  # a name: resolved and checked when fetched
    return refusal(f"{host} is", problem) if problem else None


class GuardedBackend(httpcore.SyncBackend):
    """Resolves the host itself, refuses internal addresses, then connects to a checked address.
    ``allow_hosts``: exact ``(host, port)`` pairs let through although internal; a pair matches the
    host name as written in the URL or the address it resolved to, with the same port."""

    def __init__(self, allow_private: bool, check: Callable[[str], str | None] = address_problem,
                 allow_hosts: frozenset[tuple[str, int]] = frozenset()):
        super().__init__()
        self.allow_private = allow_private
        self.check = check
        self.allow_hosts = allow_hosts

    def _problem(self, host: str, port: int, addr: str) -> str | None:
        if self.allow_private:
            return None
        if self.allow_hosts and ((host.strip("[]").lower(), port) in self.allow_hosts
                                 or (addr.split("%", 1)[0].lower(), port) in self.allow_hosts):
            return None
        return self.check(addr)

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise FetchError(host, f"cannot resolve host name ({exc.strerror})", "dns") from None
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        allowed, refused = [], []
        for addr in addresses:
            problem = self._problem(host, port, addr)
            (refused if problem else allowed).append((addr, problem))
        if not allowed:
            addr, problem = refused[0]
            what = f"{addr} is" if addr == host.strip("[]") else f"{host} resolves to {addr},"
            raise FetchError(host, refusal(what, problem), "address")
        last: Exception | None = None
        for addr, _ in allowed:
            try:
                return super().connect_tcp(addr, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last  # type: ignore[misc]


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until ``deadline`` (monotonic)."""

    def __init__(self, stream, deadline: float):
        self._stream, self._deadline = stream, deadline

    def _left(self, timeout: float | None) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise httpcore.ReadTimeout("the total time allowed for this exchange has passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, self._left(timeout)),
                               self._deadline)

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, backend, deadline: float):
        self._backend, self._deadline = backend, deadline

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        left = max(0.001, self._deadline - time.monotonic())
        stream = self._backend.connect_tcp(host, port, left if timeout is None else min(timeout, left),
                                           local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def with_deadline(transport: httpx.HTTPTransport, deadline: float) -> httpx.HTTPTransport:
    """``transport`` (a :class:`Fetcher`'s, the address guard kept) with a total deadline: no read,
    write or connect waits past ``deadline``, however slowly the peer trickles its bytes."""
    pool = transport._pool
    pool._network_backend = _DeadlineBackend(pool._network_backend, deadline)
    return transport


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The TLS settings every fetch uses (system-independent CA bundle), built once per process."""
    return httpx.create_ssl_context()


def _peer_address(response: httpx.Response) -> tuple | None:
    stream = response.extensions.get("network_stream")
    try:
        return stream.get_extra_info("server_addr") if stream is not None else None
    except OSError:
        return None


def stored_head(http_version: str, status: int, reason: str, headers: list[tuple[str, str]], length: int) -> bytes:
    """The HTTP head a response record stores: see :meth:`Hop.stored_head`."""
    lines = [f"{http_version} {status} {reason}".rstrip()]
    length_done = False
    for k, v in headers:
        low = k.lower()
        if low == "transfer-encoding":
            continue
        if low == "content-length":
            if length_done:
                continue
            v, length_done = str(length), True
        lines.append(f"{k}: {v}")
    if not length_done:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


@dataclass
class Hop:
    url: str
    started_at: datetime
    request_head: bytes
    status: int
    reason: str
    http_version: str
    headers: list[tuple[str, str]]
    body: BinaryIO
    body_length: int
    sha256: bytes
    ip: str | None = None
    location: str | None = None
    block_sha256: bytes | None = None  # sha256 of stored_head() + body, when it could be taken while streaming

    def header(self, name: str) -> str | None:
        return first_header(self.headers, name)

    @property
    def mime(self) -> str | None:
        value = self.header("Content-Type")
        return value.split(";", 1)[0].strip().lower() or None if value else None

    def stored_head(self) -> bytes:
        """Status line and headers as received, minus ``Transfer-Encoding`` (the body is stored
        de-chunked) and with ``Content-Length`` set to the number of body bytes stored."""
        return stored_head(self.http_version, self.status, self.reason, self.headers, self.body_length)

    def payload(self) -> bytes:
        """The body as bytes (no copy when it was kept in memory)."""
        if isinstance(self.body, io.BytesIO):
            return self.body.getvalue()
        self.body.seek(0)
        return self.body.read()

    def close(self) -> None:
        self.body.close()


@dataclass
class Limits:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_body_bytes: int = 50 * 1024 * 1024
    max_redirects: int = 10
    time_limit: float = 300.0  # seconds one hop may take, however steadily its bytes arrive
    allow_private: bool = False
    user_agent: str = "Caveat"
    allow_hosts: frozenset = frozenset()  # (host, port) pairs allowed although internal (CAVEAT_ALLOW_PRIVATE_HOSTS)
    address_check: Callable[[str], str | None] = address_problem  # why an address is refused, or None


@dataclass
class Fetcher:
    """One shared, thread-safe httpx transport (connection pool) with the address guard installed.

    Requests go straight to the transport (``httpx.HTTPTransport.handle_request``): Caveat follows
    redirects itself, reads raw bytes and keeps no cookies, so the ``httpx.Client`` layer above it
    would only add work. Every fetch is what a first-time visitor gets; ``Set-Cookie`` headers are
    archived as received but never sent back."""

    limits: Limits
    transport: httpx.HTTPTransport = field(init=False)

    def __post_init__(self):
        lim = self.limits
        self.transport = httpx.HTTPTransport(retries=0, verify=ssl_context())
        pool = self.transport._pool  # httpx exposes no hook for the network backend; set it on the pool
        if not hasattr(pool, "_network_backend"):  # pragma: no cover - guards an httpx/httpcore change
            raise RuntimeError("httpx transport layout changed: cannot install the address guard")
        pool._network_backend = GuardedBackend(lim.allow_private, lim.address_check, lim.allow_hosts)
        self.cancelled = threading.Event()
        self.timeout = httpx.Timeout(connect=lim.connect_timeout, read=lim.read_timeout, write=lim.read_timeout,
                                     pool=lim.connect_timeout).as_dict()
        # what httpx.Client would send, with only the codings our reader, pywb and browsers all undo
        self.headers = [("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate"), ("Connection", "keep-alive"),
                        ("User-Agent", lim.user_agent)]

    def cancel(self) -> None:
        """Make fetches in progress stop at their next chunk (an interrupted capture)."""
        self.cancelled.set()

    def close(self) -> None:
        self.transport.close()

    def fetch(self, url: str, headers: list[tuple[str, str]] | None = None) -> list[Hop]:
        """Fetch ``url`` and every redirect after it; on error, close what was fetched and raise.
        ``headers`` (e.g. ``If-None-Match``/``If-Modified-Since`` of a conditional re-crawl) go with
        the first request only, never to a redirect's target."""
        hops: list[Hop] = []
        current = url
        try:
            while True:
                hop = self._fetch_one(current, headers if not hops else None)
                hops.append(hop)
                if not hop.location:
                    return hops
                if len(hops) > self.limits.max_redirects:
                    raise FetchError(url, f"more than {self.limits.max_redirects} redirects (last to "
                                     f"{hop.location}); raise CAVEAT_MAX_REDIRECTS to follow more", "redirects")
                current = hop.location
        except BaseException:
            for h in hops:
                h.close()
            raise

    def fetch_hop(self, url: str) -> Hop:
        """Fetch ``url`` alone, not following a redirect (the caller does: a browser follows it itself)."""
        return self._fetch_one(url)

    def _check_url(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            raise FetchError(url, f"only http and https URLs can be captured, not {parts.scheme or 'no scheme'!r}; "
                             "write the URL with http:// or https://", "scheme")
        if not parts.hostname:
            raise FetchError(url, "the URL has no host name", "scheme")

    def _read_body(self, url: str, r: httpx.Response, block, deadline: float) -> tuple[BinaryIO, int, bytes]:
        """Stream the raw body: in memory up to SPOOL_IN_MEMORY bytes, then in a temporary file;
        sha256 of the payload (and ``block``, if given) on the way; the size and time limits enforced,
        and :meth:`cancel` honoured between chunks."""
        limit = self.limits.max_body_bytes
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        spool: BinaryIO | None = None
        size = 0
        try:
            for chunk in r.iter_raw():
                size += len(chunk)
                if size > limit:
                    raise FetchError(url, f"the body passed the limit of {limit:,} bytes while streaming; raise "
                                     "CAVEAT_MAX_BODY_BYTES to store it", "size")
                if time.monotonic() > deadline:
                    raise FetchError(url, f"the response took longer than {self.limits.time_limit:g} s "
                                     f"({size:,} bytes so far); raise CAVEAT_FETCH_TIME_LIMIT for slow sites", "timeout")
                if self.cancelled.is_set():
                    raise FetchError(url, "the capture was interrupted", "cancelled")
                digest.update(chunk)
                if block is not None:
                    block.update(chunk)
                if spool is not None:
                    spool.write(chunk)
                    continue
                chunks.append(chunk)
                if size > SPOOL_IN_MEMORY:
                    spool = tempfile.TemporaryFile()
                    spool.writelines(chunks)
                    chunks = []
        except BaseException:
            if spool is not None:
                spool.close()
            raise
        return (spool if spool is not None else io.BytesIO(b"".join(chunks))), size, digest.digest()

    def _fetch_one(self, url: str, extra: list[tuple[str, str]] | None = None) -> Hop:
        self._check_url(url)
        lim = self.limits
        started = datetime.now(timezone.utc)
        deadline = time.monotonic() + lim.time_limit
        try:
            req = httpx.Request("GET", url, headers=self.headers + list(extra or []),
                                extensions={"timeout": self.timeout})
            r = self.transport.handle_request(req)
            try:
                addr = _peer_address(r)  # now: a connection-close response has no socket after the body
                declared = r.headers.get("content-length")
                expected = int(declared) if declared and declared.strip().isdigit() else None
                if expected is not None and expected > lim.max_body_bytes:
                    raise FetchError(url, f"the body is {expected:,} bytes, over the limit of "
                                     f"{lim.max_body_bytes:,}; raise CAVEAT_MAX_BODY_BYTES to store it", "size")
                reason = r.extensions.get("reason_phrase", b"")
                reason = reason.decode("latin-1") if isinstance(reason, bytes) else str(reason)
                version = r.http_version or "HTTP/1.1"
                headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in r.headers.raw]
                # With a Content-Length the stored head is known now: take the block digest on the way.
                block = (hashlib.sha256(stored_head(version, r.status_code, reason, headers, expected))
                         if expected is not None else None)
                location = r.headers.get("location") if r.status_code in REDIRECTS else None
                if location:
                    try:
                        location = urljoin(url, location)
                        self._check_url(location)
                    except (ValueError, FetchError):
                        raise FetchError(url, f"HTTP {r.status_code} redirects to {location!r}, which is not an http(s) "
                                         "URL Caveat can follow", "redirects") from None
                body, size, digest = self._read_body(url, r, block, deadline)
                if expected is not None and size != expected:
                    block = None  # the server sent another length than it declared: digest it later
                target = req.url.raw_path.decode("ascii")
                req_lines = [f"GET {target} HTTP/1.1"]
                req_lines += [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in req.headers.raw]
                return Hop(
                    url=url, started_at=started,
                    request_head=("\r\n".join(req_lines) + "\r\n\r\n").encode("latin-1"),
                    status=r.status_code, reason=reason, http_version=version, headers=headers,
                    body=body, body_length=size, sha256=digest,
                    ip=addr[0] if addr else None,
                    location=location or None,
                    block_sha256=block.digest() if block is not None else None,
                )
            finally:
                r.close()
        except FetchError as exc:
            if exc.url != url and exc.kind in ("address", "dns"):
                raise FetchError(url, exc.message, exc.kind) from None
            raise
        except httpx.ConnectTimeout:
            raise FetchError(url, f"no connection within {lim.connect_timeout:g} s; raise CAVEAT_CONNECT_TIMEOUT "
                             "if the site is slow", "timeout") from None
        except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout):
            raise FetchError(url, f"the server sent nothing for {lim.read_timeout:g} s; raise CAVEAT_READ_TIMEOUT "
                             "if the site is slow", "timeout") from None
        except httpx.ConnectError as exc:
            raise FetchError(url, f"could not connect ({exc}); check the host name and that the site is up",
                             "connect") from None
        except httpx.HTTPError as exc:
            raise FetchError(url, f"the HTTP exchange failed ({type(exc).__name__}: {exc})", "http") from None
