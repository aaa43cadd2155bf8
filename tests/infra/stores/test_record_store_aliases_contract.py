"""The `RecordStore` promises about names, file paths, counters and retired versions, on Redis and in memory."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from extraction.errors import NotFound
from infra.stores.records import OutputRecord, RecordStore, Space, new_id
from tests.infra.stores.conftest import Clock
from tests.infra.stores.test_record_store_contract import output


def named(session_id: str, name: str, tenant: str = "dev") -> OutputRecord:
    return output(session_id, tenant).model_copy(update={"name": name})


def test_binding_is_a_compare_and_set(records: RecordStore) -> None:
    session = records.create_session()
    first, second = new_id(), new_id()
    assert records.bind_alias(session.id, Space.VARIABLE, "foo", first, expected=None).bound
    lost = records.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=None)
    assert (lost.bound, lost.previous) == (False, first)
    stale = records.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=new_id())
    assert (stale.bound, stale.previous) == (False, first)
    swapped = records.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=first)
    assert (swapped.bound, swapped.previous) == (True, first)
    assert records.alias(session.id, Space.VARIABLE, "foo") == second
    assert records.aliases(session.id, Space.VARIABLE) == {"foo": second}


def test_names_and_paths_are_separate_spaces_per_session(records: RecordStore) -> None:
    one, other = records.create_session(), records.create_session()
    handle = new_id()
    records.bind_alias(one.id, Space.VARIABLE, "report", handle, expected=None)
    records.bind_alias(one.id, Space.FILE, "reports/a.md", handle, expected=None)
    assert records.aliases(one.id, Space.FILE) == {"reports/a.md": handle}
    assert records.alias(one.id, Space.FILE, "report") is None
    assert records.aliases(other.id, Space.VARIABLE) == {} and records.alias(other.id, Space.VARIABLE, "report") is None


def test_nothing_binds_in_a_session_that_is_gone(records: RecordStore) -> None:
    session = records.create_session()
    records.drop_session_records(session.id)
    with pytest.raises(NotFound):
        records.bind_alias(session.id, Space.VARIABLE, "foo", new_id(), expected=None)
    with pytest.raises(NotFound):
        records.next_count(session.id, "search")
    assert records.aliases(session.id, Space.VARIABLE) == {}


def test_unbinding_only_removes_an_alias_that_still_points_at_the_handle(records: RecordStore) -> None:
    session = records.create_session()
    old, new = new_id(), new_id()
    records.bind_alias(session.id, Space.VARIABLE, "foo", new, expected=None)
    assert not records.unbind_alias(session.id, Space.VARIABLE, "foo", old)
    assert records.alias(session.id, Space.VARIABLE, "foo") == new
    assert records.unbind_alias(session.id, Space.VARIABLE, "foo", new)
    assert records.aliases(session.id, Space.VARIABLE) == {}


def test_counters_count_per_name_and_per_session(records: RecordStore) -> None:
    one, other = records.create_session(), records.create_session()
    assert [records.next_count(one.id, "search") for _ in range(3)] == [1, 2, 3]
    assert records.next_count(one.id, "weather") == 1
    assert records.next_count(other.id, "search") == 1


def test_racing_writers_never_both_win_a_name_or_a_number(records: RecordStore) -> None:
    session = records.create_session()
    handles = [new_id() for _ in range(16)]
    with ThreadPoolExecutor(8) as pool:
        wins = list(
            pool.map(lambda h: records.bind_alias(session.id, Space.VARIABLE, "x", h, expected=None).bound, handles)
        )
        numbers = list(pool.map(lambda _: records.next_count(session.id, "search"), range(40)))
    assert wins.count(True) == 1
    assert records.alias(session.id, Space.VARIABLE, "x") == handles[wins.index(True)]
    assert sorted(numbers) == list(range(1, 41))


def test_deleting_an_output_drops_its_name_only_if_it_is_still_the_current_version(records: RecordStore) -> None:
    session = records.create_session()
    old, new = named(session.id, "foo"), named(session.id, "foo")
    for record in (old, new):
        records.put_output(record)
    records.bind_alias(session.id, Space.VARIABLE, "foo", new.handle, expected=None)
    records.delete_output(old)
    assert records.alias(session.id, Space.VARIABLE, "foo") == new.handle
    records.delete_output(new)
    assert records.alias(session.id, Space.VARIABLE, "foo") is None


def test_get_outputs_keeps_the_order_asked_and_skips_missing_and_foreign(records: RecordStore) -> None:
    session = records.create_session("acme")
    a, b = output(session.id, "acme"), output(session.id, "acme")
    for record in (a, b):
        records.put_output(record)
    assert records.get_outputs([b.handle, new_id(), a.handle], "acme") == [b, a]
    assert records.get_outputs([a.handle], "globex") == [] and records.get_outputs([], "acme") == []


def test_retired_versions_come_back_oldest_first_once_their_time_is_past(records: RecordStore, clock: Clock) -> None:
    session = records.create_session()
    early, late, kept = output(session.id), output(session.id), output(session.id)
    for record in (early, late, kept):
        records.put_output(record)
    records.retire_output(late, at=clock.now + 5)
    records.retire_output(early, at=clock.now + 1)
    assert records.retired_outputs(before=clock.now + 1) == []
    assert [r.handle for r in records.retired_outputs(before=clock.now + 10)] == [early.handle, late.handle]
    assert [r.handle for r in records.retired_outputs(before=clock.now + 10, limit=1)] == [early.handle]
    records.delete_output(early)
    assert [r.handle for r in records.retired_outputs(before=clock.now + 10)] == [late.handle]


def test_dropping_a_session_removes_its_names_paths_counters_and_retired_versions(records: RecordStore) -> None:
    session = records.create_session()
    record = named(session.id, "foo")
    records.put_output(record)
    records.bind_alias(session.id, Space.VARIABLE, "foo", record.handle, expected=None)
    records.bind_alias(session.id, Space.FILE, "a/b.md", record.handle, expected=None)
    records.next_count(session.id, "search")
    records.retire_output(record, at=0)
    records.drop_session_records(session.id)
    assert records.aliases(session.id, Space.VARIABLE) == {} and records.aliases(session.id, Space.FILE) == {}
    assert records.retired_outputs(before=float("inf")) == []
    again = records.create_session()
    assert records.next_count(again.id, "search") == 1


def test_retiring_again_postpones(records: RecordStore, clock: Clock) -> None:
    session = records.create_session()
    record = output(session.id)
    records.put_output(record)
    records.retire_output(record, at=clock.now)
    records.retire_output(record, at=clock.now + 100)
    assert records.retired_outputs(before=clock.now + 50) == []
    assert [r.handle for r in records.retired_outputs(before=clock.now + 101)] == [record.handle]
