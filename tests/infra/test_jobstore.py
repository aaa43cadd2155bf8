"""The job record in real Redis: transitions happen once, parts are counted once, TTLs are set."""

import time

import pytest

from extraction.errors import NotFound
from extraction.protocols import Usage
from infra import keys
from infra.errors import TooManyRequests
from infra.jobstore import JobRecord, JobStatus, JobStore


@pytest.fixture()
def jobs(redis_client) -> JobStore:
    return JobStore(redis_client, ttl_seconds=600, deadline_seconds=60)


def new_job(jobs: JobStore, job_id: str = "j1") -> JobRecord:
    return jobs.create(JobRecord(id=job_id, session_id="s1", handle="h1", extract="errors", nonce="abc123"))


def test_created_job_reads_back_queued_with_deadline(jobs: JobStore) -> None:
    created = new_job(jobs)
    read = jobs.get("j1")
    assert read.status is JobStatus.QUEUED
    assert read.deadline_at == pytest.approx(created.created_at + 60)
    assert read.nonce == "abc123"
    assert "nonce" not in read.model_dump()
    assert jobs.overdue(now=created.created_at + 61) == ["j1"]


def test_unknown_job_and_foreign_tenant_are_not_found(jobs: JobStore) -> None:
    new_job(jobs)
    with pytest.raises(NotFound):
        jobs.get("missing")
    with pytest.raises(NotFound):
        jobs.get("j1", tenant="someone-else")


def test_finish_happens_once_and_sets_ttl(jobs: JobStore, redis_client) -> None:
    new_job(jobs)
    assert jobs.finish("j1", JobStatus.SUCCEEDED, result="ABSTRACT", report={"content": "x", "found": True})
    assert not jobs.finish("j1", JobStatus.FAILED, error="late worker")
    record = jobs.get("j1")
    assert (record.status, record.result, record.report, record.error) == (
        JobStatus.SUCCEEDED,
        "ABSTRACT",
        {"content": "x", "found": True},
        None,
    )
    assert 0 < redis_client.ttl(keys.job("j1")) <= 600
    assert jobs.overdue(now=time.time() + 3600) == []


def test_cancel_wins_over_a_later_success(jobs: JobStore) -> None:
    new_job(jobs)
    assert jobs.cancel("j1")
    assert not jobs.finish("j1", JobStatus.SUCCEEDED, result="too late")
    assert not jobs.update("j1", chunks_total=5)
    assert jobs.get("j1").status is JobStatus.CANCELED


def test_a_redelivered_chunk_is_counted_once(jobs: JobStore) -> None:
    new_job(jobs)
    usage = Usage(calls=1, input_tokens=100, output_tokens=10, cost_usd=0.5)
    assert jobs.record_chunk("j1", 0, "first", usage)
    assert not jobs.record_chunk("j1", 0, "redelivered", usage)
    assert jobs.record_chunk("j1", 1, "second", usage)
    record = jobs.get("j1")
    assert record.chunks_done == 2
    assert record.usage == Usage(calls=2, input_tokens=200, output_tokens=20, cost_usd=1.0)
    assert jobs.chunk_outputs("j1") == {0: "first", 1: "second"}


def test_reduce_parts_and_loose_usage_add_up(jobs: JobStore) -> None:
    new_job(jobs)
    assert jobs.record_reduce("j1", 1, 0, "group 0", Usage(calls=1, input_tokens=5))
    assert not jobs.record_reduce("j1", 1, 0, "again", Usage(calls=1, input_tokens=5))
    jobs.add_usage("j1", Usage(calls=1, input_tokens=7, output_tokens=3))
    assert jobs.reduce_outputs("j1", 1) == {0: "group 0"}
    assert jobs.get("j1").usage == Usage(calls=2, input_tokens=12, output_tokens=3)


def test_parts_for_a_deleted_job_are_refused(jobs: JobStore) -> None:
    with pytest.raises(NotFound):
        jobs.record_chunk("ghost", 0, "x", Usage())


def test_session_listing_and_delete(jobs: JobStore) -> None:
    new_job(jobs, "a")
    new_job(jobs, "b")
    assert [j.id for j in jobs.list_for_session("s1")] == ["a", "b"]
    jobs.delete(["a"])
    assert [j.id for j in jobs.list_for_session("s1")] == ["b"]


# --- per-tenant live jobs (the concurrency limit) ------------------------------------------------
def tenant_job(jobs: JobStore, job_id: str, tenant: str = "acme", max_live: int = 0) -> JobRecord:
    return jobs.create(
        JobRecord(id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors"), max_live=max_live
    )


def test_finishing_a_job_frees_its_tenant_slot(jobs: JobStore, redis_client) -> None:
    tenant_job(jobs, "a")
    tenant_job(jobs, "b")
    assert jobs.count_live("acme") == 2 and redis_client.smembers(keys.tenant_live_jobs("acme")) == {"a", "b"}
    assert jobs.finish("a", JobStatus.SUCCEEDED, result="done")
    assert jobs.count_live("acme") == 1
    assert jobs.cancel("b") and jobs.count_live("acme") == 0


def test_the_limit_counts_live_jobs_per_tenant(jobs: JobStore) -> None:
    tenant_job(jobs, "a", max_live=2)
    tenant_job(jobs, "b", max_live=2)
    with pytest.raises(TooManyRequests) as refused:
        tenant_job(jobs, "c", max_live=2)
    assert refused.value.retry_after > 0 and refused.value.details["limit"] == 2
    with pytest.raises(NotFound):
        jobs.get("c")
    tenant_job(jobs, "other", tenant="globex", max_live=2)
    jobs.finish("a", JobStatus.FAILED, error="x")
    tenant_job(jobs, "c", max_live=2)


def test_deleted_or_vanished_jobs_do_not_hold_slots(jobs: JobStore, redis_client) -> None:
    tenant_job(jobs, "a", max_live=2)
    tenant_job(jobs, "b", max_live=2)
    jobs.delete(["a"])
    assert jobs.count_live("acme") == 1
    redis_client.delete(keys.job("b"))  # e.g. its record expired: pruned when the limit is reached
    tenant_job(jobs, "c", max_live=2)
    tenant_job(jobs, "d", max_live=2)
    assert redis_client.smembers(keys.tenant_live_jobs("acme")) == {"c", "d"}


def test_concurrent_creates_never_exceed_the_limit(jobs: JobStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def attempt(i: int) -> bool:
        try:
            tenant_job(jobs, f"j{i}", max_live=5)
            return True
        except TooManyRequests:
            return False

    with ThreadPoolExecutor(16) as pool:
        admitted = sum(pool.map(attempt, range(40)))
    assert admitted == 5 == jobs.count_live("acme")
