"""`caveat measure` (issue 15): prompts, the timed streaming client, output checks, the run, its
storage as WARC evidence and its citation page. See docs/measure.md."""
