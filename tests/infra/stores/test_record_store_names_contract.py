"""Names, file paths and counters (`RecordNames`): compare-and-set per session and space, never two winners.
On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from extraction.errors import NotFound
from infra.stores.records import RecordStores, Space, new_id


def test_binding_is_a_compare_and_set(records: RecordStores) -> None:
    session = records.sessions.create_session()
    first, second = new_id(), new_id()
    assert records.names.bind_alias(session.id, Space.VARIABLE, "foo", first, expected=None).bound
    lost = records.names.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=None)
    assert (lost.bound, lost.previous) == (False, first)
    stale = records.names.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=new_id())
    assert (stale.bound, stale.previous) == (False, first)
    swapped = records.names.bind_alias(session.id, Space.VARIABLE, "foo", second, expected=first)
    assert (swapped.bound, swapped.previous) == (True, first)
    assert records.names.alias(session.id, Space.VARIABLE, "foo") == second
    assert records.names.aliases(session.id, Space.VARIABLE) == {"foo": second}


def test_names_and_paths_are_separate_spaces_per_session(records: RecordStores) -> None:
    one, other = records.sessions.create_session(), records.sessions.create_session()
    handle = new_id()
    records.names.bind_alias(one.id, Space.VARIABLE, "report", handle, expected=None)
    records.names.bind_alias(one.id, Space.FILE, "reports/a.md", handle, expected=None)
    assert records.names.aliases(one.id, Space.FILE) == {"reports/a.md": handle}
    assert records.names.alias(one.id, Space.FILE, "report") is None
    assert (
        records.names.aliases(other.id, Space.VARIABLE) == {}
        and records.names.alias(other.id, Space.VARIABLE, "report") is None
    )


def test_nothing_binds_in_a_session_that_is_gone(records: RecordStores) -> None:
    session = records.sessions.create_session()
    records.sessions.drop_session_records(session.id)
    with pytest.raises(NotFound):
        records.names.bind_alias(session.id, Space.VARIABLE, "foo", new_id(), expected=None)
    with pytest.raises(NotFound):
        records.names.next_count(session.id, "search")
    assert records.names.aliases(session.id, Space.VARIABLE) == {}


def test_unbinding_only_removes_an_alias_that_still_points_at_the_handle(records: RecordStores) -> None:
    session = records.sessions.create_session()
    old, new = new_id(), new_id()
    records.names.bind_alias(session.id, Space.VARIABLE, "foo", new, expected=None)
    assert not records.names.unbind_alias(session.id, Space.VARIABLE, "foo", old)
    assert records.names.alias(session.id, Space.VARIABLE, "foo") == new
    assert records.names.unbind_alias(session.id, Space.VARIABLE, "foo", new)
    assert records.names.aliases(session.id, Space.VARIABLE) == {}


def test_counters_count_per_name_and_per_session(records: RecordStores) -> None:
    one, other = records.sessions.create_session(), records.sessions.create_session()
    assert [records.names.next_count(one.id, "search") for _ in range(3)] == [1, 2, 3]
    assert records.names.next_count(one.id, "weather") == 1
    assert records.names.next_count(other.id, "search") == 1


def test_racing_writers_never_both_win_a_name_or_a_number(records: RecordStores) -> None:
    session = records.sessions.create_session()
    handles = [new_id() for _ in range(16)]
    with ThreadPoolExecutor(8) as pool:
        wins = list(
            pool.map(
                lambda h: records.names.bind_alias(session.id, Space.VARIABLE, "x", h, expected=None).bound, handles
            )
        )
        numbers = list(pool.map(lambda _: records.names.next_count(session.id, "search"), range(40)))
    assert wins.count(True) == 1
    assert records.names.alias(session.id, Space.VARIABLE, "x") == handles[wins.index(True)]
    assert sorted(numbers) == list(range(1, 41))
