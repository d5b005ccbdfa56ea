"""WARC writing and reading, the index, replay helpers, citations, Memento, WACZ, fixity.

A plain library: it never imports ``app`` or ``web``.
"""
