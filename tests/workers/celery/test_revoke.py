"""Revoke bookkeeping: the ids Celery will use are stored before sending, and a cancel revokes exactly them."""

from __future__ import annotations

import contextlib
import json

import pytest

from extraction.protocols import Usage
from infra.errors import BackendUnavailable
from infra.redis.client import connect
from infra.settings import Settings
from infra.stores.jobs import redis_job_stores
from tests.workers.conftest import needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document
from workers.celery import tasks
from workers.celery.app import MAP, create_celery
from workers.celery.dispatch import CeleryDispatcher
from workers.job import context, pipeline
from workers.job.runtime import Runtime
from workers.job.steps import Fanout, ReadGrep, ReduceGroup, ReduceStage

pytestmark = pytest.mark.twin("revoke bookkeeping of task ids; no stored bytes are read")


class RecordingCeleryDispatcher(CeleryDispatcher):
    """The real dispatcher, its broadcast replaced by a record of what would be sent."""

    def __init__(self, rt: Runtime) -> None:
        super().__init__(celery_for(rt), rt.jobs)
        self.broadcast: list[list[str]] = []

    def _revoke(self, ids: list[str]) -> None:
        self.broadcast.append(list(ids))


def celery_for(rt: Runtime):
    """An app with toolout's tasks registered (as a worker has), on kombu's in-memory broker and backend."""
    celery = create_celery(Settings(redis_url="memory://"))
    celery.conf.update(broker_url="memory://", result_backend="cache+memory://")
    tasks.register_tasks(celery, rt)
    return celery


def executor_for(rt: Runtime, celery=None) -> tasks.CeleryExecutor:
    return tasks.CeleryExecutor(celery or celery_for(rt), rt)


def planned_job(make_runtime, mode: str = "full-chunked"):
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode=mode)
    return rt, job


def test_a_fan_outs_task_ids_are_stored_before_it_is_sent_and_celery_keeps_them(make_runtime) -> None:
    rt, job = planned_job(make_runtime)
    celery = celery_for(rt)
    planned = executor_for(rt, celery).planned(context.start(rt, job.id))
    ids = executor_for(rt).remember(planned)
    header, body = planned
    assert len(ids) == rt.jobs.records.get(job.id).chunks_total + 1
    assert sorted(ids) == rt.jobs.tasks.task_ids(job.id) == sorted([body.id, *(s.id for s in header)])


def test_the_part_that_settles_the_maps_last_runs_the_reduce_stage_once_in_its_own_thread(
    make_runtime, monkeypatch
) -> None:
    rt, job = planned_job(make_runtime)
    celery = celery_for(rt)
    step = context.start(rt, job.id)
    planned = executor_for(rt, celery).planned(step)
    executor_for(rt).remember(planned)
    executor_for(rt, celery).dispatch(planned)  # the maps go to kombu's in-memory broker
    sent: list[tuple[str, dict]] = []
    ran: list[tuple] = []
    monkeypatch.setattr(celery, "send_task", lambda name, **options: sent.append((name, options)))
    monkeypatch.setattr(pipeline, "run_reduce_stage", lambda *args: ran.append(args[1:]))
    for chunk in step.parts:
        executor_for(rt, celery).run_then(rt.jobs.fanin.settle_level(job.id, 0))
        assert not ran, "nothing runs while a part is unsettled"
        rt.jobs.fanin.record_chunk(job.id, chunk.index, "found", Usage(calls=1))
    for _ in range(3):  # the last part, then redeliveries of it
        executor_for(rt, celery).run_then(rt.jobs.fanin.settle_level(job.id, 0))
    assert ran == [(job.id, 0, json.loads(json.dumps(step.then.covers)))] and sent == [], "run here, no broker hop"


class WorkerKilled(BaseException):
    """Stands for a SIGKILL inside a task: nothing after it in the task runs, nothing catches it."""


def test_a_map_killed_while_running_the_reduce_stage_runs_it_again_when_its_message_is_redelivered(
    make_runtime, monkeypatch
) -> None:
    """The map that completes level 0 runs the reduce stage in its own task; its worker dies there. The
    broker (RabbitMQ: at once) hands that map's message out again, same task id: the redelivered map finds
    its chunk stored and is handed the stage again, so the job ends without waiting for the watchdog.
    Another task (a twin with another id) is not."""
    rt, job = planned_job(make_runtime)
    celery = celery_for(rt)
    step = context.start(rt, job.id)
    planned = executor_for(rt, celery).planned(step)
    executor_for(rt).remember(planned)
    executor_for(rt, celery).dispatch(planned)
    maps, run_map = planned[0], celery.tasks[MAP]
    real_stage = pipeline.run_reduce_stage

    def killed(*_: object) -> None:
        raise WorkerKilled

    monkeypatch.setattr(pipeline, "run_reduce_stage", killed)
    for signature in maps:
        with contextlib.suppress(WorkerKilled):
            run_map.apply(args=signature.args, task_id=signature.id)
    last = maps[-1]
    assert rt.jobs.records.get(job.id).chunks_done == len(maps) and rt.jobs.records.get(job.id).status == "running"
    monkeypatch.setattr(pipeline, "run_reduce_stage", real_stage)
    run_map.apply(args=last.args, task_id="a-twin-of-the-last-map")
    assert rt.jobs.records.get(job.id).status == "running", "only the task the stage was handed to gets it again"
    run_map.apply(args=last.args, task_id=last.id)  # the redelivery
    done = rt.jobs.records.get(job.id)
    assert done.status == "succeeded" and NEEDLE in done.result and done.attempts == 1, done


def test_a_reduce_stage_that_meets_an_outage_is_sent_as_a_task_with_its_remembered_id(
    make_runtime, monkeypatch
) -> None:
    rt, job = planned_job(make_runtime)
    celery = celery_for(rt)
    planned = executor_for(rt, celery).planned(context.start(rt, job.id))
    executor_for(rt).remember(planned)
    _, body = planned
    then = json.dumps({"task": body.task, "id": body.id, "args": body.args})
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr(celery, "send_task", lambda name, **options: sent.append((name, options)))

    def outage(*_: object) -> None:
        raise BackendUnavailable("redis is down", backend="redis")

    monkeypatch.setattr(pipeline, "run_reduce_stage", outage)
    executor_for(rt, celery).run_then(then)
    stage = {"args": json.loads(json.dumps(list(body.args))), "task_id": body.id, "ignore_result": True}
    assert sent == [("toolout.reduce_stage", stage)] and body.id in rt.jobs.tasks.task_ids(job.id)


def test_signatures_name_toolouts_tasks_with_the_steps_arguments(make_runtime) -> None:
    rt, job = planned_job(make_runtime)
    step = context.start(rt, job.id)
    header, body = executor_for(rt, celery_for(rt)).planned(step)
    assert [(s.task, tuple(s.args)) for s in header] == [
        ("toolout.map_chunk", (job.id, c.index, c.start, c.end)) for c in step.parts
    ]
    covers = [[[c.index, c.start, c.end]] for c in step.parts]
    assert (body.task, tuple(body.args), body.immutable) == ("toolout.reduce_stage", (job.id, 0, covers), True)


def test_group_signatures_carry_what_each_group_covers(make_runtime) -> None:
    rt, job = planned_job(make_runtime)
    covers = [[[0, 0, 10], [1, 9, 20]], [[2, 19, 30]]]
    groups = [ReduceGroup(job.id, 0, 0, [0, 1], covers[0]), ReduceGroup(job.id, 0, 1, [2], covers[1])]
    step = Fanout([*groups], ReduceStage(job.id, 1, covers))
    header, body = executor_for(rt, celery_for(rt)).planned(step)
    assert [(s.task, tuple(s.args)) for s in header] == [
        ("toolout.reduce_group", (job.id, 0, 0, [0, 1], covers[0])),
        ("toolout.reduce_group", (job.id, 0, 1, [2], covers[1])),
    ]
    assert (body.task, tuple(body.args)) == ("toolout.reduce_stage", (job.id, 1, covers))


def test_the_agent_task_is_remembered_too(make_runtime) -> None:
    rt, job = planned_job(make_runtime, mode="read-grep")
    ids = executor_for(rt).remember(executor_for(rt, celery_for(rt)).planned(ReadGrep(job.id)))
    assert len(ids) == 1 and rt.jobs.tasks.task_ids(job.id) == ids


def test_cancel_revokes_exactly_the_remembered_ids(make_runtime) -> None:
    rt, job = planned_job(make_runtime)
    dispatcher = RecordingCeleryDispatcher(rt)
    ids = executor_for(rt).remember(executor_for(rt, dispatcher.celery).planned(context.start(rt, job.id)))
    assert dispatcher.revoke(job.id) == len(ids)
    assert dispatcher.broadcast == [sorted(ids)]


def test_nothing_to_revoke_sends_nothing(make_runtime) -> None:
    rt, job = planned_job(make_runtime, mode="auto")
    dispatcher = RecordingCeleryDispatcher(rt)
    assert dispatcher.revoke(job.id) == 0 and dispatcher.broadcast == []


def test_revoking_is_best_effort_when_redis_is_down(make_runtime) -> None:
    rt, _ = planned_job(make_runtime)
    rt.jobs = redis_job_stores(connect("redis://127.0.0.1:1/0", timeout=0.2), ttl_seconds=60, deadline_seconds=60)
    assert RecordingCeleryDispatcher(rt).revoke("any") == 0
