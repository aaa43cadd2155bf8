"""The watchdog's view in process memory: deadlines read off the live jobs, the tick's lock a field."""

from __future__ import annotations

from infra.stores.jobs.memory_state import MemoryJobState, with_fields
from infra.stores.jobs.model import OverdueAction
from infra.stores.jobs.watch.base import JobWatch


class MemoryJobWatch(JobWatch):
    """`JobWatch` over the in-memory jobs."""

    def __init__(self, state: MemoryJobState) -> None:
        self._s = state
        self._tick: tuple[str, float] | None = None

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        now = self._s.clock() if now is None else now
        with self._s.lock:
            due = sorted(
                (job.record.deadline_at, job.record.id) for job in self._s.live() if job.record.deadline_at <= now
            )
        return [job_id for _, job_id in due[:limit]]

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None or job.record.status.terminal or job.record.deadline_at > now:
                return OverdueAction.SKIP
            if job.record.attempts >= max_attempts:
                return OverdueAction.GIVE_UP
            update = {"attempts": job.record.attempts + 1, "deadline_at": now + self._s.deadline}
            job.record = with_fields(job.record, update)
            return OverdueAction.RETRY

    def count_active(self) -> int:
        with self._s.lock:
            return sum(1 for _ in self._s.live())

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        with self._s.lock:
            if self._tick is not None and self._tick[1] > self._s.clock():
                return False
            self._tick = (owner, self._s.clock() + seconds)
            return True
