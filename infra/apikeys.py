"""API keys: each belongs to one tenant, and only its sha256 hash is ever kept.

Two sources, merged: `settings.api_keys` (sha256 hex → tenant, for keys provisioned with the
deployment) and the Redis hash `keys.API_KEYS` (sha256 hex → `{"tenant", "created_at"}`, managed
with `toolout keys create|list|revoke`). A new key is printed once, at creation, and stored nowhere,
so a leaked Redis dump or settings file grants no access.

A presented key is hashed and the hash looked up. The configured hashes are compared with
`hmac.compare_digest`, every one of them, so the time taken says nothing about how close a guess
was. The Redis lookup is a hash-table probe keyed by sha256(guess): an attacker who learns
something from its timing learns about a digest of their own input, which brings them no closer
to a 256-bit random key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Literal

import redis

from extraction.errors import InvalidInput, NotFound
from infra import keys
from infra.redis_client import redis_errors

KEY_PREFIX = "toolout_"
"""Marks a string as a toolout key, so secret scanners and humans recognise a leaked one."""

MIN_REVOKE_PREFIX = 8
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HASH = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]+")

Source = Literal["settings", "redis"]


@dataclass(frozen=True)
class ApiKeyInfo:
    """What is known about a key without the key itself."""

    key_hash: str
    tenant: str
    source: Source
    created_at: float | None = None


def hash_key(key: str) -> str:
    """The stored form of a key: sha256 of its UTF-8 bytes, lowercase hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """256 random bits, URL-safe, prefixed: fits an `Authorization: Bearer` token as is."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def check_tenant(tenant: str) -> str:
    """Tenant names appear in Redis key names: letters, digits, `.`, `_`, `-`, at most 64 characters."""
    if not _TENANT.fullmatch(tenant):
        raise InvalidInput(
            f"invalid tenant {tenant!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            tenant=tenant,
        )
    return tenant


def configured_keys(raw: dict[str, str]) -> dict[str, str]:
    """`settings.api_keys`, checked at start-up: a raw key pasted where its hash belongs must not pass silently."""
    checked: dict[str, str] = {}
    for key_hash, tenant in raw.items():
        digest = key_hash.strip().lower()
        if not _HASH.fullmatch(digest):
            raise InvalidInput(
                "TOOLOUT_API_KEYS maps sha256 hex digests (64 hex characters) to tenants, not raw keys",
                entry=key_hash[:8] + "…",
            )
        checked[digest] = check_tenant(tenant)
    return checked


class ApiKeyStore:
    """Resolve keys to tenants; create, list and revoke the keys kept in Redis."""

    def __init__(self, client: redis.Redis, configured: dict[str, str] | None = None) -> None:
        self._r = client
        self._configured = configured_keys(configured or {})

    # --- authentication ---------------------------------------------------------------------------
    def tenant_for(self, key: str) -> str | None:
        """The tenant the key belongs to, or None for an unknown (or revoked) key."""
        digest = hash_key(key)
        return self._configured_tenant(digest) or self._stored_tenant(digest)

    def _configured_tenant(self, digest: str) -> str | None:
        found = None
        for known, tenant in self._configured.items():
            if hmac.compare_digest(known, digest):
                found = tenant
        return found

    def _stored_tenant(self, digest: str) -> str | None:
        with redis_errors():
            raw = self._r.hget(keys.API_KEYS, digest)
        return json.loads(raw)["tenant"] if raw else None

    # --- management -------------------------------------------------------------------------------
    def create(self, tenant: str) -> tuple[str, ApiKeyInfo]:
        """A new key for `tenant`: the caller shows the key once; only its hash is written."""
        key, now = new_key(), time.time()
        info = ApiKeyInfo(hash_key(key), check_tenant(tenant), "redis", now)
        with redis_errors():
            self._r.hset(keys.API_KEYS, info.key_hash, json.dumps({"tenant": tenant, "created_at": now}))
        return key, info

    def list(self) -> list[ApiKeyInfo]:
        """Every key, configured ones first, then Redis ones oldest first."""
        configured = [
            ApiKeyInfo(digest, tenant, "settings")
            for digest, tenant in sorted(self._configured.items(), key=lambda kv: kv[1])
        ]
        return configured + sorted(self._stored(), key=lambda info: info.created_at or 0.0)

    def _stored(self) -> list[ApiKeyInfo]:
        with redis_errors():
            entries = self._r.hgetall(keys.API_KEYS)
        return [_stored_info(digest, raw) for digest, raw in entries.items()]

    def revoke(self, hash_prefix: str) -> ApiKeyInfo:
        """Delete the one Redis key whose hash starts with `hash_prefix` (at least 8 hex characters)."""
        info = self._one_match(_checked_prefix(hash_prefix))
        with redis_errors():
            self._r.hdel(keys.API_KEYS, info.key_hash)
        return info

    def _one_match(self, prefix: str) -> ApiKeyInfo:
        matches = [info for info in self.list() if info.key_hash.startswith(prefix)]
        if not matches:
            raise NotFound(f"no API key whose hash starts with {prefix!r}", prefix=prefix)
        if len(matches) > 1:
            raise InvalidInput(f"{len(matches)} API keys match {prefix!r}: give more of the hash", prefix=prefix)
        if matches[0].source == "settings":
            raise InvalidInput("that key comes from TOOLOUT_API_KEYS: remove it there and restart", prefix=prefix)
        return matches[0]


def _stored_info(digest: str, raw: str) -> ApiKeyInfo:
    data = json.loads(raw)
    return ApiKeyInfo(digest, data["tenant"], "redis", float(data.get("created_at") or 0.0))


def _checked_prefix(hash_prefix: str) -> str:
    prefix = hash_prefix.strip().lower()
    if len(prefix) < MIN_REVOKE_PREFIX or not _HEX.fullmatch(prefix):
        raise InvalidInput(
            f"give at least {MIN_REVOKE_PREFIX} hex characters of the key's hash (see `toolout keys list`)",
            prefix=hash_prefix,
        )
    return prefix
