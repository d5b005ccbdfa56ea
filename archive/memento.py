"""Memento (RFC 7089) and Wayback timestamps: dates, nearest-capture choice, Link headers, TimeMaps.

Pure functions over plain values: a capture is a 17-digit ``yyyyMMddhhmmssfff`` UTC timestamp and
the URL templates are given by the caller (``/web/{ts}/{url}``, ``/timegate/{url}``,
``/timemap/link/{url}``), so this module knows nothing of the web framework or the database.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime

_DIGITS = re.compile(r"^\d{1,17}$")
# Padding for partial timestamps: the earliest moment they name ("2026" -> 2026-01-01 00:00:00.000),
# as pywb pads a short timestamp before looking for the closest capture.
_PAD = "00000101000000000"


def is_wayback_ts(text: str) -> bool:
    return bool(_DIGITS.match(text or ""))


def pad_ts(ts: str) -> str:
    """A 1-17 digit Wayback timestamp padded to 17 digits, clamped to a real date."""
    if not is_wayback_ts(ts):
        raise ValueError(f"timestamp must be 1 to 17 digits (yyyyMMddhhmmssfff), got {ts!r}")
    full = ts + _PAD[len(ts):]
    year = max(1, int(full[0:4]))
    month = min(max(int(full[4:6]), 1), 12)
    day = max(int(full[6:8]), 1)
    hour, minute, sec = min(int(full[8:10]), 23), min(int(full[10:12]), 59), min(int(full[12:14]), 59)
    for d in range(min(day, 31), 0, -1):
        try:
            datetime(year, month, d)
            day = d
            break
        except ValueError:
            continue
    return f"{year:04d}{month:02d}{day:02d}{hour:02d}{minute:02d}{sec:02d}{full[14:17]}"


def ts_to_datetime(ts: str) -> datetime:
    ts = pad_ts(ts)
    base = datetime.strptime(ts[:14], "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    return base.replace(microsecond=int(ts[14:17]) * 1000)


def datetime_to_ts(dt: datetime) -> str:
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


def http_date(ts: str) -> str:
    """RFC 1123 date of a timestamp (``Tue, 01 Dec 2026 00:49:13 GMT``), as Memento-Datetime wants."""
    return format_datetime(ts_to_datetime(ts).replace(microsecond=0), usegmt=True)


def parse_http_date(value: str) -> str:
    """17-digit timestamp of an ``Accept-Datetime`` value; ValueError says what shape is expected."""
    try:
        dt = parsedate_to_datetime((value or "").strip())
    except (TypeError, ValueError, IndexError):
        dt = None
    if dt is None:
        raise ValueError(
            f"Accept-Datetime {value!r} is not an RFC 1123 date; send e.g. 'Tue, 01 Dec 2026 00:49:13 GMT'")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return datetime_to_ts(dt)


def distance_ms(a: str, b: str) -> int:
    delta = ts_to_datetime(a) - ts_to_datetime(b)
    return abs(int(delta.total_seconds() * 1000))


def nearest(target: str, before: str | None, after: str | None) -> str | None:
    """The closer of the latest capture at or before ``target`` and the earliest at or after it
    (the earlier one on a tie)."""
    if before is None or after is None:
        return before or after
    return before if distance_ms(target, before) <= distance_ms(target, after) else after


# -- Link headers and TimeMaps --------------------------------------------------------------------

@dataclass(frozen=True)
class Urls:
    """Absolute URL builders for one original URL."""

    base: str  # origin, e.g. "http://127.0.0.1:8000"
    original: str

    def memento(self, ts: str, modifier: str = "") -> str:
        return f"{self.base}/web/{ts}{modifier}/{self.original}"

    @property
    def timegate(self) -> str:
        return f"{self.base}/timegate/{self.original}"

    @property
    def timemap_link(self) -> str:
        return f"{self.base}/timemap/link/{self.original}"

    @property
    def timemap_json(self) -> str:
        return f"{self.base}/timemap/json/{self.original}"


def _link(uri: str, rel: str, **attrs: str) -> str:
    text = f'<{uri}>; rel="{rel}"'
    for k, v in attrs.items():
        text += f'; {k}="{v}"'
    return text


def memento_link_header(urls: Urls, ts: str, *, modifier: str = "", first: str | None = None,
                        last: str | None = None) -> str:
    """``Link`` header of a memento: original, timegate, timemap, and the memento itself."""
    rel = "memento"
    if first == ts and last == ts:
        rel = "first last memento"
    elif first == ts:
        rel = "first memento"
    elif last == ts:
        rel = "last memento"
    return ", ".join([
        _link(urls.original, "original"),
        _link(urls.timegate, "timegate"),
        _link(urls.timemap_link, "timemap", type="application/link-format"),
        _link(urls.memento(ts, modifier), rel, datetime=http_date(ts)),
    ])


def timegate_link_header(urls: Urls) -> str:
    return ", ".join([
        _link(urls.original, "original"),
        _link(urls.timemap_link, "timemap", type="application/link-format"),
    ])


def timemap_link_format(urls: Urls, timestamps: list[str]) -> str:
    """An ``application/link-format`` TimeMap (RFC 7089 section 5.1), oldest memento first."""
    stamps = sorted(timestamps)
    self_attrs = {"type": "application/link-format"}
    if stamps:
        self_attrs.update({"from": http_date(stamps[0]), "until": http_date(stamps[-1])})
    lines = [
        _link(urls.original, "original"),
        _link(urls.timemap_link, "self", **self_attrs),
        _link(urls.timegate, "timegate"),
    ]
    for i, ts in enumerate(stamps):
        rel = "memento"
        if i == 0:
            rel = "first memento"
        if i == len(stamps) - 1:
            rel = "last memento" if i else "first last memento"
        lines.append(_link(urls.memento(ts), rel, datetime=http_date(ts)))
    return ",\n".join(lines) + "\n"


def timemap_json(urls: Urls, timestamps: list[str]) -> str:
    """The JSON TimeMap shape used by the Memento aggregator (``original_uri``, ``mementos.list``)."""
    stamps = sorted(timestamps)
    items = [{"datetime": ts_to_datetime(ts).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
              "http_date": http_date(ts), "timestamp": ts, "uri": urls.memento(ts)} for ts in stamps]
    data = {
        "original_uri": urls.original,
        "timegate_uri": urls.timegate,
        "timemap_uri": {"link_format": urls.timemap_link, "json_format": urls.timemap_json},
        "mementos": {"first": items[0] if items else None, "last": items[-1] if items else None, "list": items},
    }
    return json.dumps(data, indent=1)


def parse_link_header(value: str) -> list[tuple[str, dict[str, str]]]:
    """Split a Link header / link-format document into (uri, {attr: value}) pairs."""
    out = []
    for m in re.finditer(r"<([^>]*)>((?:\s*;\s*[\w-]+=\"[^\"]*\")*)", value or ""):
        attrs = {k: v for k, v in re.findall(r"([\w-]+)=\"([^\"]*)\"", m.group(2))}
        out.append((m.group(1), attrs))
    return out
