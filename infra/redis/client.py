"""The Redis connection and the translation of redis-py errors into our tree."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlsplit

import redis
from redis.cluster import RedisCluster
from redis.sentinel import Sentinel

from infra.errors import BackendUnavailable


def connect(
    url: str,
    *,
    timeout: float = 5.0,
    sentinels: Sequence[tuple[str, int]] = (),
    master: str = "toolout",
    cluster: bool = False,
) -> redis.Redis:
    """A client that fails fast (seconds, not minutes) when Redis is down, so the API can answer 503.

    With `sentinels`, the client asks them where `master` is and asks again after a connection error, so it
    follows a failover to the promoted replica; `url` then gives only the database and the password.
    With `cluster`, `url` is one node of a Redis Cluster: the client learns the slot map from it and sends each
    command to the primary of its keys' slot (every script's keys share one slot: see `infra.redis.keys`).
    """
    options: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "health_check_interval": 30,
    }
    if cluster:
        # RedisCluster speaks the same commands as redis.Redis without sharing its class: the stores use only those.
        return cast(redis.Redis, RedisCluster.from_url(url, **options))
    if not sentinels:
        return redis.Redis.from_url(url, **options)
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    sentinel: Any = Sentinel  # redis-py leaves Sentinel's signatures untyped
    pool = sentinel(list(sentinels), socket_timeout=timeout, socket_connect_timeout=timeout)
    client: redis.Redis = pool.master_for(master, db=db, password=parts.password, **options)
    return client


def kombu_sentinel_url(url: str, sentinels: Sequence[tuple[str, int]]) -> str:
    """The `sentinel://…;sentinel://…` URL kombu's and Celery's Redis transports take for the same database."""
    parts = urlsplit(url)
    auth = f":{parts.password}@" if parts.password else ""
    db = parts.path.strip("/") or "0"
    return ";".join(f"sentinel://{auth}{host}:{port}/{db}" for host, port in sentinels)


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


# Every client is built with decode_responses=True, so replies are str at run time; redis-py's types
# say `bytes | str`. These narrow them honestly (a bytes reply would be decoded, not mistyped).
def text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a Redis string reply, got {type(value).__name__}")


def text_list(values: Iterable[object]) -> list[str]:
    return [text(value) for value in values]


def text_map(mapping: Mapping[Any, Any]) -> dict[str, str]:
    return {text(key): text(value) for key, value in mapping.items()}
