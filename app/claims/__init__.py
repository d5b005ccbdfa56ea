"""Claims: the sources Caveat follows (``sources``, with their schedules' stored form), parsed entries and
their versions and recipes as stored from a ``ParseResult`` (``store``), stable entry keys, model keys and
recipe ids (``identity``), and the learned reader's model and proposals (``reader``).
May use: storage, the core and ``scrapers/``. Independent of ``app.replay``.
"""
