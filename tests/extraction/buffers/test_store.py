"""The in-memory buffer store: write modes, how appends join, and reads through lines/grep."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from extraction.buffers.store import (
    JSON,
    TEXT,
    BufferStore,
    MemoryBufferStore,
    UnknownBuffer,
    append_separator,
    append_text,
    appended_content_type,
)
from extraction.directives.file_paths import InvalidFilePath
from extraction.directives.specs import WriteMode
from extraction.documents.line_matchers import LiteralMatcher
from extraction.errors import NotFound
from extraction.variables.errors import InvalidVariableName

T0 = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)


def ticking() -> Iterator[dt.datetime]:
    minute = 0
    while True:
        yield T0 + dt.timedelta(minutes=minute)
        minute += 1


@pytest.fixture
def store() -> MemoryBufferStore:
    clock = ticking()
    return MemoryBufferStore(clock=lambda: next(clock))


def test_the_memory_store_is_a_buffer_store(store: MemoryBufferStore) -> None:
    assert isinstance(store, BufferStore)


def test_write_records_sizes_in_chars_bytes_and_lines(store: MemoryBufferStore) -> None:
    info = store.write("notes", "héllo\nwörld\n", source="tool search", handle="h1")
    assert (info.name, info.chars, info.bytes, info.lines) == ("notes", 12, 14, 2)
    assert (info.source, info.handle, info.content_type) == ("tool search", "h1", TEXT)
    assert info.created_at == info.updated_at == T0
    assert store.write("one", "no newline").lines == 1
    assert store.write("empty", "").lines == 0


@pytest.mark.parametrize(
    ("old", "new", "joined"),
    [("", "b", "b"), ("a", "b", "a\nb"), ("a\n", "b", "a\nb"), ("a\n\n", "b", "a\n\nb"), ("a", "", "a\n")],
)
def test_an_appended_part_starts_on_a_new_line(old: str, new: str, joined: str) -> None:
    assert append_text(old, new) == joined
    assert old + append_separator(old[-1:]) + new == joined  # the last character decides (what a server reads)


def test_appending_keeps_a_shared_text_type_and_makes_json_text() -> None:
    assert appended_content_type(TEXT, TEXT) == TEXT
    assert appended_content_type("text/markdown", "text/markdown") == "text/markdown"
    assert appended_content_type(JSON, JSON) == TEXT
    assert appended_content_type("text/markdown", TEXT) == TEXT


def test_write_modes(store: MemoryBufferStore) -> None:
    store.write("foo", '{"a":1}', content_type=JSON)
    appended = store.write("foo", '{"a":2}', mode=WriteMode.APPEND, content_type=JSON)
    assert store.text("foo") == '{"a":1}\n{"a":2}'
    assert appended.content_type == TEXT
    assert (appended.created_at, appended.updated_at) == (T0, T0 + dt.timedelta(minutes=1))
    replaced = store.write("foo", "fresh", mode=WriteMode.REPLACE)
    assert store.text("foo") == "fresh"
    assert replaced.created_at == T0
    fresh = store.write("foo", "other", mode=WriteMode.NEW)
    assert fresh.name == "foo_2"
    assert store.write("foo", "third", mode=WriteMode.NEW).name == "foo_3"
    assert store.write("bar", "first", mode=WriteMode.NEW).name == "bar"
    assert [i.name for i in store.buffers()] == ["foo", "foo_2", "foo_3", "bar"]


def test_append_to_a_missing_buffer_creates_it(store: MemoryBufferStore) -> None:
    assert store.write("new", "x", mode=WriteMode.APPEND).chars == 1


def test_names_are_validated(store: MemoryBufferStore) -> None:
    with pytest.raises(InvalidVariableName, match="invalid buffer name 'a b'"):
        store.write("a b", "x")


def test_reads_go_through_the_line_and_grep_engines(store: MemoryBufferStore) -> None:
    store.write("log", "".join(f"line {n}\n" for n in range(1, 11)))
    window = store.read_lines("log", 3, 2, max_line_chars=100)
    assert window.text == "     3\tline 3\n     4\tline 4"
    assert (window.first_line, window.last_line, window.total_lines) == (3, 4, 10)
    found = store.grep("log", LiteralMatcher("line 1"), context=1, max_matches=5, max_line_chars=100)
    assert found.text == "     1:\tline 1\n     2-\tline 2\n--\n     9-\tline 9\n    10:\tline 10"
    assert store.read_chars("log", 5, 8) == "1\nline 2"


def test_unknown_buffers_are_not_found_and_list_what_exists(store: MemoryBufferStore) -> None:
    store.write("b", "x")
    store.write("a", "y")
    with pytest.raises(UnknownBuffer) as caught:
        store.read_chars("zz", 0, 1)
    assert isinstance(caught.value, NotFound)
    assert caught.value.message == 'unknown buffer "zz"; available buffers: a, b'
    assert MemoryBufferStore().info("zz") is None


def test_export_writes_files_with_write_modes(store: MemoryBufferStore) -> None:
    store.write("r", "report")
    assert store.export("r", "out/r.md", WriteMode.APPEND).path == "out/r.md"
    store.export("r", "out/r.md", WriteMode.APPEND)
    assert store.files["out/r.md"] == "report\nreport"
    store.export("r", "out/r.md", WriteMode.REPLACE)
    assert store.files["out/r.md"] == "report"
    result = store.export("r", "out/r.md", WriteMode.NEW)
    assert (result.path, result.chars, result.write_mode) == ("out/r_2.md", 6, WriteMode.NEW)
    with pytest.raises(InvalidFilePath):
        store.export("r", "../escape", WriteMode.REPLACE)
