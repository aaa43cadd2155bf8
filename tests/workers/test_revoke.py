"""Revoke bookkeeping against real Redis.

The ids Celery will use are stored before sending, and a cancel revokes them.
"""

from __future__ import annotations

from celery import chord, group

from infra import keys
from infra.jobstore import JobStore
from infra.redis_client import connect
from tests.workers.conftest import needle_model, store_output, submit
from tests.workers.test_pipeline import NEEDLE, document
from workers import pipeline, tasks
from workers.dispatch import revoke_job


class FakeControl:
    """Stands in for `app.control`: records what would be broadcast."""

    def __init__(self) -> None:
        self.revoked: list[list[str]] = []

    def revoke(self, ids: list[str]) -> None:
        self.revoked.append(list(ids))


def test_a_chords_task_ids_are_stored_before_it_is_sent_and_celery_keeps_them(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    planned = tasks.plan(job.id, pipeline.start(rt, job.id))
    ids = tasks.remember(rt.jobs, job.id, planned)
    header, body = planned
    frozen = chord(group(header), body).freeze()  # what apply_async sends
    assert len(ids) == rt.jobs.get(job.id).chunks_total + 1
    assert sorted(ids) == rt.jobs.task_ids(job.id) == sorted([frozen.id, *(r.id for r in frozen.parent.results)])


def test_the_agent_task_is_remembered_too(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    job = submit(rt, store_output(rt, document()), "errors", mode="read-grep")
    ids = tasks.remember(rt.jobs, job.id, tasks.plan(job.id, pipeline.RunAgent()))
    assert len(ids) == 1 and rt.jobs.task_ids(job.id) == ids


def test_cancel_revokes_exactly_the_remembered_ids(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    ids = tasks.remember(rt.jobs, job.id, tasks.plan(job.id, pipeline.start(rt, job.id)))
    control = FakeControl()
    assert revoke_job(job.id, jobs=rt.jobs, control=control) == len(ids)
    assert control.revoked == [sorted(ids)]


def test_nothing_to_revoke_sends_nothing(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    job = submit(rt, store_output(rt, document()), "errors")
    control = FakeControl()
    assert revoke_job(job.id, jobs=rt.jobs, control=control) == 0 and control.revoked == []


def test_revoking_is_best_effort_when_redis_is_down() -> None:
    dead = JobStore(connect("redis://127.0.0.1:1/0", timeout=0.2), ttl_seconds=60, deadline_seconds=60)
    assert revoke_job("any", jobs=dead, control=FakeControl()) == 0


def test_task_ids_expire_with_the_job_and_go_with_it(make_runtime, redis_client) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    job = submit(rt, store_output(rt, document()), "errors")
    rt.jobs.add_task_ids(job.id, ["t1", "t2"])
    rt.jobs.cancel(job.id)
    assert 0 < redis_client.ttl(keys.job_tasks(job.id)) <= 600
    rt.jobs.delete([job.id])
    assert not redis_client.exists(keys.job_tasks(job.id))
