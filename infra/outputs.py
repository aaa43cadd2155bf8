"""Storing one measured tool output: its blob, its two indexes and its record, all or nothing.

Shared by the API's upload route (the blob comes from a spool file) and the embedded mode (the blob
is in memory), so both store an output the same way and the pipeline finds the same layout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from extraction.errors import NotFound
from extraction.lines import LineIndex
from extraction.stats import Measured
from infra.blobstore import BlobStore
from infra.records import OutputRecord, RecordStore, SessionRecord, blob_key, new_id

log = logging.getLogger("toolout.outputs")

TOKEN_INDEX_SUFFIX, LINE_INDEX_SUFFIX = ".tokidx", ".lines"
"""The indexes stored beside each output blob (`docs/architecture.md`, storage layout)."""


@dataclass
class UploadMeta:
    """Where the output came from, as the agent framework describes it."""

    tool_name: str = "unknown"
    tool_args: str = "{}"
    content_type: str = "text/plain"


WriteBlob = Callable[[str], None]
"""Writes the output's bytes under the given blob key (from a file, or from memory)."""


def output_blob_keys(record: OutputRecord) -> list[str]:
    return [key for key in (record.blob_key, record.index_key, record.lines_key) if key]


def new_output_record(session: SessionRecord, meta: UploadMeta, measured: Measured) -> OutputRecord:
    handle = new_id()
    key = blob_key(session.id, handle)
    return OutputRecord(
        handle=handle,
        session_id=session.id,
        tenant=session.tenant,
        tool_name=meta.tool_name,
        tool_args=meta.tool_args,
        content_type=meta.content_type,
        stats=measured.stats,
        blob_key=key,
        index_key=f"{key}{TOKEN_INDEX_SUFFIX}",
        lines_key=f"{key}{LINE_INDEX_SUFFIX}",
    )


def store_output(
    blobs: BlobStore,
    records: RecordStore,
    session: SessionRecord,
    meta: UploadMeta,
    measured: Measured,
    lines: LineIndex,
    write_blob: WriteBlob,
) -> OutputRecord:
    """Write everything under a fresh handle; a failure (or the session vanishing meanwhile) removes it all."""
    record = new_output_record(session, meta, measured)
    try:
        write_blob(record.blob_key)
        blobs.put_bytes(record.index_key, measured.index.model_dump_json().encode())
        blobs.put_bytes(f"{record.blob_key}{LINE_INDEX_SUFFIX}", lines.model_dump_json().encode())
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
