"""The watchdog's view: overdue jobs, the one decision on each, the tick's lock.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

import pytest

from infra.stores.jobs import JobStatus, JobStores, OverdueAction
from tests.infra.stores.conftest import Clock, new_job


def test_overdue_decisions(jobs: JobStores) -> None:
    job = new_job(jobs)
    late = job.deadline_at + 1
    assert jobs.watch.retry_overdue("j1", now=job.deadline_at - 1, max_attempts=2) is OverdueAction.SKIP
    assert jobs.watch.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.RETRY
    retried = jobs.records.get("j1")
    assert (retried.attempts, retried.deadline_at) == (2, pytest.approx(late + 60))
    assert jobs.watch.overdue(now=late + 59) == [] and jobs.watch.overdue(now=late + 61) == ["j1"]
    assert jobs.watch.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.SKIP, (
        "a second watchdog, same tick"
    )
    assert jobs.watch.retry_overdue("j1", now=late + 61, max_attempts=2) is OverdueAction.GIVE_UP
    assert jobs.records.get("j1").status is JobStatus.QUEUED, "giving up is the caller's ending, through outcomes"


def test_an_ended_job_is_never_overdue(jobs: JobStores) -> None:
    job = new_job(jobs)
    jobs.records.finish("j1", JobStatus.SUCCEEDED, result="done")
    assert jobs.watch.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=5) is OverdueAction.SKIP
    assert jobs.watch.overdue(now=job.deadline_at + 1) == []


def test_one_owner_per_watchdog_tick_until_it_expires(jobs: JobStores, clock: Clock) -> None:
    assert jobs.watch.claim_watchdog_tick("a", 5) and not jobs.watch.claim_watchdog_tick("b", 5)
    clock.advance(5.1)
    assert jobs.watch.claim_watchdog_tick("b", 5)
