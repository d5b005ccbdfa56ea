"""Capture times: 17-digit ``yyyyMMddhhmmssfff`` UTC stamps and the matching WARC-Date strings."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone


def ts17(dt: datetime) -> str:
    """``20261201004913123`` for 2026-12-01 00:49:13.123 UTC (milliseconds truncated)."""
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


def parse_ts17(ts: str) -> datetime:
    if len(ts) != 17 or not ts.isdigit():
        raise ValueError(f"not a 17-digit timestamp: {ts!r}")
    return datetime(int(ts[0:4]), int(ts[4:6]), int(ts[6:8]), int(ts[8:10]), int(ts[10:12]), int(ts[12:14]),
                    int(ts[14:17]) * 1000, tzinfo=timezone.utc)


def bump(ts: str, ms: int = 1) -> str:
    return ts17(parse_ts17(ts) + timedelta(milliseconds=ms))


def warc_date(ts: str) -> str:
    """WARC/1.1 date with millisecond precision: ``2026-12-01T00:49:13.123Z``."""
    return f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}T{ts[8:10]}:{ts[10:12]}:{ts[12:14]}.{ts[14:17]}Z"


def ts14(ts: str) -> str:
    return ts[:14]
