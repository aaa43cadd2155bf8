"""The poison-task guard: a task message that started its step `max_task_deliveries` times is not run again."""

from __future__ import annotations

from types import SimpleNamespace

from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus
from tests.workers.conftest import store_output, submit
from workers.celery.tasks import refuse_poison


def celery_running(task_id: str, retries: int = 0) -> SimpleNamespace:
    """What the guard reads of the Celery app: the message this thread runs."""
    return SimpleNamespace(current_task=SimpleNamespace(request=SimpleNamespace(id=task_id, retries=retries)))


def test_the_delivery_after_the_limit_fails_the_job_naming_the_step(make_runtime) -> None:
    rt = make_runtime(ScriptedLLM(lambda *_: None), max_task_deliveries=3)
    job = submit(rt, store_output(rt, b"x" * 100), "anything", mode="query")
    runs: list[str] = []
    guarded = refuse_poison(celery_running("t1"), rt, "toolout.query", lambda job_id: runs.append(job_id))
    for _ in range(4):
        guarded(job.id)
    assert runs == [job.id] * 3, "three starts ran the step, the fourth did not"
    done = rt.jobs.get(job.id)
    assert done.status is JobStatus.FAILED
    assert done.error == (
        "the query step was started 3 times and each time its worker died before it ended; not retried"
    )
    assert "the query step was started 3 times" in done.result


def test_a_celery_retry_and_another_message_count_on_their_own(make_runtime) -> None:
    """A retry (an outage, `autoretry_for`) is a new message under the same id: no worker died for it."""
    rt = make_runtime(ScriptedLLM(lambda *_: None), max_task_deliveries=1)
    job = submit(rt, store_output(rt, b"x" * 100), "anything", mode="query")
    runs: list[str] = []
    for celery in (celery_running("t1"), celery_running("t1", retries=1), celery_running("t2")):
        refuse_poison(celery, rt, "toolout.map_chunk", lambda job_id, *_: runs.append(job_id))(job.id, 0, 0, 10)
    assert len(runs) == 3 and rt.jobs.get(job.id).status is not JobStatus.FAILED


def test_outside_a_celery_task_nothing_is_counted(make_runtime) -> None:
    rt = make_runtime(ScriptedLLM(lambda *_: None), max_task_deliveries=1)
    job = submit(rt, store_output(rt, b"x" * 100), "anything")
    runs: list[str] = []
    for _ in range(3):
        refuse_poison(SimpleNamespace(current_task=None), rt, "toolout.start_extraction", runs.append)(job.id)
    assert len(runs) == 3
