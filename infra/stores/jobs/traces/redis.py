"""Traces in Redis: one hash per job in the job's slot (`keys.job_trace`), written by `add_trace.lua`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infra.redis import keys
from infra.redis.client import redis_errors, text
from infra.stores.jobs.redis_context import RedisJobContext
from infra.stores.jobs.scripts import ScriptSet
from infra.stores.jobs.traces.base import JobTraces
from infra.stores.jobs.traces.events import TraceEvent, numbered, truncated_marker

SCRIPTS = ScriptSet("infra.stores.jobs.traces", ("add_trace",))


class RedisJobTraces(JobTraces):
    """`JobTraces` on one Redis, each trace bounded to `max_bytes`."""

    def __init__(self, context: RedisJobContext, max_bytes: int) -> None:
        context.register(SCRIPTS)
        self._c, self.max_bytes = context, max_bytes

    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        if events:
            self._c.run("add_trace", *self.add_script(job_id, events))

    def add_script(self, job_id: str, events: Sequence[str]) -> tuple[list[str], list[Any]]:
        """`add_trace`'s keys and arguments (run alone, or in a map's last round trip)."""
        return [keys.job(job_id), keys.job_trace(job_id)], [self.max_bytes, truncated_marker(self.max_bytes), *events]

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        key = keys.job_trace(job_id)
        with redis_errors():
            found_end = self._c.r.hget(key, "next")
            end = 0 if found_end is None else int(text(found_end))
            if end <= after:
                return []
            found = self._c.r.hmget(key, [str(i) for i in range(after, end)])
        return numbered([text(event) for event in found if event is not None], after)
