"""Claims: the sources Caveat follows (``sources``, with their schedules' stored form), parsed entries and
their versions and recipes as stored from a ``ParseResult`` (``store``), and stable entry keys and recipe
ids (``identity``).
May use: storage, the core and ``scrapers/``. Independent of ``app.replay``.
"""
