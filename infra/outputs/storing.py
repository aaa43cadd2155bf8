"""Storing one measured tool output as a variable or a file of its session: content, indexes, record, alias.

Shared by the API's upload route (the content comes from a spool file) and the embedded mode (the
content is in memory), so both store an output the same way and the pipeline finds the same layout.
Where it goes and how it joins what is there is `infra.outputs.placement`; how a version is written (inline
in its record when small, else a blob with its token and line indexes) is `infra.outputs.versions`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from extraction.documents.lines import LineIndex
from extraction.documents.stats import Measured
from extraction.errors import NotFound
from infra.blobstore import BlobStore
from infra.outputs.content import stored_blob_keys
from infra.outputs.metering import Known
from infra.outputs.placement import DEFAULT_TARGET, Target, place
from infra.outputs.versions import (
    LINE_INDEX_SUFFIX,
    TOKEN_INDEX_SUFFIX,
    Part,
    Source,
    UploadMeta,
    WriteBlob,
    WriteOptions,
    Writer,
)
from infra.outputs.views import reading_view
from infra.settings import Settings
from infra.stores.records import OutputRecord, RecordStores, SessionRecord

if TYPE_CHECKING:  # infra.query imports this module (`loaded_form_prefix`)
    from infra.query.loaded_forms import LoadedForms

log = logging.getLogger("toolout.outputs")

__all__ = [
    "LINE_INDEX_SUFFIX",
    "TOKEN_INDEX_SUFFIX",
    "Target",
    "UploadMeta",
    "WriteBlob",
    "WriteOptions",
    "delete_stored_output",
    "forget_loaded_form",
    "output_blob_keys",
    "store_output",
    "write_options",
]


def write_options(settings: Settings) -> WriteOptions:
    """How this deployment writes versions of outputs (`infra.outputs.versions`)."""
    return WriteOptions(
        inline_max_bytes=settings.inline_output_max_bytes,
        encoding=settings.tokenizer_encoding,
        block_size=settings.blob_read_block_bytes,
    )


def loaded_form_prefix(record: OutputRecord) -> str:
    """Where the query strategy keeps an output's tables (`infra.query.query_prefix`, without importing DuckDB)."""
    return f"{record.blob_key}.duckdb/"


def output_blob_keys(record: OutputRecord) -> list[str]:
    return stored_blob_keys(record)


def store_output(
    blobs: BlobStore,
    records: RecordStores,
    session: SessionRecord,
    meta: UploadMeta,
    measured: Measured,
    lines: LineIndex,
    write_blob: WriteBlob,
    *,
    target: Target = DEFAULT_TARGET,
    options: WriteOptions | None = None,
    source: Source | None = None,
    chars: int | None = None,
    head: bytes | None = None,
) -> OutputRecord:
    """Store the output at `target` (by default under the next `<tool>_<n>` name); all or nothing.

    `source` lets the content be read again without a round trip to the blob store (the spool file);
    `chars` and `head` (its first `infra.outputs.content.HEAD_BYTES`) are measured from the stored content
    when not given. A failure, or the session vanishing meanwhile, removes what was written.
    """
    writer = Writer(blobs, session, options or WriteOptions())
    part = Part(writer, meta, Known(measured, lines, chars, head), write_blob=write_blob, source=source)
    try:
        record = place(records, part, target)
    except NotFound:
        _require_session(records, session.id, session.tenant)
        raise
    try:
        _require_session(records, record.session_id, record.tenant)
    except BaseException:
        delete_stored_output(blobs, records, record)
        raise
    return record


def delete_stored_output(
    blobs: BlobStore, records: RecordStores, record: OutputRecord, forms: LoadedForms | None = None
) -> None:
    """Remove one version: its blobs first, so a failure leaves a record a retry can still find; the pointer
    to its loaded form (`forms`) last, after the record, so a keeper racing the deletion sees one or the other
    gone and forgets it itself (`infra.query.loaded_forms`). `forms` None: nothing can have loaded it yet."""
    for key in output_blob_keys(record):
        blobs.delete(key)
    readable = read_forms(record)
    for form in readable:
        if form.inline is None:
            blobs.delete_prefix(loaded_form_prefix(form))  # the query strategy's Parquet tables, if any
    records.outputs.delete_output(record)
    if forms is not None:
        for form in readable:
            forget_loaded_form(forms, form)


def read_forms(record: OutputRecord) -> list[OutputRecord]:
    """The record as tables may have been loaded from it: as stored, and as its redacted view."""
    return [record] if record.redaction is None else [record, reading_view(record)]


def forget_loaded_form(forms: LoadedForms, record: OutputRecord) -> None:
    """Drop the pointer to the output's loaded form, if it points at this output's tables (an inline output
    has none: its tables are never kept)."""
    if record.inline is None:
        forms.forget(record.tenant, record.stats.sha256, loaded_form_prefix(record))


def _require_session(records: RecordStores, session_id: str, tenant: str) -> None:
    """The session must still exist: a DELETE or sweep that ran during the upload must not leave an output behind
    in a dead session. Called after a `NotFound` while placing too, so that only a vanished session reads
    "deleted during the upload" and any other miss (a blob the store lost) keeps its own message."""
    try:
        records.sessions.get_session(session_id, tenant)
    except NotFound:
        raise _deleted_during_upload(session_id) from None


def _deleted_during_upload(session_id: str) -> NotFound:
    return NotFound(f"session {session_id!r} was deleted during the upload", session_id=session_id)
