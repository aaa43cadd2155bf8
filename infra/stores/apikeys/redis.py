"""Stored API keys in the Redis hash `keys.API_KEYS`: sha256 hex → `{"tenant", "created_at"}`."""

from __future__ import annotations

import json

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text, text_map
from infra.stores.apikeys.base import ApiKeyInfo, ApiKeyStore, configured_keys


class RedisApiKeyStore(ApiKeyStore):
    def __init__(self, client: redis.Redis, configured: dict[str, str] | None = None) -> None:
        self._r = client
        self.configured = configured_keys(configured or {})

    def stored_tenant(self, digest: str) -> str | None:
        with redis_errors():
            raw = self._r.hget(keys.API_KEYS, digest)
        return str(json.loads(text(raw))["tenant"]) if raw else None

    def store(self, info: ApiKeyInfo) -> None:
        entry = json.dumps({"tenant": info.tenant, "created_at": info.created_at})
        with redis_errors():
            self._r.hset(keys.API_KEYS, info.key_hash, entry)

    def stored(self) -> list[ApiKeyInfo]:
        with redis_errors():
            entries = text_map(self._r.hgetall(keys.API_KEYS))
        return [_info(digest, raw) for digest, raw in entries.items()]

    def forget(self, digest: str) -> None:
        with redis_errors():
            self._r.hdel(keys.API_KEYS, digest)


def _info(digest: str, raw: str) -> ApiKeyInfo:
    data = json.loads(raw)
    return ApiKeyInfo(digest, data["tenant"], "stored", float(data.get("created_at") or 0.0))
