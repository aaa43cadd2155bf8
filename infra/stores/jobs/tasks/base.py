"""The Celery task messages of a job: their ids (a cancel revokes the queued ones) and their starts not ended
(a step that kills every worker that runs it is refused, `workers.celery.tasks.refuse_poison`)."""

from __future__ import annotations

from typing import Protocol


class JobTasks(Protocol):
    """What the store remembers of a job's task messages, for as long as the job."""

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        """Remember Celery task ids scheduled for the job, so cancelling can revoke the queued ones."""
        ...

    def task_ids(self, job_id: str) -> list[str]: ...

    def task_started(self, job_id: str, delivery: str) -> int:
        """A task message of the job (`delivery`: its task id and retry number) starts its step: how many of its
        starts have not ended, this one included (0: no such job, nothing counted). Kept as long as the job.

        `task_ended` undoes the count of a start whose step returned or raised, so what stays counted are the
        starts under which the worker died: a message the broker hands out again after its worker died counts
        one more, and a step that kills every worker that runs it is seen however many workers there are
        (`workers.celery.tasks.refuse_poison`). A start that ended but whose ack was lost with its worker (a
        thread pool dies whole) is no death."""
        ...

    def task_ended(self, job_id: str, delivery: str) -> None:
        """The step `task_started` counted returned or raised: its start is not counted any more."""
        ...
