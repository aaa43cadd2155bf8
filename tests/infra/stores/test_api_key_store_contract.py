"""The `ApiKeyStore` rules, on Redis and on the in-memory twin alike."""

from __future__ import annotations

import hashlib

import pytest

from extraction.errors import InvalidInput, NotFound
from infra.stores.apikeys import ApiKeyInfo, ApiKeyStore
from infra.stores.apikeys.base import KEY_PREFIX

CONFIGURED_KEY = "configured-key-for-ops"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.fixture()
def store(make_key_store) -> ApiKeyStore:
    return make_key_store({digest(CONFIGURED_KEY): "ops"})


def test_a_created_key_resolves_to_its_tenant_and_only_its_hash_is_kept(store: ApiKeyStore) -> None:
    key, info = store.create("acme")
    assert key.startswith(KEY_PREFIX) and len(key) > 40
    assert info.key_hash == digest(key) and info.source == "stored" and info.created_at
    assert store.tenant_for(key) == "acme"
    assert [kept.key_hash for kept in store.stored()] == [digest(key)]


def test_keys_are_random(store: ApiKeyStore) -> None:
    assert len({store.create("acme")[0] for _ in range(20)}) == 20


def test_configured_keys_resolve_and_unknown_keys_do_not(store: ApiKeyStore) -> None:
    assert store.tenant_for(CONFIGURED_KEY) == "ops"
    for unknown in ("not-a-key", CONFIGURED_KEY + "x", ""):
        assert store.tenant_for(unknown) is None


def test_list_shows_configured_then_stored_keys_oldest_first(store: ApiKeyStore) -> None:
    first, _ = store.create("acme")
    second, _ = store.create("globex")
    listed = store.list()
    assert [(info.tenant, info.source) for info in listed] == [
        ("ops", "settings"),
        ("acme", "stored"),
        ("globex", "stored"),
    ]
    assert [info.key_hash for info in listed] == [digest(CONFIGURED_KEY), digest(first), digest(second)]


def test_revoke_by_hash_prefix(store: ApiKeyStore) -> None:
    key, info = store.create("acme")
    assert store.revoke(info.key_hash[:10].upper()).key_hash == info.key_hash
    assert store.tenant_for(key) is None
    with pytest.raises(NotFound):
        store.revoke(info.key_hash[:10])


@pytest.mark.parametrize("prefix", ["", "abc", "zzzzzzzzzz", "1234567"])
def test_revoke_needs_eight_hex_characters(store: ApiKeyStore, prefix: str) -> None:
    with pytest.raises(InvalidInput):
        store.revoke(prefix)


def test_a_configured_key_cannot_be_revoked(store: ApiKeyStore) -> None:
    with pytest.raises(InvalidInput, match="TOOLOUT_API_KEYS"):
        store.revoke(digest(CONFIGURED_KEY)[:12])
    assert store.tenant_for(CONFIGURED_KEY) == "ops"


def test_an_ambiguous_prefix_is_refused(make_key_store) -> None:
    store = make_key_store()
    for name in ("aaaaaaaa1", "aaaaaaaa2"):
        store.store(ApiKeyInfo(name.ljust(64, "0"), "t", "stored", 1.0))
    with pytest.raises(InvalidInput, match="2 API keys"):
        store.revoke("aaaaaaaa")
    store.revoke("aaaaaaaa1")
    assert [info.key_hash for info in store.list()] == ["aaaaaaaa2".ljust(64, "0")]
