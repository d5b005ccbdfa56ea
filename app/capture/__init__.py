"""Capture: fetching pages over HTTP (``http``) or in Chromium (``browser``) and storing them whole under
the writer lock, and ``caveat verify`` (``verify``).
May use: the audit (to know what a source's entries are), claims, replay, storage and the core.
"""
