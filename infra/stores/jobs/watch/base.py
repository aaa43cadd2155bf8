"""What the watchdog works on: live jobs past their deadline, the one decision on each, and its tick's lock."""

from __future__ import annotations

from typing import Protocol

from infra.stores.jobs.model import OverdueAction


class JobWatch(Protocol):
    """Deadlines of live jobs, and the lock that lets one watchdog act per tick."""

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        """Live jobs whose deadline has passed (the watchdog's work list)."""
        ...

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        """Decide, once and atomically, what happens to a job found past its deadline.

        RETRY: `attempts` was incremented and a new deadline set (the caller re-submits the job);
        GIVE_UP: it already had `max_attempts` (the caller fails it); SKIP: it ended meanwhile
        (dropped from the active set) or another watchdog already gave it a new deadline.
        """
        ...

    def count_active(self) -> int:
        """Live jobs across all tenants."""
        ...

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        """True for the one caller that takes this tick's lock (it expires after `seconds`, never released)."""
        ...
