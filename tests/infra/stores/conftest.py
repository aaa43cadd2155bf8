"""Each store contract runs on every implementation: the in-memory twin, Redis (a real server, db 15) and the same
Redis stores on a local 3-primary Redis Cluster, where a script or transaction whose keys span two slots fails.

Time is a `Clock` the test moves: the in-memory twins read it directly; for Redis, moving it also
shortens every key's TTL by the same amount, so expiry is tested without sleeping through a TTL.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from infra.stores.apikeys import ApiKeyStore, MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.idempotency import IdempotencyStore, MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobStore, MemoryJobStore, RedisJobStore
from infra.stores.records import MemoryRecordStore, RecordStore, RedisRecordStore
from infra.stores.resultcache import MemoryResultCache, RedisResultCache, ResultCache

KINDS = ["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])]
"""The Redis leg needs a server (its `redis_client` is asked for at run time, so the mark is explicit)."""

KINDS_WITH_CLUSTER = [*KINDS, pytest.param("cluster", marks=[pytest.mark.redis, pytest.mark.integration])]
"""Every store is laid out for a Redis Cluster (`infra.redis.keys`), so every contract also runs on one."""

REDIS_FIXTURES = {"redis": "redis_client", "cluster": "redis_cluster_client"}
"""The client fixture of each kind that has a server."""


@dataclass
class Clock:
    """The time every store under test reads; `advance` also ages Redis keys when there is a Redis."""

    now: float = field(default_factory=time.time)
    client: redis.Redis | None = None

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        if self.client is not None:
            _age_keys(self.client, int(seconds * 1000))


def _age_keys(client: redis.Redis, ms: int) -> None:
    """Shorten every key's TTL by `ms` (a key whose TTL runs out is deleted at once). On a cluster client
    `scan_iter` walks every primary, and each key's commands go to the primary that owns it."""
    for key in list(client.scan_iter(count=1000)):
        ttl = client.pttl(key)
        if ttl is not None and ttl > 0:
            if ttl <= ms:
                client.delete(key)
            else:
                client.pexpire(key, ttl - ms)


def kind_fixture(kinds: list[Any]) -> Any:
    """The `kind` fixture over `kinds`; a test module may define its own to take more kinds."""

    @pytest.fixture(params=kinds)
    def kind(request: pytest.FixtureRequest) -> str:
        return str(request.param)

    return kind


kind = kind_fixture(KINDS_WITH_CLUSTER)


@pytest.fixture()
def clock(kind: str, request: pytest.FixtureRequest) -> Clock:
    fixture = REDIS_FIXTURES.get(kind)
    return Clock(client=request.getfixturevalue(fixture) if fixture else None)


def _client(clock: Clock) -> Any:
    return clock.client


@pytest.fixture()
def jobs(kind: str, clock: Clock) -> JobStore:
    if kind == "memory":
        return MemoryJobStore(ttl_seconds=600, deadline_seconds=60, clock=clock)
    return RedisJobStore(_client(clock), ttl_seconds=600, deadline_seconds=60, clock=clock)


SMALL_TRACE_BOUND = 1200
"""Three 330-byte events and the `truncated` marker fit; a fourth event does not."""


@pytest.fixture()
def small_trace_jobs(kind: str, clock: Clock) -> JobStore:
    if kind == "memory":
        return MemoryJobStore(ttl_seconds=600, deadline_seconds=60, clock=clock, trace_max_bytes=SMALL_TRACE_BOUND)
    return RedisJobStore(
        _client(clock), ttl_seconds=600, deadline_seconds=60, clock=clock, trace_max_bytes=SMALL_TRACE_BOUND
    )


@pytest.fixture()
def records(kind: str, clock: Clock) -> RecordStore:
    if kind == "memory":
        return MemoryRecordStore(session_ttl_seconds=600, clock=clock)
    return RedisRecordStore(_client(clock), session_ttl_seconds=600, clock=clock)


@pytest.fixture()
def make_key_store(kind: str, clock: Clock) -> Any:
    def make(configured: dict[str, str] | None = None) -> ApiKeyStore:
        if kind == "memory":
            return MemoryApiKeyStore(configured)
        return RedisApiKeyStore(_client(clock), configured)

    return make


@pytest.fixture()
def make_idempotency(kind: str, clock: Clock) -> Any:
    def make(ttl_seconds: int = 60, lock_ttl_seconds: int = 30) -> IdempotencyStore:
        if kind == "memory":
            return MemoryIdempotencyStore(ttl_seconds=ttl_seconds, lock_ttl_seconds=lock_ttl_seconds, clock=clock)
        return RedisIdempotencyStore(_client(clock), ttl_seconds=ttl_seconds, lock_ttl_seconds=lock_ttl_seconds)

    return make


@pytest.fixture()
def cache(kind: str, clock: Clock) -> ResultCache:
    if kind == "memory":
        return MemoryResultCache(ttl_seconds=600, clock=clock)
    return RedisResultCache(_client(clock), ttl_seconds=600, clock=clock)
