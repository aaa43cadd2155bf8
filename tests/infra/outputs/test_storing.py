"""Storing a measured output: blob, both indexes and the record together, or nothing at all."""

from __future__ import annotations

import pytest

from extraction.documents.lines import LineIndex, build_line_index
from extraction.documents.stats import TokenIndex, measure
from extraction.errors import NotFound
from infra.blobstore import MemoryBlobStore
from infra.outputs.storing import UploadMeta, output_blob_keys, store_output
from infra.stores.records import RecordStores, memory_record_stores

DATA = b"first line\nsecond line\n"


def stored(records: RecordStores, blobs: MemoryBlobStore, session):
    measured = measure([DATA])
    meta = UploadMeta("logs.fetch", '{"q": 1}', "text/plain")
    return store_output(
        blobs, records, session, meta, measured, build_line_index([DATA]), lambda key: blobs.put_bytes(key, DATA)
    )


def test_an_output_is_stored_with_its_indexes_and_record() -> None:
    records, blobs = memory_record_stores(session_ttl_seconds=60), MemoryBlobStore()
    session = records.sessions.create_session("acme")
    record = stored(records, blobs, session)
    assert blobs.get_bytes(record.blob_key) == DATA
    assert TokenIndex.model_validate_json(blobs.get_bytes(record.index_key)).offsets[0] == 0
    assert LineIndex.model_validate_json(blobs.get_bytes(record.lines_key or "")).lines == 2
    assert records.outputs.get_output(record.handle, "acme") == record
    assert (record.tool_name, record.tool_args, record.stats.lines) == ("logs.fetch", '{"q": 1}', 2)
    assert records.sessions.session_handles(session.id) == [record.handle]


def test_an_output_stored_into_a_session_deleted_meanwhile_is_discarded() -> None:
    records, blobs = memory_record_stores(session_ttl_seconds=60), MemoryBlobStore()
    session = records.sessions.create_session()
    records.sessions.drop_session_records(session.id)
    with pytest.raises(NotFound, match="deleted during the upload"):
        stored(records, blobs, session)
    assert blobs.delete_prefix(f"sessions/{session.id}/") == 0
    assert records.sessions.session_handles(session.id) == []


def test_the_blob_keys_of_an_output_are_the_blob_and_its_two_indexes() -> None:
    records, blobs = memory_record_stores(session_ttl_seconds=60), MemoryBlobStore()
    record = stored(records, blobs, records.sessions.create_session())
    assert output_blob_keys(record) == [record.blob_key, f"{record.blob_key}.tokidx", f"{record.blob_key}.lines"]
