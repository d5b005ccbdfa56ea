"""Parsers: pure functions from archived bytes to parsed claims.

A plain library: it never imports ``app`` or ``web``.
"""
