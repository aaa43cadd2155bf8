"""The cheap sniff `auto` routes on: structured forms from the first bytes, text stays text."""

from __future__ import annotations

import pytest

from extraction.documents.structured import StructuredKind, sniff_structured


@pytest.mark.parametrize(
    ("head", "content_type", "kind"),
    [
        (b'[{"id": 1}, {"id": 2}]', "", StructuredKind.JSON),
        (b'\xef\xbb\xbf  \n{"data": {"results": [1, 2]}}', "", StructuredKind.JSON),
        (b'{"id": 1, "a": {"b": 2}}\n{"id": 2}\n', "", StructuredKind.NDJSON),
        (b'{"id": 1,\n "a": 2}\n', "", StructuredKind.JSON),
        (b"id,name,total\n1,ann,10\n2,bob,20\n3,c", "", StructuredKind.CSV),
        (b"id\tname\n1\tann\n2\tbob\n", "", StructuredKind.TSV),
        (b"anything at all", "text/csv; charset=utf-8", StructuredKind.CSV),
        (b"2026-11-01 INFO served, ok\n2026-11-01 WARN slow\n", "", None),
        (b"just one line, with a comma", "", None),
        (b"", "", None),
    ],
)
def test_sniff(head: bytes, content_type: str, kind: StructuredKind | None) -> None:
    assert sniff_structured(head, content_type) == kind


def test_a_log_whose_lines_open_with_a_bracket_is_not_json() -> None:
    """Apache's error log (`[Sun Dec 04 04:47:44 2005] [error] …`) would cost `auto` a failed load as JSON."""
    log = b"".join(b"[Sun Dec 04 04:47:%02d 2005] [error] mod_jk child init 1 -2\n" % n for n in range(30))
    assert sniff_structured(log) is None
    assert sniff_structured(b'[\n  {"id": 1}\n]') is StructuredKind.JSON
