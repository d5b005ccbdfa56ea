"""Crawl: the capture-parse-audit workflow of one source (``workflow``): capture, parse the archived bytes,
store entries, audit, report; and reparse of stored snapshots.
May use: capture, the audit, claims, replay, storage and the core. Schedules and queues are ``app.watch``.
"""
