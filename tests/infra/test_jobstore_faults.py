"""The job store's fault-tolerance scripts in real Redis: call budget, overdue decisions, the watchdog's tick lock."""

import pytest

from infra import keys
from infra.jobstore import JobRecord, JobStatus, JobStore, OverdueAction


@pytest.fixture()
def jobs(redis_client) -> JobStore:
    return JobStore(redis_client, ttl_seconds=600, deadline_seconds=60)


def new_job(jobs: JobStore, job_id: str = "j1") -> JobRecord:
    return jobs.create(JobRecord(id=job_id, session_id="s1", handle="h1", extract="errors", nonce="abc123"))


def test_a_new_job_is_on_its_first_attempt(jobs: JobStore) -> None:
    assert new_job(jobs).attempts == 1 and jobs.get("j1").attempts == 1


def test_reservations_stop_at_the_limit_and_for_ended_jobs(jobs: JobStore) -> None:
    new_job(jobs)
    assert [jobs.reserve_llm_call("j1", 2) for _ in range(3)] == [True, True, False]
    assert jobs.get("j1").llm_calls_reserved == 2
    jobs.cancel("j1")
    assert not jobs.reserve_llm_call("j1", 100) and not jobs.reserve_llm_call("missing", 100)


def test_overdue_decisions(jobs: JobStore, redis_client) -> None:
    job = new_job(jobs)
    late = job.deadline_at + 1
    assert jobs.retry_overdue("j1", now=job.deadline_at - 1, max_attempts=2) is OverdueAction.SKIP
    assert jobs.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.RETRY
    assert redis_client.zscore(keys.JOBS_ACTIVE, "j1") == pytest.approx(late + 60)
    assert jobs.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.SKIP, (
        "a second watchdog in the same tick"
    )
    assert jobs.retry_overdue("j1", now=late + 61, max_attempts=2) is OverdueAction.GIVE_UP
    assert jobs.get("j1").status is JobStatus.QUEUED, "giving up is the caller's ending, through outcomes"


def test_an_ended_job_found_overdue_leaves_the_active_set(jobs: JobStore, redis_client) -> None:
    job = new_job(jobs)
    redis_client.zadd(keys.JOBS_ACTIVE, {"j1": job.deadline_at})  # as if a finish had raced the scan
    redis_client.hset(keys.job("j1"), "status", "succeeded")
    assert jobs.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=5) is OverdueAction.SKIP
    assert redis_client.zscore(keys.JOBS_ACTIVE, "j1") is None


def test_one_owner_per_watchdog_tick(jobs: JobStore, redis_client) -> None:
    assert jobs.claim_watchdog_tick("a", 5) and not jobs.claim_watchdog_tick("b", 5)
    assert 0 < redis_client.pttl(keys.WATCHDOG_LOCK) <= 5000
