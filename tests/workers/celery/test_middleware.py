"""Every step's task passes through each of `workers.celery.tasks.MIDDLEWARE`, in the order listed, before its step
runs; and every task a worker defines is routed to one of the declared queues."""

from __future__ import annotations

import pytest

from infra.errors import BackendUnavailable
from infra.settings import Settings
from tests.workers.conftest import needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document
from workers.celery import tasks
from workers.celery.app import PRELOAD, QUEUES, START, create_celery
from workers.celery.service_tasks import register_service_tasks
from workers.job import drive

pytestmark = pytest.mark.twin("the tasks' wrappers, run eagerly; no stored bytes are read")


def eager_app(rt):
    celery = create_celery(Settings(redis_url="memory://"))
    celery.conf.update(broker_url="memory://", task_always_eager=True, task_eager_propagates=True)
    tasks.register_tasks(celery, rt)
    return celery


def recorded(order: list[str], middleware: tasks.Middleware) -> tasks.Middleware:
    """`middleware` as it is, noting its name as a task enters it and again as the task leaves it."""

    def wrap(site: tasks.TaskSite, body: tasks.Body) -> tasks.Body:
        inner = middleware.wrap(site, body)

        def run(*args: object) -> None:
            order.append(f"enter {middleware.name}")
            inner(*args)
            order.append(f"leave {middleware.name}")

        return run

    return tasks.Middleware(middleware.name, wrap)


def run_start_through(monkeypatch, make_runtime, listed: tuple[tasks.Middleware, ...]) -> tuple[list[str], str]:
    """Run a job's start task with `listed` as the middleware, each recorded: what ran, in order, and the job's end."""
    order: list[str] = []
    monkeypatch.setattr(tasks, "MIDDLEWARE", tuple(recorded(order, m) for m in listed))
    real_run = drive.run

    def step_run(rt, step, **kwargs):
        order.append(f"step {type(step).__name__}")
        return real_run(rt, step, **kwargs)

    monkeypatch.setattr(drive, "run", step_run)
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="truncate")  # the start step ends it: one task
    eager_app(rt).tasks[START].apply(args=[job.id]).get()
    return order, rt.jobs.records.get(job.id).status.value


def expected(listed: tuple[tasks.Middleware, ...]) -> list[str]:
    names = [m.name for m in listed]
    return [f"enter {n}" for n in names] + ["step Start"] + [f"leave {n}" for n in reversed(names)]


def test_a_step_runs_inside_every_listed_middleware_in_the_order_listed(monkeypatch, make_runtime) -> None:
    listed = tasks.MIDDLEWARE
    assert len(listed) >= 2, "the order shows only with two or more"
    order, status = run_start_through(monkeypatch, make_runtime, listed)
    assert order == expected(listed) and status == "succeeded"


def test_the_order_run_is_the_order_listed_not_one_written_elsewhere(monkeypatch, make_runtime) -> None:
    listed = tuple(reversed(tasks.MIDDLEWARE))
    order, status = run_start_through(monkeypatch, make_runtime, listed)
    assert order == expected(listed) and status == "succeeded"


def test_every_task_a_worker_defines_goes_to_a_declared_queue(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    celery = eager_app(rt)
    register_service_tasks(celery, rt)
    ours = sorted(name for name in celery.tasks if name.startswith("toolout."))
    routes = celery.conf.task_routes
    assert len(ours) == 8 and set(ours) == set(routes)
    assert {routes[name]["queue"] for name in ours} <= set(QUEUES)


def test_every_task_a_store_outage_may_interrupt_is_retried_with_backoff(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    celery = eager_app(rt)
    register_service_tasks(celery, rt)
    retried = [t for name, t in celery.tasks.items() if name.startswith("toolout.") and name != PRELOAD]
    assert len(retried) == len(drive.STEPS.kinds()) + 1  # the steps and the webhook delivery
    for task in retried:
        assert (task.max_retries, task.autoretry_for, task.retry_backoff) == (8, (BackendUnavailable,), True), task.name
    assert not getattr(celery.tasks[PRELOAD], "autoretry_for", ())  # a preload is best effort: never retried
