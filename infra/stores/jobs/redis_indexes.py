"""The indexes that span jobs, laid out for Redis Cluster: per-slot copies and the tenants' live jobs.

A job's keys share the tag `{<job id>}`, so they sit on one slot, and a script may touch nothing else on a
cluster. The indexes the job scripts change together with a job (active jobs by deadline, usage totals, model
usage totals, chunks failed) are therefore kept one copy per slot (`infra.redis.slot_index`): each script changes the
copy beside its job, atomically, and the readers here (the watchdog's `overdue`, `/metrics`' sums) walk every
copy in one pipelined round trip per primary. On one Redis the copies are just several keys.

A tenant's live jobs cannot be on every job's slot, so the cap on them is kept apart
(`infra.stores.jobs.records.live`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text_map
from infra.redis.client import text as as_text
from infra.redis.slot_index import SlotIndex


class JobIndexes:
    """The per-slot job indexes of one client: the copy to pass a script, and whole-index reads."""

    def __init__(self, client: redis.Redis) -> None:
        self._r = client
        self.active = SlotIndex(client, keys.JOBS_ACTIVE)
        self.usage = SlotIndex(client, keys.USAGE_TOTALS)
        self.model_usage = SlotIndex(client, keys.MODEL_USAGE_TOTALS)
        self.chunks_failed = SlotIndex(client, keys.CHUNKS_FAILED_TOTAL)
        self.hedges = SlotIndex(client, keys.HEDGES_TOTAL)

    def overdue(self, now: float, limit: int) -> list[str]:
        """The `limit` earliest deadlines up to `now` over every copy (each copy gives at most `limit`)."""
        found = self._each(self.active, lambda pipe, key: pipe.zrangebyscore(key, 0, now, 0, limit, withscores=True))
        due = heapq.nsmallest(limit, ((float(score), as_text(job_id)) for copy in found for job_id, score in copy))
        return [job_id for _, job_id in due]

    def count_active(self) -> int:
        return sum(int(count) for count in self._each(self.active, lambda pipe, key: pipe.zcard(key)))

    def summed(self, index: SlotIndex) -> dict[str, str]:
        """A totals index as one hash: each field summed over the copies (integers stay integers)."""
        sums: dict[str, int | float] = {}
        for copy in self._each(index, lambda pipe, key: pipe.hgetall(key)):
            for field, value in text_map(copy).items():
                sums[field] = sums.get(field, 0) + _number(value)
        return {field: str(total) for field, total in sums.items()}

    def _each(self, index: SlotIndex, read: Callable[[Any, str], object]) -> list[Any]:
        """`read` on every copy of `index`, pipelined (not a transaction: a cluster routes each to its primary)."""
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for key in index.copies():
                read(pipe, key)
            return list(pipe.execute())


def _number(value: str) -> int | float:
    try:
        return int(value)
    except ValueError:
        return float(value)
