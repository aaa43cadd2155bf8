"""The watchdog on the in-memory stores: an overdue job is re-submitted once, then failed; ended jobs are left alone.

`submit` is a recorder here; "running" a re-submitted job means driving its steps in-process,
which is also how these tests show the pipeline is idempotent: stored chunk results are reused.
"""

from __future__ import annotations

import pytest

from extraction.protocols import LLMReply
from extraction.testing import ScriptedLLM
from infra.redis.client import connect
from infra.stores.jobs import JobStatus, memory_job_stores, redis_job_stores
from tests.workers.conftest import CHUNK_NOTES, needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from workers.job import context, pipeline
from workers.watchdog import Watchdog, run_watchdog_once

pytestmark = pytest.mark.twin("watchdog retries and locks in the job store; no stored bytes are read")


class Recorder:
    """A `Submit` that remembers the job ids it was asked to queue (never the real broker)."""

    def __init__(self) -> None:
        self.job_ids: list[str] = []

    def __call__(self, job_id: str) -> None:
        self.job_ids.append(job_id)


ONE_REDUCE_OUTPUT_TOKENS = 100
"""Answers of at most 100 tokens: all of the document's ~25 map outputs fit one reduce call (the reduce
tree is planned for full-length answers), so a job is its maps plus one final reduce."""


def overdue_job(make_runtime, **settings):
    rt = make_runtime(needle_model(NEEDLE, misses=CHUNK_NOTES), **settings)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    return rt, job


def test_an_overdue_job_is_retried_once_with_a_new_deadline_then_failed_with_a_reason(make_runtime) -> None:
    rt, job = overdue_job(make_runtime, job_max_attempts=2, job_deadline_seconds=600)  # as the fixture's job store
    submitted = Recorder()
    assert run_watchdog_once(rt, job.deadline_at - 1, submit=submitted).retried == []
    first = run_watchdog_once(rt, job.deadline_at + 1, submit=submitted)
    retried = rt.jobs.records.get(job.id)
    assert first.retried == [job.id] and submitted.job_ids == [job.id]
    assert (retried.status, retried.attempts, retried.deadline_at) == (JobStatus.QUEUED, 2, job.deadline_at + 1 + 600)
    assert run_watchdog_once(rt, job.deadline_at + 2, submit=submitted).retried == [], "the new deadline is not due yet"
    last = run_watchdog_once(rt, retried.deadline_at + 1, submit=submitted)
    failed = rt.jobs.records.get(job.id)
    assert last.failed == [job.id] and submitted.job_ids == [job.id]
    assert failed.status is JobStatus.FAILED and failed.attempts == 2
    assert "did not finish within its deadline (600s per attempt) after 2 attempt(s)" in failed.error
    assert (
        failed.result.startswith("TOOL_OUTPUT FAILED FOR ") and rt.jobs.watch.overdue(retried.deadline_at + 10**6) == []
    )


def test_a_retry_reuses_every_chunk_result_already_stored(make_runtime) -> None:
    rt, job = overdue_job(make_runtime, context_tokens=4000, max_output_tokens=ONE_REDUCE_OUTPUT_TOKENS)
    chunks = context.start(rt, job.id).parts
    for chunk in chunks[:3]:  # then the worker "dies": the chord body never fires
        pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    assert run_watchdog_once(rt, job.deadline_at + 1, submit=Recorder()).retried == [job.id]
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and NEEDLE in done.result and done.attempts == 2
    assert len(rt.llm.calls) == len(chunks) + 1, "the three stored chunks were not asked again"
    assert done.chunks_done == done.chunks_total == len(chunks) and done.usage.calls == len(chunks) + 1


def test_canceled_and_finished_jobs_are_left_alone_and_leave_the_active_set(make_runtime) -> None:
    rt, canceled = overdue_job(make_runtime)
    finished = submit(rt, store_output(rt, document()), "errors", mode="truncate")
    rt.jobs.records.cancel(canceled.id)
    context.start(rt, finished.id)
    submitted = Recorder()
    report = run_watchdog_once(rt, canceled.deadline_at + 10**6, submit=submitted)
    assert report.retried == report.failed == submitted.job_ids == []
    assert (
        rt.jobs.records.get(canceled.id).status is JobStatus.CANCELED
        and rt.jobs.records.get(finished.id).status is JobStatus.SUCCEEDED
    )
    assert rt.jobs.records.get(canceled.id).attempts == 1


def test_a_job_lost_before_it_started_is_simply_queued_again(make_runtime) -> None:
    """The start message vanished (broker restarted without it): nothing was stored, the retry does it all."""
    rt, job = overdue_job(make_runtime, context_tokens=128_000)
    assert run_watchdog_once(rt, job.deadline_at + 1, submit=Recorder()).retried == [job.id]
    drive(rt, job.id)
    assert rt.jobs.records.get(job.id).status is JobStatus.SUCCEEDED and len(rt.llm.calls) == 1


def test_twin_final_reduces_count_one_call(make_runtime) -> None:
    """A retry's chord body racing the original one: both call the model, one answer and one call are counted."""
    inner = needle_model(NEEDLE, misses=CHUNK_NOTES)
    state = {"job": None, "twin": 0}

    def respond(messages, tools):
        if "--- chunk 1 of" in messages[0]["content"] and state["twin"] == 0:  # the first reduce call
            state["twin"] += 1
            covers = [[[i, 0, 1]] for i in range(rt.jobs.records.get(state["job"]).chunks_total)]
            pipeline.run_reduce_stage(rt, state["job"], 0, covers)  # the twin runs and finishes meanwhile
        return inner.complete(messages, tools=tools)

    rt = make_runtime(ScriptedLLM(respond), context_tokens=4000, max_output_tokens=ONE_REDUCE_OUTPUT_TOKENS)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    state["job"] = job.id
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    reduce_calls = len(rt.llm.calls) - done.chunks_total
    assert done.status is JobStatus.SUCCEEDED and NEEDLE in done.result
    assert reduce_calls == 2 and done.usage.calls == done.chunks_total + 1


def test_one_worker_per_tick_takes_the_lock(make_runtime) -> None:
    rt, _ = overdue_job(make_runtime, watchdog_interval_seconds=30)
    rt.jobs = memory_job_stores(ttl_seconds=600, deadline_seconds=-1)  # every job is overdue as soon as it exists
    late = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    first, second = Watchdog(rt, 30, submit=Recorder()), Watchdog(rt, 30, submit=Recorder())
    assert first.tick() is not None and second.tick() is None
    assert late.id in first.submit.job_ids and second.submit.job_ids == []


def test_a_tick_survives_redis_being_down(make_runtime) -> None:
    rt = make_runtime(ScriptedLLM(lambda m, t: LLMReply(content="x")))
    rt.jobs = redis_job_stores(connect("redis://127.0.0.1:1/0", timeout=0.2), ttl_seconds=60, deadline_seconds=60)
    assert Watchdog(rt, 1, submit=Recorder()).tick() is None
