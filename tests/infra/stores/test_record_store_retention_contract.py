"""Retention (`RecordRetention`): idle sessions, deadlines and retired versions, the sweeper's lists. An expired
session or output reads as gone at once and is listed until it is deleted. On Redis, on a Redis Cluster and on
the in-memory twin alike.
"""

from __future__ import annotations

import pytest

from extraction.errors import NotFound
from infra.stores.records import Expiring, RecordStores
from tests.infra.stores.conftest import Clock, output


def test_idle_sessions_come_oldest_first_and_limited(records: RecordStores, clock: Clock) -> None:
    ids = []
    for _ in range(3):
        ids.append(records.sessions.create_session().id)
        clock.advance(1)
    clock.advance(600)
    assert records.retention.idle_sessions(limit=2) == ids[:2]


def test_a_session_past_its_deadline_reads_as_gone_and_is_listed_until_dropped(
    records: RecordStores, clock: Clock
) -> None:
    doomed, other = records.sessions.create_session("acme"), records.sessions.create_session("acme")
    records.retention.expire_session_at(doomed.id, clock.now + 30)
    assert records.sessions.get_session(doomed.id, "acme").expires_at == clock.now + 30
    assert records.sessions.get_session(other.id, "acme").expires_at is None
    assert records.retention.expiring(before=clock.now + 29) == []

    clock.advance(31)
    with pytest.raises(NotFound):
        records.sessions.get_session(doomed.id, "acme")
    assert records.retention.expiring(before=clock.now) == [Expiring("session", doomed.id)]
    records.sessions.drop_session_records(doomed.id)
    assert records.retention.expiring(before=clock.now) == []
    assert records.sessions.get_session(other.id, "acme").id == other.id


def test_an_output_past_its_deadline_reads_as_gone_but_the_sweeper_still_finds_its_record(
    records: RecordStores, clock: Clock
) -> None:
    session = records.sessions.create_session("acme")
    doomed = output(session.id, "acme").model_copy(update={"expires_at": clock.now + 10})
    kept = output(session.id, "acme")
    records.outputs.put_output(doomed)
    records.outputs.put_output(kept)
    clock.advance(11)

    with pytest.raises(NotFound):
        records.outputs.get_output(doomed.handle, "acme")
    assert records.outputs.get_outputs([doomed.handle, kept.handle], "acme") == [kept]
    assert records.retention.expiring(before=clock.now) == [Expiring("output", doomed.handle)]
    assert records.outputs.stored_output(doomed.handle) == doomed
    records.outputs.delete_output(doomed)
    assert records.retention.expiring(before=clock.now) == [] and records.outputs.stored_output(doomed.handle) is None


def test_expiring_comes_soonest_first_and_limited(records: RecordStores, clock: Clock) -> None:
    sessions = [records.sessions.create_session() for _ in range(3)]
    for offset, session in zip((3, 1, 2), sessions, strict=True):
        records.retention.expire_session_at(session.id, clock.now + offset)
    clock.advance(10)
    assert records.retention.expiring(before=clock.now, limit=2) == [
        Expiring("session", sessions[1].id),
        Expiring("session", sessions[2].id),
    ]


def test_retired_versions_come_back_oldest_first_once_their_time_is_past(records: RecordStores, clock: Clock) -> None:
    session = records.sessions.create_session()
    early, late, kept = output(session.id), output(session.id), output(session.id)
    for record in (early, late, kept):
        records.outputs.put_output(record)
    records.retention.retire_output(late, at=clock.now + 5)
    records.retention.retire_output(early, at=clock.now + 1)
    assert records.retention.retired_outputs(before=clock.now + 1) == []
    assert [r.handle for r in records.retention.retired_outputs(before=clock.now + 10)] == [early.handle, late.handle]
    assert [r.handle for r in records.retention.retired_outputs(before=clock.now + 10, limit=1)] == [early.handle]
    records.outputs.delete_output(early)
    assert [r.handle for r in records.retention.retired_outputs(before=clock.now + 10)] == [late.handle]


def test_retiring_again_postpones(records: RecordStores, clock: Clock) -> None:
    session = records.sessions.create_session()
    record = output(session.id)
    records.outputs.put_output(record)
    records.retention.retire_output(record, at=clock.now)
    records.retention.retire_output(record, at=clock.now + 100)
    assert records.retention.retired_outputs(before=clock.now + 50) == []
    assert [r.handle for r in records.retention.retired_outputs(before=clock.now + 101)] == [record.handle]
