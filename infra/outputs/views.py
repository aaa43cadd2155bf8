"""An HTML output's text view: derived once when the output is stored, read instead of the markup.

A documentation page is several times more tokens as HTML than as the text a browser shows (docs/content-kinds.md):
chunked, grepped and billed as HTML, a job pays that many times over and Read/Grep answer with
`<li><a class="reference internal" …`.
So a version whose kind (`extraction.documents.kinds`) is HTML gets a Markdown view beside its blob
(`<blob_key>.text.md`, with its own `.tokidx` and `.lines`), measured like any content; versions never
change, so it is derived once per content (its `source_sha256`). `reading_view` hands readers a record
whose content *is* the view, so chunking, Read/Grep, `/lines`, `/grep` and the prompts' stats use it
without knowing; `view="raw"` (and buffer_ops, which copy content) keep the HTML.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

from extraction.documents.kinds import ContentKind
from extraction.documents.stats import DocumentStats
from extraction.errors import InvalidInput
from infra.blobstore import BlobStore
from infra.outputs.html_text import converter_name, markdown_blocks
from infra.stores.records import OutputRecord, TextView

log = logging.getLogger("toolout.views")

View = Literal["text", "raw"]
VIEW_SUFFIX = ".text.md"
VIEW_CONTENT_TYPE = "text/markdown; charset=utf-8"
TEXT_VIEW_HEADER = "[text view of HTML: Markdown derived from the page; line numbers refer to this text view]"

Blocks = Callable[[], Iterable[bytes]]
"""Reads the raw content again from its start."""


def view_key(record: OutputRecord) -> str:
    return f"{record.blob_key}{VIEW_SUFFIX}"


def derived_keys(record: OutputRecord) -> list[str]:
    """Every blob a text view of `record` may have written (what a failed derivation removes)."""
    key = view_key(record)
    return [key, f"{key}.tokidx", f"{key}.lines"]


def reading_view(record: OutputRecord, view: str = "text", *, redact: bool = True) -> OutputRecord:
    """The record to read: one whose content, indexes and stats are the redacted view's when the output holds
    secrets (`infra.outputs.redacted`; whatever `view` asks: an HTML output's is its text view, redacted), else
    the text view's for an HTML output with one (unless `view="raw"`), else `record` itself. `redact=False`
    (a policy turned off, with its reason logged by the caller) skips the redacted view."""
    if redact and record.redaction is not None:
        content_type = VIEW_CONTENT_TYPE if record.text_view is not None else record.content_type
        return as_view(record, record.redaction.view, content_type)
    text = record.text_view
    if view == "raw" or text is None:
        return record
    return as_view(record, text, VIEW_CONTENT_TYPE)


def as_view(record: OutputRecord, text: TextView, content_type: str) -> OutputRecord:
    return record.model_copy(
        update={
            "blob_key": text.blob_key,
            "index_key": text.index_key,
            "lines_key": text.lines_key,
            "stats": text.stats,
            "chars": text.chars,
            "inline": text.inline,
            "content_type": content_type,
        }
    )


def is_text_view(record: OutputRecord) -> bool:
    """Whether `record` came from `reading_view` and reads an HTML output's text view."""
    if record.text_view is None:
        return False
    redacted = record.redaction.view.blob_key if record.redaction is not None else None
    return record.blob_key in (record.text_view.blob_key, redacted)


def view_header(record: OutputRecord) -> str | None:
    """What Read and Grep say first when they read a text view (None for any other content)."""
    return TEXT_VIEW_HEADER if is_text_view(record) else None


def with_header(record: OutputRecord, rendered: str) -> str:
    header = view_header(record)
    return f"{header}\n{rendered}" if header else rendered


def message_stats(record: OutputRecord) -> DocumentStats:
    """The stats the too-large message gives: the bytes stored, the lines and tokens a job will read."""
    text = record.text_view
    if text is None:
        return record.stats
    return record.stats.model_copy(update={"lines": text.stats.lines, "tokens": text.stats.tokens})


def check_readable(record: OutputRecord) -> None:
    """Binary content never goes into a prompt: a job on it is refused with what it is instead."""
    if record.kind == ContentKind.BINARY:
        raise InvalidInput(
            f"output {record.handle!r} is binary ({record.content_type}, {record.stats.bytes} bytes): it has no text "
            "to extract from; download it from /content instead",
            handle=record.handle,
            kind=record.kind,
        )


class Derivation:
    """Measures the Markdown of an HTML content as it streams into its blob (`infra.outputs.versions.Meter`)."""

    def __init__(self, blocks: Blocks, block_size: int) -> None:
        self.blocks, self.block_size = blocks, block_size
        self.started = time.perf_counter()

    def markdown(self) -> Iterator[bytes]:
        return markdown_blocks(self.blocks())

    def view(self, record: OutputRecord, stats: DocumentStats, chars: int | None, inline: bytes | None) -> TextView:
        key = view_key(record)
        return TextView(
            converter=converter_name(),
            source_sha256=record.stats.sha256,
            stats=stats,
            blob_key=key,
            index_key=derived_keys(record)[1],
            lines_key=None if inline is not None else derived_keys(record)[2],
            chars=chars,
            inline=inline,
            seconds=time.perf_counter() - self.started,
        )


def view_blob_keys(record: OutputRecord) -> list[str]:
    """The blobs a text view owns (none when it is inline or absent)."""
    text = record.text_view
    if text is None or text.inline is not None:
        return []
    return [key for key in (text.blob_key, text.index_key, text.lines_key) if key]


def drop_view(blobs: BlobStore, record: OutputRecord) -> None:
    for key in view_blob_keys(record):
        blobs.delete(key)
