"""Watching: schedules and queued crawls (``schedule``), change events and the Atom feed (``changes``),
webhooks (``hooks``), the job queue (``jobs``, which knows its jobs by name; ``schedule`` and ``hooks``
register what they run) and the workers that run it (``worker``).
May use: crawl and everything below it.
"""
