"""Reviewers' corrections as a workflow (issue 27): record a correction (fix, add, reject) in the WARC
files and the ``corrections`` table, store the source's newest snapshot again with it applied, re-audit,
and record a ``corrected`` change event (webhooks follow).
May use: watch, crawl and every domain below.
"""
