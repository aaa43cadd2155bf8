"""The poison-task guard: a message whose worker died under its step `max_task_deliveries` times is not run again."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus
from tests.workers.conftest import store_output, submit
from workers.celery.tasks import refuse_poison

pytestmark = pytest.mark.twin("counting deliveries of Celery messages; no stored bytes are read")


def celery_running(task_id: str, retries: int = 0, *, redelivered: bool = True) -> SimpleNamespace:
    """What the guard reads of the Celery app: the message this thread runs, handed out again or not."""
    request = SimpleNamespace(id=task_id, retries=retries, delivery_info={"redelivered": redelivered})
    return SimpleNamespace(current_task=SimpleNamespace(request=request))


@pytest.fixture()
def rt(make_runtime):
    return make_runtime(ScriptedLLM(lambda *_: None), max_task_deliveries=3)


def a_job(rt) -> str:
    return submit(rt, store_output(rt, b"x" * 100), "anything", mode="query").id


def test_the_third_delivery_after_two_deaths_fails_the_job_naming_the_step(rt) -> None:
    job_id = a_job(rt)
    rt.jobs.tasks.task_started(job_id, "t1:0")  # the first delivery died uncounted; the first redelivery died counted
    runs: list[str] = []
    refuse_poison(celery_running("t1"), rt, "toolout.query", runs.append)(job_id)
    assert runs == []
    done = rt.jobs.records.get(job_id)
    assert done.status is JobStatus.FAILED
    assert done.error == "the query step was started 2 times and each time its worker died before it ended; not retried"
    assert "the query step was started 2 times" in done.result


def test_one_death_leaves_the_second_delivery_its_run(rt) -> None:
    job_id = a_job(rt)  # the first delivery died, uncounted
    runs: list[str] = []
    refuse_poison(celery_running("t1"), rt, "toolout.query", runs.append)(job_id)
    assert runs == [job_id] and rt.jobs.records.get(job_id).status is not JobStatus.FAILED


def test_a_step_that_returns_or_raises_is_no_death_however_often_it_is_delivered(rt) -> None:
    """A start that ended but whose ack died with its worker (another thread's step killed it) is delivered again."""
    job_id = a_job(rt)
    runs: list[str] = []

    def flaky(job: str) -> None:
        runs.append(job)
        if len(runs) % 2:
            raise ValueError("a bug, not a death")

    guarded = refuse_poison(celery_running("t1"), rt, "toolout.start_extraction", flaky)
    for _ in range(6):
        with contextlib.suppress(ValueError):
            guarded(job_id)
    assert len(runs) == 6 and rt.jobs.records.get(job_id).status is not JobStatus.FAILED


def test_a_celery_retry_and_another_message_count_on_their_own(rt) -> None:
    """A retry (an outage, `autoretry_for`) is a new message under the same id: no worker died for it."""
    job_id = a_job(rt)
    for _ in range(3):
        rt.jobs.tasks.task_started(job_id, "t1:0")
    runs: list[str] = []
    for celery in (celery_running("t1", retries=1), celery_running("t2")):
        refuse_poison(celery, rt, "toolout.map_chunk", lambda job, *_: runs.append(job))(job_id, 0, 0, 10)
    assert len(runs) == 2 and rt.jobs.records.get(job_id).status is not JobStatus.FAILED


def test_a_first_delivery_runs_without_a_round_trip(rt, monkeypatch) -> None:
    """Every task of every job is a first delivery but for a dead worker's: the guard must cost those nothing."""
    job_id = a_job(rt)
    counted: list[str] = []
    monkeypatch.setattr(rt.jobs.tasks, "task_started", lambda *a: counted.append("started") or 1)
    monkeypatch.setattr(rt.jobs.tasks, "task_ended", lambda *a: counted.append("ended"))
    runs: list[str] = []
    refuse_poison(celery_running("t1", redelivered=False), rt, "toolout.map_chunk", runs.append)(job_id)
    assert runs == [job_id] and counted == []
    refuse_poison(celery_running("t1"), rt, "toolout.map_chunk", runs.append)(job_id)
    assert counted == ["started", "ended"]


def test_outside_a_celery_task_nothing_is_counted(rt) -> None:
    job_id = a_job(rt)
    for _ in range(3):
        rt.jobs.tasks.task_started(job_id, "t1:0")
    runs: list[str] = []
    refuse_poison(SimpleNamespace(current_task=None), rt, "toolout.start_extraction", runs.append)(job_id)
    assert runs == [job_id]
