"""One redis-py client per kombu channel: the same client for every command, a new one for a new pool."""

from __future__ import annotations

import redis
from kombu import Connection

from workers.celery.broker_clients import share_channel_clients


def test_a_channel_keeps_one_client_until_its_pool_is_replaced(redis_url: str) -> None:
    share_channel_clients()
    share_channel_clients()  # idempotent: one patch however many composition roots call it
    with Connection(redis_url) as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second and isinstance(first, redis.Redis)
            assert first.connection_pool is channel.pool
        given = redis.Redis.from_url(redis_url)
        with channel.conn_or_acquire(given) as passed:
            assert passed is given  # a caller's own client is used as before
        channel._pool = None  # what kombu does after a connection error
        with channel.conn_or_acquire() as third:
            assert third is not first and third.connection_pool is channel.pool


def test_messages_still_go_through_publish_consume_and_ack(redis_url: str) -> None:
    share_channel_clients()
    with Connection(redis_url) as connection, connection.SimpleQueue("toolout-test-clients") as queue:
        for n in range(3):
            queue.put({"n": n})
        got = []
        for _ in range(3):
            message = queue.get(timeout=5)
            got.append(message.payload["n"])
            message.ack()
        assert sorted(got) == [0, 1, 2]
        with connection.default_channel.conn_or_acquire() as client:
            assert client.llen("toolout-test-clients") == 0
            assert client.zcard("unacked_index") == 0  # every ack went through the kept client
