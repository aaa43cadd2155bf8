"""Receiving and storing an upload: the body is streamed to a temp file and measured on the way, never held whole.

Network chunks (often a few KiB) are batched to ~1 MiB and handed to a worker thread, which
writes the batch to the spool file, feeds the `StatsCounter` (sha256, lines, tokens) and the
`LineIndexBuilder`. While one batch is processed the event loop already receives the next, so
tokenizing overlaps the network and never blocks the loop. The byte limit is enforced as bytes
arrive; whatever goes wrong, the temp file is removed before the error leaves this module.

Storing is all-or-nothing from the client's view: blob, token index, line index, then the record;
a failure (or the session vanishing meanwhile) removes whatever was already written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlparse

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from extraction.errors import InvalidInput, NotFound, PayloadTooLarge
from extraction.lines import LineIndex, LineIndexBuilder
from extraction.stats import Measured, StatsCounter
from infra.blobstore import BlobStore
from infra.records import OutputRecord, RecordStore, SessionRecord, blob_key, new_id
from infra.settings import Settings

log = logging.getLogger("toolout.api.ingest")

BATCH_BYTES = 1 << 20
TOKEN_INDEX_SUFFIX, LINE_INDEX_SUFFIX = ".tokidx", ".lines"
"""The indexes stored beside each output blob (`docs/architecture.md`, storage layout)."""
SPOOL_PREFIX = "upload-"


@dataclass
class UploadMeta:
    """Where the output came from, as the agent framework describes it."""

    tool_name: str
    tool_args: str
    content_type: str


@dataclass
class Spooled:
    """A fully received upload: the temp file (caller removes it) and what was measured."""

    path: Path
    size: int
    measured: Measured
    lines: LineIndex


def spool_dir(settings: Settings) -> Path:
    """`var/tmp` beside a local blob root (same file system, so `put_file` is a rename), else the OS temp dir."""
    url = urlparse(settings.blob_store)
    if url.scheme == "file":
        directory = Path(unquote(url.path)).parent / "tmp"
    else:
        directory = Path(tempfile.gettempdir()) / "toolout"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


class _Sink:
    """The thread-side consumer of batches: spool file, stats counter and line index, in step."""

    def __init__(self, file: BinaryIO, encoding: str) -> None:
        self._file = file
        self._stats = StatsCounter(encoding)
        self._lines = LineIndexBuilder()

    def consume(self, block: bytes) -> None:
        self._file.write(block)
        self._stats.feed(block)
        self._lines.feed(block)

    def finish(self) -> tuple[Measured, LineIndex]:
        self._file.flush()
        return self._stats.finish(), self._lines.finish()


class _Pipeline:
    """At most one batch in the thread pool while the next is being received (bounded memory)."""

    def __init__(self, consume: Callable[[bytes], None]) -> None:
        self._consume = consume
        self._pending: asyncio.Future[None] | None = None

    async def push(self, block: bytes) -> None:
        await self.drain()
        self._pending = asyncio.ensure_future(run_in_threadpool(self._consume, block))

    async def drain(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending


async def spool(stream: AsyncIterator[bytes], *, directory: Path, limit: int, encoding: str) -> Spooled:
    """Receive `stream` into a temp file under `directory`.

    `PayloadTooLarge` past `limit` bytes, `InvalidInput` if the body is empty.
    """
    fd, name = tempfile.mkstemp(prefix=SPOOL_PREFIX, dir=directory)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as file:
            sink = _Sink(file, encoding)
            size = await _pump(stream, _Pipeline(sink.consume), limit)
            if size == 0:
                raise InvalidInput("the request body is empty: send the tool output as the body")
            measured, lines = await run_in_threadpool(sink.finish)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Spooled(path=path, size=size, measured=measured, lines=lines)


async def _pump(stream: AsyncIterator[bytes], pipeline: _Pipeline, limit: int) -> int:
    """Batch the stream into the pipeline; on any error wait for the thread before the file closes."""
    size, batch = 0, bytearray()
    try:
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise too_large(limit, received=size)
            batch += chunk
            if len(batch) >= BATCH_BYTES:
                await pipeline.push(bytes(batch))
                batch.clear()
        await pipeline.push(bytes(batch))
        await pipeline.drain()
    except ClientDisconnect as exc:
        await _quietly(pipeline.drain())
        raise InvalidInput("the client disconnected before the upload was complete") from exc
    except BaseException:
        await _quietly(pipeline.drain())
        raise
    return size


async def _quietly(awaitable: asyncio.Future[None] | object) -> None:
    with contextlib.suppress(Exception):
        await awaitable  # type: ignore[misc]


def too_large(limit: int, **details: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the upload exceeds the limit of {limit} bytes; nothing was stored", limit=limit, **details)


# --- storing ----------------------------------------------------------------------------------
def output_blob_keys(record: OutputRecord) -> list[str]:
    return [key for key in (record.blob_key, record.index_key, record.lines_key) if key]


def new_output_record(session: SessionRecord, meta: UploadMeta, spooled: Spooled) -> OutputRecord:
    handle = new_id()
    key = blob_key(session.id, handle)
    return OutputRecord(
        handle=handle,
        session_id=session.id,
        tenant=session.tenant,
        tool_name=meta.tool_name,
        tool_args=meta.tool_args,
        content_type=meta.content_type,
        stats=spooled.measured.stats,
        blob_key=key,
        index_key=f"{key}{TOKEN_INDEX_SUFFIX}",
        lines_key=f"{key}{LINE_INDEX_SUFFIX}",
    )


def store_output(
    blobs: BlobStore, records: RecordStore, session: SessionRecord, meta: UploadMeta, spooled: Spooled
) -> OutputRecord:
    """Write everything under a fresh handle; the spool file passes to the store (it may be renamed)."""
    record = new_output_record(session, meta, spooled)
    try:
        blobs.put_file(record.blob_key, spooled.path)
        blobs.put_bytes(record.index_key, spooled.measured.index.model_dump_json().encode())
        blobs.put_bytes(f"{record.blob_key}{LINE_INDEX_SUFFIX}", spooled.lines.model_dump_json().encode())
        records.put_output(record)
        _check_session_survived(records, record)
    except BaseException:
        _discard(blobs, records, record)
        raise
    return record


def _check_session_survived(records: RecordStore, record: OutputRecord) -> None:
    """A DELETE or sweep that ran during the upload must not leave an output behind in a dead session."""
    try:
        records.get_session(record.session_id, record.tenant)
    except NotFound:
        raise NotFound(
            f"session {record.session_id!r} was deleted during the upload", session_id=record.session_id
        ) from None


def _discard(blobs: BlobStore, records: RecordStore, record: OutputRecord) -> None:
    """Best effort: whatever survives here is removed by the session's purge (prefix delete)."""
    try:
        records.delete_output(record)
        for key in output_blob_keys(record):
            blobs.delete(key)
    except Exception:
        log.warning("could not clean up output %s after a failed upload", record.handle, exc_info=True)
