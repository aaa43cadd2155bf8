"""The indexes that span jobs, laid out for Redis Cluster: per-slot copies and the tenants' live jobs.

A job's keys share the tag `{<job id>}`, so they sit on one slot, and a script may touch nothing else on a
cluster. The indexes the job scripts change together with a job (active jobs by deadline, usage totals, model
usage totals, chunks failed) are therefore kept one copy per slot (`infra.redis.slot_index`): each script changes the
copy beside its job, atomically, and the readers here (the watchdog's `overdue`, `/metrics`' sums) walk every
copy in one pipelined round trip per primary. On one Redis the copies are just several keys.

A tenant's live jobs cannot be on every job's slot, so the cap on them is kept apart (`TenantLiveJobs`): a job
is admitted on its tenant's key first and leaves it after it ends.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text_map
from infra.redis.client import text as as_text
from infra.redis.slot_index import SlotIndex
from infra.stores.jobs.model import ended

ADMIT_GRACE_SECONDS = 60.0
"""How long an admitted job may be missing from Redis before its tenant slot counts as lost: between
`admit.lua` and `create.lua` (milliseconds, normally) the job is admitted but not written yet."""


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


class TenantLiveJobs:
    """Each tenant's live jobs (admitted, not ended), on a key of the tenant's own: what `max_live` caps.

    The cap is one atomic step (`admit.lua`), but admission and the job's own keys are on different slots,
    so they are ordered to leave only what `prune` repairs: a job is admitted before it is written, and leaves
    after it ended. A crash after admission and before the job is written leaves the tenant an id with no job;
    a crash after the job ended and before it left leaves an ended job's id. Both hold a slot until the tenant
    next reaches the cap, when `prune` drops them (an id with no job only once `ADMIT_GRACE_SECONDS` passed
    since its admission, so a job being created meanwhile keeps its slot) and the create is tried again.
    """

    def __init__(self, client: redis.Redis, admit: Callable[[list[str], list[Any]], Any]) -> None:
        self._r = client
        self._admit = admit

    def admit(self, tenant: str, job_id: str, max_live: int, now: float) -> bool:
        return bool(self._admit([keys.tenant_live_jobs(tenant)], [job_id, max_live, now]) == 1)

    def leave(self, tenant: str, job_ids: Iterable[str], pipe: Any = None) -> None:
        """Ended or deleted jobs leave (queued on `pipe` when given). After a job's finish, so a crash in between
        leaves an ended job's id, which `prune` drops."""
        ids = list(job_ids)
        if ids:
            with redis_errors():
                (pipe or self._r).zrem(keys.tenant_live_jobs(tenant), *ids)

    def count(self, tenant: str) -> int:
        with redis_errors():
            return int(self._r.zcard(keys.tenant_live_jobs(tenant)))

    def prune(self, tenant: str, now: float) -> bool:
        """Drop ids of jobs that ended, or were lost (gone, and admitted long enough ago); True if any went."""
        live_key = keys.tenant_live_jobs(tenant)
        with redis_errors():
            scored: list[tuple[Any, float]] = self._r.zrange(live_key, 0, -1, withscores=True)  # type: ignore[assignment]  # redis-py types it loosely
            admitted = [(as_text(job_id), float(at)) for job_id, at in scored]
            pipe = self._r.pipeline(transaction=False)
            for job_id, _ in admitted:
                pipe.hget(keys.job(job_id), "status")
            statuses = [None if status is None else as_text(status) for status in pipe.execute()]
            stale = [
                job_id
                for (job_id, at), status in zip(admitted, statuses, strict=True)
                if (status is not None and ended(status)) or (status is None and at < now - ADMIT_GRACE_SECONDS)
            ]
            return bool(stale) and bool(self._r.zrem(live_key, *stale))


def _number(value: str) -> int | float:
    try:
        return int(value)
    except ValueError:
        return float(value)
