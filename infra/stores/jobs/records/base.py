"""Job records: one per extraction job, the single source of truth the API polls, from creation to its one end.

Celery's AsyncResult is not enough: PENDING there also means "unknown", and its results expire on their own
schedule. Every implementation keeps these promises, which `tests/infra/stores/test_job_records_contract.py`
checks on each of them:

* a job enters a terminal state exactly once; later finishes and updates change nothing;
* a tenant never has more than `max_live` live jobs, even under concurrent creates;
* a session lists its jobs oldest first, and removing the session removes them all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from infra.errors import TooManyRequests
from infra.stores.jobs.model import RETRY_AFTER_SECONDS, JobRecord, JobStatus

log = logging.getLogger("toolout.jobs")


class JobRecords(Protocol):
    """Create, read, advance and finish job records; methods raise `NotFound` / `BackendUnavailable`."""

    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        """Write a new live job with its deadline; with `max_live` > 0, `TooManyRequests` when its
        tenant already has that many live jobs (admission is one atomic step: concurrent creates never
        admit more than `max_live`; a refused job is never written)."""
        ...

    def create_finished(self, record: JobRecord) -> JobRecord:
        """Write a job that is already terminal (a result served from the cache): readable and listed in
        its session until the TTL, never live (no slot, no deadline, nothing for the watchdog); its finish
        listeners are told, as for any job that ends (a webhook goes out)."""
        ...

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        """The job (`NotFound` when unknown, or another tenant's when `tenant` is given)."""
        ...

    def update(self, job_id: str, **fields: Any) -> bool:
        """Set fields on a job that is still live; False when it is already terminal."""
        ...

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        """Move a live job to a terminal state exactly once; later calls return False and change nothing."""
        ...

    def is_terminal(self, job_id: str) -> bool:
        """True for an ended job, and for one that no longer exists."""
        ...

    def count_live(self, tenant: str) -> int:
        """The tenant's non-terminal jobs (what `max_live` is checked against)."""
        ...

    def listen_finished(self, listener: FinishListener) -> None:
        """Call `listener(job_id)` after each job's one terminal transition (webhooks hang off this).

        A listener runs in the finishing thread and must not block; its exceptions are logged, never
        raised into the step that finished the job.
        """
        _listeners(self).append(listener)

    def notify_finished(self, job_id: str) -> None:
        """What an implementation calls when its `finish` (or `cancel`) really ended the job."""
        for listener in list(_listeners(self)):
            try:
                listener(job_id)
            except Exception:
                log.exception("job %s: a finish listener failed", job_id)

    def mark_running(self, job_id: str) -> bool:
        return self.update(job_id, status=JobStatus.RUNNING, started_at=time.time())

    def cancel(self, job_id: str) -> bool:
        return self.finish(job_id, JobStatus.CANCELED, error="canceled by the client")

    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        """The session's jobs, oldest first (jobs that expired meanwhile are left out)."""
        ...

    def delete(self, job_ids: list[str]) -> None:
        """Remove the jobs and everything they own (parts, traces, task ids, live slots)."""
        ...

    def delete_session_jobs(self, session_id: str) -> None:
        """Remove every job of the session (expired ones included) and the session's job list."""
        ...


FinishListener = Callable[[str], None]


def _listeners(store: object) -> list[FinishListener]:
    """The store's listeners, kept on the instance (a Protocol has no `__init__` of its own)."""
    found: list[FinishListener] = store.__dict__.setdefault("_finish_listeners", [])
    return found


def check_finished(record: JobRecord) -> None:
    if not record.status.terminal:
        raise ValueError(f"create_finished needs a terminal job, got {record.status.value}")


def admitted(record: JobRecord, deadline_seconds: int) -> JobRecord:
    """The record as stored at creation: its deadline set and counted as its first attempt."""
    return record.model_copy(
        update={"deadline_at": record.created_at + deadline_seconds, "attempts": max(record.attempts, 1)}
    )


def too_many_requests(tenant: str, max_live: int) -> TooManyRequests:
    return TooManyRequests(
        f"tenant {tenant!r} already has {max_live} extraction jobs running; retry when one has finished",
        retry_after=RETRY_AFTER_SECONDS,
        limit=max_live,
    )
