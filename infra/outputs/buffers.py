"""buffer_ops on the server: the pure `BufferStore` protocol over a session's stored variables.

The tool's rules (argument checks, read limits, the texts the model sees) are all
`extraction.buffers.ops`; this module only reads and writes. Lines and grep go through
`infra.outputs.stored.StoredOutput` — the same code as `/v1/outputs/{handle}/lines|grep` and the
read-grep sub-agent, RE2 included — and `export` writes a session file with `infra.outputs.storing.store_output`,
so an export is placed (write modes, compare-and-set) exactly like a routed upload.

Character windows (`peek`, `read` by offset) count characters, not bytes: content without multi-byte
characters (chars == bytes) is read with one ranged read; other content is decoded from the start
up to the window (a stream, never the whole content at once).
"""

from __future__ import annotations

import codecs
import datetime as dt
from collections.abc import Sequence

from extraction.buffers.store import BufferInfo, ExportResult, unknown_buffer
from extraction.directives.specs import WriteMode
from extraction.documents.grep import GrepResult
from extraction.documents.line_matchers import LineMatcher
from extraction.documents.lines import ReadResult
from extraction.documents.stats import Measured
from infra.blobstore import BlobStore
from infra.outputs.content import HEAD_BYTES, iter_content, read_content, token_index
from infra.outputs.stored import StoredOutput
from infra.outputs.storing import Target, UploadMeta, WriteOptions, store_output
from infra.outputs.variables import SessionVariables
from infra.outputs.versions import StoredSource
from infra.outputs.views import reading_view
from infra.stores.records import OutputRecord, RecordStores, SessionRecord, Space

EXPORT_SOURCE = "export"


class SessionBuffers:
    """`BufferStore` for one session: its variables are the buffers, its files the export targets."""

    def __init__(
        self,
        records: RecordStores,
        blobs: BlobStore,
        session: SessionRecord,
        *,
        options: WriteOptions,
        grep_time_budget: float | None = None,
    ) -> None:
        self.records, self.blobs, self.session, self.options = records, blobs, session, options
        self.grep_time_budget = grep_time_budget
        self.variables = SessionVariables(records, blobs, session, block_size=options.block_size)

    def _record(self, name: str) -> OutputRecord:
        record = self.variables.record(name)
        if record is None:
            raise unknown_buffer(name, self.variables.names())
        return record

    def _readable(self, name: str) -> OutputRecord:
        """The variable as the model may read it: its redacted view when it holds secrets."""
        return reading_view(self._record(name))

    def _output(self, name: str) -> StoredOutput:
        return StoredOutput(
            self.blobs, self._readable(name), block_size=self.options.block_size, grep_time_budget=self.grep_time_budget
        )

    def buffers(self) -> Sequence[BufferInfo]:
        return [buffer_info(reading_view(record)) for record in self.variables.all_records()]

    def info(self, name: str) -> BufferInfo | None:
        record = self.variables.record(name)
        return buffer_info(reading_view(record)) if record is not None else None

    def read_chars(self, name: str, offset: int, length: int) -> str:
        record = self._readable(name)
        if record.chars == record.stats.bytes:  # one byte per character: byte offsets are char offsets
            return read_content(self.blobs, record, offset, offset + length).decode("utf-8", errors="replace")
        return _char_window(self.blobs, record, offset, length, self.options.block_size)

    def read_lines(self, name: str, start_line: int, count: int, *, max_line_chars: int) -> ReadResult:
        return self._output(name).read(offset=start_line, limit=count, max_line_chars=max_line_chars)

    def grep(
        self, name: str, matcher: LineMatcher, *, context: int, max_matches: int, max_line_chars: int
    ) -> GrepResult:
        return self._output(name).grep_matcher(
            matcher, before=context, after=context, max_matches=max_matches, max_line_chars=max_line_chars
        )

    def export(self, name: str, path: str, write_mode: WriteMode) -> ExportResult:
        record = export_output(
            self.records, self.blobs, self.session, self._record(name), path, write_mode, self.options
        )
        return ExportResult(path=record.path or path, chars=_chars(self._record(name)), write_mode=write_mode)


def export_output(
    records: RecordStores,
    blobs: BlobStore,
    session: SessionRecord,
    source: OutputRecord,
    path: str,
    write_mode: WriteMode,
    options: WriteOptions,
) -> OutputRecord:
    """Write a stored output's content to the session file `path` (validated, expanded) with a write mode."""
    output = StoredOutput(blobs, source, block_size=options.block_size)
    measured = Measured(stats=source.stats, index=token_index(blobs, source))
    meta = UploadMeta(source.tool_name, source.tool_args, source.content_type, source=EXPORT_SOURCE)

    def copy(key: str) -> None:
        blobs.put_stream(key, iter_content(blobs, source, block_size=options.block_size))

    return store_output(
        blobs,
        records,
        session,
        meta,
        measured,
        output.line_index(),
        copy,
        target=Target(Space.FILE, path, write_mode),
        options=options,
        source=StoredSource(blobs, source),
        chars=source.chars,
        head=read_content(blobs, source, 0, HEAD_BYTES),
    )


def buffer_info(record: OutputRecord) -> BufferInfo:
    return BufferInfo(
        name=record.name or "",
        chars=_chars(record),
        bytes=record.stats.bytes,
        lines=record.stats.lines,
        content_type=record.content_type,
        source=record.origin,
        handle=record.handle,
        created_at=_utc(record.created_at),
        updated_at=_utc(record.written_at),
    )


def _chars(record: OutputRecord) -> int:
    return record.chars if record.chars is not None else record.stats.bytes


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def _char_window(blobs: BlobStore, record: OutputRecord, offset: int, length: int, block_size: int) -> str:
    """Characters [offset, offset + length), decoding from the start and keeping only the window."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    seen, parts, want = 0, [], length
    for block in iter_content(blobs, record, block_size=block_size):
        text = decoder.decode(block)
        start = max(0, offset - seen)
        seen += len(text)
        if start < len(text):
            piece = text[start : start + want]
            parts.append(piece)
            want -= len(piece)
            if want <= 0:
                break
    else:
        tail = decoder.decode(b"", final=True)
        parts.append(tail[max(0, offset - seen) :][: max(0, want)])
    return "".join(parts)
