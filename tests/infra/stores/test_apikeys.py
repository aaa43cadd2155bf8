"""API-key rules that need no store (configured keys, tenant names) and the `toolout keys` CLI on real Redis.

The store's own promises are checked on both implementations in `tests/infra/stores/`.
"""

from __future__ import annotations

import hashlib

import pytest
import redis
from typer.testing import CliRunner

from extraction.errors import InvalidInput
from infra.stores.apikeys import RedisApiKeyStore, check_tenant, configured_keys
from infra.stores.apikeys.base import KEY_PREFIX
from toolout.cli import app as cli

CONFIGURED_KEY = "configured-key-for-ops"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


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
    assert RedisApiKeyStore(redis_client).tenant_for(key) == "acme"

    listed = run_cli("list")
    assert listed.exit_code == 0 and digest(key) in listed.stdout and "acme" in listed.stdout
    assert key not in listed.stdout

    revoked = run_cli("revoke", digest(key)[:12])
    assert revoked.exit_code == 0, revoked.output
    assert RedisApiKeyStore(redis_client).tenant_for(key) is None
    assert digest(key) not in run_cli("list").stdout


def test_cli_errors_are_messages_and_exit_1(run_cli) -> None:
    bad_tenant = run_cli("create", "--tenant", "a b")
    assert bad_tenant.exit_code == 1 and "invalid tenant" in bad_tenant.stderr
    unknown = run_cli("revoke", "deadbeefdeadbeef")
    assert unknown.exit_code == 1 and "no API key" in unknown.stderr
