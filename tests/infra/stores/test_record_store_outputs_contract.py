"""Output records (`RecordOutputs`): read per tenant, listed in the order asked, deleted with what names them.
On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

import pytest

from extraction.errors import NotFound
from infra.stores.records import RecordStores, Space, new_id
from tests.infra.stores.conftest import named, output


def test_outputs_round_trip_per_tenant_and_belong_to_their_session(records: RecordStores) -> None:
    session = records.sessions.create_session("acme")
    first, second = output(session.id, "acme"), output(session.id, "acme")
    records.outputs.put_output(first)
    records.outputs.put_output(second)
    assert records.outputs.get_output(first.handle, "acme") == first
    assert records.sessions.session_handles(session.id) == sorted([first.handle, second.handle])
    with pytest.raises(NotFound):
        records.outputs.get_output(first.handle, "globex")
    assert records.outputs.find_output(first.handle, "globex") is None
    assert records.outputs.find_output(first.handle, "acme") == first


def test_deleting_an_output_and_dropping_a_session(records: RecordStores) -> None:
    session = records.sessions.create_session()
    gone, kept = output(session.id), output(session.id)
    records.outputs.put_output(gone)
    records.outputs.put_output(kept)
    records.outputs.delete_output(gone)
    assert records.outputs.find_output(gone.handle) is None and records.sessions.session_handles(session.id) == [
        kept.handle
    ]
    records.sessions.drop_session_records(session.id)
    assert records.outputs.find_output(kept.handle) is None and records.sessions.session_handles(session.id) == []
    with pytest.raises(NotFound):
        records.sessions.get_session(session.id)
    assert records.retention.idle_sessions() == []


def test_get_outputs_keeps_the_order_asked_and_skips_missing_and_foreign(records: RecordStores) -> None:
    session = records.sessions.create_session("acme")
    a, b = output(session.id, "acme"), output(session.id, "acme")
    for record in (a, b):
        records.outputs.put_output(record)
    assert records.outputs.get_outputs([b.handle, new_id(), a.handle], "acme") == [b, a]
    assert records.outputs.get_outputs([a.handle], "globex") == [] and records.outputs.get_outputs([], "acme") == []


def test_deleting_an_output_drops_its_name_only_if_it_is_still_the_current_version(records: RecordStores) -> None:
    session = records.sessions.create_session()
    old, new = named(session.id, "foo"), named(session.id, "foo")
    for record in (old, new):
        records.outputs.put_output(record)
    records.names.bind_alias(session.id, Space.VARIABLE, "foo", new.handle, expected=None)
    records.outputs.delete_output(old)
    assert records.names.alias(session.id, Space.VARIABLE, "foo") == new.handle
    records.outputs.delete_output(new)
    assert records.names.alias(session.id, Space.VARIABLE, "foo") is None
