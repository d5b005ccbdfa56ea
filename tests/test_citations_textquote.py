"""archive.textquote: page text for HTML/JSON/markdown/text and TextQuoteSelector matching."""

from __future__ import annotations

from hypothesis import given, strategies as st

from archive import textquote as tq

HTML = b"""<html><head><title>T</title><style>p{}</style></head><body>
<script>var hidden = 1;</script><h1>Board</h1><table><tr><td>Qwen3</td><td>412.5</td></tr></table>
<p>Notes:   steady\n state <b>180</b>-210 tok/s.</p><!-- a comment --><noscript>js off</noscript></body></html>"""


def test_html_visible_text_collapsed_blocks_on_lines():
    text = tq.page_text(HTML, "text/html; charset=utf-8")
    assert "hidden" not in text and "p{}" not in text and "comment" not in text and "js off" not in text
    assert "Notes: steady state 180-210 tok/s." in text
    assert "Board\nQwen3 412.5" in text


def test_kinds_and_decoding():
    assert tq.text_kind("application/json") == "json" and tq.text_kind("text/markdown") == "markdown"
    assert tq.text_kind(None, b"<!DOCTYPE html><p>x") == "html"
    assert tq.page_text(b'{"a": "caf\xc3\xa9"}', "application/json") == '{"a": "café"}'
    assert tq.page_text("| a | b |\r\n".encode(), "text/markdown") == "| a | b |\n"
    assert tq.decode(b"caf\xe9", "utf-8") == "café"  # falls back to Latin-1
    assert tq.page_text(b"", "text/html") == ""


def test_whitespace_is_ignored_when_matching():
    text = tq.page_text(HTML, "text/html")
    span = tq.find_span(text, "steady state 180-210\ntok/s.")
    assert span and text[span[0]:span[1]] == "steady state 180-210 tok/s."
    assert tq.find_span(text, "steadystate180") is not None
    assert tq.find_span(text, "steady state 190") is None
    assert tq.find_span(text, "   ") is None


def test_prefix_and_suffix_select_the_occurrence():
    text = "a: 100 tok/s\nb: 100 tok/s\nc: 100 tok/s"
    assert tq.find_span(text, "100 tok/s") == (3, 12)
    assert tq.find_span(text, "100 tok/s", prefix="b:") == (16, 25)
    assert tq.find_span(text, "100 tok/s", prefix="b:", suffix="\nc") == (16, 25)
    assert tq.find_span(text, "100 tok/s", prefix="c:", suffix="x") is None
    m = tq.find_quote(text, "100", prefix="c: ")
    assert m.highlight() == ("a: 100 tok/s\nb: 100 tok/s\nc: ", "100", " tok/s")


def test_falls_back_to_source():
    m = tq.find_quote("visible", 'href="/x"', source='<a href="/x">visible</a>')
    assert m.where == "source" and m.text[m.start:m.end] == 'href="/x"'
    assert tq.find_quote("visible", "absent", source="<p>visible</p>") is None


@given(st.text(alphabet="ab \n\t", min_size=1, max_size=40), st.integers(0, 39), st.integers(1, 20))
def test_any_substring_is_found_whatever_its_whitespace(text, start, length):
    piece = text[start:start + length]
    if not piece.strip():
        return
    respaced = " \n ".join(piece.split())
    span = tq.find_span(text, respaced)
    assert span is not None
    assert "".join(text[span[0]:span[1]].split()) == "".join(piece.split())
