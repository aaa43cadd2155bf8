"""`RedisJobStore`'s traces: one hash per job in the job's slot (`keys.job_trace`), written by `add_trace.lua`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text
from infra.stores.jobs.traces import TraceEvent, numbered, truncated_marker


class RedisTraces:
    def __init__(self, client: redis.Redis, max_bytes: int) -> None:
        self._r, self.max_bytes = client, max_bytes

    def call(self, job_id: str, events: Sequence[str]) -> tuple[list[str], list[Any]]:
        """`add_trace`'s keys and arguments (the job store runs it alone or in a map's one round trip)."""
        return [keys.job(job_id), keys.job_trace(job_id)], [self.max_bytes, truncated_marker(self.max_bytes), *events]

    def read(self, job_id: str, after: int) -> list[TraceEvent]:
        key = keys.job_trace(job_id)
        with redis_errors():
            found_end = self._r.hget(key, "next")
            end = 0 if found_end is None else int(text(found_end))
            if end <= after:
                return []
            found = self._r.hmget(key, [str(i) for i in range(after, end)])
        return numbered([text(event) for event in found if event is not None], after)
