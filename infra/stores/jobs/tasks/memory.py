"""A job's task messages in process memory, kept on its in-memory record."""

from __future__ import annotations

from infra.stores.jobs.memory_state import MemoryJobState
from infra.stores.jobs.tasks.base import JobTasks


class MemoryJobTasks(JobTasks):
    """`JobTasks` over the in-memory jobs."""

    def __init__(self, state: MemoryJobState) -> None:
        self._s = state

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is not None:
                job.task_ids.update(task_ids)

    def task_ids(self, job_id: str) -> list[str]:
        with self._s.lock:
            job = self._s.job(job_id)
            return sorted(job.task_ids) if job is not None else []

    def task_started(self, job_id: str, delivery: str) -> int:
        return self._count_start(job_id, delivery, 1)

    def task_ended(self, job_id: str, delivery: str) -> None:
        self._count_start(job_id, delivery, -1)

    def _count_start(self, job_id: str, delivery: str, delta: int) -> int:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None:
                return 0
            job.deliveries[delivery] = job.deliveries.get(delivery, 0) + delta
            return job.deliveries[delivery]
