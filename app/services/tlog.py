"""The tamper-evident log of every record Caveat writes (filled in by the Merkle log, issue 13)."""


def append_written(settings, warc_file, written) -> None:
    """Append records just written and fsynced to the log (no log yet: nothing to do)."""
    return None
