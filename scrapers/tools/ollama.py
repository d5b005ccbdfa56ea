"""Ollama's ``--verbose`` statistics: ``prompt eval rate: 211.38 tokens/s`` is prefill, ``eval rate:
58.17 tokens/s`` decode, one request at a time (per_user); ``eval count: 298 token(s)`` and ``eval
duration: 5.1s`` are the stated tokens and seconds of the decode figure."""

from __future__ import annotations

import re

from scrapers.tools.common import draft

_RATE = re.compile(r"^[ \t]*(?P<k>prompt eval|eval) rate:[ \t]*(?P<v>\d+(?:\.\d+)?)[ \t]*tokens/s[ \t]*$", re.M | re.I)
_COUNT = re.compile(r"^[ \t]*(?P<k>prompt eval|eval) count:[ \t]*(?P<v>\d+)[ \t]*token", re.M | re.I)
_DUR = re.compile(r"^[ \t]*(?P<k>prompt eval|eval) duration:[ \t]*(?P<v>\d+(?:\.\d+)?)(?P<u>ms|s|µs|us)[ \t]*$", re.M | re.I)


def read_text(blk, text):
    chunk = blk.text
    if "eval rate:" not in chunk:
        return [], []
    out, claimed = [], []
    for m in _RATE.finditer(chunk):
        kind = m.group("k").lower()
        lit = m.group("v")
        s = blk.start + m.start("v")
        d = draft(float(lit), lit, (s, s + len(lit)), "ollama --verbose",
                  phase="prefill" if kind.startswith("prompt") else "decode", scope="per_user", engine="Ollama",
                  headline_label=f"{kind} rate")
        # the count and duration lines of the same run: the nearest ones before the rate
        cnt = [c for c in _COUNT.finditer(chunk, 0, m.start()) if c.group("k").lower() == kind]
        dur = [x for x in _DUR.finditer(chunk, 0, m.start()) if x.group("k").lower() == kind]
        if cnt:
            d.builder.put("tokens_stated", float(cnt[-1].group("v")), cnt[-1].group("v"))
        if dur:
            v = float(dur[-1].group("v"))
            unit = dur[-1].group("u").lower()
            d.builder.put("seconds_stated", v / 1000.0 if unit == "ms" else v / 1e6 if unit in ("µs", "us") else v,
                          dur[-1].group("v"))
        d.spans.append((blk.start + m.start(), blk.start + m.end()))
        d.local = m.group(0)
        out.append(d)
        claimed.append((blk.start + m.start(), blk.start + m.end()))
    return out, claimed
