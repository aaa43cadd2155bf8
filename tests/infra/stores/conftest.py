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

from extraction.documents.stats import measure
from extraction.strategies.coverage import FailedRange
from infra.stores.apikeys import ApiKeyStore, MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.idempotency import IdempotencyStore, MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobRecord, JobStores, memory_job_stores, redis_job_stores
from infra.stores.records import OutputRecord, RecordStores, blob_key, memory_record_stores, new_id, redis_record_stores
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
def jobs(kind: str, clock: Clock) -> JobStores:
    if kind == "memory":
        return memory_job_stores(ttl_seconds=600, deadline_seconds=60, clock=clock)
    return redis_job_stores(_client(clock), ttl_seconds=600, deadline_seconds=60, clock=clock)


def new_job(jobs: JobStores, job_id: str = "j1", *, tenant: str = "dev", max_live: int = 0, **fields) -> JobRecord:
    """A queued job written through the records part, which every part's contract starts from."""
    record = JobRecord(
        id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors", nonce="abc123", **fields
    )
    return jobs.records.create(record, max_live=max_live)


def chunk_failure(index: int, reason: str = "no valid final report after 2 attempt(s)") -> FailedRange:
    return FailedRange(level=0, index=index, chunks=[index], start=index * 100, end=index * 100 + 110, reason=reason)


SMALL_TRACE_BOUND = 1200
"""Three 330-byte events and the `truncated` marker fit; a fourth event does not."""


@pytest.fixture()
def small_trace_jobs(kind: str, clock: Clock) -> JobStores:
    if kind == "memory":
        return memory_job_stores(ttl_seconds=600, deadline_seconds=60, clock=clock, trace_max_bytes=SMALL_TRACE_BOUND)
    return redis_job_stores(
        _client(clock), ttl_seconds=600, deadline_seconds=60, clock=clock, trace_max_bytes=SMALL_TRACE_BOUND
    )


def output(session_id: str, tenant: str = "dev") -> OutputRecord:
    """An output record of `session_id` (no blob behind it: the record store keeps records only)."""
    handle = new_id()
    key = blob_key(session_id, handle)
    return OutputRecord(
        handle=handle,
        session_id=session_id,
        tenant=tenant,
        tool_name="search",
        tool_args='{"q": "x"}',
        stats=measure([b"a\nb\n"]).stats,
        blob_key=key,
        index_key=f"{key}.tokidx",
        lines_key=f"{key}.lines",
    )


def named(session_id: str, name: str, tenant: str = "dev") -> OutputRecord:
    return output(session_id, tenant).model_copy(update={"name": name})


@pytest.fixture()
def records(kind: str, clock: Clock) -> RecordStores:
    if kind == "memory":
        return memory_record_stores(session_ttl_seconds=600, clock=clock)
    return redis_record_stores(_client(clock), session_ttl_seconds=600, clock=clock)


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
