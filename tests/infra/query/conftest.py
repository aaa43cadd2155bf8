"""Outputs stored in an in-memory blob store, as `open_tables` and `preload_tables` read them."""

from __future__ import annotations

import uuid

from extraction.documents.stats import measure
from infra.blobstore.memory import MemoryBlobStore
from infra.stores.records import OutputRecord, blob_key


def stored(blobs: MemoryBlobStore, data: bytes) -> OutputRecord:
    """An output holding `data`, kept as a blob (not inline)."""
    session, handle = str(uuid.uuid4()), str(uuid.uuid4())
    key = blob_key(session, handle)
    blobs.put_bytes(key, data)
    stats = measure([data]).stats
    return OutputRecord(
        handle=handle,
        session_id=session,
        tool_name="t",
        tool_args="{}",
        stats=stats,
        blob_key=key,
        index_key=f"{key}.tokidx",
        lines_key=f"{key}.lines",
    )
