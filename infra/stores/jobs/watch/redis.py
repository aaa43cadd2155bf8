"""The watchdog's view in Redis: the per-slot active-jobs index by deadline, `retry_overdue.lua`, a plain lock key."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors
from infra.redis.client import text as as_text
from infra.stores.jobs.model import OverdueAction
from infra.stores.jobs.redis_context import RedisJobContext
from infra.stores.jobs.scripts import ScriptSet
from infra.stores.jobs.watch.base import JobWatch

SCRIPTS = ScriptSet("infra.stores.jobs.watch", ("retry_overdue",))


class RedisJobWatch(JobWatch):
    """`JobWatch` on one Redis."""

    def __init__(self, context: RedisJobContext) -> None:
        context.register(SCRIPTS)
        self._c = context

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        """Read from every copy of the active-jobs index (one per slot in use)."""
        return self._c.index.overdue(self._c.clock() if now is None else now, limit)

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        args = [job_id, now, now + self._c.deadline, max_attempts]
        job_keys = [keys.job(job_id), self._c.index.active.key_for(job_id)]
        return OverdueAction(as_text(self._c.run("retry_overdue", job_keys, args)))

    def count_active(self) -> int:
        return self._c.index.count_active()

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        with redis_errors():
            return bool(self._c.r.set(keys.WATCHDOG_LOCK, owner, nx=True, px=max(1, int(seconds * 1000))))
