"""Repetition rules: output stuck in a loop, and prompts that ask for repeated or copied text."""

from __future__ import annotations

import re

from app.audit.rules.base import quote, rule, search

_LOOP_WORDS = re.compile(
    r"\battractors?\b|\bloop(?:s|ed|ing)?\b|\bcyclic(?:al)?\b|\bperiodic\b|\bdegenerate\b|"
    r"\brepeat(?:ed|ing|s)?\s+(?:output|text|tokens?|sequence|pattern|phrase|itself)\b|"
    r"\brepetitive\s+(?:output|text|generation)\b", re.I)
_LOOP_FIELDS = ("notes", "output_sample", "label")

_PROMPT_WORDS = re.compile(
    r"\bcount(?:ing)?\s+(?:from|to|up|down)\b|\brepeat\b|\brepeating\b|\bverbatim\b|\bcop(?:y|ies|ying)\b|"
    r"\brecite\b|\bsame\s+(?:prompt|sentence|text)\b|\b\d+\s+times\b", re.I)
# In the notes only phrases that clearly describe the prompt count ("repeated 5 runs" does not).
_NOTES_PROMPT_WORDS = re.compile(
    r"\bcount(?:ing)?\s+from\s+\d|\brepeat\s+(?:this|the|a)\s+(?:sentence|text|prompt|paragraph|word)|"
    r"\bverbatim\b|\bcopy\s+(?:this|the)\s+(?:text|sentence|paragraph)|\brepetitive\s+prompts?\b|"
    r"\bsame\s+prompt\b", re.I)


def periodic(sample: str, *, min_units: int = 12, min_repeats: int = 3, agreement: float = 0.9) -> int | None:
    """The period (in words, else characters) of a sample that mostly repeats itself, or None."""
    for units in (sample.split(), list(sample.replace(" ", ""))):
        n = len(units)
        if n < min_units:
            continue
        for p in range(1, n // min_repeats + 1):
            same = sum(1 for i in range(n - p) if units[i] == units[i + p])
            if same / (n - p) >= agreement:
                return p
    return None


@rule("repeat_loop", "critical",
      "The output was a loop or an attractor: a proposer that replays recent text is always right on it, so "
      "the figure measures replay, not generation.")
def repeat_loop(f, q, ctx):
    hit = search(f, _LOOP_FIELDS, _LOOP_WORDS)
    if hit:
        name, m = hit
        return {"numbers": {"phrase": m.group(0), "field": name}, "quotes": [quote(f, q, name, m)]}
    sample = f.get("output_sample")
    if isinstance(sample, str):
        p = periodic(sample)
        if p is not None:
            return {"numbers": {"period": p, "sample_length": len(sample)},
                    "explanation": f"The output sample repeats itself every {p} units: a proposer that replays "
                                   "recent text is always right on it, so the figure measures replay.",
                    "quotes": [quote(f, q, "output_sample")]}
    return None


@rule("repetitive_prompt", "high",
      "The prompt asks for counting, repeating or copying, which lets a speculative proposer guess most "
      "tokens; real prompts run slower.")
def repetitive_prompt(f, q, ctx):
    hit = search(f, ("prompt",), _PROMPT_WORDS) or search(f, ("notes",), _NOTES_PROMPT_WORDS)
    if not hit:  # a prompt inside a published command: -p "Repeat this sentence for 50 times"
        command = f.get("command")
        for m in _COMMAND_PROMPT.finditer(command if isinstance(command, str) else ""):
            inner = _PROMPT_WORDS.search(m.group("p"))
            if inner:
                return {"numbers": {"phrase": inner.group(0), "field": "command", "prompt": m.group("p")},
                        "quotes": [quote(f, q, "command")]}
        return None
    name, m = hit
    return {"numbers": {"phrase": m.group(0), "field": name}, "quotes": [quote(f, q, name, m)]}


_COMMAND_PROMPT = re.compile(r"(?:^|\s)(?:-p|--prompt|--prompt-text)[\s=]+(?P<q>[\"'])(?P<p>.+?)(?P=q)")
