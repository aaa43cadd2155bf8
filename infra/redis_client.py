"""The Redis connection and the translation of redis-py errors into our tree."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from infra.errors import BackendUnavailable


def connect(url: str, *, timeout: float = 5.0) -> redis.Redis:
    """A client that fails fast (seconds, not minutes) when Redis is down, so the API can answer 503."""
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        health_check_interval=30,
    )


@contextmanager
def redis_errors() -> Iterator[None]:
    """Turn connection-level redis failures into `BackendUnavailable`."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as exc:
        raise BackendUnavailable(f"Redis is unavailable: {exc}", backend="redis") from exc
    except redis.ResponseError as exc:
        if "READONLY" in str(exc) or "LOADING" in str(exc) or "MISCONF" in str(exc):
            raise BackendUnavailable(f"Redis cannot take writes: {exc}", backend="redis") from exc
        raise
