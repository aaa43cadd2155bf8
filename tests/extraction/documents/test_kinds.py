"""The kind of a stored content: the declared type first, then its first bytes."""

from __future__ import annotations

import pytest

from extraction.documents.kinds import ContentKind, is_text, sniff_kind

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.mark.parametrize(
    ("content_type", "head", "kind"),
    [
        ("text/html; charset=utf-8", b"anything", ContentKind.HTML),
        ("application/xhtml+xml", b"<html/>", ContentKind.XHTML),
        ("image/png", b"", ContentKind.BINARY),
        ("application/zip", b"PK", ContentKind.BINARY),
        ("text/plain", PNG, ContentKind.BINARY),
        ("application/octet-stream", b"\xff\xfe\xfa text", ContentKind.BINARY),
        ("application/json", b"{}", ContentKind.JSON),
        ("application/vnd.api+json", b"{}", ContentKind.JSON),
        ("text/plain", b"  [1, 2]", ContentKind.JSON),
        ("", b"\xef\xbb\xbf<!DOCTYPE html><html>", ContentKind.HTML),
        ("text/plain", b"<!-- generated -->\n<html lang=en>", ContentKind.HTML),
        ("application/octet-stream", b'<html xmlns="http://www.w3.org/1999/xhtml">', ContentKind.XHTML),
        ("application/xml", b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml">', ContentKind.XHTML),
        ("text/xml", b'<?xml version="1.0"?><feed/>', ContentKind.TEXT),
        ("text/plain", b"<htmlish> is not a tag we know", ContentKind.TEXT),
        ("text/plain", b"2026-01-01 INFO started", ContentKind.TEXT),
        ("text/csv", b"a,b\n1,2", ContentKind.TEXT),
    ],
)
def test_the_declared_type_decides_first_then_the_bytes(content_type: str, head: bytes, kind: ContentKind) -> None:
    assert sniff_kind(content_type, head) is kind


def test_a_character_cut_at_the_end_of_the_head_is_still_text() -> None:
    head = "café".encode()[:-1]  # the head stops inside "é"
    assert is_text(head) and sniff_kind("text/plain", head) is ContentKind.TEXT


def test_only_html_kinds_get_a_text_view() -> None:
    assert [kind for kind in ContentKind if kind.is_html] == [ContentKind.HTML, ContentKind.XHTML]


@pytest.mark.parametrize("head", [b"[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok", b"{not json}", b"[x]"])
def test_a_bracket_that_opens_no_json_value_is_text(head: bytes) -> None:
    """An Apache error log opens with `[Sun Dec 04 …]`: the live corpus test saw it stored as `json`."""
    assert sniff_kind("text/plain", head) is ContentKind.TEXT


@pytest.mark.parametrize("head", [b'[{"a": 1}]', b"[ 1, 2]", b"[]", b"[\n  true]", b'{"k": 1}', b"{ }", b"[  ", b"{"])
def test_a_json_array_or_object_is_json_however_it_opens(head: bytes) -> None:
    assert sniff_kind("text/plain", head) is ContentKind.JSON
