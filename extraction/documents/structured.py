"""Does an output look like data a SQL engine can load? Decided from its first bytes, in microseconds.

The `query` strategy loads an output into tables (JSON array, JSON object of arrays, NDJSON,
CSV/TSV). Loading is the real test, and it happens on the query worker; this sniff only lets
`auto` choose cheaply at the start step: a wrong guess costs one failed load, after which the mode
is chosen as if the output were text.
"""

from __future__ import annotations

import csv
import json
from enum import StrEnum

from extraction.documents.kinds import opens_json

SNIFF_BYTES = 64 * 1024
"""How much of the head the sniff reads (one ranged read at the start step)."""

_JSON_OPENING = 256
"""Characters enough to see how a JSON array or object opens (`opens_json`)."""
_CSV_TYPES = {"text/csv": "csv", "text/tab-separated-values": "tsv"}


class StructuredKind(StrEnum):
    JSON = "json"
    NDJSON = "ndjson"
    CSV = "csv"
    TSV = "tsv"


def sniff_structured(head: bytes, content_type: str = "") -> StructuredKind | None:
    """The structured form `head` (the first bytes) suggests, or None for text."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    declared = _CSV_TYPES.get(content_type.split(";", 1)[0].strip().lower())
    if declared:
        return StructuredKind(declared)
    if opens_json(text[:_JSON_OPENING].encode("utf-8")):
        return StructuredKind.NDJSON if text[:1] == "{" and _ndjson(text) else StructuredKind.JSON
    return _delimited(text)


def _ndjson(text: str) -> bool:
    """Two or more lines, the first a complete JSON object on its own."""
    first, newline, rest = text.partition("\n")
    if not newline or rest.lstrip()[:1] != "{":
        return False
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _delimited(text: str) -> StructuredKind | None:
    """A header and rows with the same number of commas (or tabs), at least two columns."""
    lines = [line for line in text.splitlines()[:20] if line.strip()]
    if not text.endswith("\n") and len(lines) > 2:
        lines = lines[:-1]  # the last line may be cut where the head ends
    if len(lines) < 2:
        return None
    for delimiter, kind in (("\t", StructuredKind.TSV), (",", StructuredKind.CSV)):
        widths = {len(row) for row in csv.reader(lines, delimiter=delimiter)}
        if len(widths) == 1 and widths.pop() >= 2:
            return kind
    return None
