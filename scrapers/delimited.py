"""CSV and TSV documents (``text/csv``, ``text/tab-separated-values``): one table, read by a tool's
recogniser (llama-bench ``-o csv``) or by meaning like any other table."""

from __future__ import annotations

from scrapers.blocks import Block
from scrapers.fields import ParseResult
from scrapers.segment import delimited_table


def read_delimited(text: str, result: ParseResult, *, tsv: bool = False) -> ParseResult:
    from scrapers import pipeline

    tbl = delimited_table(text, 0, len(text), "\t" if tsv else None)
    if tbl is None:
        return pipeline.read_document(text, result)
    blk = Block("table", tbl.start, tbl.end, text[tbl.start:tbl.end], table=tbl)
    return pipeline.read_document(text, result, blocks=[blk])
