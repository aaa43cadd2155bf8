"""The feed of ended job ids from Redis: one subscriber thread per process, however many requests wait.

`finish.lua` publishes each job id on `keys.jobs_ended` as the job ends. Pub/sub delivers nothing
sent while the subscriber is disconnected, so waiters keep re-reading their job now and then
(`api.routers.extractions`); the feed only makes the common case immediate. Channels are not per
database: a process may hear the ends of jobs in another database, which wakes no one (no watch has
that id) or at worst causes one extra read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis

from infra.redis import keys

log = logging.getLogger(__name__)

RECONNECT_SECONDS = 1.0


class RedisEndFeed:
    """Calls `on_end(job_id)` for every job id published on the ends channel, until `stop()`."""

    def __init__(self, client: redis.Redis, on_end: Callable[[str], None]) -> None:
        self._client, self._on_end = client, on_end
        self._stopped = threading.Event()
        self.subscribed = threading.Event()
        """Set while subscribed (tests wait for it before publishing)."""
        self._thread = threading.Thread(target=self._run, name="toolout-job-ends", daemon=True)

    def start(self) -> RedisEndFeed:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._listen()
            except redis.RedisError as exc:
                log.warning("job-end feed lost Redis (%s); waiters fall back to re-reading", exc)
            except Exception:  # a listener's bug must not end the feed for every later waiter
                log.exception("job-end feed: delivering an end failed; subscribing again")
            self.subscribed.clear()
            self._stopped.wait(RECONNECT_SECONDS)

    def _listen(self) -> None:
        with self._client.pubsub(ignore_subscribe_messages=True) as pubsub:  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
            pubsub.subscribe(keys.jobs_ended(self._client))
            pubsub.get_message(timeout=1.0)  # the subscription's confirmation: we now hear every end
            self.subscribed.set()
            while not self._stopped.is_set():
                message = pubsub.get_message(timeout=0.5)
                if message is not None and message.get("type") == "message":
                    self._on_end(str(message["data"]))
