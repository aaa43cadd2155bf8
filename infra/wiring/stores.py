"""All of a process's stores, opened once from settings: Redis ones, or their in-memory twins.

`TOOLOUT_REDIS_URL=memory://` gives the twins (one process only: the embedded mode, unit tests);
any `redis://` URL gives the Redis implementations sharing one connection pool. Entry points (the
API's app factory, the worker boot, `toolout.local`) call `open_stores` once and pass the result on;
everything else takes the `Stores` bundle (`infra.stores.bundle`) it is handed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from infra.blobstore import BlobStore, open_blob_store_from_settings
from infra.llm.ratelimit import MemoryRateLimiter, RedisRateLimiter
from infra.query.loaded_forms import RedisLoadedForms
from infra.redis.client import connect, redis_errors
from infra.settings import Settings
from infra.stores.apikeys import MemoryApiKeyStore, RedisApiKeyStore
from infra.stores.bundle import EndListener, Stores
from infra.stores.idempotency import MemoryIdempotencyStore, RedisIdempotencyStore
from infra.stores.jobs import JobStores, memory_job_stores, redis_job_stores
from infra.stores.jobs.end_feed import RedisEndFeed
from infra.stores.records import memory_record_stores, redis_record_stores
from infra.stores.resultcache import MemoryResultCache, RedisResultCache

MEMORY_URL = "memory://"


def open_stores(settings: Settings) -> Stores:
    """The stores `settings` describe: Redis (or memory twins) and the blob store."""
    blobs = open_blob_store_from_settings(settings)
    if settings.redis_url == MEMORY_URL:
        return memory_stores(settings, blobs)
    return redis_stores(settings, blobs)


def memory_stores(settings: Settings, blobs: BlobStore) -> Stores:
    jobs = memory_job_stores(
        ttl_seconds=settings.job_ttl_seconds,
        deadline_seconds=settings.job_deadline_seconds,
        trace_max_bytes=settings.trace_max_bytes,
    )
    return Stores(
        records=memory_record_stores(session_ttl_seconds=settings.session_ttl_seconds),
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
        records=redis_record_stores(client, session_ttl_seconds=settings.session_ttl_seconds),
        jobs=redis_job_stores(
            client,
            ttl_seconds=settings.job_ttl_seconds,
            deadline_seconds=settings.job_deadline_seconds,
            trace_max_bytes=settings.trace_max_bytes,
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


def _follow_in_process(jobs: JobStores, listener: EndListener) -> Callable[[], None]:
    """One process holds every job: its finish listeners hear every end. They cannot be removed; a stopped
    follower is muted instead."""
    stopped = threading.Event()

    def hear(job_id: str) -> None:
        if not stopped.is_set():
            listener(job_id)

    jobs.records.listen_finished(hear)
    return stopped.set
