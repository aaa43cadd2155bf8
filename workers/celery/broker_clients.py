"""One redis-py client per kombu channel, instead of a new one for every broker command.

kombu's Redis channel wraps each of its commands outside the consumer's event loop (a publish, an
ack, the unacked-message bookkeeping, a queue size) in `conn_or_acquire()`, which builds a fresh
`redis.Redis` around the channel's connection pool every time. Building one costs more than the
command it sends (redis-py fills a table of response callbacks per client), and a busy worker
spends that rebuild holding the GIL its map threads need (docs/performance.md).
A client is only a handle on the pool, thread-safe and stateless, so the channel can keep one: the
same connections, the same commands, without the rebuild. A channel whose pool
is replaced (kombu does after a connection error) gets a new client for the new pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_MARK = "_toolout_shared_client"


def share_channel_clients() -> None:
    """Patch `kombu.transport.redis.Channel.conn_or_acquire` once per process (the API's and the workers')."""
    from kombu.transport import redis as kombu_redis

    channel: Any = kombu_redis.Channel
    if getattr(channel.conn_or_acquire, _MARK, False):
        return

    @contextmanager
    def conn_or_acquire(self: Any, client: Any = None) -> Iterator[Any]:
        yield client if client else _channel_client(self)

    setattr(conn_or_acquire, _MARK, True)
    channel.conn_or_acquire = conn_or_acquire


def _channel_client(channel: Any) -> Any:
    """The channel's kept client, rebuilt only when the channel's pool is not the one it wraps."""
    pool = channel.pool
    client = channel.__dict__.get(_MARK)
    if client is None or client.connection_pool is not pool:
        client = channel._create_client()
        channel.__dict__[_MARK] = client
    return client
