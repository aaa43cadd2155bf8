"""Idempotency keys: the first response to a key is kept and replayed to retries (Stripe's semantics).

An agent that times out on `POST /v1/extractions` cannot tell whether the job was created; with an
`Idempotency-Key` it simply sends the same request again and gets the original answer instead of a
second job. The rules:

* keys are scoped per tenant and expire `ttl_seconds` after the first response was stored;
* a request is "the same" when its fingerprint (the caller's sha256 over method, path and body)
  matches; the same key with another fingerprint is `IdempotencyKeyReused` (422);
* while the first request is in flight a lock (`SET NX` with a short TTL, so a crashed process
  cannot hold it forever) makes a concurrent duplicate `IdempotencyKeyInUse` (409);
* the caller stores only successful responses: after an error it releases the lock, so a retry
  runs again rather than replaying a 503 or a 429 for a day.

The client's key is stored as its sha256, so its characters never shape a Redis key name.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field

import redis

from infra import keys
from infra.errors import IdempotencyKeyInUse, IdempotencyKeyReused
from infra.redis_client import redis_errors

LOCK_TTL_SECONDS = 120
"""Longer than storing an upload or creating a job takes (the upload body is received before the lock)."""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_COMPLETE = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2], 'NX')
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1
"""


def fingerprint(*parts: str | bytes) -> str:
    """sha256 over length-prefixed parts, so ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    """What a replay sends back: the first response's status, JSON body and the headers worth keeping."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)
    fingerprint: str = ""


@dataclass(frozen=True)
class Lease:
    """Proof that this request holds the key's lock; pass it to `complete` or `release`."""

    tenant: str
    digest: str
    fingerprint: str
    token: str

    @property
    def lock_value(self) -> str:
        return json.dumps({"token": self.token, "fingerprint": self.fingerprint})


class IdempotencyStore:
    """`begin` → `Lease` (run the request) or `StoredResponse` (replay it); then `complete` or `release`."""

    def __init__(self, client: redis.Redis, *, ttl_seconds: int, lock_ttl_seconds: int = LOCK_TTL_SECONDS) -> None:
        self._r = client
        self._ttl = ttl_seconds
        self._lock_ttl = lock_ttl_seconds
        self._release = client.register_script(_RELEASE)
        self._complete = client.register_script(_COMPLETE)

    def begin(self, tenant: str, key: str, request_fingerprint: str) -> Lease | StoredResponse:
        """Replay a finished first request, refuse a clashing or concurrent one, or lease the key."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        stored = self._stored(tenant, digest, request_fingerprint)
        if stored is not None:
            return stored
        lease = Lease(tenant, digest, request_fingerprint, secrets.token_hex(16))
        self._lock(lease)
        stored = self._stored(tenant, digest, request_fingerprint)  # finished between our GET and SET?
        if stored is not None:
            self.release(lease)
            return stored
        return lease

    def complete(self, lease: Lease, response: StoredResponse) -> None:
        """Keep the response for the TTL (the first one stored wins) and drop the lock."""
        record = json.dumps(asdict(response) | {"fingerprint": lease.fingerprint})
        lease_keys = [keys.idempotency(lease.tenant, lease.digest), keys.idempotency_lock(lease.tenant, lease.digest)]
        with redis_errors():
            self._complete(keys=lease_keys, args=[record, self._ttl, lease.lock_value])

    def release(self, lease: Lease) -> None:
        """Drop the lock without storing anything: the next request with the key runs afresh."""
        with redis_errors():
            self._release(keys=[keys.idempotency_lock(lease.tenant, lease.digest)], args=[lease.lock_value])

    def _stored(self, tenant: str, digest: str, request_fingerprint: str) -> StoredResponse | None:
        with redis_errors():
            raw = self._r.get(keys.idempotency(tenant, digest))
        if raw is None:
            return None
        stored = StoredResponse(**json.loads(raw))
        _same_request(stored.fingerprint, request_fingerprint)
        return stored

    def _lock(self, lease: Lease) -> None:
        lock_key = keys.idempotency_lock(lease.tenant, lease.digest)
        with redis_errors():
            if self._r.set(lock_key, lease.lock_value, nx=True, ex=self._lock_ttl):
                return
            holder = self._r.get(lock_key)
        if holder is not None:
            _same_request(json.loads(holder)["fingerprint"], lease.fingerprint)
        raise IdempotencyKeyInUse(
            "a request with this Idempotency-Key is still being processed; retry when it has finished"
        )


def _same_request(first: str, this: str) -> None:
    if first != this:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was already used for a different request (method, path or body differ)"
        )
