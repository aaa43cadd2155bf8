"""Chunk plans (`RecordPlans`) are kept with their output and go with it.
On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from infra.stores.records import MAX_PLANS, RecordStores
from tests.infra.stores.conftest import output


def test_a_plan_is_kept_per_output_and_key(records: RecordStores) -> None:
    session = records.sessions.create_session()
    first, second = output(session.id), output(session.id)
    records.outputs.put_output(first)
    records.outputs.put_output(second)
    records.plans.keep_chunk_plan(first, "k1", "[[0,4,2]]")
    assert records.plans.chunk_plan(first, "k1") == "[[0,4,2]]"
    assert records.plans.chunk_plan(first, "k2") is None and records.plans.chunk_plan(second, "k1") is None


def test_plans_go_with_their_output_and_its_session(records: RecordStores) -> None:
    session = records.sessions.create_session()
    deleted, dropped = output(session.id), output(session.id)
    for record in (deleted, dropped):
        records.outputs.put_output(record)
        records.plans.keep_chunk_plan(record, "k", "[]")
    records.outputs.delete_output(deleted)
    assert records.plans.chunk_plan(deleted, "k") is None and records.plans.chunk_plan(dropped, "k") == "[]"
    records.sessions.drop_session_records(session.id)
    assert records.plans.chunk_plan(dropped, "k") is None


def test_no_plan_is_kept_for_an_output_that_is_gone(records: RecordStores) -> None:
    """A start step still planning when its output is deleted must not leave a plan behind."""
    session = records.sessions.create_session()
    record = output(session.id)
    records.plans.keep_chunk_plan(record, "k", "[]")
    records.outputs.put_output(record)
    assert records.plans.chunk_plan(record, "k") is None


def test_an_output_keeps_at_most_max_plans(records: RecordStores) -> None:
    session = records.sessions.create_session()
    record = output(session.id)
    records.outputs.put_output(record)
    for n in range(MAX_PLANS):
        records.plans.keep_chunk_plan(record, f"k{n}", str(n))
    records.plans.keep_chunk_plan(record, "k0", "again")
    assert (
        records.plans.chunk_plan(record, "k0") == "again"
        and records.plans.chunk_plan(record, f"k{MAX_PLANS - 1}") is not None
    )
    records.plans.keep_chunk_plan(record, "new", "x")
    kept = [records.plans.chunk_plan(record, f"k{n}") for n in range(MAX_PLANS)]
    assert records.plans.chunk_plan(record, "new") == "x" and kept == [None] * MAX_PLANS
