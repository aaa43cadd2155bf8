"""All of a process's stores, opened once from settings: Redis ones, or their in-memory twins.

`TOOLOUT_REDIS_URL=memory://` gives the twins (one process only: the embedded mode, unit tests);
any `redis://` URL gives the Redis implementations sharing one connection pool. Entry points (the
API's app factory, the worker boot, `toolout.local`) call `open_stores` once and pass the result on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from infra.blobstore import BlobStore, open_blob_store_from_settings
from infra.llm.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from infra.query.loaded_forms import LoadedForms, MemoryLoadedForms, RedisLoadedForms
from infra.redis.client import connect, redis_errors
from infra.settings import Settings
from infra.stores.apikeys import ApiKeyStore, MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.idempotency import IdempotencyStore, MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobStore, MemoryJobStore, RedisJobStore
from infra.stores.jobs.end_feed import RedisEndFeed
from infra.stores.records import MemoryRecordStore, RecordStore, RedisRecordStore
from infra.stores.resultcache import MemoryResultCache, RedisResultCache, ResultCache

MEMORY_URL = "memory://"

EndListener = Callable[[str], None]
"""Called with a job id as the job ends, from a thread of the store's choosing."""


@dataclass
class Stores:
    """The state a process works on; `ping` checks the state backend, `close` releases it."""

    records: RecordStore
    jobs: JobStore
    api_keys: ApiKeyStore
    idempotency: IdempotencyStore
    cache: ResultCache
    blobs: BlobStore
    ping: Callable[[], object]
    close: Callable[[], None]
    follow_ends: Callable[[EndListener], Callable[[], None]]
    """Start calling the listener with every job that ends, in any process; returns the function that stops it."""
    limiter: RateLimiter = field(default_factory=MemoryRateLimiter)
    """Provider limits (rpm/tpm per model) shared by every process on the same Redis."""
    loaded: LoadedForms = field(default_factory=MemoryLoadedForms)
    """The query strategy's load locks and kept-tables pointers (`infra.query.loaded_forms`)."""


def open_stores(settings: Settings) -> Stores:
    """The stores `settings` describe: Redis (or memory twins) and the blob store."""
    blobs = open_blob_store_from_settings(settings)
    if settings.redis_url == MEMORY_URL:
        return memory_stores(settings, blobs)
    return redis_stores(settings, blobs)


def memory_stores(settings: Settings, blobs: BlobStore) -> Stores:
    jobs = MemoryJobStore(ttl_seconds=settings.job_ttl_seconds, deadline_seconds=settings.job_deadline_seconds)
    return Stores(
        records=MemoryRecordStore(session_ttl_seconds=settings.session_ttl_seconds),
        jobs=jobs,
        api_keys=MemoryApiKeyStore(settings.api_keys),
        idempotency=MemoryIdempotencyStore(ttl_seconds=settings.idempotency_ttl_seconds),
        cache=MemoryResultCache(ttl_seconds=settings.result_cache_ttl_seconds),
        blobs=blobs,
        ping=lambda: True,
        close=lambda: None,
        follow_ends=lambda listener: _follow_in_process(jobs, listener),
        limiter=MemoryRateLimiter(burst_seconds=settings.rate_limit_burst_seconds),
    )


def redis_stores(settings: Settings, blobs: BlobStore) -> Stores:
    client = connect(
        settings.redis_url,
        sentinels=settings.sentinels,
        master=settings.redis_sentinel_master,
        cluster=settings.redis_cluster,
    )

    def ping() -> object:
        with redis_errors():
            return client.ping()

    return Stores(
        records=RedisRecordStore(client, session_ttl_seconds=settings.session_ttl_seconds),
        jobs=RedisJobStore(
            client, ttl_seconds=settings.job_ttl_seconds, deadline_seconds=settings.job_deadline_seconds
        ),
        api_keys=RedisApiKeyStore(client, settings.api_keys),
        idempotency=RedisIdempotencyStore(client, ttl_seconds=settings.idempotency_ttl_seconds),
        cache=RedisResultCache(client, ttl_seconds=settings.result_cache_ttl_seconds),
        blobs=blobs,
        ping=ping,
        close=client.close,
        follow_ends=lambda listener: RedisEndFeed(client, listener).start().stop,
        limiter=RedisRateLimiter(client, burst_seconds=settings.rate_limit_burst_seconds),
        loaded=RedisLoadedForms(client, kept_ttl_seconds=settings.session_ttl_seconds),
    )


def _follow_in_process(jobs: JobStore, listener: EndListener) -> Callable[[], None]:
    """One process holds every job: its finish listeners hear every end. They cannot be removed; a stopped
    follower is muted instead."""
    stopped = threading.Event()

    def hear(job_id: str) -> None:
        if not stopped.is_set():
            listener(job_id)

    jobs.listen_finished(hear)
    return stopped.set
