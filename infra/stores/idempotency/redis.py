"""Idempotency keys in Redis: the kept response under a TTL, the in-flight lock as `SET NX` with its own TTL."""

from __future__ import annotations

import json

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text, text_map
from infra.redis.lua import lua_source
from infra.stores.idempotency.base import LOCK_TTL_SECONDS, IdempotencyStore, Lease, StoredResponse, response_record


class RedisIdempotencyStore(IdempotencyStore):
    def __init__(self, client: redis.Redis, *, ttl_seconds: int, lock_ttl_seconds: int = LOCK_TTL_SECONDS) -> None:
        self._r = client
        self._ttl = ttl_seconds
        self._lock_ttl = lock_ttl_seconds
        self._release = client.register_script(lua_source("infra.stores.idempotency", "release"))
        self._complete = client.register_script(lua_source("infra.stores.idempotency", "complete"))

    def stored_response(self, tenant: str, digest: str) -> StoredResponse | None:
        with redis_errors():
            raw = self._r.get(keys.idempotency(tenant, digest))
        return None if raw is None else StoredResponse(**json.loads(text(raw)))

    def try_lock(self, lease: Lease) -> bool:
        with redis_errors():
            return bool(self._r.set(_lock_key(lease), lease.lock_value, nx=True, ex=self._lock_ttl))

    def lock_holder(self, lease: Lease) -> str | None:
        with redis_errors():
            holder = self._r.get(_lock_key(lease))
        return None if holder is None else text(holder)

    def complete(self, lease: Lease, response: StoredResponse) -> None:
        lease_keys = [keys.idempotency(lease.tenant, lease.digest), _lock_key(lease)]
        with redis_errors():
            self._complete(keys=lease_keys, args=[response_record(lease, response), self._ttl, lease.lock_value])

    def release(self, lease: Lease) -> None:
        with redis_errors():
            self._release(keys=[_lock_key(lease)], args=[lease.lock_value])

    def own(self, lease: Lease, session_id: str, handle: str | None) -> None:
        """The note lives on the session's tag and expires with the longest-lived key it lists."""
        owned = keys.session_idempotency(session_id)
        with redis_errors():
            pipe = self._r.pipeline(transaction=True)
            pipe.hset(owned, lease.digest, handle or "")
            pipe.expire(owned, self._ttl)
            pipe.execute()

    def forget_owned(self, tenant: str, session_id: str, handle: str | None = None) -> int:
        """One DEL per kept response (each on its own tag), then the note's fields."""
        owned = keys.session_idempotency(session_id)
        with redis_errors():
            noted = text_map(self._r.hgetall(owned))
            digests = [digest for digest, named in noted.items() if handle is None or named == handle]
            if not digests:
                return 0
            pipe = self._r.pipeline(transaction=False)
            for digest in digests:
                pipe.delete(keys.idempotency(tenant, digest))
                pipe.delete(keys.idempotency_lock(tenant, digest))
            pipe.hdel(owned, *digests)
            pipe.execute()
        return len(digests)


def _lock_key(lease: Lease) -> str:
    return keys.idempotency_lock(lease.tenant, lease.digest)
