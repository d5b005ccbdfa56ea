"""llama.cpp's own reports: the timing lines of ``llama-cli``/``main``/``llama-server``
(``prompt eval time = X ms / N tokens ( ... ms per token, Z tokens per second)`` is prefill, ``eval time``
is decode; ``sample time`` and ``load time`` are not speeds of the model), the speculative
``draft acceptance rate = 0.564 ( 282 accepted / 500 generated)`` line, and llama-server responses whose
``timings`` object gives ``prompt_per_second`` (prefill) and ``predicted_per_second`` (decode).
One request at a time: scope per_user.
"""

from __future__ import annotations

import re

from scrapers.tools.common import draft, locate, model_from_path

_TIMING = re.compile(r"(?P<kind>prompt\s+eval|eval|sampl(?:e|ing)|load|total)\s+time\s*[=:]\s*(?P<ms>[\d.]+)\s*ms\s*/\s*"
                     r"(?P<n>\d+)\s*(?P<unit>tokens|runs)\s*\(\s*[\d.]+\s*ms\s+per\s+token,\s*(?P<tps>[\d.]+)\s*"
                     r"tokens\s+per\s+second\s*\)", re.I)
_ACCEPT = re.compile(r"draft\s+acceptance\s+rate\s*=\s*(?P<r>[\d.]+)\s*\(\s*(?P<a>\d+)\s*accepted\s*/\s*(?P<g>\d+)\s*"
                     r"generated\s*\)", re.I)
_FINGERPRINT = re.compile(r"^b(\d{3,6})-([0-9a-f]{6,40})$")


def read_text(blk, text):
    chunk = blk.text
    if "time" not in chunk or "per second" not in chunk:
        return [], []
    drafts, claimed = [], []
    last = None
    for m in _TIMING.finditer(chunk):
        kind = m.group("kind").lower().replace("  ", " ")
        a = blk.start + m.start()
        claimed.append((a, blk.start + m.end()))
        if kind not in ("prompt eval", "eval"):
            continue
        phase = "prefill" if kind.startswith("prompt") else "decode"
        lit = m.group("tps")
        s = blk.start + m.start("tps")
        d = draft(float(lit), lit, (s, s + len(lit)), "llama.cpp timings", phase=phase, scope="per_user",
                  engine="llama.cpp", headline_label=f"{kind} time")
        d.builder.put("seconds_stated", float(m.group("ms")) / 1000.0, None)
        d.builder.put("tokens_stated", float(m.group("n")), m.group("n"))
        d.spans.append((a, blk.start + m.end()))
        d.local = m.group(0)
        drafts.append(d)
        last = d
    for m in _ACCEPT.finditer(chunk):
        claimed.append((blk.start + m.start(), blk.start + m.end()))
        target = next((d for d in reversed(drafts) if d.fields.get("phase") == "decode"), last)
        if target is not None:
            target.builder.put("acceptance_rate", float(m.group("r")), m.group(0))
            target.builder.put("accepted_tokens", int(m.group("a")), m.group(0))
            target.builder.put("drafted_tokens", int(m.group("g")), m.group(0))
    return drafts, claimed


def read_json(doc, text):
    if not isinstance(doc, dict) or not isinstance(doc.get("timings"), dict):
        return None
    t = doc["timings"]
    if "predicted_per_second" not in t and "prompt_per_second" not in t:
        return None
    model = model_from_path(doc.get("model") or "") or None
    ver = commit = None
    fp = _FINGERPRINT.match(str(doc.get("system_fingerprint") or ""))
    if fp:
        ver, commit = "b" + fp.group(1), fp.group(2)
    out = []
    for key, phase, n_key, ms_key in (("prompt_per_second", "prefill", "prompt_n", "prompt_ms"),
                                      ("predicted_per_second", "decode", "predicted_n", "predicted_ms")):
        if not isinstance(t.get(key), (int, float)):
            continue
        loc = locate(text, ["timings", key])
        d = draft(t[key], loc[0] if loc else None, (loc[1], loc[2]) if loc else None, "llama-server timings",
                  phase=phase, scope="per_user", engine="llama.cpp", model=model, engine_version=ver,
                  engine_commit=commit, headline_label=f"timings.{key}")
        if isinstance(t.get(n_key), (int, float)):
            d.builder.put("tokens_stated", float(t[n_key]), None)
        if isinstance(t.get(ms_key), (int, float)):
            d.builder.put("seconds_stated", float(t[ms_key]) / 1000.0, None)
        if phase == "decode" and isinstance(t.get("draft_n"), int) and t.get("draft_n"):
            acc = t.get("draft_n_accepted")
            d.builder.put("drafted_tokens", int(t["draft_n"]), None)
            if isinstance(acc, int):
                d.builder.put("accepted_tokens", acc, None)
                d.builder.put("acceptance_rate", acc / t["draft_n"], None)
        out.append(d)
    return out
