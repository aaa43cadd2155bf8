"""A job's task messages in Redis: a set of task ids and a hash of starts, both owned by the job (its slot, its TTL)."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors, text_list
from infra.stores.jobs.redis_context import RedisJobContext
from infra.stores.jobs.scripts import ScriptSet
from infra.stores.jobs.tasks.base import JobTasks

SCRIPTS = ScriptSet("infra.stores.jobs.tasks", ("count_start",))


class RedisJobTasks(JobTasks):
    """`JobTasks` on one Redis."""

    def __init__(self, context: RedisJobContext) -> None:
        context.register(SCRIPTS)
        self._c = context

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        if not task_ids:
            return
        self._c.add_owned(job_id, keys.job_tasks(job_id), "SADD", task_ids)

    def task_ids(self, job_id: str) -> list[str]:
        with redis_errors():
            return sorted(text_list(self._c.r.smembers(keys.job_tasks(job_id))))

    def task_started(self, job_id: str, delivery: str) -> int:
        return int(self._c.run("count_start", [keys.job(job_id), keys.job_deliveries(job_id)], [delivery, 1]))

    def task_ended(self, job_id: str, delivery: str) -> None:
        self._c.run("count_start", [keys.job(job_id), keys.job_deliveries(job_id)], [delivery, -1])
