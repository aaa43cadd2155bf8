"""The `IdempotencyStore` rules, on Redis and on the in-memory twin alike: replay, reuse, locks, scope, expiry."""

from __future__ import annotations

import pytest

from infra.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from infra.stores.idempotency import IdempotencyStore, Lease, StoredResponse, fingerprint
from tests.infra.stores.conftest import Clock

RESPONSE = StoredResponse(202, '{"id": "j1"}', {"location": "/v1/extractions/j1"})


@pytest.fixture()
def store(make_idempotency) -> IdempotencyStore:
    return make_idempotency()


def test_the_first_request_leases_the_key_and_a_retry_replays_its_response(store: IdempotencyStore) -> None:
    lease = store.begin("acme", "k1", "fp")
    assert isinstance(lease, Lease)
    store.complete(lease, RESPONSE)
    assert store.begin("acme", "k1", "fp") == StoredResponse(202, RESPONSE.body, RESPONSE.headers, "fp")


def test_the_same_key_for_another_request_is_refused(store: IdempotencyStore) -> None:
    store.complete(store.begin("acme", "k1", "fp"), RESPONSE)
    with pytest.raises(IdempotencyKeyReused):
        store.begin("acme", "k1", "other")


def test_a_request_in_flight_holds_the_key(store: IdempotencyStore) -> None:
    store.begin("acme", "k1", "fp")
    with pytest.raises(IdempotencyKeyInUse):
        store.begin("acme", "k1", "fp")
    with pytest.raises(IdempotencyKeyReused):
        store.begin("acme", "k1", "different body while in flight")


def test_release_stores_nothing_so_the_next_request_runs_afresh(store: IdempotencyStore) -> None:
    store.release(store.begin("acme", "k1", "fp"))
    assert isinstance(store.begin("acme", "k1", "another body is fine now"), Lease)


def test_keys_are_scoped_per_tenant(store: IdempotencyStore) -> None:
    store.complete(store.begin("acme", "k1", "fp"), RESPONSE)
    assert isinstance(store.begin("globex", "k1", "other"), Lease)


def test_stored_responses_expire(make_idempotency, clock: Clock) -> None:
    store = make_idempotency(ttl_seconds=10)
    store.complete(store.begin("acme", "key with spaces:and*glob", "fp"), RESPONSE)
    clock.advance(9)
    assert isinstance(store.begin("acme", "key with spaces:and*glob", "fp"), StoredResponse)
    clock.advance(2)
    assert isinstance(store.begin("acme", "key with spaces:and*glob", "other"), Lease)


def test_a_crashed_request_frees_the_key_after_the_lock_ttl(make_idempotency, clock: Clock) -> None:
    store = make_idempotency(lock_ttl_seconds=5)
    store.begin("acme", "k1", "fp")
    clock.advance(5.5)
    assert isinstance(store.begin("acme", "k1", "fp"), Lease)


def test_the_first_completion_wins_and_a_stale_lease_cannot_drop_a_new_lock(make_idempotency, clock: Clock) -> None:
    store = make_idempotency(lock_ttl_seconds=5)
    stale = store.begin("acme", "k1", "fp")
    clock.advance(5.5)
    fresh = store.begin("acme", "k1", "fp")
    store.release(stale)
    with pytest.raises(IdempotencyKeyInUse):
        store.begin("acme", "k1", "fp")
    store.complete(fresh, RESPONSE)
    store.complete(stale, StoredResponse(202, '{"id": "late"}'))
    replay = store.begin("acme", "k1", "fp")
    assert isinstance(replay, StoredResponse) and replay.body == RESPONSE.body


def test_fingerprints_separate_their_parts() -> None:
    assert fingerprint("ab", "c") != fingerprint("a", "bc")
    assert fingerprint("POST", b"body") == fingerprint("POST", "body")


def test_a_sessions_kept_responses_go_with_it_or_with_the_output_they_name(store: IdempotencyStore) -> None:
    for key, handle in (("upload-a", "h-a"), ("job-on-a", "h-a"), ("upload-b", "h-b")):
        lease = store.begin("acme", key, "fp")
        assert isinstance(lease, Lease)
        store.complete(lease, RESPONSE)
        store.own(lease, "s1", handle)
    other = store.begin("acme", "elsewhere", "fp")
    assert isinstance(other, Lease)
    store.complete(other, RESPONSE)
    store.own(other, "s2", None)

    assert store.forget_owned("acme", "s1", "h-a") == 2
    assert isinstance(store.begin("acme", "upload-a", "a new request may use the key"), Lease)
    assert isinstance(store.begin("acme", "job-on-a", "so may this one"), Lease)
    assert isinstance(store.begin("acme", "upload-b", "fp"), StoredResponse), "another output's replay stays"
    assert store.forget_owned("acme", "s1") == 1
    assert isinstance(store.begin("acme", "upload-b", "fp"), Lease)
    assert isinstance(store.begin("acme", "elsewhere", "fp"), StoredResponse), "another session's replay stays"
    assert store.forget_owned("acme", "s1") == 0
