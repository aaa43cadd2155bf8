"""Job records, from creation to their one end, per session and per tenant.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from extraction.errors import NotFound
from extraction.protocols import Usage
from infra.errors import TooManyRequests
from infra.stores.jobs import JobRecord, JobStatus, JobStores
from tests.infra.stores.conftest import Clock, chunk_failure, new_job


# --- lifecycle ---------------------------------------------------------------------------------
def test_a_created_job_reads_back_queued_with_its_deadline_first_attempt_and_nonce(jobs: JobStores) -> None:
    created = new_job(jobs)
    read = jobs.records.get("j1")
    assert read.status is JobStatus.QUEUED and read.attempts == created.attempts == 1
    assert read.deadline_at == pytest.approx(created.created_at + 60)
    assert read.nonce == "abc123" and "nonce" not in read.model_dump()
    assert (
        jobs.watch.overdue(now=created.created_at + 61) == ["j1"]
        and jobs.watch.overdue(now=created.created_at + 59) == []
    )


def test_every_field_round_trips(jobs: JobStores) -> None:
    new_job(jobs)
    usage = Usage(calls=3, input_tokens=10, output_tokens=4, cost_usd=0.25)
    jobs.records.update("j1", mode_used="full-chunked", routing_reason="auto: 3 chunks", chunks_total=3, reduce_level=1)
    jobs.accounting.add_usage("j1", usage)
    jobs.records.finish(
        "j1", JobStatus.SUCCEEDED, result="ABSTRACT", report={"content": "x", "found": True}, fallback_reason=None
    )
    read = jobs.records.get("j1")
    assert (read.mode_used, read.routing_reason, read.chunks_total, read.reduce_level) == (
        "full-chunked",
        "auto: 3 chunks",
        3,
        1,
    )
    assert (read.usage, read.result, read.report, read.fallback_reason) == (
        usage,
        "ABSTRACT",
        {"content": "x", "found": True},
        None,
    )
    assert read.finished_at is not None and read.status is JobStatus.SUCCEEDED


def test_unknown_jobs_and_other_tenants_jobs_are_not_found(jobs: JobStores) -> None:
    new_job(jobs)
    for job_id, tenant in (("missing", None), ("j1", "someone-else")):
        with pytest.raises(NotFound):
            jobs.records.get(job_id, tenant)
    assert jobs.records.get("j1", "dev").id == "j1"


def test_a_job_finishes_once_and_then_expires(jobs: JobStores, clock: Clock) -> None:
    new_job(jobs)
    assert jobs.records.finish("j1", JobStatus.SUCCEEDED, result="ABSTRACT")
    assert not jobs.records.finish("j1", JobStatus.FAILED, error="late worker")
    assert (jobs.records.get("j1").status, jobs.records.get("j1").error) == (JobStatus.SUCCEEDED, None)
    assert jobs.watch.overdue(now=clock.now + 3600) == [] and jobs.records.is_terminal("j1")
    clock.advance(601)
    with pytest.raises(NotFound):
        jobs.records.get("j1")


def test_a_cancel_wins_over_a_later_success_and_freezes_the_job(jobs: JobStores) -> None:
    new_job(jobs)
    assert jobs.records.mark_running("j1") and jobs.records.get("j1").status is JobStatus.RUNNING
    assert jobs.records.cancel("j1")
    assert not jobs.records.finish("j1", JobStatus.SUCCEEDED, result="too late")
    assert not jobs.records.update("j1", chunks_total=5)
    assert not jobs.records.cancel("j1")
    read = jobs.records.get("j1")
    assert (read.status, read.chunks_total, read.error) == (JobStatus.CANCELED, 0, "canceled by the client")


def test_finishing_or_updating_an_unknown_job_is_not_found(jobs: JobStores) -> None:
    with pytest.raises(NotFound):
        jobs.records.finish("ghost", JobStatus.FAILED, error="x")
    assert jobs.records.is_terminal("ghost")


# --- the session's jobs ------------------------------------------------------------------------
def test_session_listing_delete_and_session_purge(jobs: JobStores) -> None:
    for job_id in ("a", "b", "c"):
        new_job(jobs, job_id)
    assert [j.id for j in jobs.records.list_for_session("s1")] == ["a", "b", "c"]
    assert jobs.records.list_for_session("s1", tenant="other") == []
    jobs.records.delete(["a"])
    assert [j.id for j in jobs.records.list_for_session("s1")] == ["b", "c"]
    jobs.records.delete_session_jobs("s1")
    assert (
        jobs.records.list_for_session("s1") == []
        and jobs.records.count_live("dev") == 0
        and jobs.watch.count_active() == 0
    )


def test_a_deleted_job_takes_no_more_writes(jobs: JobStores) -> None:
    """A task still running when its session is deleted must not bring the job back in any form."""
    new_job(jobs, "a")
    jobs.records.delete_session_jobs("s1")
    for write in (
        lambda: jobs.accounting.add_agent_progress("a", turns=1, tool_calls=2),
        lambda: jobs.fanin.expect_parts("a", 0, 2, "{}"),
        lambda: jobs.fanin.record_chunk("a", 0, "x", Usage(calls=1)),
        lambda: jobs.fanin.record_failure("a", chunk_failure(1)),
        lambda: jobs.records.finish("a", JobStatus.SUCCEEDED, result="late"),
    ):
        with pytest.raises(NotFound):
            write()
    jobs.tasks.add_task_ids("a", ["t1"])
    assert not jobs.accounting.reserve_llm_call("a", 10) and jobs.fanin.settle_level("a", 0) is None
    assert jobs.tasks.task_ids("a") == [] and jobs.records.list_for_session("s1") == []
    with pytest.raises(NotFound):
        jobs.records.get("a")


# --- per-tenant live jobs ----------------------------------------------------------------------
def test_finishing_a_job_frees_its_tenant_slot(jobs: JobStores) -> None:
    new_job(jobs, "a", tenant="acme")
    new_job(jobs, "b", tenant="acme")
    assert jobs.records.count_live("acme") == 2 and jobs.watch.count_active() == 2
    assert jobs.records.finish("a", JobStatus.SUCCEEDED, result="done")
    assert jobs.records.count_live("acme") == 1
    assert jobs.records.cancel("b") and jobs.records.count_live("acme") == 0 and jobs.watch.count_active() == 0


def test_the_limit_counts_live_jobs_per_tenant(jobs: JobStores) -> None:
    new_job(jobs, "a", tenant="acme", max_live=2)
    new_job(jobs, "b", tenant="acme", max_live=2)
    with pytest.raises(TooManyRequests) as refused:
        new_job(jobs, "c", tenant="acme", max_live=2)
    assert refused.value.retry_after > 0 and refused.value.details["limit"] == 2
    with pytest.raises(NotFound):
        jobs.records.get("c")
    new_job(jobs, "other", tenant="globex", max_live=2)
    jobs.records.finish("a", JobStatus.FAILED, error="x")
    new_job(jobs, "c", tenant="acme", max_live=2)


def test_deleted_jobs_do_not_hold_slots(jobs: JobStores) -> None:
    new_job(jobs, "a", tenant="acme", max_live=2)
    new_job(jobs, "b", tenant="acme", max_live=2)
    jobs.records.delete(["a"])
    assert jobs.records.count_live("acme") == 1
    new_job(jobs, "c", tenant="acme", max_live=2)
    assert jobs.records.count_live("acme") == 2


def test_concurrent_creates_never_exceed_the_limit(jobs: JobStores) -> None:
    def attempt(i: int) -> bool:
        try:
            new_job(jobs, f"j{i}", tenant="acme", max_live=5)
            return True
        except TooManyRequests:
            return False

    with ThreadPoolExecutor(16) as pool:
        admitted = sum(pool.map(attempt, range(40)))
    assert admitted == 5 == jobs.records.count_live("acme")


# --- finished at creation (a cached result) -------------------------------------------------------
def finished_job(job_id: str = "c1", **fields) -> JobRecord:
    values = {"status": JobStatus.SUCCEEDED, "result": "ABSTRACT", "cached": True, "cached_from": "j0", **fields}
    return JobRecord(id=job_id, session_id="s1", tenant="acme", handle="h1", extract="errors", **values)


def test_a_job_created_finished_reads_back_terminal_and_is_listed_but_never_live(jobs: JobStores, clock: Clock) -> None:
    record = finished_job(finished_at=clock.now)
    jobs.records.create_finished(record)
    read = jobs.records.get("c1", "acme")
    assert (read.status, read.result, read.cached, read.cached_from) == (JobStatus.SUCCEEDED, "ABSTRACT", True, "j0")
    assert [job.id for job in jobs.records.list_for_session("s1", "acme")] == ["c1"]
    assert (
        jobs.records.count_live("acme") == 0
        and jobs.watch.count_active() == 0
        and jobs.watch.overdue(now=clock.now + 10**6) == []
    )
    assert (
        jobs.records.is_terminal("c1")
        and not jobs.records.cancel("c1")
        and not jobs.records.update("c1", result="changed")
    )


def test_a_job_created_finished_expires_with_the_job_ttl(jobs: JobStores, clock: Clock) -> None:
    jobs.records.create_finished(finished_job())
    clock.advance(601)
    with pytest.raises(NotFound):
        jobs.records.get("c1")


def test_only_terminal_jobs_can_be_created_finished(jobs: JobStores) -> None:
    with pytest.raises(ValueError):
        jobs.records.create_finished(finished_job(status=JobStatus.QUEUED))
