"""Celery tasks: decode a message into its step (`workers.job.drive.STEPS`), run it, send what follows.

The tasks close over the worker's `Runtime` (built once in `workers.celery.main`), so no task reaches for
a process-global; signatures are made by task name, so scheduling needs no task objects.

No task keeps a Celery result (`ignore_result`), and the fan-in is not Celery's chord but the job
store's (`JobFanIn.expect_parts` / `settle_level`): the step after a level of parts is stored before
the parts are sent, and the part that settles the level last gets it, once per attempt. A chord
cost each part three more Redis round trips (its result's GET, SETEX+PUBLISH, the chord counter),
and each publish subscribed the sending thread to the task's result channel for good.

That part runs the reduce stage itself, in its own thread (`CeleryExecutor.run_then`), rather than sending it: the
stage is the job's only next step, so a broker round trip (publish, BRPOP, dispatch to a pool thread)
between the last map's answer and the reduce's model call bought nothing but delay, more of it when the
worker is busy (docs/performance.md). It loses no safety: the stage is
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Celery
from celery.app.task import Task
from celery.canvas import Signature

from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStores
from workers.job import drive
from workers.job.context import job_over
from workers.job.drive import STEPS
from workers.job.outcomes import give_up_poisoned
from workers.job.runtime import Runtime
from workers.job.steps import Fanout, Map, ReduceGroup, ReduceStage, Settled, Step

log = logging.getLogger("toolout.workers")

Planned = tuple[list[Signature], Signature]
"""A level of parts and the step after them (an empty header: the step is sent alone)."""


class RedeliveryLogged(Task):  # type: ignore[type-arg]  # the base of tasks with any signature
    """Logs a task the broker hands out again (its worker died holding it), so a redelivery can be seen and timed."""

    def before_start(self, task_id: str, args: Any, kwargs: Any) -> None:
        if (self.request.delivery_info or {}).get("redelivered"):
            log.info("redelivered %s %s %s", self.name, task_id, json.dumps(args))


RETRIED_TASK: dict[str, Any] = {
    "base": RedeliveryLogged,
    "shared": False,  # a task closes over *this* runtime, so it must not join other apps
    "ignore_result": True,
    "autoretry_for": (BackendUnavailable,),
    "retry_backoff": True,
    "retry_backoff_max": 30,
    "max_retries": 8,
}
"""How every task that a store outage may interrupt is declared: retried with backoff while the backend is away."""


def register_tasks(celery: Celery, rt: Runtime) -> None:
    """Define a task on `celery` per kind of step declared in `workers.job.drive.STEPS`, each running it against `rt`
    through every `MIDDLEWARE` in turn.

    Only infrastructure outages are retried by Celery (with backoff); strategy failures end in the
    truncate fallback inside the steps.
    """
    executor = CeleryExecutor(celery, rt)
    for kind in STEPS.kinds():
        celery.task(name=kind.task, **RETRIED_TASK)(  # type: ignore[no-untyped-call]  # celery.task untyped with **options
            through_middleware(TaskSite(celery, rt, kind.task), executor.task(kind.task))
        )


Body = Callable[..., None]
"""A step task's body as Celery calls it: the job id, then the step's other arguments."""


@dataclass(frozen=True)
class TaskSite:
    """What a middleware knows of the task it wraps: the app, the worker's runtime and the task's name."""

    celery: Celery
    rt: Runtime
    task: str


@dataclass(frozen=True)
class Middleware:
    """A named wrapper every step's task passes through: `wrap` takes the task's site and the body within, and
    answers the body as this middleware runs it."""

    name: str
    wrap: Callable[[TaskSite, Body], Body]


def _quiet(site: TaskSite, body: Body) -> Body:
    return quiet_when_over(site.rt.jobs, site.task, body)


def _unpoisoned(site: TaskSite, body: Body) -> Body:
    return refuse_poison(site.celery, site.rt, site.task, body)


MIDDLEWARE: tuple[Middleware, ...] = (
    Middleware("quiet_when_over", _quiet),
    Middleware("refuse_poison", _unpoisoned),
)
"""What every step's task passes through before its step runs, in this order (the first listed runs first, around
all the others): a failure of a job that is over ends the task quietly, even one the poison guard's own bookkeeping
trips over; then a message that killed its worker too often is refused. Celery's autoretry wraps them all."""


def through_middleware(site: TaskSite, body: Body) -> Body:
    """`body` inside every `MIDDLEWARE`, the first listed outermost, so they run in the order listed."""
    for middleware in reversed(MIDDLEWARE):
        body = middleware.wrap(site, body)
    return body


def running_task_id(celery: Celery) -> str | None:
    """The id of the task message this pool thread runs: a redelivery of the message carries the same id, which
    is how `JobFanIn.settle_level` knows the step it handed out died with this task's first delivery."""
    task = celery.current_task
    return None if task is None else task.request.id


def step_name(task: str) -> str:
    """How an error names a step's task (`toolout.map_chunk` → `map chunk`)."""
    return task.removeprefix("toolout.").replace("_", " ")


def redelivery(celery: Celery) -> str | None:
    """The task message this pool thread runs, if the broker hands it out again (its first delivery's worker
    died holding it; None for a first delivery): its id and its retry number, as `JobTasks.task_started`
    counts it (a Celery retry is a new message under the same id, not a death)."""
    task = celery.current_task
    if task is None or not (task.request.delivery_info or {}).get("redelivered"):
        return None
    return f"{task.request.id}:{task.request.retries or 0}"


def refuse_poison(celery: Celery, rt: Runtime, name: str, step: Callable[..., None]) -> Callable[..., None]:
    """`step`, unless this is the `max_task_deliveries`-th delivery of its task message (every one before it
    killed its worker): the poison-task guard.

    With `acks_late` a message whose worker dies is handed out again (RabbitMQ when the connection drops,
    Redis after the visibility timeout), so a step that kills its worker would kill every worker in turn,
    for ever. A first delivery runs as it is: it costs nothing. A redelivered one is counted on the job before
    its step runs and uncounted when the step returns or raises, so what stays counted are the starts its
    worker died under (not a start that ended but whose ack died with the worker: the thread pool dies whole,
    other threads' messages with it). The first delivery died too, or the message would not be back. The
    `max_task_deliveries`-th delivery (3: the step ran twice and its worker died twice) does not run the step:
    the job fails naming the step (`outcomes.give_up_poisoned`) and the message is acked, so it is never
    delivered again. Two Redis round trips per redelivered task (`JobTasks.task_started`, `task_ended`).
    """

    @functools.wraps(step)
    def run(job_id: str, *args: Any) -> None:
        this = redelivery(celery)
        if this is None:
            step(job_id, *args)
            return
        died = rt.jobs.tasks.task_started(
            job_id, this
        )  # the redelivered starts before this one, and the first delivery
        if died + 1 >= rt.settings.max_task_deliveries:  # this is the last delivery it gets: it ends the job
            give_up_poisoned(rt, job_id, step_name(name), died)
            return
        try:
            step(job_id, *args)
        finally:
            rt.jobs.tasks.task_ended(job_id, this)

    return run


def quiet_when_over(jobs: JobStores, name: str, step: Callable[..., None]) -> Callable[..., None]:
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
            if not job_over(jobs, job_id):
                raise
            log.info("job %s: %s stopped, the job was canceled or deleted (%s)", job_id, name, type(exc).__name__)

    return run


class CeleryExecutor:
    """`workers.job.drive`'s executor on Celery: a step becomes a task message, a fan-out a level of them.

    Task ids are fixed and remembered on the job *before* anything is sent, so a cancel arriving
    at any moment finds every queued task to revoke.
    """

    def __init__(self, celery: Celery, rt: Runtime) -> None:
        self.celery, self.rt = celery, rt

    def task(self, name: str) -> Callable[..., None]:
        """The body of the task `name`: decode its arguments into the step and run it here."""

        def run(*args: Any) -> None:
            self.run(STEPS.from_message(name, args))

        return run

    def run(self, step: Step) -> None:
        """Run a step in this task; a part then settles its level, and the part that completes it goes on."""
        if not isinstance(step, Map | ReduceGroup):
            drive.advance(self, drive.run(self.rt, step))
            return
        by = running_task_id(self.celery)
        done = drive.run(self.rt, step, by=by)
        then = (
            done.then
            if isinstance(done, Settled)
            else self.rt.jobs.fanin.settle_level(step.job_id, step.settles, by=by)
        )
        self.run_then(then)

    def send(self, step: Step) -> None:
        self.schedule(step)

    def fan_out(self, fanout: Fanout) -> None:
        self.schedule(fanout)

    def schedule(self, step: Fanout | Step) -> None:
        """Fix the task ids and remember them on the job, then send."""
        planned = self.planned(step)
        self.remember(planned)
        self.dispatch(planned)

    def planned(self, step: Fanout | Step) -> Planned:
        """The signatures `step` asks for, not yet sent (a single step: an empty header)."""
        if isinstance(step, Fanout):
            return [self.signature(part) for part in step.parts], self.signature(step.then)
        return [], self.signature(step)

    def remember(self, planned: Planned) -> list[str]:
        """Give every signature its task id now (`freeze`) and store the ids on the job."""
        header, body = planned
        ids = [signature.freeze().id for signature in [*header, body]]
        self.rt.jobs.tasks.add_task_ids(body.args[0], ids)
        return ids

    def dispatch(self, planned: Planned) -> None:
        """Store the stage after the parts (the fan-in), then publish every part in one Redis round trip."""
        header, body = planned
        if not header:
            body.apply_async()
            return
        then = STEPS.from_message(str(body.task), body.args)
        assert isinstance(then, ReduceStage)
        self.rt.jobs.fanin.expect_parts(then.job_id, then.level, len(header), STEPS.stored(then, str(body.id)))
        publish_all(self.celery, header)

    def signature(self, step: Step) -> Signature:
        task, args = STEPS.message(step)
        return self.celery.signature(task, args=args, immutable=True)

    def run_then(self, then: str | None) -> None:
        """The stage `settle_level` handed this part (None: not this one, the level is not complete or was
        handed out already): a reduce stage runs here and now; any other step is sent."""
        if then is None:
            return
        step, task_id = STEPS.from_stored(then)
        if not isinstance(step, ReduceStage):
            self.send_stored(step, task_id)
            return
        try:
            answer = drive.run(self.rt, step)
        except BackendUnavailable:
            log.warning("job %s: reduce stage %d met an outage here; sending it as a task", step.job_id, step.level)
            self.send_stored(step, task_id)
            return
        drive.advance(self, answer)

    def send_stored(self, step: Step, task_id: str) -> None:
        """Send a step stored with its frozen id (remembered on the job for cancels when it was stored)."""
        task, args = STEPS.message(step)
        self.celery.send_task(task, args=args, task_id=task_id, ignore_result=True)


def publish_all(celery: Celery, signatures: list[Signature]) -> None:
    """One producer, one kombu publish batch: the messages go out in one pipelined LPUSH round trip
    (rather than one per message, each a GIL hand-off in a busy worker inside a fan-out)."""
    with celery.producer_or_acquire() as producer, producer.batch():
        for signature in signatures:
            signature.apply_async(producer=producer)
