"""API keys: each belongs to one tenant, and only its sha256 hash is ever kept.

Two sources, merged: `settings.api_keys` (sha256 hex → tenant, for keys provisioned with the
deployment) and the stored keys (in Redis: the hash `keys.API_KEYS`, sha256 hex →
`{"tenant", "created_at"}`), managed with `toolout keys create|list|revoke`. A new key is printed
once, at creation, and stored nowhere, so a leaked Redis dump or settings file grants no access.

A presented key is hashed and the hash looked up. The configured hashes are compared with
`hmac.compare_digest`, every one of them, so the time taken says nothing about how close a guess
was. The stored-key lookup is a hash-table probe keyed by sha256(guess): an attacker who learns
something from its timing learns about a digest of their own input, which brings them no closer
to a 256-bit random key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from typing import Literal, Protocol

from extraction.errors import InvalidInput, NotFound

KEY_PREFIX = "toolout_"
"""Marks a string as a toolout key, so secret scanners and humans recognise a leaked one."""

MIN_REVOKE_PREFIX = 8
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HASH = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]+")

Source = Literal["settings", "stored"]


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


class ApiKeyStore(Protocol):
    """Resolve keys to tenants; create, list and revoke stored keys.

    The rules (hashing, configured keys first and compared in constant time, revocation by hash
    prefix) are written once here; an implementation only keeps the stored hashes:
    `RedisApiKeyStore` in production, `MemoryApiKeyStore` for the embedded mode and unit tests.
    """

    configured: dict[str, str]
    """sha256 hex → tenant, from `settings.api_keys` (checked by `configured_keys`)."""

    # --- what an implementation keeps -----------------------------------------------------------
    def stored_tenant(self, digest: str) -> str | None: ...

    def store(self, info: ApiKeyInfo) -> None: ...

    def stored(self) -> list[ApiKeyInfo]: ...

    def forget(self, digest: str) -> None: ...

    # --- authentication ---------------------------------------------------------------------------
    def tenant_for(self, key: str) -> str | None:
        """The tenant the key belongs to, or None for an unknown (or revoked) key."""
        digest = hash_key(key)
        return _configured_tenant(self.configured, digest) or self.stored_tenant(digest)

    # --- management -------------------------------------------------------------------------------
    def create(self, tenant: str) -> tuple[str, ApiKeyInfo]:
        """A new key for `tenant`: the caller shows the key once; only its hash is written."""
        key = new_key()
        info = ApiKeyInfo(hash_key(key), check_tenant(tenant), "stored", time.time())
        self.store(info)
        return key, info

    def list(self) -> list[ApiKeyInfo]:
        """Every key, configured ones first, then stored ones oldest first."""
        configured = [
            ApiKeyInfo(digest, tenant, "settings")
            for digest, tenant in sorted(self.configured.items(), key=lambda kv: kv[1])
        ]
        return configured + sorted(self.stored(), key=lambda info: info.created_at or 0.0)

    def revoke(self, hash_prefix: str) -> ApiKeyInfo:
        """Delete the one stored key whose hash starts with `hash_prefix` (at least 8 hex characters)."""
        info = _one_match(self.list(), _checked_prefix(hash_prefix))
        self.forget(info.key_hash)
        return info


def _configured_tenant(configured: dict[str, str], digest: str) -> str | None:
    """Every configured hash is compared, in constant time, so timing says nothing about near misses."""
    found = None
    for known, tenant in configured.items():
        if hmac.compare_digest(known, digest):
            found = tenant
    return found


def _one_match(keys_: list[ApiKeyInfo], prefix: str) -> ApiKeyInfo:
    matches = [info for info in keys_ if info.key_hash.startswith(prefix)]
    if not matches:
        raise NotFound(f"no API key whose hash starts with {prefix!r}", prefix=prefix)
    if len(matches) > 1:
        raise InvalidInput(f"{len(matches)} API keys match {prefix!r}: give more of the hash", prefix=prefix)
    if matches[0].source == "settings":
        raise InvalidInput("that key comes from TOOLOUT_API_KEYS: remove it there and restart", prefix=prefix)
    return matches[0]


def _checked_prefix(hash_prefix: str) -> str:
    prefix = hash_prefix.strip().lower()
    if len(prefix) < MIN_REVOKE_PREFIX or not _HEX.fullmatch(prefix):
        raise InvalidInput(
            f"give at least {MIN_REVOKE_PREFIX} hex characters of the key's hash (see `toolout keys list`)",
            prefix=hash_prefix,
        )
    return prefix
