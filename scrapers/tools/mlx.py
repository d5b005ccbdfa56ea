"""MLX LM's ``mlx_lm.generate`` statistics: ``Prompt: 17 tokens, 42.003 tokens-per-sec`` is prefill and
``Generation: 1687 tokens, 20.371 tokens-per-sec`` decode, one request (per_user), with the token count
of each; ``Peak memory`` is not a speed. The engine is MLX (mlx_lm prints nothing else about itself)."""

from __future__ import annotations

import re

from scrapers.tools.common import draft

_LINE = re.compile(r"^[ \t>]*(?P<k>Prompt|Generation):[ \t]*(?P<n>\d[\d,]*)[ \t]+tokens?,[ \t]*"
                   r"(?P<v>\d+(?:\.\d+)?)[ \t]*tokens?-per-sec\b[^\n]*$", re.M)


def read_text(blk, text):
    chunk = blk.text
    if "tokens-per-sec" not in chunk:
        return [], []
    out, claimed = [], []
    for m in _LINE.finditer(chunk):
        kind = m.group("k")
        lit = m.group("v")
        s = blk.start + m.start("v")
        prefill = kind == "Prompt"
        n = int(m.group("n").replace(",", ""))
        d = draft(float(lit), lit, (s, s + len(lit)), "mlx_lm generate", phase="prefill" if prefill else "decode",
                  scope="per_user", engine="MLX", headline_label=f"{kind.lower()} tokens-per-sec")
        d.builder.put("prompt_tokens" if prefill else "gen_tokens", n, m.group("n"))
        d.spans.append((blk.start + m.start(), blk.start + m.end()))
        d.local = m.group(0)
        out.append(d)
        claimed.append((blk.start + m.start(), blk.start + m.end()))
    return out, claimed
