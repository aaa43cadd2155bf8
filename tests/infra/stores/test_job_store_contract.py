"""The `JobStore` promises, on Redis, on a Redis Cluster and on the in-memory twin alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.errors import TooManyRequests
from infra.stores.jobs import JobRecord, JobStatus, JobStore, OverdueAction
from infra.stores.jobs.traces import event_json
from tests.infra.stores.conftest import SMALL_TRACE_BOUND, Clock


def new_job(jobs: JobStore, job_id: str = "j1", *, tenant: str = "dev", max_live: int = 0, **fields) -> JobRecord:
    record = JobRecord(
        id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors", nonce="abc123", **fields
    )
    return jobs.create(record, max_live=max_live)


# --- lifecycle ---------------------------------------------------------------------------------
def test_a_created_job_reads_back_queued_with_its_deadline_first_attempt_and_nonce(jobs: JobStore) -> None:
    created = new_job(jobs)
    read = jobs.get("j1")
    assert read.status is JobStatus.QUEUED and read.attempts == created.attempts == 1
    assert read.deadline_at == pytest.approx(created.created_at + 60)
    assert read.nonce == "abc123" and "nonce" not in read.model_dump()
    assert jobs.overdue(now=created.created_at + 61) == ["j1"] and jobs.overdue(now=created.created_at + 59) == []


def test_every_field_round_trips(jobs: JobStore) -> None:
    new_job(jobs)
    usage = Usage(calls=3, input_tokens=10, output_tokens=4, cost_usd=0.25)
    jobs.update("j1", mode_used="full-chunked", routing_reason="auto: 3 chunks", chunks_total=3, reduce_level=1)
    jobs.add_usage("j1", usage)
    jobs.finish(
        "j1", JobStatus.SUCCEEDED, result="ABSTRACT", report={"content": "x", "found": True}, fallback_reason=None
    )
    read = jobs.get("j1")
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


def test_unknown_jobs_and_other_tenants_jobs_are_not_found(jobs: JobStore) -> None:
    new_job(jobs)
    for job_id, tenant in (("missing", None), ("j1", "someone-else")):
        with pytest.raises(NotFound):
            jobs.get(job_id, tenant)
    assert jobs.get("j1", "dev").id == "j1"


def test_a_job_finishes_once_and_then_expires(jobs: JobStore, clock: Clock) -> None:
    new_job(jobs)
    assert jobs.finish("j1", JobStatus.SUCCEEDED, result="ABSTRACT")
    assert not jobs.finish("j1", JobStatus.FAILED, error="late worker")
    assert (jobs.get("j1").status, jobs.get("j1").error) == (JobStatus.SUCCEEDED, None)
    assert jobs.overdue(now=clock.now + 3600) == [] and jobs.is_terminal("j1")
    clock.advance(601)
    with pytest.raises(NotFound):
        jobs.get("j1")


def test_a_cancel_wins_over_a_later_success_and_freezes_the_job(jobs: JobStore) -> None:
    new_job(jobs)
    assert jobs.mark_running("j1") and jobs.get("j1").status is JobStatus.RUNNING
    assert jobs.cancel("j1")
    assert not jobs.finish("j1", JobStatus.SUCCEEDED, result="too late")
    assert not jobs.update("j1", chunks_total=5)
    assert not jobs.cancel("j1")
    read = jobs.get("j1")
    assert (read.status, read.chunks_total, read.error) == (JobStatus.CANCELED, 0, "canceled by the client")


def test_finishing_or_updating_an_unknown_job_is_not_found(jobs: JobStore) -> None:
    with pytest.raises(NotFound):
        jobs.finish("ghost", JobStatus.FAILED, error="x")
    assert jobs.is_terminal("ghost")


# --- parts, counted once -----------------------------------------------------------------------
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
    assert (jobs.chunk_output("j1", 0), jobs.chunk_output("j1", 7)) == ("first", None)


def test_reduce_parts_are_kept_per_level_and_loose_usage_adds_up(jobs: JobStore) -> None:
    new_job(jobs)
    assert jobs.record_reduce("j1", 1, 0, "group 0", Usage(calls=1, input_tokens=5))
    assert not jobs.record_reduce("j1", 1, 0, "again", Usage(calls=1, input_tokens=5))
    assert jobs.record_reduce("j1", 2, 0, "final", Usage(calls=1))
    jobs.add_usage("j1", Usage(calls=1, input_tokens=7, output_tokens=3))
    jobs.add_agent_progress("j1", turns=2, tool_calls=5)
    assert jobs.reduce_outputs("j1", 1) == {0: "group 0"} and jobs.reduce_output("j1", 2, 0) == "final"
    read = jobs.get("j1")
    assert read.usage == Usage(calls=3, input_tokens=12, output_tokens=3)
    assert (read.agent_turns, read.agent_tool_calls, read.chunks_done) == (2, 5, 0)


def test_parts_for_an_unknown_job_are_refused(jobs: JobStore) -> None:
    with pytest.raises(NotFound):
        jobs.record_chunk("ghost", 0, "x", Usage())


def test_concurrent_deliveries_of_one_chunk_count_it_once(jobs: JobStore) -> None:
    new_job(jobs)
    with ThreadPoolExecutor(8) as pool:
        stored = list(pool.map(lambda i: jobs.record_chunk("j1", 0, f"copy {i}", Usage(calls=1)), range(16)))
    assert stored.count(True) == 1 and jobs.get("j1").usage.calls == 1 and jobs.get("j1").chunks_done == 1


# --- parts that could not be read: settled once, as an output or as a failure ---------------------
def chunk_failure(index: int, reason: str = "no valid final report after 2 attempt(s)") -> FailedRange:
    return FailedRange(level=0, index=index, chunks=[index], start=index * 100, end=index * 100 + 110, reason=reason)


def group_failure(level: int, group: int, chunks: list[int]) -> FailedRange:
    return FailedRange(
        level=level,
        index=group,
        chunks=chunks,
        start=chunks[0] * 100,
        end=chunks[-1] * 100 + 110,
        reason="model call failed (InternalServerError): boom",
    )


def test_a_failed_chunk_is_recorded_once_in_document_order_and_counted_by_stage(jobs: JobStore) -> None:
    new_job(jobs)
    before = jobs.failed_chunk_counts()
    assert jobs.record_failure("j1", chunk_failure(7))
    assert not jobs.record_failure("j1", chunk_failure(7, reason="redelivered, failed again")), "counted once"
    assert jobs.record_failure("j1", chunk_failure(2))
    assert jobs.record_failure("j1", group_failure(1, 3, [10, 11, 12]))
    read = jobs.get("j1")
    assert read.chunks_failed == 5 and read.chunks_done == 0
    assert read.failed_ranges == [chunk_failure(2), chunk_failure(7), group_failure(1, 3, [10, 11, 12])]
    after = jobs.failed_chunk_counts()
    assert (after["map"] - before["map"], after["reduce"] - before["reduce"]) == (2, 3)


def test_a_chunk_that_failed_is_never_also_done_and_a_done_chunk_never_fails(jobs: JobStore) -> None:
    """First outcome wins: a redelivered task cannot turn a failure into a success, or the other way round."""
    new_job(jobs)
    assert jobs.record_failure("j1", chunk_failure(0), Usage(calls=2, input_tokens=7, cost_usd=0.5))
    assert not jobs.record_chunk("j1", 0, "a late success", Usage(calls=1))
    assert jobs.record_chunk("j1", 1, "done", Usage(calls=1))
    assert not jobs.record_failure("j1", chunk_failure(1), Usage(calls=2))
    read = jobs.get("j1")
    assert (read.chunks_done, read.chunks_failed) == (1, 1)
    assert read.usage == Usage(calls=3, input_tokens=7, cost_usd=0.5), "each settled part's calls, once"
    assert jobs.chunk_outputs("j1") == {1: "done"} and [f.index for f in read.failed_ranges] == [0]


def test_a_reduce_group_is_settled_once_too(jobs: JobStore) -> None:
    new_job(jobs)
    assert jobs.record_failure("j1", group_failure(1, 0, [0, 1]))
    assert not jobs.record_reduce("j1", 1, 0, "late", Usage(calls=1))
    assert jobs.record_reduce("j1", 1, 1, "group 1", Usage(calls=1))
    assert not jobs.record_failure("j1", group_failure(1, 1, [2, 3]))
    assert jobs.record_failure("j1", group_failure(2, 0, [2, 3])), "a level is its own namespace"
    assert jobs.reduce_outputs("j1", 1) == {1: "group 1"} and jobs.get("j1").chunks_failed == 4


def test_an_ended_job_records_no_failure_and_an_unknown_one_is_not_found(jobs: JobStore) -> None:
    new_job(jobs)
    before = jobs.failed_chunk_counts()
    jobs.cancel("j1")
    assert not jobs.record_failure("j1", chunk_failure(0))
    assert jobs.get("j1").chunks_failed == 0 and jobs.failed_chunk_counts() == before
    with pytest.raises(NotFound):
        jobs.record_failure("ghost", chunk_failure(0))


def test_concurrent_outcomes_of_one_chunk_settle_it_once(jobs: JobStore) -> None:
    new_job(jobs)

    def deliver(i: int) -> bool:
        if i % 2:
            return jobs.record_failure("j1", chunk_failure(0, reason=f"copy {i}"))
        return jobs.record_chunk("j1", 0, f"copy {i}", Usage(calls=1))

    with ThreadPoolExecutor(8) as pool:
        settled = list(pool.map(deliver, range(16)))
    read = jobs.get("j1")
    assert settled.count(True) == 1 and read.chunks_done + read.chunks_failed == 1
    assert len(read.failed_ranges) == read.chunks_failed and len(jobs.chunk_outputs("j1")) == read.chunks_done


# --- the session's jobs ------------------------------------------------------------------------
def test_session_listing_delete_and_session_purge(jobs: JobStore) -> None:
    for job_id in ("a", "b", "c"):
        new_job(jobs, job_id)
    assert [j.id for j in jobs.list_for_session("s1")] == ["a", "b", "c"]
    assert jobs.list_for_session("s1", tenant="other") == []
    jobs.delete(["a"])
    assert [j.id for j in jobs.list_for_session("s1")] == ["b", "c"]
    jobs.delete_session_jobs("s1")
    assert jobs.list_for_session("s1") == [] and jobs.count_live("dev") == 0 and jobs.count_active() == 0


def test_a_deleted_job_takes_no_more_writes(jobs: JobStore) -> None:
    """A task still running when its session is deleted must not bring the job back in any form."""
    new_job(jobs, "a")
    jobs.delete_session_jobs("s1")
    for write in (
        lambda: jobs.add_agent_progress("a", turns=1, tool_calls=2),
        lambda: jobs.expect_parts("a", 0, 2, "{}"),
        lambda: jobs.record_chunk("a", 0, "x", Usage(calls=1)),
        lambda: jobs.record_failure("a", chunk_failure(1)),
        lambda: jobs.finish("a", JobStatus.SUCCEEDED, result="late"),
    ):
        with pytest.raises(NotFound):
            write()
    jobs.add_task_ids("a", ["t1"])
    assert not jobs.reserve_llm_call("a", 10) and jobs.settle_level("a", 0) is None
    assert jobs.task_ids("a") == [] and jobs.list_for_session("s1") == []
    with pytest.raises(NotFound):
        jobs.get("a")


# --- per-tenant live jobs ----------------------------------------------------------------------
def test_finishing_a_job_frees_its_tenant_slot(jobs: JobStore) -> None:
    new_job(jobs, "a", tenant="acme")
    new_job(jobs, "b", tenant="acme")
    assert jobs.count_live("acme") == 2 and jobs.count_active() == 2
    assert jobs.finish("a", JobStatus.SUCCEEDED, result="done")
    assert jobs.count_live("acme") == 1
    assert jobs.cancel("b") and jobs.count_live("acme") == 0 and jobs.count_active() == 0


def test_the_limit_counts_live_jobs_per_tenant(jobs: JobStore) -> None:
    new_job(jobs, "a", tenant="acme", max_live=2)
    new_job(jobs, "b", tenant="acme", max_live=2)
    with pytest.raises(TooManyRequests) as refused:
        new_job(jobs, "c", tenant="acme", max_live=2)
    assert refused.value.retry_after > 0 and refused.value.details["limit"] == 2
    with pytest.raises(NotFound):
        jobs.get("c")
    new_job(jobs, "other", tenant="globex", max_live=2)
    jobs.finish("a", JobStatus.FAILED, error="x")
    new_job(jobs, "c", tenant="acme", max_live=2)


def test_deleted_jobs_do_not_hold_slots(jobs: JobStore) -> None:
    new_job(jobs, "a", tenant="acme", max_live=2)
    new_job(jobs, "b", tenant="acme", max_live=2)
    jobs.delete(["a"])
    assert jobs.count_live("acme") == 1
    new_job(jobs, "c", tenant="acme", max_live=2)
    assert jobs.count_live("acme") == 2


def test_concurrent_creates_never_exceed_the_limit(jobs: JobStore) -> None:
    def attempt(i: int) -> bool:
        try:
            new_job(jobs, f"j{i}", tenant="acme", max_live=5)
            return True
        except TooManyRequests:
            return False

    with ThreadPoolExecutor(16) as pool:
        admitted = sum(pool.map(attempt, range(40)))
    assert admitted == 5 == jobs.count_live("acme")


# --- faults: call budget, overdue jobs, task ids, the watchdog's tick ---------------------------
def test_reservations_stop_at_the_limit_and_for_ended_jobs(jobs: JobStore) -> None:
    new_job(jobs)
    assert [jobs.reserve_llm_call("j1", 2) for _ in range(3)] == [True, True, False]
    assert jobs.get("j1").llm_calls_reserved == 2
    jobs.cancel("j1")
    assert not jobs.reserve_llm_call("j1", 100) and not jobs.reserve_llm_call("missing", 100)


def test_concurrent_reservations_never_overshoot(jobs: JobStore) -> None:
    new_job(jobs)
    with ThreadPoolExecutor(8) as pool:
        granted = sum(pool.map(lambda _: jobs.reserve_llm_call("j1", 10), range(40)))
    assert granted == 10 == jobs.get("j1").llm_calls_reserved


def test_overdue_decisions(jobs: JobStore) -> None:
    job = new_job(jobs)
    late = job.deadline_at + 1
    assert jobs.retry_overdue("j1", now=job.deadline_at - 1, max_attempts=2) is OverdueAction.SKIP
    assert jobs.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.RETRY
    retried = jobs.get("j1")
    assert (retried.attempts, retried.deadline_at) == (2, pytest.approx(late + 60))
    assert jobs.overdue(now=late + 59) == [] and jobs.overdue(now=late + 61) == ["j1"]
    assert jobs.retry_overdue("j1", now=late, max_attempts=2) is OverdueAction.SKIP, "a second watchdog, same tick"
    assert jobs.retry_overdue("j1", now=late + 61, max_attempts=2) is OverdueAction.GIVE_UP
    assert jobs.get("j1").status is JobStatus.QUEUED, "giving up is the caller's ending, through outcomes"


def test_an_ended_job_is_never_overdue(jobs: JobStore) -> None:
    job = new_job(jobs)
    jobs.finish("j1", JobStatus.SUCCEEDED, result="done")
    assert jobs.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=5) is OverdueAction.SKIP
    assert jobs.overdue(now=job.deadline_at + 1) == []


def test_task_ids_are_remembered_per_job(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.add_task_ids("j1", ["t2", "t1"])
    jobs.add_task_ids("j1", ["t1", "t3"])
    jobs.add_task_ids("j1", [])
    assert jobs.task_ids("j1") == ["t1", "t2", "t3"] and jobs.task_ids("other") == []
    jobs.delete(["j1"])
    assert jobs.task_ids("j1") == []


def test_starts_of_a_task_message_that_did_not_end_are_counted_per_job_and_deleted_with_it(jobs: JobStore) -> None:
    new_job(jobs)
    assert [jobs.task_started("j1", "t1:0") for _ in range(3)] == [1, 2, 3], "three starts, none ended"
    assert jobs.task_started("j1", "t1:1") == 1 and jobs.task_started("j1", "t2:0") == 1
    jobs.task_ended("j1", "t2:0")
    assert jobs.task_started("j1", "t2:0") == 1, "a start that ended is not counted"
    assert jobs.task_started("other", "t1:0") == 0, "no job, nothing counted"
    jobs.task_ended("other", "t1:0")
    jobs.delete(["j1"])
    assert jobs.task_started("j1", "t1:0") == 0
    jobs.task_ended("j1", "t1:0")
    new_job(jobs)
    assert jobs.task_started("j1", "t1:0") == 1, "a job made again under the id starts from nothing"


def test_one_owner_per_watchdog_tick_until_it_expires(jobs: JobStore, clock: Clock) -> None:
    assert jobs.claim_watchdog_tick("a", 5) and not jobs.claim_watchdog_tick("b", 5)
    clock.advance(5.1)
    assert jobs.claim_watchdog_tick("b", 5)


# --- finished at creation (a cached result) -------------------------------------------------------
def finished_job(job_id: str = "c1", **fields) -> JobRecord:
    values = {"status": JobStatus.SUCCEEDED, "result": "ABSTRACT", "cached": True, "cached_from": "j0", **fields}
    return JobRecord(id=job_id, session_id="s1", tenant="acme", handle="h1", extract="errors", **values)


def test_a_job_created_finished_reads_back_terminal_and_is_listed_but_never_live(jobs: JobStore, clock: Clock) -> None:
    record = finished_job(finished_at=clock.now)
    jobs.create_finished(record)
    read = jobs.get("c1", "acme")
    assert (read.status, read.result, read.cached, read.cached_from) == (JobStatus.SUCCEEDED, "ABSTRACT", True, "j0")
    assert [job.id for job in jobs.list_for_session("s1", "acme")] == ["c1"]
    assert jobs.count_live("acme") == 0 and jobs.count_active() == 0 and jobs.overdue(now=clock.now + 10**6) == []
    assert jobs.is_terminal("c1") and not jobs.cancel("c1") and not jobs.update("c1", result="changed")


def test_a_job_created_finished_expires_with_the_job_ttl(jobs: JobStore, clock: Clock) -> None:
    jobs.create_finished(finished_job())
    clock.advance(601)
    with pytest.raises(NotFound):
        jobs.get("c1")


def test_only_terminal_jobs_can_be_created_finished(jobs: JobStore) -> None:
    with pytest.raises(ValueError):
        jobs.create_finished(finished_job(status=JobStatus.QUEUED))


# --- usage totals per tenant and model --------------------------------------------------------------
def test_usage_is_totalled_per_tenant_and_model_once_per_part(jobs: JobStore) -> None:
    new_job(jobs, "a", tenant="acme", model="openai/gpt-4o-mini")
    new_job(jobs, "b", tenant="acme", model="openai/gpt-4o-mini")
    new_job(jobs, "c", tenant="globex", model="openai/gpt-4o-mini")
    new_job(jobs, "d", tenant="acme")
    spent = Usage(calls=1, input_tokens=100, output_tokens=10, cost_usd=0.5)
    for job_id in ("a", "a", "b", "c", "d"):  # "a" delivered twice: its part is counted once
        jobs.record_chunk(job_id, 0, "x", spent)
    jobs.record_reduce("a", 1, 0, "y", Usage(calls=1, input_tokens=20, output_tokens=2, cost_usd=0.25))
    jobs.add_usage("b", Usage(calls=2, input_tokens=7, output_tokens=3))
    totals = {(t.tenant, t.model): t.usage for t in jobs.usage_totals()}
    assert totals == {
        ("acme", "openai/gpt-4o-mini"): Usage(calls=5, input_tokens=227, output_tokens=25, cost_usd=1.25),
        ("globex", "openai/gpt-4o-mini"): spent,
        ("acme", ""): spent,
    }


def test_unpriced_usage_totals_keep_an_unknown_cost(jobs: JobStore) -> None:
    new_job(jobs, "a", model="openai/toolout-offline")
    jobs.add_usage("a", Usage(calls=1, input_tokens=5, output_tokens=1))
    [total] = jobs.usage_totals()
    assert total.usage == Usage(calls=1, input_tokens=5, output_tokens=1, cost_usd=None)


# --- fan-in: the step after a level, handed to one settling part per attempt ---------------------
def test_the_part_that_settles_a_level_last_gets_its_next_step_once(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.expect_parts("j1", 0, 3, "reduce level 0")
    assert jobs.record_chunk("j1", 0, "a", Usage(calls=1)) and jobs.settle_level("j1", 0) is None
    assert jobs.record_failure("j1", chunk_failure(1)) and jobs.settle_level("j1", 0) is None
    assert jobs.record_chunk("j1", 2, "c", Usage(calls=1))
    assert jobs.settle_level("j1", 0) == "reduce level 0", "two outputs and a failure settle three parts"
    assert jobs.settle_level("j1", 0) is None, "a redelivered part does not send it again"


def test_the_task_that_got_the_next_step_gets_it_again_when_redelivered_and_no_other(jobs: JobStore) -> None:
    """The part that got the step runs it in its own task; if its worker dies there, the broker hands its
    message out again under the same task id, and only that caller is handed the step a second time."""
    job = new_job(jobs)
    jobs.expect_parts("j1", 0, 2, "stage 0")
    assert jobs.record_chunk_and_settle("j1", 0, "a", Usage(calls=1), by="map-0") is None
    assert jobs.record_chunk_and_settle("j1", 1, "b", Usage(calls=1), by="map-1") == "stage 0"
    assert jobs.settle_level("j1", 0, by="map-1") == "stage 0", "map-1 redelivered: its worker died in the stage"
    assert jobs.settle_level("j1", 0, by="map-0") is None and jobs.settle_level("j1", 0) is None
    assert jobs.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1), by="map-1") == "stage 0"
    assert jobs.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=3) is OverdueAction.RETRY
    assert jobs.settle_level("j1", 0, by="map-0") == "stage 0", "attempt 2: the first caller, whoever it is"
    assert jobs.settle_level("j1", 0, by="map-1") is None
    jobs.cancel("j1")
    assert jobs.settle_level("j1", 0, by="map-0") is None, "an ended job hands out nothing"


def test_levels_are_settled_apart_and_a_level_nobody_expects_sends_nothing(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.expect_parts("j1", 1, 2, "stage 1")
    assert jobs.record_chunk("j1", 0, "a map output", Usage(calls=1)) and jobs.settle_level("j1", 0) is None
    assert jobs.record_reduce("j1", 1, 0, "group 0", Usage(calls=1)) and jobs.settle_level("j1", 1) is None
    assert jobs.record_failure("j1", group_failure(2, 0, [0, 1])) and jobs.settle_level("j1", 1) is None
    assert jobs.record_failure("j1", group_failure(1, 1, [2, 3])) and jobs.settle_level("j1", 1) == "stage 1"


def test_a_new_attempt_can_send_the_next_step_again_but_an_ended_job_cannot(jobs: JobStore) -> None:
    job = new_job(jobs)
    jobs.expect_parts("j1", 0, 1, "stage 0")
    assert jobs.record_chunk("j1", 0, "a", Usage(calls=1)) and jobs.settle_level("j1", 0) == "stage 0"
    assert jobs.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=3) is OverdueAction.RETRY
    assert jobs.settle_level("j1", 0) == "stage 0" and jobs.settle_level("j1", 0) is None, "once in attempt 2"
    jobs.cancel("j1")
    assert jobs.retry_overdue("j1", now=job.deadline_at + 200, max_attempts=3) is OverdueAction.SKIP
    assert jobs.settle_level("j1", 0) is None and jobs.settle_level("ghost", 0) is None


def test_concurrent_last_parts_send_the_next_step_once(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.expect_parts("j1", 0, 16, "stage 0")

    def settle(i: int) -> str | None:
        jobs.record_chunk("j1", i, f"part {i}", Usage(calls=1))
        return jobs.settle_level("j1", 0)

    with ThreadPoolExecutor(8) as pool:
        sent = list(pool.map(settle, [*range(16), *range(16)]))
    assert [s for s in sent if s is not None] == ["stage 0"]


# --- a map's start and end, each one round trip on Redis ------------------------------------------
def test_a_map_reads_its_job_and_its_chunk_and_reserves_its_first_call_together(jobs: JobStore) -> None:
    new_job(jobs, chunks_total=2)
    job, done, reserved = jobs.begin_map("j1", 1, 2)
    assert (job.id, job.chunks_total, done, reserved) == ("j1", 2, None, True)
    jobs.record_chunk("j1", 1, "found it", Usage(calls=1))
    assert jobs.begin_map("j1", 1, 2)[1:] == ("found it", True) and jobs.get("j1").llm_calls_reserved == 2
    assert jobs.begin_map("j1", 0, 2)[1:] == (None, False), "the budget of 2 calls is spent"
    jobs.cancel("j1")
    assert jobs.begin_map("j1", 0, 10)[2] is False, "an ended job reserves nothing"
    with pytest.raises(NotFound):
        jobs.begin_map("ghost", 0, 2)


def test_recording_and_settling_at_once_counts_once_and_hands_out_the_step_once(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.expect_parts("j1", 0, 2, "stage 0")
    assert jobs.record_chunk_and_settle("j1", 0, "a", Usage(calls=1, input_tokens=5)) is None
    assert jobs.record_chunk_and_settle("j1", 0, "a again", Usage(calls=1, input_tokens=5)) is None  # redelivered
    assert jobs.record_chunk_and_settle("j1", 1, "b", Usage(calls=1, input_tokens=7)) == "stage 0"
    assert jobs.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1)) is None, "handed out once per attempt"
    record = jobs.get("j1")
    assert (record.chunks_done, record.usage.calls, record.usage.input_tokens) == (2, 2, 12)
    assert jobs.chunk_outputs("j1") == {0: "a", 1: "b"}
    with pytest.raises(NotFound):
        jobs.record_chunk_and_settle("ghost", 0, "x", Usage(calls=1))


# --- trace -------------------------------------------------------------------------------------
def test_a_trace_reads_back_in_order_from_any_point(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.add_trace("j1", [event_json({"kind": "map", "chunk": i}) for i in range(3)])
    jobs.record_chunk_and_settle("j1", 3, "x", Usage(calls=1), trace=[event_json({"kind": "map", "chunk": 3})])
    assert [(e["seq"], e["chunk"]) for e in jobs.trace("j1")] == [(i, i) for i in range(4)]
    assert [e["seq"] for e in jobs.trace("j1", after=2)] == [2, 3] and jobs.trace("j1", after=4) == []
    assert jobs.trace("unknown") == []


def test_a_trace_under_its_bound_keeps_every_event(jobs: JobStore) -> None:
    new_job(jobs)
    event = event_json({"kind": "map", "answer": "x" * 900})
    for _ in range(40):
        jobs.add_trace("j1", [event, event])
    assert [e["kind"] for e in jobs.trace("j1")] == ["map"] * 80


def test_a_small_bound_cuts_the_trace_once_and_nothing_follows(small_trace_jobs: JobStore) -> None:
    jobs = small_trace_jobs
    new_job(jobs)
    event = event_json({"kind": "map", "answer": "y" * 300})
    for _ in range(10):
        jobs.add_trace("j1", [event])
    kept = jobs.trace("j1")
    assert [e["kind"] for e in kept] == ["map", "map", "map", "truncated"]
    assert kept[-1]["max_bytes"] == SMALL_TRACE_BOUND
    assert sum(len(event_json({k: v for k, v in e.items() if k != "seq"})) for e in kept) <= SMALL_TRACE_BOUND


def test_a_trace_goes_with_its_job_and_a_late_write_leaves_none(jobs: JobStore) -> None:
    new_job(jobs)
    jobs.add_trace("j1", [event_json({"kind": "map"})])
    jobs.delete_session_jobs("s1")
    jobs.add_trace("j1", [event_json({"kind": "map"})])  # a step still running after its session ended
    assert jobs.trace("j1") == []
