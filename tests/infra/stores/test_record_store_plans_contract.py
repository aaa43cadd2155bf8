"""The `RecordStore` keeps chunk plans with their output: on Redis and on the in-memory twin alike."""

from __future__ import annotations

from infra.stores.records import RecordStore
from infra.stores.records.base import MAX_PLANS
from tests.infra.stores.test_record_store_contract import output


def test_a_plan_is_kept_per_output_and_key(records: RecordStore) -> None:
    session = records.create_session()
    first, second = output(session.id), output(session.id)
    records.put_output(first)
    records.put_output(second)
    records.keep_chunk_plan(first, "k1", "[[0,4,2]]")
    assert records.chunk_plan(first, "k1") == "[[0,4,2]]"
    assert records.chunk_plan(first, "k2") is None and records.chunk_plan(second, "k1") is None


def test_plans_go_with_their_output_and_its_session(records: RecordStore) -> None:
    session = records.create_session()
    deleted, dropped = output(session.id), output(session.id)
    for record in (deleted, dropped):
        records.put_output(record)
        records.keep_chunk_plan(record, "k", "[]")
    records.delete_output(deleted)
    assert records.chunk_plan(deleted, "k") is None and records.chunk_plan(dropped, "k") == "[]"
    records.drop_session_records(session.id)
    assert records.chunk_plan(dropped, "k") is None


def test_no_plan_is_kept_for_an_output_that_is_gone(records: RecordStore) -> None:
    """A start step still planning when its output is deleted must not leave a plan behind."""
    session = records.create_session()
    record = output(session.id)
    records.keep_chunk_plan(record, "k", "[]")
    records.put_output(record)
    assert records.chunk_plan(record, "k") is None


def test_an_output_keeps_at_most_max_plans(records: RecordStore) -> None:
    session = records.create_session()
    record = output(session.id)
    records.put_output(record)
    for n in range(MAX_PLANS):
        records.keep_chunk_plan(record, f"k{n}", str(n))
    records.keep_chunk_plan(record, "k0", "again")
    assert records.chunk_plan(record, "k0") == "again" and records.chunk_plan(record, f"k{MAX_PLANS - 1}") is not None
    records.keep_chunk_plan(record, "new", "x")
    kept = [records.chunk_plan(record, f"k{n}") for n in range(MAX_PLANS)]
    assert records.chunk_plan(record, "new") == "x" and kept == [None] * MAX_PLANS
