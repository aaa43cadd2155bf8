"""A guard for one kombu bug that turns a broker blip into a dead worker.

When the Redis broker goes away while a worker holds unacknowledged (late-ack) tasks, Celery
closes the connection and kombu's channel close tries to re-queue those messages
(`restore_unacked_once`). It does so through a fresh connection pool built from the transport's
client — which the close has already set to None — so it raises `AttributeError` (a known kombu
bug, reported upstream). Celery only ignores *connection* errors there, so it logs "Unrecoverable error" and
stops the worker. Outside a supervisor (`toolout worker`, the demo, the tests) that worker stays
down, and a Redis restart can take every worker with it.

The guard raises the redis `ConnectionError` kombu already treats as recoverable instead: the
consumer goes on reconnecting, and the unacked messages wait in Redis for the visibility timeout —
their jobs are the watchdog's to re-submit meanwhile.
"""

from __future__ import annotations

from typing import Any

import redis

_MARK = "_toolout_guarded"


def guard_closed_transport() -> None:
    """Patch `kombu.transport.redis.Channel._connparams` once per process."""
    from kombu.transport import redis as kombu_redis

    channel: Any = kombu_redis.Channel  # `_connparams` is private, so kombu's types do not show it
    original = channel._connparams
    if getattr(original, _MARK, False):
        return

    def _connparams(self: Any, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection is already closed")
        params: dict[str, Any] = original(self, asynchronous=asynchronous)
        return params

    setattr(_connparams, _MARK, True)
    channel._connparams = _connparams
