"""API keys in real Redis: only hashes are stored, keys resolve to their tenant, revoking works, the CLI drives it."""

from __future__ import annotations

import hashlib
import json

import pytest
import redis
from typer.testing import CliRunner

from extraction.errors import InvalidInput, NotFound
from infra import keys
from infra.apikeys import KEY_PREFIX, ApiKeyStore, check_tenant, configured_keys, hash_key
from toolout.cli import app as cli

CONFIGURED_KEY = "configured-key-for-ops"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.fixture()
def store(redis_client: redis.Redis) -> ApiKeyStore:
    return ApiKeyStore(redis_client, {digest(CONFIGURED_KEY): "ops"})


def test_a_created_key_resolves_to_its_tenant_and_only_its_hash_is_stored(
    store: ApiKeyStore, redis_client: redis.Redis
) -> None:
    key, info = store.create("acme")
    assert key.startswith(KEY_PREFIX) and len(key) > 40
    assert info.key_hash == hash_key(key) == digest(key)
    assert store.tenant_for(key) == "acme"
    stored = redis_client.hgetall(keys.API_KEYS)
    assert list(stored) == [info.key_hash]
    assert key not in json.dumps(stored)
    assert json.loads(stored[info.key_hash])["tenant"] == "acme"


def test_keys_are_random(store: ApiKeyStore) -> None:
    assert len({store.create("acme")[0] for _ in range(20)}) == 20


def test_configured_keys_resolve_and_unknown_keys_do_not(store: ApiKeyStore) -> None:
    assert store.tenant_for(CONFIGURED_KEY) == "ops"
    assert store.tenant_for("not-a-key") is None
    assert store.tenant_for(CONFIGURED_KEY + "x") is None
    assert store.tenant_for("") is None


def test_list_shows_configured_then_stored_keys_without_the_keys(store: ApiKeyStore) -> None:
    first, _ = store.create("acme")
    second, _ = store.create("globex")
    listed = store.list()
    assert [(info.tenant, info.source) for info in listed] == [
        ("ops", "settings"),
        ("acme", "redis"),
        ("globex", "redis"),
    ]
    assert [info.key_hash for info in listed[1:]] == [digest(first), digest(second)]
    assert all(info.created_at for info in listed[1:])


def test_revoke_by_hash_prefix(store: ApiKeyStore) -> None:
    key, info = store.create("acme")
    assert store.revoke(info.key_hash[:10].upper()) == info
    assert store.tenant_for(key) is None
    with pytest.raises(NotFound):
        store.revoke(info.key_hash[:10])


@pytest.mark.parametrize("prefix", ["abc", "zzzzzzzzzz", ""])
def test_revoke_needs_eight_hex_characters(store: ApiKeyStore, prefix: str) -> None:
    with pytest.raises(InvalidInput):
        store.revoke(prefix)


def test_revoke_refuses_an_ambiguous_prefix(redis_client: redis.Redis) -> None:
    store = ApiKeyStore(redis_client)
    for name in ("aaaaaaaa1", "aaaaaaaa2"):
        redis_client.hset(keys.API_KEYS, name.ljust(64, "0"), json.dumps({"tenant": "t", "created_at": 1.0}))
    with pytest.raises(InvalidInput, match="2 API keys"):
        store.revoke("aaaaaaaa")
    store.revoke("aaaaaaaa1")
    assert len(store.list()) == 1


def test_a_configured_key_cannot_be_revoked_from_redis(store: ApiKeyStore) -> None:
    with pytest.raises(InvalidInput, match="TOOLOUT_API_KEYS"):
        store.revoke(digest(CONFIGURED_KEY)[:12])
    assert store.tenant_for(CONFIGURED_KEY) == "ops"


def test_configured_keys_must_be_hashes_with_valid_tenants() -> None:
    upper = digest("k").upper()
    assert configured_keys({upper: "acme"}) == {upper.lower(): "acme"}
    with pytest.raises(InvalidInput, match="sha256"):
        configured_keys({"my-raw-secret-key": "acme"})
    with pytest.raises(InvalidInput, match="tenant"):
        configured_keys({digest("k"): "bad tenant"})


@pytest.mark.parametrize("tenant", ["", "a b", "a:b", "-lead", "x" * 65, "ümlaut"])
def test_tenant_names_are_safe_in_key_names(tenant: str) -> None:
    with pytest.raises(InvalidInput):
        check_tenant(tenant)


@pytest.mark.parametrize("tenant", ["a", "acme", "team-1.prod_eu", "x" * 64])
def test_ordinary_tenant_names_pass(tenant: str) -> None:
    assert check_tenant(tenant) == tenant


# --- the CLI ------------------------------------------------------------------------------------
@pytest.fixture()
def run_cli(redis_url: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLOUT_REDIS_URL", redis_url)
    monkeypatch.delenv("TOOLOUT_API_KEYS", raising=False)
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, ["keys", *args])


def test_cli_create_prints_the_key_once_and_list_and_revoke_use_the_hash(run_cli, redis_client: redis.Redis) -> None:
    created = run_cli("create", "--tenant", "acme")
    assert created.exit_code == 0, created.output
    key = created.stdout.strip()
    assert key.startswith(KEY_PREFIX) and "\n" not in key
    assert ApiKeyStore(redis_client).tenant_for(key) == "acme"

    listed = run_cli("list")
    assert listed.exit_code == 0 and digest(key) in listed.stdout and "acme" in listed.stdout
    assert key not in listed.stdout

    revoked = run_cli("revoke", digest(key)[:12])
    assert revoked.exit_code == 0, revoked.output
    assert ApiKeyStore(redis_client).tenant_for(key) is None
    assert digest(key) not in run_cli("list").stdout


def test_cli_errors_are_messages_and_exit_1(run_cli) -> None:
    bad_tenant = run_cli("create", "--tenant", "a b")
    assert bad_tenant.exit_code == 1 and "invalid tenant" in bad_tenant.stderr
    unknown = run_cli("revoke", "deadbeefdeadbeef")
    assert unknown.exit_code == 1 and "no API key" in unknown.stderr
