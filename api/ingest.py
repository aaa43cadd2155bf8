"""Receiving and storing an upload: the body is streamed to a temp file and measured on the way, never held whole.

Network chunks (often a few KiB) are batched to ~1 MiB and handed to a worker thread, which
writes the batch to the spool file, feeds the `StatsCounter` (sha256, lines, tokens) and the
`LineIndexBuilder`. While one batch is processed the event loop already receives the next, so
tokenizing overlaps the network and never blocks the loop. The byte limit is enforced as bytes
arrive; whatever goes wrong, the temp file is removed before the error leaves this module.

Storing the received output (blob, indexes, record; all or nothing) is `infra.outputs.storing.store_output`.
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

from api.upload_guards import UploadTimedOut
from extraction.documents.lines import LineIndex
from extraction.documents.stats import Measured
from extraction.errors import InvalidInput, PayloadTooLarge
from infra.blobstore.base import unlink_quietly
from infra.outputs.metering import Known, Meter
from infra.settings import Settings

log = logging.getLogger("toolout.api.ingest")

BATCH_BYTES = 1 << 20
SPOOL_PREFIX = "upload-"


@dataclass
class Spooled:
    """A fully received upload: the temp file (caller removes it) and what was measured.

    The file's name is a plain `str`: a `Path` would intern its request-unique part, and churning CPython's
    interned-strings table steps a long-running process's RSS up (`bench/profiles/interned.py`)."""

    path: str
    size: int
    known: Known

    def read(self) -> bytes:
        with open(self.path, "rb") as file:
            return file.read()

    def remove(self) -> None:
        unlink_quietly(self.path)

    @property
    def measured(self) -> Measured:
        return self.known.measured

    @property
    def lines(self) -> LineIndex:
        return self.known.lines

    @property
    def chars(self) -> int:
        return self.known.chars or 0


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
    """The thread-side consumer of batches: the spool file and the `Meter` (stats, line index, chars), in step."""

    def __init__(self, file: BinaryIO, encoding: str) -> None:
        self._file = file
        self._meter = Meter(encoding)

    def consume(self, block: bytes) -> None:
        self._file.write(block)
        self._meter.feed(block)

    def finish(self) -> Known:
        self._file.flush()
        return self._meter.finish()


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


async def spool(
    stream: AsyncIterator[bytes], *, directory: Path, limit: int, encoding: str, read_timeout: float
) -> Spooled:
    """Receive `stream` into a temp file under `directory`.

    `PayloadTooLarge` past `limit` bytes, `InvalidInput` if the body is empty, `UploadTimedOut` when no byte
    arrives for `read_timeout` seconds.
    """
    fd, path = tempfile.mkstemp(prefix=SPOOL_PREFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as file:
            sink = _Sink(file, encoding)
            size = await _pump(_paced(stream, read_timeout), _Pipeline(sink.consume), limit)
            if size == 0:
                raise InvalidInput("the request body is empty: send the tool output as the body")
            known = await run_in_threadpool(sink.finish)
    except BaseException:
        unlink_quietly(path)
        raise
    return Spooled(path=path, size=size, known=known)


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


async def _paced(stream: AsyncIterator[bytes], read_timeout: float) -> AsyncIterator[bytes]:
    """`stream`, cut when the client sends nothing for `read_timeout` seconds (a gap, not the whole body)."""
    chunks = aiter(stream)
    while True:
        try:
            chunk = await asyncio.wait_for(anext(chunks), read_timeout)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise UploadTimedOut(
                f"no part of the body arrived for {read_timeout:g} s; nothing was stored", read_timeout=read_timeout
            ) from exc
        yield chunk


async def _quietly(awaitable: asyncio.Future[None] | object) -> None:
    with contextlib.suppress(Exception):
        await awaitable  # type: ignore[misc]


def too_large(limit: int, **details: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the upload exceeds the limit of {limit} bytes; nothing was stored", limit=limit, **details)
