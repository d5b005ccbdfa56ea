"""``caveat measure`` (issue 15): non-repeating prompts (``prompts``), the timed streaming client
(``client``), output checks (``checks``), the run (``run``), its storage as WARC evidence (``store``) and
its citation page (``evidence``, which also registers the indexer's handler for measurement records).
May use: the audit (a measurement becomes a recipe's working number), storage and the core.
"""
