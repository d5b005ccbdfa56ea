"""The shared vocabulary of parsed claims: field names, the ParsedEntry and ParseResult types.

Every parser in ``scrapers/`` returns a ``ParseResult`` whose entries use only the canonical field
names below (unknown source fields go to ``extra`` verbatim). Each value in ``fields`` has, where
possible, an entry in ``quotes``: the exact text in the archived document it was read from, so the
citation layer can point at it (``/c/{id}?q=<quote>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Canonical field names and their Python types. Values are None when the page does not give them.
FIELDS: dict[str, type | tuple] = {
    # what was run
    "model": str,
    "hardware": str,            # GPU / accelerator name, e.g. "RTX PRO 6000 Blackwell"
    "gpu_count": int,
    "engine": str,              # "SGLang", "vLLM", "llama.cpp", ...
    "engine_version": str,
    "engine_image": str,        # container image (with digest if given)
    "engine_commit": str,       # commit hash or llama.cpp build number
    "page_pin": str,            # a version/commit/build/image digest the page states elsewhere, not by this figure
    "quantization": str,        # quantization or checkpoint, e.g. "NVFP4", "Q4_0"
    "tp": int, "pp": int, "ep": int, "dcp": int,
    "concurrency": int,         # batch size or concurrent requests behind the figure
    "context_length": int,
    "spec_method": str,         # speculative method, e.g. "MTP", "EAGLE", "block draft"
    "draft_tokens": int,
    "proposer": str,            # e.g. "n-gram", "32-gram cyclic tiling"
    "acceptance_rate": float,   # 0..1 (64/1.00 -> 1.0; 56.4 % -> 0.564)
    "accepted_tokens": int,     # "282 accepted / 500 generated" -> 282
    "drafted_tokens": int,      # -> 500
    "acceptance_length": float, # mean accepted length per verify step
    "per_position_rates": list, # list[float]
    # the numbers
    "headline_tps": float,      # the figure the page puts forward (tok/s)
    "headline_label": str,      # the column/label it sat under, e.g. "Fastest t/s", "tg128"
    "phase": str,               # what the figure measures: decode | prefill | e2e (prompt + generation)
    "scope": str,               # per_user (one stream) | aggregate (summed over concurrent requests)
    "test": str,                # llama-bench test name: "pp512", "tg128", "pp512+tg128"
    "steady_low": float,        # stated steady state, low end (tok/s)
    "steady_high": float,       # stated steady state, high end
    "spread": float,            # the ± figure
    "samples": list,            # list[float] of per-run figures
    "n_runs": int,
    "superseded_by": float,     # a later figure the page says replaced this one ("then boosted it to ~57")
    "tokens_generated": int,    # a benchmark block's total generated tokens ...
    "tokens_retokenized": int,  # ... and the same output counted again by re-tokenizing its text
    "tokens_stated": float,     # "100 tokens in 1.822 seconds" -> 100
    "seconds_stated": float,    # -> 1.822
    "gen_tokens": int,          # generation length (tg128 -> 128)
    "prompt_tokens": int,
    "prompt": str,              # the prompt as described ("Count from 1 to 50")
    "lead": str,                # the words that introduce a pasted tool output (its caption, command and prompt lines)
    "around": str,              # the sentences and paragraphs next to the figure that state no figure of their own
    "output_sample": str,
    # conditions and people
    "clocks": str,              # locked/raised clocks as stated
    "power": str,               # power limit as stated ("450 W")
    "kv_cache": str,            # KV cache dtype as stated ("fp8", "q4_0", "nvfp4_ds_mla")
    "lossy_note": str,          # a quality-for-speed setting the page describes for this figure ("6 experts", fewer than 8)
    "rig_clocks": str,          # clocks the page states once for its whole rig, not for this figure
    "rig_power": str,           # a power limit the page states once for its whole rig ("limited to 300 W")
    "submitter": str,
    "date": str,                # as written, ISO when unambiguous
    "command": str,             # the published command line
    "notes": str,               # the notes field, verbatim
    "label": str,               # row/section label that identifies the entry on the page
    "caption": str,             # the title or caption of the table the figure sat in
}

NUMERIC_FIELDS = {k for k, t in FIELDS.items() if t in (int, float)}


@dataclass
class ParsedEntry:
    fields: dict[str, Any] = field(default_factory=dict)
    quotes: dict[str, str] = field(default_factory=dict)   # field -> exact text it came from
    extra: dict[str, Any] = field(default_factory=dict)    # unknown source fields, verbatim
    warnings: list[str] = field(default_factory=list)      # per-field parse warnings, in words
    context: str = ""                                       # the row / sentence the entry came from
    # field -> W3C TextQuoteSelector + TextPositionSelector into ParseResult.text:
    # {"exact", "prefix", "suffix", "start", "end"}; text[start:end] == exact == quotes[field]
    selectors: dict[str, dict] = field(default_factory=dict)
    # which part chose this entry when it was not the rules: the learned reader's proposal
    # ({"part": "learned", "model": ..., "model_version": ..., "confidence": ...}); None: the rules
    chosen_by: dict | None = None

    def get(self, name: str, default=None):
        return self.fields.get(name, default)


@dataclass
class ParseResult:
    kind: str                                   # json | html | markdown | text
    entries: list[ParsedEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # page-level warnings
    text: str = ""                              # the decoded document every quote and offset refers to
    encoding: str = ""                          # how it was decoded ("utf-8", "cp1252", ...)
    # (text, blocks) the pipeline segmented, so the learned reader reuses them (scrapers.learned)
    segmented: tuple | None = field(default=None, repr=False, compare=False)
    # figures the learned reader proposes (ParsedEntry with chosen_by), stored with status "proposed"
    proposals: list[ParsedEntry] = field(default_factory=list, compare=False)

PHASES = ("decode", "prefill", "e2e")
SCOPES = ("per_user", "aggregate")
