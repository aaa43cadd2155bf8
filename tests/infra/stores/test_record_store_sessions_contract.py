"""Sessions in the record store (`RecordSessions`): owned per tenant, kept alive by use, dropped with
everything in them. On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

import pytest

from extraction.errors import NotFound
from infra.stores.records import RecordStores, Space, new_id
from tests.infra.stores.conftest import Clock, named, output


def test_a_session_belongs_to_its_tenant(records: RecordStores) -> None:
    session = records.sessions.create_session("acme")
    assert records.sessions.get_session(session.id, "acme").id == session.id
    for tenant in ("globex", "dev"):
        with pytest.raises(NotFound):
            records.sessions.get_session(session.id, tenant)
    with pytest.raises(NotFound):
        records.sessions.get_session(new_id(), "acme")


def test_use_keeps_a_session_alive_and_idleness_expires_it(records: RecordStores, clock: Clock) -> None:
    kept, idle = records.sessions.create_session(), records.sessions.create_session()
    clock.advance(400)
    records.sessions.touch(kept.id)
    clock.advance(400)
    assert records.retention.idle_sessions() == [idle.id]
    assert records.sessions.get_session(kept.id).last_used_at == pytest.approx(clock.now)
    with pytest.raises(NotFound):
        records.sessions.get_session(idle.id)


def test_a_sessions_outputs_are_listed_with_their_records_retired_versions_included(records: RecordStores) -> None:
    session, other = records.sessions.create_session("acme"), records.sessions.create_session("acme")
    current, retired, elsewhere = output(session.id, "acme"), output(session.id, "acme"), output(other.id, "acme")
    for record in (current, retired, elsewhere):
        records.outputs.put_output(record)
    records.retention.retire_output(retired, at=1.0)
    listed = records.sessions.session_outputs(session.id)
    assert sorted(r.handle for r in listed) == sorted([current.handle, retired.handle])
    assert {r.handle: r for r in listed}[current.handle] == current
    records.sessions.drop_session_records(session.id)
    assert records.sessions.session_outputs(session.id) == []


def test_dropping_a_session_removes_its_names_paths_counters_and_retired_versions(records: RecordStores) -> None:
    session = records.sessions.create_session()
    record = named(session.id, "foo")
    records.outputs.put_output(record)
    records.names.bind_alias(session.id, Space.VARIABLE, "foo", record.handle, expected=None)
    records.names.bind_alias(session.id, Space.FILE, "a/b.md", record.handle, expected=None)
    records.names.next_count(session.id, "search")
    records.retention.retire_output(record, at=0)
    records.sessions.drop_session_records(session.id)
    assert (
        records.names.aliases(session.id, Space.VARIABLE) == {} and records.names.aliases(session.id, Space.FILE) == {}
    )
    assert records.retention.retired_outputs(before=float("inf")) == []
    again = records.sessions.create_session()
    assert records.names.next_count(again.id, "search") == 1
