"""One stored output's content, wherever it lives: inline in its record (small outputs) or in a blob.

Every reader of content goes through here — the REST content/lines/grep routes, buffer_ops, variable
lookups, the workers' chunk and truncate reads — so an output kept inline (no blob round trip to
store it) is exactly as readable and extractable as one in the blob store.

Also here: what counts as JSON. Content is parsed as JSON (lazily, when a reference asks for it)
when its content type is JSON (`application/json`, `text/json`, `…+json`), or when it is `text/plain`
(the upload default) and starts, after blanks, with `{` or `[`; anything else is text. Content that
fails to parse is text after all (a log line `[2026-01-01] …` starts with `[` too).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from extraction.documents.lines import count_chars
from extraction.documents.stats import TokenIndex, measure
from extraction.documents.structured import SNIFF_BYTES, StructuredKind, sniff_structured
from extraction.protocols import BlobReader
from infra.blobstore import BlobStore
from infra.stores.records import OutputRecord

HEAD_BYTES = 4096
"""Bytes read to preview an output or sniff whether it is JSON."""

JSON_TYPES = ("application/json", "text/json")
SNIFFED_TYPES = ("text/plain", "")


class BytesReader:
    """A `BlobReader` over one output's inline bytes (the key is ignored: there is only one blob)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def size(self, key: str) -> int:
        return len(self.data)

    def read_range(self, key: str, start: int, end: int) -> bytes:
        return self.data[max(0, start) : max(start, end)]

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int | None = 8 << 20
    ) -> Iterator[bytes]:
        stop = len(self.data) if end is None else min(end, len(self.data))
        step = block_size or 8 << 20
        return (self.data[pos : min(stop, pos + step)] for pos in range(start, stop, step))


def content_reader(blobs: BlobStore, record: OutputRecord) -> BlobReader:
    """What reads `record.blob_key`: its inline bytes, or the blob store."""
    return BytesReader(record.inline) if record.inline is not None else blobs


def iter_content(
    blobs: BlobStore, record: OutputRecord, start: int = 0, end: int | None = None, *, block_size: int = 8 << 20
) -> Iterator[bytes]:
    """The content in blocks (a missing blob fails here, not at the first block)."""
    return content_reader(blobs, record).iter_range(record.blob_key, start, end, block_size=block_size)


def read_content(blobs: BlobStore, record: OutputRecord, start: int, end: int) -> bytes:
    return content_reader(blobs, record).read_range(record.blob_key, start, end)


def token_index(blobs: BlobStore, record: OutputRecord) -> TokenIndex:
    """The stored token index; an inline output's is rebuilt (it is a few hundred bytes: microseconds)."""
    if record.inline is not None:
        return measure([record.inline], record.stats.encoding).index
    return TokenIndex.model_validate_json(blobs.get_bytes(record.index_key))


def stored_blob_keys(record: OutputRecord) -> list[str]:
    """The blobs an output owns (none when it is inline)."""
    view = record.text_view
    view_keys = [] if view is None or view.inline is not None else [view.blob_key, view.index_key, view.lines_key]
    redacted = record.redaction.view if record.redaction is not None else None
    if redacted is not None and redacted.inline is None:
        view_keys += [redacted.blob_key, redacted.index_key, redacted.lines_key]
    if record.inline is not None:
        return []
    return [key for key in (record.blob_key, record.index_key, record.lines_key, *view_keys) if key]


def char_count(blocks: Iterator[bytes]) -> int:
    """Characters of UTF-8 content given in blocks (continuation bytes are per byte, so blocks may split anywhere)."""
    return sum(count_chars(block) for block in blocks)


def head_text(head: bytes) -> str:
    """The first bytes as text; a character cut at the end is dropped, invalid bytes are replaced."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(head)


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def json_declared(content_type: str) -> bool:
    kind = media_type(content_type)
    return kind in JSON_TYPES or kind.endswith("+json")


def json_candidate(content_type: str, head: bytes) -> bool:
    """Whether to try parsing the content as JSON (rules in the module docstring)."""
    if json_declared(content_type):
        return True
    return media_type(content_type) in SNIFFED_TYPES and head.lstrip()[:1] in (b"{", b"[")


def structured_kind(blobs: BlobStore, record: OutputRecord) -> StructuredKind | None:
    """What the output's first bytes suggest it is (JSON, NDJSON, CSV/TSV), or None: one ranged read."""
    return sniff_structured(read_content(blobs, record, 0, SNIFF_BYTES), record.content_type)
