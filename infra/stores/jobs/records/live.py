"""Each tenant's live jobs, on a key of the tenant's own: what `max_live` caps.

A tenant's live jobs cannot be on every job's slot (`infra.stores.jobs.redis_indexes`), so the cap is kept apart:
a job is admitted on its tenant's key first and leaves it after it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import redis

from infra.redis import keys
from infra.redis.client import redis_errors
from infra.redis.client import text as as_text
from infra.stores.jobs.model import ended

ADMIT_GRACE_SECONDS = 60.0
"""How long an admitted job may be missing from Redis before its tenant slot counts as lost: between
`admit.lua` and `create.lua` (milliseconds, normally) the job is admitted but not written yet."""


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
