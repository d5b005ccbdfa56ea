"""Rebuilding from the WARC files: ``caveat reindex`` (``reindex``: every record indexed again, every
metadata record's meaning restored, every source reparsed) and ``caveat import-warc`` (``importer``).
May use: crawl, measure and everything below; imports every domain that registers a metadata handler.
"""
