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

The client's key is stored as its sha256, so its characters never shape a Redis key name. A kept response is
noted under the session it belongs to (`own`), and deleting the session or the output it names removes it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import Protocol

from infra.errors import IdempotencyKeyInUse, IdempotencyKeyReused

LOCK_TTL_SECONDS = 120
"""Longer than storing an upload or creating a job takes (the upload body is received before the lock)."""


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


class IdempotencyStore(Protocol):
    """`begin` → `Lease` (run the request) or `StoredResponse` (replay it); then `complete` or `release`.

    The protocol of the three calls is written once here; an implementation keeps the stored
    responses and the locks: `RedisIdempotencyStore` in production, `MemoryIdempotencyStore` for
    the embedded mode and unit tests.
    """

    # --- what an implementation keeps -----------------------------------------------------------
    def stored_response(self, tenant: str, digest: str) -> StoredResponse | None:
        """The response kept for the key, if any (an expired one is gone)."""
        ...

    def try_lock(self, lease: Lease) -> bool:
        """Take the key's lock (it expires after a while, so a crashed request cannot hold it forever)."""
        ...

    def lock_holder(self, lease: Lease) -> str | None:
        """The lock value of whoever holds the key's lock now (None: nobody)."""
        ...

    def complete(self, lease: Lease, response: StoredResponse) -> None:
        """Keep the response for the TTL (the first one stored wins) and drop the lease's lock."""
        ...

    def release(self, lease: Lease) -> None:
        """Drop the lock without storing anything: the next request with the key runs afresh."""
        ...

    def own(self, lease: Lease, session_id: str, handle: str | None) -> None:
        """Note that the kept response belongs to the session and names `handle`, so deleting either removes it
        (a replay must never answer with a handle or a job that is gone)."""
        ...

    def forget_owned(self, tenant: str, session_id: str, handle: str | None = None) -> int:
        """Remove the kept responses of the session's keys (only those naming `handle`, when given) and their
        note; returns how many went."""
        ...

    # --- the rules ----------------------------------------------------------------------------
    def begin(self, tenant: str, key: str, request_fingerprint: str) -> Lease | StoredResponse:
        """Replay a finished first request, refuse a clashing or concurrent one, or lease the key."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        stored = self._same(self.stored_response(tenant, digest), request_fingerprint)
        if stored is not None:
            return stored
        lease = Lease(tenant, digest, request_fingerprint, secrets.token_hex(16))
        if not self.try_lock(lease):
            holder = self.lock_holder(lease)
            if holder is not None:
                _same_request(json.loads(holder)["fingerprint"], lease.fingerprint)
            raise IdempotencyKeyInUse(
                "a request with this Idempotency-Key is still being processed; retry when it has finished"
            )
        stored = self._same(self.stored_response(tenant, digest), request_fingerprint)  # finished meanwhile?
        if stored is not None:
            self.release(lease)
            return stored
        return lease

    def _same(self, stored: StoredResponse | None, request_fingerprint: str) -> StoredResponse | None:
        if stored is not None:
            _same_request(stored.fingerprint, request_fingerprint)
        return stored


def response_record(lease: Lease, response: StoredResponse) -> str:
    """The kept response as JSON, stamped with the fingerprint of the request that made it."""
    return json.dumps(asdict(response) | {"fingerprint": lease.fingerprint})


def _same_request(first: str, this: str) -> None:
    if first != this:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was already used for a different request (method, path or body differ)"
        )
