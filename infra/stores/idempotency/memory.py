"""Idempotency keys in process memory (embedded mode, unit tests); expiry follows an injectable clock."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from infra.stores.idempotency.base import LOCK_TTL_SECONDS, IdempotencyStore, Lease, StoredResponse, response_record

_Entry = tuple[str, float]
"""A value and the time it expires."""


class MemoryIdempotencyStore(IdempotencyStore):
    def __init__(
        self, *, ttl_seconds: int, lock_ttl_seconds: int = LOCK_TTL_SECONDS, clock: Callable[[], float] = time.time
    ) -> None:
        self._ttl, self._lock_ttl, self._clock = ttl_seconds, lock_ttl_seconds, clock
        self._responses: dict[tuple[str, str], _Entry] = {}
        self._locks: dict[tuple[str, str], _Entry] = {}
        self._owned: dict[str, dict[str, str]] = {}
        self._mutex = threading.Lock()

    def stored_response(self, tenant: str, digest: str) -> StoredResponse | None:
        with self._mutex:
            raw = self._live(self._responses, (tenant, digest))
        return None if raw is None else StoredResponse(**json.loads(raw))

    def try_lock(self, lease: Lease) -> bool:
        with self._mutex:
            if self._live(self._locks, _slot(lease)) is not None:
                return False
            self._locks[_slot(lease)] = (lease.lock_value, self._clock() + self._lock_ttl)
            return True

    def lock_holder(self, lease: Lease) -> str | None:
        with self._mutex:
            return self._live(self._locks, _slot(lease))

    def complete(self, lease: Lease, response: StoredResponse) -> None:
        with self._mutex:
            if self._live(self._responses, _slot(lease)) is None:
                self._responses[_slot(lease)] = (response_record(lease, response), self._clock() + self._ttl)
            self._drop_lock(lease)

    def release(self, lease: Lease) -> None:
        with self._mutex:
            self._drop_lock(lease)

    def own(self, lease: Lease, session_id: str, handle: str | None) -> None:
        with self._mutex:
            self._owned.setdefault(session_id, {})[lease.digest] = handle or ""

    def forget_owned(self, tenant: str, session_id: str, handle: str | None = None) -> int:
        with self._mutex:
            noted = self._owned.get(session_id, {})
            digests = [digest for digest, named in noted.items() if handle is None or named == handle]
            for digest in digests:
                self._responses.pop((tenant, digest), None)
                self._locks.pop((tenant, digest), None)
                del noted[digest]
            if not noted:
                self._owned.pop(session_id, None)
        return len(digests)

    def _drop_lock(self, lease: Lease) -> None:
        if self._live(self._locks, _slot(lease)) == lease.lock_value:
            del self._locks[_slot(lease)]

    def _live(self, table: dict[tuple[str, str], _Entry], slot: tuple[str, str]) -> str | None:
        entry = table.get(slot)
        if entry is None or entry[1] <= self._clock():
            table.pop(slot, None)
            return None
        return entry[0]


def _slot(lease: Lease) -> tuple[str, str]:
    return lease.tenant, lease.digest
