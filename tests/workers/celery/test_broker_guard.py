"""The kombu guard: a channel closed after its transport lost its client fails as a connection error, not a crash."""

from __future__ import annotations

import pytest
import redis
from kombu import Connection
from kombu.common import ignore_errors

from workers.celery.broker_guard import guard_closed_transport


@pytest.fixture(autouse=True)
def guarded() -> None:
    """Install the guard, as every worker process does at boot (`workers.celery.main.build_worker`)."""
    guard_closed_transport()


def test_a_closed_transport_raises_a_recoverable_connection_error(redis_url: str) -> None:
    with Connection(redis_url) as connection:
        channel = connection.channel()
        channel.connection.client = None  # what kombu's own close leaves behind
        channel._pool = None
        with pytest.raises(redis.exceptions.ConnectionError):
            channel._connparams()
        assert isinstance(redis.exceptions.ConnectionError("x"), connection.connection_errors)


def test_celery_ignores_it_when_closing_after_a_connection_loss(redis_url: str) -> None:
    connection = Connection(redis_url)
    channel = connection.default_channel
    channel.qos._delivered["tag"] = object()  # an unacked message to restore on close
    channel.connection.client = None
    channel._pool = None
    ignore_errors(connection, channel.close)  # as Celery's consumer does; must not raise
    assert channel.closed
