"""Writing one version of an output: its content (inline or a blob), its indexes and what was measured.

A version never changes once written (`infra.stores.records.model.OutputRecord`), so a reader streaming it,
or an extraction job chunking it, can never see two contents mixed. Writing a variable or a file
therefore always means writing a new version and then moving its alias (`infra.outputs.placement`):

* the uploaded `Part` becomes a version as it is (write modes `replace`, `new`, a first `append`);
* `appended(current, part)` streams the current version's content, the separator of
  `extraction.buffers.store.append_separator` and the part into a new version, measuring it on the
  way (stats, token index, line index, characters, preview) — never holding it whole.

Small contents (at most `WriteOptions.inline_max_bytes`) are kept in the record itself: storing a
200-byte output then costs no blob round trip at all, and reading it none either.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Protocol

from extraction.buffers.store import append_separator, appended_content_type
from extraction.documents.kinds import ContentKind
from extraction.documents.lines import count_chars
from extraction.documents.tokens import DEFAULT_ENCODING
from infra.blobstore import BlobStore
from infra.outputs.content import HEAD_BYTES, char_count, iter_content, read_content
from infra.outputs.metering import Known, Meter, kind_of, preview_of
from infra.outputs.redacted import redacted_keys, with_redaction
from infra.outputs.views import Blocks, Derivation, derived_keys, drop_view, view_key
from infra.stores.records import OutputRecord, SessionRecord, TextView, blob_key, new_id

log = logging.getLogger("toolout.versions")

TOKEN_INDEX_SUFFIX, LINE_INDEX_SUFFIX = ".tokidx", ".lines"
"""The indexes stored beside each output blob (`docs/architecture.md`, storage layout)."""

WriteBlob = Callable[[str], None]
"""Writes the output's bytes under the given blob key (from a file, or from memory)."""


@dataclass
class UploadMeta:
    """Where the output came from, as the agent framework describes it."""

    tool_name: str = "unknown"
    tool_args: str = "{}"
    content_type: str = "text/plain"
    source: str | None = None
    expires_at: float | None = None
    """The retention deadline asked at upload (`OutputRecord.expires_at`)."""


@dataclass(frozen=True)
class WriteOptions:
    """How versions are written: the inline threshold (0: always a blob), tokenizer, read block, clock."""

    inline_max_bytes: int = 0
    encoding: str = DEFAULT_ENCODING
    block_size: int = 8 << 20
    clock: Callable[[], float] = time.time


class Source(Protocol):
    """Content that can be read again from the start (a spool file, bytes, a stored output)."""

    def blocks(self, block_size: int) -> Iterator[bytes]: ...


class BytesSource:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def blocks(self, block_size: int) -> Iterator[bytes]:
        return (self.data[i : i + block_size] for i in range(0, len(self.data), block_size))


class FileSource:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)  # not a `Path`: its request-unique name would be interned (api/ingest.py)

    def blocks(self, block_size: int) -> Iterator[bytes]:
        with open(self.path, "rb") as file:
            while block := file.read(block_size):
                yield block


class StoredSource:
    def __init__(self, blobs: BlobStore, record: OutputRecord) -> None:
        self.blobs, self.record = blobs, record

    def blocks(self, block_size: int) -> Iterator[bytes]:
        return iter_content(self.blobs, self.record, block_size=block_size)


class Writer:
    """Writes versions into one session's blob space."""

    def __init__(self, blobs: BlobStore, session: SessionRecord, options: WriteOptions) -> None:
        self.blobs, self.session, self.options = blobs, session, options

    def record(
        self,
        meta: UploadMeta,
        known: Known,
        *,
        inline: bytes | None,
        created_at: float | None,
        handle: str | None = None,
        parts: int = 1,
    ) -> OutputRecord:
        """A new version's record (a fresh handle unless given); the caller stores its content under `blob_key`."""
        handle, now = handle or new_id(), self.options.clock()
        key = blob_key(self.session.id, handle)
        stats = known.measured.stats
        return OutputRecord(
            handle=handle,
            session_id=self.session.id,
            tenant=self.session.tenant,
            tool_name=meta.tool_name,
            tool_args=meta.tool_args,
            content_type=meta.content_type,
            source=meta.source,
            stats=stats,
            blob_key=key,
            index_key=f"{key}{TOKEN_INDEX_SUFFIX}",
            lines_key=None if inline is not None else f"{key}{LINE_INDEX_SUFFIX}",
            created_at=now if created_at is None else created_at,
            updated_at=now,
            chars=known.chars,
            preview=preview_of(known.head or b"", stats.bytes, meta.content_type, parts=parts),
            parts=parts,
            inline=inline,
            kind=kind_of(meta.content_type, known.head, parts),
            expires_at=meta.expires_at,
        )

    def store_indexes(self, record: OutputRecord, known: Known) -> None:
        if record.inline is None and record.lines_key:
            self.blobs.put_bytes(record.index_key, known.measured.index.model_dump_json().encode())
            self.blobs.put_bytes(record.lines_key, known.lines.model_dump_json().encode())

    def with_text_view(self, record: OutputRecord, blocks: Blocks) -> OutputRecord:
        """`record` with the text view of its content when it is HTML (`infra.outputs.views`).

        A page the converter cannot read stays readable as HTML: the failure is logged, not raised.
        """
        if not ContentKind(record.kind).is_html:
            return record
        try:
            view = self.text_view(record, blocks)
        except Exception:  # the raw content is stored and readable: the view only makes reading it cheaper
            log.warning("no text view for HTML output %s", record.handle, exc_info=True)
            for key in derived_keys(record):
                self.blobs.delete(key)
            return record
        return record.model_copy(update={"text_view": view})

    def text_view(self, record: OutputRecord, blocks: Blocks) -> TextView:
        """Stream the Markdown of the content into its own blob (inline beside an inline content), measured."""
        derivation, meter = Derivation(blocks, self.options.block_size), Meter(self.options.encoding, scan=False)
        if record.inline is not None:
            data = b"".join(meter.metered(derivation.markdown()))
            known = meter.finish()
            return derivation.view(record, known.measured.stats, known.chars, data)
        self.blobs.put_stream(view_key(record), meter.metered(derivation.markdown()))
        known = meter.finish()
        view = derivation.view(record, known.measured.stats, known.chars, None)
        self.blobs.put_bytes(view.index_key, known.measured.index.model_dump_json().encode())
        if view.lines_key:
            self.blobs.put_bytes(view.lines_key, known.lines.model_dump_json().encode())
        return view

    def derived(self, record: OutputRecord, blocks: Blocks, holds_secret: bool | None) -> OutputRecord:
        """`record` with what is read instead of its content: the text view (HTML), the redacted view."""
        return self.with_redaction(self.with_text_view(record, blocks), blocks, holds_secret)

    def with_redaction(self, record: OutputRecord, blocks: Blocks, holds_secret: bool | None) -> OutputRecord:
        """`record` with its redacted view when its readable text holds a secret (`infra.outputs.redacted`)."""
        return with_redaction(self.blobs, record, blocks, holds_secret, self.options.encoding, self.options.block_size)

    def discard(self, record: OutputRecord) -> None:
        """Best effort: what survives is removed with the session (a prefix delete)."""
        try:
            drop_view(self.blobs, record)
            for derived in redacted_keys(record):
                self.blobs.delete(derived)
            for key in (record.blob_key, record.index_key, record.lines_key):
                if key and record.inline is None:
                    self.blobs.delete(key)
        except Exception:
            log.warning("could not remove the blobs of unused version %s", record.handle, exc_info=True)

    def appended(self, current: OutputRecord, part: Part) -> OutputRecord:
        """A new version: `current`'s content, the separator, then the part's (streamed and measured)."""
        size = current.stats.bytes
        last = read_content(self.blobs, current, size - 1, size) if size else b""
        separator = append_separator(last.decode("latin-1")).encode()  # one byte, one char: only "\n" matters
        blocks = itertools.chain(
            iter_content(self.blobs, current, block_size=self.options.block_size),
            [separator] if separator else [],
            part.blocks(),
        )
        content_type = appended_content_type(current.content_type, part.meta.content_type)
        meta = replace(part.meta, content_type=content_type)
        total, parts = size + len(separator) + part.size, current.parts + 1
        if total <= self.options.inline_max_bytes:
            return self.inline_version(meta, b"".join(blocks), created_at=current.created_at, parts=parts)
        return self.streamed_version(meta, blocks, created_at=current.created_at, parts=parts)

    def inline_version(self, meta: UploadMeta, data: bytes, *, created_at: float | None, parts: int) -> OutputRecord:
        meter = Meter(self.options.encoding)
        meter.feed(data)
        known = meter.finish()
        record = self.record(meta, known, inline=data, created_at=created_at, parts=parts)
        return self.with_redaction(record, lambda: [data], known.holds_secret)

    def streamed_version(
        self, meta: UploadMeta, blocks: Iterable[bytes], *, created_at: float | None, parts: int
    ) -> OutputRecord:
        """Stream `blocks` into a new blob, measuring them on the way (the blob store pulls them)."""
        meter, handle = Meter(self.options.encoding), new_id()
        self.blobs.put_stream(blob_key(self.session.id, handle), meter.metered(blocks))
        known = meter.finish()
        record = self.record(meta, known, inline=None, created_at=created_at, handle=handle, parts=parts)
        try:
            self.store_indexes(record, known)
            stored = lambda: iter_content(self.blobs, record, block_size=self.options.block_size)  # noqa: E731
            return self.with_redaction(record, stored, known.holds_secret)
        except BaseException:
            self.discard(record)
            raise


class Part:
    """The output being stored: measured once, written as a version of its own only if it becomes one.

    An append to an existing variable does not need the part as a version (the combined content is
    written instead), so the part is materialised lazily: `blocks()` reads it from its `source` (the
    spool file) until then, and from its stored version after.
    """

    def __init__(
        self,
        writer: Writer,
        meta: UploadMeta,
        known: Known,
        *,
        write_blob: WriteBlob,
        source: Source | None = None,
    ) -> None:
        self.writer, self.meta, self.known = writer, meta, known
        self._write_blob, self._source = write_blob, source
        self._version: OutputRecord | None = None

    @property
    def size(self) -> int:
        return self.known.measured.stats.bytes

    @property
    def materialised(self) -> OutputRecord | None:
        return self._version

    def blocks(self) -> Iterator[bytes]:
        block = self.writer.options.block_size
        if self._version is None and self._source is not None:
            return self._source.blocks(block)
        return iter_content(self.writer.blobs, self.version(), block_size=block)

    def version(self) -> OutputRecord:
        """The part as a version of its own (written once; later calls return the same record)."""
        if self._version is None:
            self._version = self._write()
        return self._version

    def _write(self) -> OutputRecord:
        writer, inline = self.writer, self._small_content()
        if inline is not None and (self.known.chars is None or self.known.head is None):
            self.known = replace(self.known, chars=count_chars(inline), head=inline[:HEAD_BYTES])
        known = self.known
        record = writer.record(self.meta, known, inline=inline, created_at=None)
        if inline is not None:
            return writer.derived(record, lambda: [inline], known.holds_secret)
        source = self._source if known.head is not None else None
        try:
            if source is not None:  # before the write: `put_file` may move the spool file the views read
                record = writer.derived(record, self._source_blocks(source), known.holds_secret)
            self._write_blob(record.blob_key)
            writer.store_indexes(record, known)
            if known.chars is None or known.head is None:
                record = self._completed(record)
            if source is None:
                record = writer.derived(record, self._stored_blocks(record), known.holds_secret)
        except BaseException:
            writer.discard(record)
            raise
        return record

    def _source_blocks(self, source: Source) -> Blocks:
        """The content from the upload's own source (no blob round trip), read before the store may take it."""
        size = self.writer.options.block_size
        return lambda: source.blocks(size)

    def _stored_blocks(self, record: OutputRecord) -> Blocks:
        """The content again from the stored blob: what a part written by a callback can be read from."""
        size = self.writer.options.block_size
        return lambda: iter_content(self.writer.blobs, record, block_size=size)

    def _small_content(self) -> bytes | None:
        if self._source is None or self.size > self.writer.options.inline_max_bytes:
            return None
        return b"".join(self._source.blocks(self.writer.options.block_size))

    def _completed(self, record: OutputRecord) -> OutputRecord:
        """Characters and preview for a part written by a callback that did not report them (embedded mode)."""
        blobs = self.writer.blobs
        chars = char_count(iter_content(blobs, record, block_size=self.writer.options.block_size))
        head = read_content(blobs, record, 0, HEAD_BYTES)
        known = replace(self.known, chars=chars, head=head)
        self.known = known
        return record.model_copy(
            update={
                "chars": chars,
                "preview": preview_of(head, record.stats.bytes, record.content_type),
                "kind": kind_of(record.content_type, head),
            }
        )
