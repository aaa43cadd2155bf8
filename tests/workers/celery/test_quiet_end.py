"""A task whose job was canceled or deleted under it (its session ended) stops with one INFO line."""

from __future__ import annotations

import logging

import pytest

from extraction.errors import NotFound
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobRecord, JobStatus, JobStores, memory_job_stores
from workers.celery.tasks import quiet_when_over


@pytest.fixture()
def jobs() -> JobStores:
    store = memory_job_stores(ttl_seconds=600, deadline_seconds=60)
    store.records.create(JobRecord(id="j1", session_id="s1", tenant="dev", handle="h1", extract="x", nonce="n"))
    return store


def failing(exc: Exception):
    def step(job_id: str, *args: object) -> None:
        raise exc

    return step


@pytest.mark.parametrize("end", ["deleted", "canceled"])
def test_a_job_that_ended_under_its_task_ends_it_quietly(
    jobs: JobStores, end: str, caplog: pytest.LogCaptureFixture
) -> None:
    if end == "deleted":
        jobs.records.delete_session_jobs("s1")
    else:
        jobs.records.cancel("j1")
    with caplog.at_level(logging.DEBUG):
        quiet_when_over(jobs, "toolout.map_chunk", failing(NotFound("no extraction job 'j1'")))("j1", 0, 0, 10)
        quiet_when_over(jobs, "toolout.map_chunk", failing(BackendUnavailable("blob gone")))("j1", 1, 0, 10)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "job j1: toolout.map_chunk stopped, the job was canceled or deleted (NotFound)"),
        (logging.INFO, "job j1: toolout.map_chunk stopped, the job was canceled or deleted (BackendUnavailable)"),
    ]


def test_a_live_or_finished_jobs_failure_still_raises(jobs: JobStores) -> None:
    """Only the end of the job silences a failure; for a job still running it is a real error (and
    BackendUnavailable still reaches Celery's autoretry)."""
    with pytest.raises(BackendUnavailable):
        quiet_when_over(jobs, "toolout.map_chunk", failing(BackendUnavailable("redis down")))("j1")
    jobs.records.finish("j1", JobStatus.SUCCEEDED, result="done")
    with pytest.raises(ValueError):
        quiet_when_over(jobs, "toolout.start_extraction", failing(ValueError("bug")))("j1")
