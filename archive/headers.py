"""Header lists as Caveat keeps them: ``[(name, value), ...]`` in the order received."""

from __future__ import annotations


def first(headers: list[tuple[str, str]], name: str) -> str | None:
    """The value of the first header called ``name`` (any case), or None."""
    name = name.lower()
    return next((v for k, v in headers if k.lower() == name), None)
