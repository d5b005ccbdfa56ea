"""Storage: the WARC files and what indexes them, at the bottom of the domains.

Owns: the WARC store (``warcfiles``: the writer lock, rotation, catching the index up with the files,
torn-tail repair, the CDXJ), record indexing (``indexing``: a ``snapshots`` row per whole record, and the
registry of handlers that restore what Caveat's own ``metadata`` records stand for), loading a record
(``snapshots``), the tamper-evident log (``tlog``) and copying a database (``dbcopy``).
May use: the core (``app.config``, ``app.db``, ``app.models``, ``app.errors``) and ``archive/``. Nothing
above it: a domain that writes metadata records registers its handler here (``register_metadata_handler``).
"""
