"""Celery tasks: decode arguments, call one pipeline step, turn its answer into the next signatures.

The tasks close over the worker's `Runtime` (built once in `workers.celery.main`), so no task reaches for
a process-global; signatures are made by task name, so scheduling needs no task objects.

No task keeps a Celery result (`ignore_result`), and the fan-in is not Celery's chord but the job
store's (`JobStore.expect_parts` / `settle_level`): the step after a level of parts is stored before
the parts are sent, and the part that settles the level last gets it, once per attempt. A chord
cost each part three more Redis round trips (its result's GET, SETEX+PUBLISH, the chord counter),
and each publish subscribed the sending thread to the task's result channel for good.

That part runs the reduce stage itself, in its own thread (`run_next`), rather than sending it: the
stage is the job's only next step, so a broker round trip (publish, BRPOP, dispatch to a pool thread)
between the last map's answer and the reduce's model call bought nothing (profiled: 4-6 ms of the
~25 ms gap at 500 ms per call, more when the worker is busy). It loses no safety: the stage is
idempotent; a worker that dies mid-stage dies holding the part's message (`acks_late`), which the broker
hands out again (RabbitMQ at once, when the dead worker's connection drops; Redis after its visibility
timeout, by which time the watchdog has re-submitted the job), and `settle_level` hands the stage again to
that same task id, so the redelivered part runs it; and a stage that meets an outage is sent as a message
after all, to be retried with backoff like any task.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.app.task import Task
from celery.canvas import Signature

from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStore
from workers.celery.app import MAP, PRELOAD, QUERY, READ_GREP, REDUCE_GROUP, REDUCE_STAGE, START, WEBHOOK
from workers.job import pipeline, steps
from workers.job.parts import Cover
from workers.job.runtime import Runtime
from workers.job.webhooks import deliver_once

log = logging.getLogger("toolout.workers")

Planned = tuple[list[Signature], Signature]
"""A level of parts and the step after them (an empty header: the step is sent alone)."""


class RedeliveryLogged(Task):  # type: ignore[type-arg]  # the base of tasks with any signature
    """Logs a task the broker hands out again (its worker died holding it), so a redelivery can be seen and timed."""

    def before_start(self, task_id: str, args: Any, kwargs: Any) -> None:
        if (self.request.delivery_info or {}).get("redelivered"):
            log.info("redelivered %s %s %s", self.name, task_id, json.dumps(args))


def register_tasks(celery: Celery, rt: Runtime) -> None:
    """Define toolout's tasks on `celery`, each running one pipeline step against `rt`.

    Only infrastructure outages are retried by Celery (with backoff); strategy failures end in the
    truncate fallback inside the steps.
    """

    def task(name: str) -> Callable[[Callable[..., None]], Task[Any, None]]:
        def define(step: Callable[..., None]) -> Task[Any, None]:
            return celery.task(  # shared=False: a task closes over *this* runtime, so it must not join other apps
                name=name,
                base=RedeliveryLogged,
                shared=False,
                ignore_result=True,
                autoretry_for=(BackendUnavailable,),
                retry_backoff=True,
                retry_backoff_max=30,
                max_retries=8,
            )(quiet_when_over(rt.jobs, name, step))

        return define

    @task(START)
    def start_extraction(job_id: str) -> None:
        schedule(celery, rt.jobs, job_id, steps.start(rt, job_id))

    @task(MAP)
    def map_chunk(job_id: str, index: int, start: int, end: int) -> None:
        by = running_task_id(celery)
        settled = steps.run_map(rt, job_id, index, start, end, by=by)
        run_next(celery, rt, rt.jobs.settle_level(job_id, 0, by=by) if settled is None else settled.then)

    @task(REDUCE_STAGE)
    def reduce_stage(job_id: str, level: int, covers: list[Cover]) -> None:
        schedule(celery, rt.jobs, job_id, steps.run_reduce_stage(rt, job_id, level, covers))

    @task(REDUCE_GROUP)
    def reduce_group(job_id: str, level: int, group_index: int, members: list[int], cover: Cover) -> None:
        steps.run_reduce_group(rt, job_id, level, group_index, members, cover)
        run_next(celery, rt, rt.jobs.settle_level(job_id, level + 1, by=running_task_id(celery)))

    @task(READ_GREP)
    def read_grep(job_id: str) -> None:
        steps.run_read_grep(rt, job_id)

    @task(QUERY)
    def query(job_id: str) -> None:
        schedule(celery, rt.jobs, job_id, steps.run_query(rt, job_id))

    @task(WEBHOOK)
    def deliver_webhook(job_id: str, attempt: int) -> None:
        deliver_webhook_attempt(celery, rt, job_id, attempt)

    register_preload(celery, rt)


def register_preload(celery: Celery, rt: Runtime) -> None:
    """The query strategy's preload: not a job's step (no job id), and not retried — a preload that
    fails leaves the first question to load (`steps.preload` logs why)."""

    @celery.task(name=PRELOAD, base=RedeliveryLogged, shared=False, ignore_result=True)
    def preload_tables(handle: str, tenant: str) -> None:
        steps.preload(rt, handle, tenant)


def running_task_id(celery: Celery) -> str | None:
    """The id of the task message this pool thread runs: a redelivery of the message carries the same id, which
    is how `JobStore.settle_level` knows the step it handed out died with this task's first delivery."""
    task = celery.current_task
    return None if task is None else task.request.id


def deliver_webhook_attempt(celery: Celery, rt: Runtime, job_id: str, attempt: int) -> None:
    """One attempt; the next one is a new message after the backoff (no worker thread sleeps on it)."""
    delay = deliver_once(rt.settings, rt.jobs, job_id, attempt).retry_in
    if delay is not None:  # whole seconds: RabbitMQ's native delayed delivery counts no finer
        countdown = max(1, math.ceil(delay))
        celery.send_task(WEBHOOK, args=[job_id, attempt + 1], queue="webhooks", countdown=countdown, ignore_result=True)


def quiet_when_over(jobs: JobStore, name: str, step: Callable[..., None]) -> Callable[..., None]:
    """`step`, except that a failure of a job that is gone or canceled ends the task with one INFO line.

    A session ends (DELETE, idle sweep) whenever its agent likes, jobs in flight included: the job is
    canceled, then deleted with its records and blobs, under tasks still running. Whatever such a task
    then trips over (the job, its output or a blob not found) is the expected end of its work, not an
    error: no traceback, and no retry (Celery's autoretry wraps this function, so it never sees one).
    """

    @functools.wraps(step)
    def run(job_id: str, *args: Any) -> None:
        try:
            step(job_id, *args)
        except Exception as exc:
            if not pipeline.job_over(jobs, job_id):
                raise
            log.info("job %s: %s stopped, the job was canceled or deleted (%s)", job_id, name, type(exc).__name__)

    return run


def schedule(celery: Celery, jobs: JobStore, job_id: str, step: pipeline.Next) -> None:
    """Turn a step's answer into Celery work: maps or group reduces and the stage after them, or the agent.

    Task ids are fixed and remembered on the job *before* anything is sent, so a cancel arriving
    at any moment finds every queued task to revoke.
    """
    planned = plan(celery, job_id, step)
    if planned is not None:
        remember(jobs, job_id, planned)
        send(celery, jobs, job_id, planned)


def plan(celery: Celery, job_id: str, step: pipeline.Next) -> Planned | None:
    """The signatures a step asks for, not yet sent."""

    def sig(name: str, *args: object) -> Signature:
        return celery.signature(name, args=args, immutable=True)

    if isinstance(step, pipeline.RunChunks):
        maps = [sig(MAP, job_id, c.index, c.start, c.end) for c in step.chunks]
        return maps, sig(REDUCE_STAGE, job_id, 0, step.covers)
    if isinstance(step, pipeline.RunReduceGroups):
        header = [
            sig(REDUCE_GROUP, job_id, step.level, i, members, step.covers[i]) for i, members in enumerate(step.groups)
        ]
        return header, sig(REDUCE_STAGE, job_id, step.level + 1, step.covers)
    if isinstance(step, pipeline.RunAgent):
        return [], sig(READ_GREP, job_id)
    if isinstance(step, pipeline.RunQuery):
        return [], sig(QUERY, job_id)
    return None


def remember(jobs: JobStore, job_id: str, planned: Planned) -> list[str]:
    """Give every signature its task id now (`freeze`) and store the ids on the job."""
    header, body = planned
    ids = [signature.freeze().id for signature in [*header, body]]
    jobs.add_task_ids(job_id, ids)
    return ids


def send(celery: Celery, jobs: JobStore, job_id: str, planned: Planned) -> None:
    """Store the step after the parts (the fan-in), then publish every part in one Redis round trip."""
    header, body = planned
    if not header:
        body.apply_async()
        return
    _, level, _ = body.args
    jobs.expect_parts(job_id, level, len(header), json.dumps({"task": body.task, "id": body.id, "args": body.args}))
    publish_all(celery, header)


def publish_all(celery: Celery, signatures: list[Signature]) -> None:
    """One producer, one kombu publish batch: the messages go out in one pipelined LPUSH round trip
    (one per message, each a GIL hand-off in a busy worker, cost 2-8 ms each inside a fan-out)."""
    with celery.producer_or_acquire() as producer, producer.batch():
        for signature in signatures:
            signature.apply_async(producer=producer)


def run_next(celery: Celery, rt: Runtime, then: str | None) -> None:
    """The step `settle_level` handed this caller (None: not this one, the level is not complete or was
    handed out already): a reduce stage runs here and now; any other step is sent."""
    if then is None:
        return
    step = json.loads(then)
    if step["task"] != REDUCE_STAGE:
        send_next(celery, step)
        return
    job_id, level, covers = step["args"]
    try:
        next_step = steps.run_reduce_stage(rt, job_id, level, covers)
    except BackendUnavailable:
        log.warning("job %s: reduce stage %d met an outage here; sending it as a task", job_id, level)
        send_next(celery, step)
        return
    schedule(celery, rt.jobs, job_id, next_step)


def send_next(celery: Celery, step: dict[str, Any]) -> None:
    """Send a step stored by `send` (task, frozen id, args), with the task id remembered for cancels."""
    celery.send_task(step["task"], args=step["args"], task_id=step["id"], ignore_result=True)
