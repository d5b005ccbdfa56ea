"""Replay and citations: Wayback/Memento replay (``wayback``), ``/c/{id}`` citation pages and quote
citations (``citations``), the links they are built from (``links``), withdrawal and restriction of a
capture as records and tombstones (``withdrawal``), and WACZ export (``wacz_export``).
May use: storage and the core. Never the audit: re-auditing after a withdrawal is ``app.audit.access``.
"""
