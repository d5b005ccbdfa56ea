"""`caveat source add|list|remove` and the sources service."""

from __future__ import annotations

import pytest

from app.db import Database
from app.errors import BadRequest, Conflict, NotFound
from app.claims.sources import add_source, get_source, list_sources, remove_source


def test_add_list_remove_through_the_cli(cli):
    r = cli("source", "add", "board", "https://example.org/lb", "--kind", "HTML")
    assert r.exit_code == 0, r.output
    assert "added source board: https://example.org/lb (kind html)" in r.output
    r = cli("source", "add", "post", "https://example.org/post")
    assert "kind guessed at first crawl" in r.output
    r = cli("source", "list")
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("board\thtml\thttps://example.org/lb\tnever crawled")
    assert lines[1].startswith("post\t?\t")
    r = cli("source", "remove", "post")
    assert r.exit_code == 0 and "kept" in r.output
    assert "post" not in cli("source", "list").output


def test_cli_errors_are_one_line_with_a_fix(cli):
    cli("source", "add", "board", "https://example.org/lb")
    r = cli("source", "add", "board", "https://example.org/other")
    assert r.exit_code == 1 and "already exists" in r.output and "caveat source remove board" in r.output
    r = cli("source", "add", "x", "ftp://example.org/")
    assert r.exit_code == 1 and "http(s) URL" in r.output
    r = cli("source", "add", "x", "https://example.org/", "--kind", "pdf")
    assert r.exit_code == 2 and "json" in r.output
    r = cli("source", "remove", "nope")
    assert r.exit_code == 1 and "caveat source list" in r.output
    r = cli("crawl", "nope")
    assert r.exit_code == 1 and "No source named 'nope'" in r.output


def test_removing_then_adding_again_revives_the_same_source(backend_settings):
    db = Database(backend_settings)
    with db.session() as s:
        first = add_source(s, "board", "https://example.org/a", "json")
        remove_source(s, "board")
        with pytest.raises(NotFound):
            get_source(s, "board")
        again = add_source(s, "board", "https://example.org/b")
        assert again.id == first.id and again.url == "https://example.org/b" and again.kind is None
        assert [x.name for x in list_sources(s)] == ["board"]
        with pytest.raises(Conflict):
            add_source(s, "board", "https://example.org/c")
        with pytest.raises(BadRequest, match="one of json, html, markdown, text"):
            add_source(s, "other", "https://example.org/c", "xml")
    db.dispose()
