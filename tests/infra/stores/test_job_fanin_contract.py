"""Fan-in: parts settled once, and each level's next step handed out once per attempt.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.stores.jobs import JobStores, ModelCall, OverdueAction, redis_job_stores
from infra.stores.jobs.scripts import script_source
from infra.stores.jobs.traces import event_json
from tests.infra.stores.conftest import chunk_failure, new_job


# --- parts, counted once -----------------------------------------------------------------------
def test_a_redelivered_chunk_is_counted_once(jobs: JobStores) -> None:
    new_job(jobs)
    usage = Usage(calls=1, input_tokens=100, output_tokens=10, cost_usd=0.5)
    assert jobs.fanin.record_chunk("j1", 0, "first", usage)
    assert not jobs.fanin.record_chunk("j1", 0, "redelivered", usage)
    assert jobs.fanin.record_chunk("j1", 1, "second", usage)
    record = jobs.records.get("j1")
    assert record.chunks_done == 2
    assert record.usage == Usage(calls=2, input_tokens=200, output_tokens=20, cost_usd=1.0)
    assert jobs.fanin.chunk_outputs("j1") == {0: "first", 1: "second"}
    assert (jobs.fanin.chunk_output("j1", 0), jobs.fanin.chunk_output("j1", 7)) == ("first", None)


def test_reduce_parts_are_kept_per_level_and_loose_usage_adds_up(jobs: JobStores) -> None:
    new_job(jobs)
    assert jobs.fanin.record_reduce("j1", 1, 0, "group 0", Usage(calls=1, input_tokens=5))
    assert not jobs.fanin.record_reduce("j1", 1, 0, "again", Usage(calls=1, input_tokens=5))
    assert jobs.fanin.record_reduce("j1", 2, 0, "final", Usage(calls=1))
    jobs.accounting.add_usage("j1", Usage(calls=1, input_tokens=7, output_tokens=3))
    jobs.accounting.add_agent_progress("j1", turns=2, tool_calls=5)
    assert jobs.fanin.reduce_outputs("j1", 1) == {0: "group 0"} and jobs.fanin.reduce_output("j1", 2, 0) == "final"
    read = jobs.records.get("j1")
    assert read.usage == Usage(calls=3, input_tokens=12, output_tokens=3)
    assert (read.agent_turns, read.agent_tool_calls, read.chunks_done) == (2, 5, 0)


def test_parts_for_an_unknown_job_are_refused(jobs: JobStores) -> None:
    with pytest.raises(NotFound):
        jobs.fanin.record_chunk("ghost", 0, "x", Usage())


def test_concurrent_deliveries_of_one_chunk_count_it_once(jobs: JobStores) -> None:
    new_job(jobs)
    with ThreadPoolExecutor(8) as pool:
        stored = list(pool.map(lambda i: jobs.fanin.record_chunk("j1", 0, f"copy {i}", Usage(calls=1)), range(16)))
    assert (
        stored.count(True) == 1 and jobs.records.get("j1").usage.calls == 1 and jobs.records.get("j1").chunks_done == 1
    )


# --- parts that could not be read: settled once, as an output or as a failure ---------------------
def group_failure(level: int, group: int, chunks: list[int]) -> FailedRange:
    return FailedRange(
        level=level,
        index=group,
        chunks=chunks,
        start=chunks[0] * 100,
        end=chunks[-1] * 100 + 110,
        reason="model call failed (InternalServerError): boom",
    )


def test_a_failed_chunk_is_recorded_once_in_document_order_and_counted_by_stage(jobs: JobStores) -> None:
    new_job(jobs)
    before = jobs.accounting.failed_chunk_counts()
    assert jobs.fanin.record_failure("j1", chunk_failure(7))
    assert not jobs.fanin.record_failure("j1", chunk_failure(7, reason="redelivered, failed again")), "counted once"
    assert jobs.fanin.record_failure("j1", chunk_failure(2))
    assert jobs.fanin.record_failure("j1", group_failure(1, 3, [10, 11, 12]))
    read = jobs.records.get("j1")
    assert read.chunks_failed == 5 and read.chunks_done == 0
    assert read.failed_ranges == [chunk_failure(2), chunk_failure(7), group_failure(1, 3, [10, 11, 12])]
    after = jobs.accounting.failed_chunk_counts()
    assert (after["map"] - before["map"], after["reduce"] - before["reduce"]) == (2, 3)


def test_a_chunk_that_failed_is_never_also_done_and_a_done_chunk_never_fails(jobs: JobStores) -> None:
    """First outcome wins: a redelivered task cannot turn a failure into a success, or the other way round."""
    new_job(jobs)
    assert jobs.fanin.record_failure("j1", chunk_failure(0), Usage(calls=2, input_tokens=7, cost_usd=0.5))
    assert not jobs.fanin.record_chunk("j1", 0, "a late success", Usage(calls=1))
    assert jobs.fanin.record_chunk("j1", 1, "done", Usage(calls=1))
    assert not jobs.fanin.record_failure("j1", chunk_failure(1), Usage(calls=2))
    read = jobs.records.get("j1")
    assert (read.chunks_done, read.chunks_failed) == (1, 1)
    assert read.usage == Usage(calls=3, input_tokens=7, cost_usd=0.5), "each settled part's calls, once"
    assert jobs.fanin.chunk_outputs("j1") == {1: "done"} and [f.index for f in read.failed_ranges] == [0]


def test_a_reduce_group_is_settled_once_too(jobs: JobStores) -> None:
    new_job(jobs)
    assert jobs.fanin.record_failure("j1", group_failure(1, 0, [0, 1]))
    assert not jobs.fanin.record_reduce("j1", 1, 0, "late", Usage(calls=1))
    assert jobs.fanin.record_reduce("j1", 1, 1, "group 1", Usage(calls=1))
    assert not jobs.fanin.record_failure("j1", group_failure(1, 1, [2, 3]))
    assert jobs.fanin.record_failure("j1", group_failure(2, 0, [2, 3])), "a level is its own namespace"
    assert jobs.fanin.reduce_outputs("j1", 1) == {1: "group 1"} and jobs.records.get("j1").chunks_failed == 4


def test_an_ended_job_records_no_failure_and_an_unknown_one_is_not_found(jobs: JobStores) -> None:
    new_job(jobs)
    before = jobs.accounting.failed_chunk_counts()
    jobs.records.cancel("j1")
    assert not jobs.fanin.record_failure("j1", chunk_failure(0))
    assert jobs.records.get("j1").chunks_failed == 0 and jobs.accounting.failed_chunk_counts() == before
    with pytest.raises(NotFound):
        jobs.fanin.record_failure("ghost", chunk_failure(0))


def test_concurrent_outcomes_of_one_chunk_settle_it_once(jobs: JobStores) -> None:
    new_job(jobs)

    def deliver(i: int) -> bool:
        if i % 2:
            return jobs.fanin.record_failure("j1", chunk_failure(0, reason=f"copy {i}"))
        return jobs.fanin.record_chunk("j1", 0, f"copy {i}", Usage(calls=1))

    with ThreadPoolExecutor(8) as pool:
        settled = list(pool.map(deliver, range(16)))
    read = jobs.records.get("j1")
    assert settled.count(True) == 1 and read.chunks_done + read.chunks_failed == 1
    assert len(read.failed_ranges) == read.chunks_failed and len(jobs.fanin.chunk_outputs("j1")) == read.chunks_done


# --- fan-in: the step after a level, handed to one settling part per attempt ---------------------
def test_the_part_that_settles_a_level_last_gets_its_next_step_once(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 3, "reduce level 0")
    assert jobs.fanin.record_chunk("j1", 0, "a", Usage(calls=1)) and jobs.fanin.settle_level("j1", 0) is None
    assert jobs.fanin.record_failure("j1", chunk_failure(1)) and jobs.fanin.settle_level("j1", 0) is None
    assert jobs.fanin.record_chunk("j1", 2, "c", Usage(calls=1))
    assert jobs.fanin.settle_level("j1", 0) == "reduce level 0", "two outputs and a failure settle three parts"
    assert jobs.fanin.settle_level("j1", 0) is None, "a redelivered part does not send it again"


def test_the_task_that_got_the_next_step_gets_it_again_when_redelivered_and_no_other(jobs: JobStores) -> None:
    """The part that got the step runs it in its own task; if its worker dies there, the broker hands its
    message out again under the same task id, and only that caller is handed the step a second time."""
    job = new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 2, "stage 0")
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "a", Usage(calls=1), by="map-0") is None
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b", Usage(calls=1), by="map-1") == "stage 0"
    assert jobs.fanin.settle_level("j1", 0, by="map-1") == "stage 0", "map-1 redelivered: its worker died in the stage"
    assert jobs.fanin.settle_level("j1", 0, by="map-0") is None and jobs.fanin.settle_level("j1", 0) is None
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1), by="map-1") == "stage 0"
    assert jobs.watch.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=3) is OverdueAction.RETRY
    assert jobs.fanin.settle_level("j1", 0, by="map-0") == "stage 0", "attempt 2: the first caller, whoever it is"
    assert jobs.fanin.settle_level("j1", 0, by="map-1") is None
    jobs.records.cancel("j1")
    assert jobs.fanin.settle_level("j1", 0, by="map-0") is None, "an ended job hands out nothing"


def test_levels_are_settled_apart_and_a_level_nobody_expects_sends_nothing(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 1, 2, "stage 1")
    assert jobs.fanin.record_chunk("j1", 0, "a map output", Usage(calls=1)) and jobs.fanin.settle_level("j1", 0) is None
    assert jobs.fanin.record_reduce("j1", 1, 0, "group 0", Usage(calls=1)) and jobs.fanin.settle_level("j1", 1) is None
    assert jobs.fanin.record_failure("j1", group_failure(2, 0, [0, 1])) and jobs.fanin.settle_level("j1", 1) is None
    assert (
        jobs.fanin.record_failure("j1", group_failure(1, 1, [2, 3])) and jobs.fanin.settle_level("j1", 1) == "stage 1"
    )


def test_a_new_attempt_can_send_the_next_step_again_but_an_ended_job_cannot(jobs: JobStores) -> None:
    job = new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 1, "stage 0")
    assert jobs.fanin.record_chunk("j1", 0, "a", Usage(calls=1)) and jobs.fanin.settle_level("j1", 0) == "stage 0"
    assert jobs.watch.retry_overdue("j1", now=job.deadline_at + 1, max_attempts=3) is OverdueAction.RETRY
    assert jobs.fanin.settle_level("j1", 0) == "stage 0" and jobs.fanin.settle_level("j1", 0) is None, (
        "once in attempt 2"
    )
    jobs.records.cancel("j1")
    assert jobs.watch.retry_overdue("j1", now=job.deadline_at + 200, max_attempts=3) is OverdueAction.SKIP
    assert jobs.fanin.settle_level("j1", 0) is None and jobs.fanin.settle_level("ghost", 0) is None


def test_concurrent_last_parts_send_the_next_step_once(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 16, "stage 0")

    def settle(i: int) -> str | None:
        jobs.fanin.record_chunk("j1", i, f"part {i}", Usage(calls=1))
        return jobs.fanin.settle_level("j1", 0)

    with ThreadPoolExecutor(8) as pool:
        sent = list(pool.map(settle, [*range(16), *range(16)]))
    assert [s for s in sent if s is not None] == ["stage 0"]


# --- a map's start and end, each one round trip on Redis ------------------------------------------
def test_a_map_reads_its_job_and_its_chunk_and_reserves_its_first_call_together(jobs: JobStores) -> None:
    new_job(jobs, chunks_total=2)
    job, done, reserved = jobs.fanin.begin_map("j1", 1, 2)
    assert (job.id, job.chunks_total, done, reserved) == ("j1", 2, None, True)
    jobs.fanin.record_chunk("j1", 1, "found it", Usage(calls=1))
    assert jobs.fanin.begin_map("j1", 1, 2)[1:] == ("found it", True) and jobs.records.get("j1").llm_calls_reserved == 2
    assert jobs.fanin.begin_map("j1", 0, 2)[1:] == (None, False), "the budget of 2 calls is spent"
    jobs.records.cancel("j1")
    assert jobs.fanin.begin_map("j1", 0, 10)[2] is False, "an ended job reserves nothing"
    with pytest.raises(NotFound):
        jobs.fanin.begin_map("ghost", 0, 2)


def test_recording_and_settling_at_once_counts_once_and_hands_out_the_step_once(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 2, "stage 0")
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "a", Usage(calls=1, input_tokens=5)) is None
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "a again", Usage(calls=1, input_tokens=5)) is None  # redelivered
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b", Usage(calls=1, input_tokens=7)) == "stage 0"
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1)) is None, "handed out once per attempt"
    record = jobs.records.get("j1")
    assert (record.chunks_done, record.usage.calls, record.usage.input_tokens) == (2, 2, 12)
    assert jobs.fanin.chunk_outputs("j1") == {0: "a", 1: "b"}
    with pytest.raises(NotFound):
        jobs.fanin.record_chunk_and_settle("ghost", 0, "x", Usage(calls=1))


@pytest.mark.redis
@pytest.mark.integration
def test_a_map_that_finds_scripts_lost_resumes_there_and_counts_nothing_twice(redis_cluster_client: Any) -> None:
    """After Redis lost its scripts (a restart, SCRIPT FLUSH) a map's round trip resumes at the first lost one: the
    calls counted before it are not counted again. On the private cluster: flushing the scripts of the shared
    test server would pull them from under the suites running beside this one."""
    jobs = redis_job_stores(redis_cluster_client, ttl_seconds=600, deadline_seconds=60)
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 2, "stage 0")
    call = [ModelCall("map", "a", Usage(calls=1))]
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "x", Usage(calls=1), call, trace=[event_json({"n": 0})]) is None
    redis_cluster_client.script_flush()
    redis_cluster_client.script_load(script_source("infra.stores.jobs.accounting", "count_model_call"))
    then = jobs.fanin.record_chunk_and_settle("j1", 1, "y", Usage(calls=1), call, trace=[event_json({"n": 1})])
    job = jobs.records.get("j1")
    assert then == "stage 0" and job.chunks_done == 2
    assert job.model_usage["a"].calls == 2 and [event["n"] for event in jobs.traces.trace("j1")] == [0, 1]
