"""Who is loading which content as tables right now, and where that content was last kept: the query
strategy's coordination, in Redis (every worker sees it) or in memory (one process: the embedded mode).

A load of a big output costs a worker seconds (DuckDB reads every record twice, then the Parquet is uploaded),
so the same content should load once: the preload queued at upload time, a question arriving while it
runs, and a second upload of the same bytes. Both are keyed by tenant and content sha256 (a tenant never
learns, even by timing, what another one stored):

* a **load lock** — `SET NX` with a short TTL that its holder renews from a thread while it works, so a
  holder that dies frees it within seconds and a live one keeps it for as long as its load takes;
* a **pointer** to the blob prefix where the content was last kept as tables, so an output with the
  same content copies those Parquet files instead of loading. It belongs to the output under that
  prefix: deleting the output (or its session) `forget`s it, and a keeper that finds its output deleted
  after `remember` forgets it too (`workers.job.query`), so the pointer goes with the tables whichever of
  the two ran last. A reader still checks the manifest it points to (same sha256), and forgets a pointer
  whose tables are gone (a deletion that failed half-way): the TTL is only the last resort.

This module does not import DuckDB: the API and the stores build it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Protocol

import redis

from extraction.documents.structured import sniff_structured
from infra.redis import keys
from infra.redis.client import redis_errors, text
from infra.settings import Settings
from infra.stores.records import OutputRecord

log = logging.getLogger("toolout.query")

LOCK_TTL_SECONDS = 30.0
"""How long a load lock outlives its last renewal (renewed every third of it while held)."""


class Lease:
    """A held load lock, renewed by a daemon thread until `release` (idempotent, never raises)."""

    def __init__(self, renew: Callable[[], object], drop: Callable[[], object], ttl_seconds: float) -> None:
        self._renew, self._drop = renew, drop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(ttl_seconds / 3,), daemon=True, name="load-lease")
        self._thread.start()

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self._renew()
            except Exception as exc:  # noqa: BLE001 - lost: another process may load too, which is only a waste
                log.warning("load lock lost: %s", exc)
                return

    def release(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        with contextlib.suppress(Exception):  # expired or Redis gone: the TTL frees it anyway
            self._drop()


class LoadedForms(Protocol):
    """The load locks and the pointers to kept tables (module docstring)."""

    def try_hold(self, tenant: str, sha256: str) -> Lease | None:
        """The content's load lock if nobody holds it (None: somebody is loading it now)."""
        ...

    def kept_at(self, tenant: str, sha256: str) -> str | None:
        """The blob prefix where the content was last kept as tables (unchecked: read its manifest)."""
        ...

    def remember(self, tenant: str, sha256: str, prefix: str) -> None:
        """The content is now kept as tables under `prefix`."""
        ...

    def forget(self, tenant: str, sha256: str, prefix: str) -> None:
        """The tables under `prefix` are gone: drop the pointer if it still points there (another output's
        pointer to the same content stays)."""
        ...


class MemoryLoadedForms:
    """One process's locks and pointers (the embedded mode, unit tests, a runtime built without stores)."""

    def __init__(self, *, lock_ttl_seconds: float = LOCK_TTL_SECONDS) -> None:
        self._ttl = lock_ttl_seconds
        self._locks: dict[tuple[str, str], tuple[str, float]] = {}
        self._kept: dict[tuple[str, str], str] = {}
        self._mutex = threading.Lock()

    def try_hold(self, tenant: str, sha256: str) -> Lease | None:
        key, token = (tenant, sha256), uuid.uuid4().hex
        with self._mutex:
            held = self._locks.get(key)
            if held is not None and held[1] > time.monotonic():
                return None
            self._locks[key] = (token, time.monotonic() + self._ttl)
        return Lease(lambda: self._renew(key, token), lambda: self._drop(key, token), self._ttl)

    def _renew(self, key: tuple[str, str], token: str) -> None:
        with self._mutex:
            if self._locks.get(key, ("", 0.0))[0] != token:
                raise LookupError("the load lock expired")
            self._locks[key] = (token, time.monotonic() + self._ttl)

    def _drop(self, key: tuple[str, str], token: str) -> None:
        with self._mutex:
            if self._locks.get(key, ("", 0.0))[0] == token:
                del self._locks[key]

    def kept_at(self, tenant: str, sha256: str) -> str | None:
        with self._mutex:
            return self._kept.get((tenant, sha256))

    def remember(self, tenant: str, sha256: str, prefix: str) -> None:
        with self._mutex:
            self._kept[(tenant, sha256)] = prefix

    def forget(self, tenant: str, sha256: str, prefix: str) -> None:
        with self._mutex:
            if self._kept.get((tenant, sha256)) == prefix:
                del self._kept[(tenant, sha256)]


FORGET_IF_POINTS_AT = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
"""Compare-and-delete in one step: a pointer another output just set for the same content stays."""


class RedisLoadedForms:
    """The locks and pointers every worker shares; the lock is redis-py's (token-checked renew and release)."""

    def __init__(
        self, client: redis.Redis, *, kept_ttl_seconds: int, lock_ttl_seconds: float = LOCK_TTL_SECONDS
    ) -> None:
        self._r = client
        self._kept_ttl = kept_ttl_seconds
        self._ttl = lock_ttl_seconds
        self._forget = client.register_script(FORGET_IF_POINTS_AT)

    def try_hold(self, tenant: str, sha256: str) -> Lease | None:
        lock = self._r.lock(keys.query_load_lock(tenant, sha256), timeout=self._ttl, thread_local=False)
        with redis_errors():
            if not lock.acquire(blocking=False):
                return None
        return Lease(lock.reacquire, lock.release, self._ttl)

    def kept_at(self, tenant: str, sha256: str) -> str | None:
        with redis_errors():
            found = self._r.get(keys.query_loaded(tenant, sha256))
        return None if found is None else text(found)

    def remember(self, tenant: str, sha256: str, prefix: str) -> None:
        with redis_errors():
            self._r.set(keys.query_loaded(tenant, sha256), prefix, ex=self._kept_ttl)

    def forget(self, tenant: str, sha256: str, prefix: str) -> None:
        with redis_errors():
            self._forget(keys=[keys.query_loaded(tenant, sha256)], args=[prefix])


def wants_preload(settings: Settings, record: OutputRecord, head: bytes, *, oversized: bool) -> bool:
    """Whether a just-stored output's tables should be loaded now (`Dispatcher.preload`): it is oversized,
    kept as a blob (an inline one loads in milliseconds) and its first `SNIFF_BYTES` (`head`) look like
    JSON, NDJSON or CSV/TSV — what `auto` sends to the query strategy. Off: `TOOLOUT_QUERY_PRELOAD=false`."""
    if not (settings.query_preload and oversized) or record.inline is not None:
        return False
    return sniff_structured(head, record.content_type) is not None
