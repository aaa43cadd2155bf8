"""The idempotency store in real Redis: replay, reuse, in-flight lock, tenant scope, expiry."""

from __future__ import annotations

import time

import pytest
import redis

from infra import keys
from infra.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from infra.idempotency import IdempotencyStore, Lease, StoredResponse, fingerprint

RESPONSE = StoredResponse(202, '{"id": "j1"}', {"location": "/v1/extractions/j1"})


@pytest.fixture()
def store(redis_client: redis.Redis) -> IdempotencyStore:
    return IdempotencyStore(redis_client, ttl_seconds=60, lock_ttl_seconds=30)


def test_the_first_request_leases_the_key_and_a_retry_replays_its_response(store: IdempotencyStore) -> None:
    lease = store.begin("acme", "k1", "fp")
    assert isinstance(lease, Lease)
    store.complete(lease, RESPONSE)
    replayed = store.begin("acme", "k1", "fp")
    assert replayed == StoredResponse(202, RESPONSE.body, RESPONSE.headers, "fp")


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


def test_stored_responses_expire_and_the_client_key_never_names_a_redis_key(redis_client: redis.Redis) -> None:
    store = IdempotencyStore(redis_client, ttl_seconds=1)
    store.complete(store.begin("acme", "key with spaces:and*glob", "fp"), RESPONSE)
    names = redis_client.keys("*")
    assert len(names) == 1 and "spaces" not in names[0] and names[0].startswith(keys.idempotency("acme", ""))
    assert 0 < redis_client.ttl(names[0]) <= 1
    time.sleep(1.1)
    assert isinstance(store.begin("acme", "key with spaces:and*glob", "other"), Lease)


def test_a_crashed_request_frees_the_key_after_the_lock_ttl(redis_client: redis.Redis) -> None:
    store = IdempotencyStore(redis_client, ttl_seconds=60, lock_ttl_seconds=1)
    store.begin("acme", "k1", "fp")
    time.sleep(1.1)
    assert isinstance(store.begin("acme", "k1", "fp"), Lease)


def test_the_first_completion_wins_and_a_stale_lease_cannot_drop_a_new_lock(redis_client: redis.Redis) -> None:
    store = IdempotencyStore(redis_client, ttl_seconds=60, lock_ttl_seconds=1)
    stale = store.begin("acme", "k1", "fp")
    time.sleep(1.1)
    fresh = store.begin("acme", "k1", "fp")
    store.release(stale)
    with pytest.raises(IdempotencyKeyInUse):
        store.begin("acme", "k1", "fp")
    store.complete(fresh, RESPONSE)
    store.complete(stale, StoredResponse(202, '{"id": "late"}'))
    assert store.begin("acme", "k1", "fp").body == RESPONSE.body


def test_fingerprints_separate_their_parts() -> None:
    assert fingerprint("ab", "c") != fingerprint("a", "bc")
    assert fingerprint("POST", b"body") == fingerprint("POST", "body")
