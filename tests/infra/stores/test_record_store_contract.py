"""The `RecordStore` promises, on Redis and on the in-memory twin alike."""

from __future__ import annotations

import pytest

from extraction.documents.stats import measure
from extraction.errors import NotFound
from infra.stores.records import OutputRecord, RecordStore, blob_key, new_id
from tests.infra.stores.conftest import Clock


def output(session_id: str, tenant: str = "dev") -> OutputRecord:
    handle = new_id()
    key = blob_key(session_id, handle)
    return OutputRecord(
        handle=handle,
        session_id=session_id,
        tenant=tenant,
        tool_name="search",
        tool_args='{"q": "x"}',
        stats=measure([b"a\nb\n"]).stats,
        blob_key=key,
        index_key=f"{key}.tokidx",
        lines_key=f"{key}.lines",
    )


def test_a_session_belongs_to_its_tenant(records: RecordStore) -> None:
    session = records.create_session("acme")
    assert records.get_session(session.id, "acme").id == session.id
    for tenant in ("globex", "dev"):
        with pytest.raises(NotFound):
            records.get_session(session.id, tenant)
    with pytest.raises(NotFound):
        records.get_session(new_id(), "acme")


def test_use_keeps_a_session_alive_and_idleness_expires_it(records: RecordStore, clock: Clock) -> None:
    kept, idle = records.create_session(), records.create_session()
    clock.advance(400)
    records.touch(kept.id)
    clock.advance(400)
    assert records.idle_sessions() == [idle.id]
    assert records.get_session(kept.id).last_used_at == pytest.approx(clock.now)
    with pytest.raises(NotFound):
        records.get_session(idle.id)


def test_idle_sessions_come_oldest_first_and_limited(records: RecordStore, clock: Clock) -> None:
    ids = []
    for _ in range(3):
        ids.append(records.create_session().id)
        clock.advance(1)
    clock.advance(600)
    assert records.idle_sessions(limit=2) == ids[:2]


def test_outputs_round_trip_per_tenant_and_belong_to_their_session(records: RecordStore) -> None:
    session = records.create_session("acme")
    first, second = output(session.id, "acme"), output(session.id, "acme")
    records.put_output(first)
    records.put_output(second)
    assert records.get_output(first.handle, "acme") == first
    assert records.session_handles(session.id) == sorted([first.handle, second.handle])
    with pytest.raises(NotFound):
        records.get_output(first.handle, "globex")
    assert records.find_output(first.handle, "globex") is None
    assert records.find_output(first.handle, "acme") == first


def test_deleting_an_output_and_dropping_a_session(records: RecordStore) -> None:
    session = records.create_session()
    gone, kept = output(session.id), output(session.id)
    records.put_output(gone)
    records.put_output(kept)
    records.delete_output(gone)
    assert records.find_output(gone.handle) is None and records.session_handles(session.id) == [kept.handle]
    records.drop_session_records(session.id)
    assert records.find_output(kept.handle) is None and records.session_handles(session.id) == []
    with pytest.raises(NotFound):
        records.get_session(session.id)
    assert records.idle_sessions() == []


def test_a_sessions_outputs_are_listed_with_their_records_retired_versions_included(records: RecordStore) -> None:
    session, other = records.create_session("acme"), records.create_session("acme")
    current, retired, elsewhere = output(session.id, "acme"), output(session.id, "acme"), output(other.id, "acme")
    for record in (current, retired, elsewhere):
        records.put_output(record)
    records.retire_output(retired, at=1.0)
    listed = records.session_outputs(session.id)
    assert sorted(r.handle for r in listed) == sorted([current.handle, retired.handle])
    assert {r.handle: r for r in listed}[current.handle] == current
    records.drop_session_records(session.id)
    assert records.session_outputs(session.id) == []
