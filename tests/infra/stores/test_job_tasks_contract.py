"""A job's task messages: their ids, and their starts not ended.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from infra.stores.jobs import JobStores
from tests.infra.stores.conftest import new_job


def test_task_ids_are_remembered_per_job(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.tasks.add_task_ids("j1", ["t2", "t1"])
    jobs.tasks.add_task_ids("j1", ["t1", "t3"])
    jobs.tasks.add_task_ids("j1", [])
    assert jobs.tasks.task_ids("j1") == ["t1", "t2", "t3"] and jobs.tasks.task_ids("other") == []
    jobs.records.delete(["j1"])
    assert jobs.tasks.task_ids("j1") == []


def test_starts_of_a_task_message_that_did_not_end_are_counted_per_job_and_deleted_with_it(jobs: JobStores) -> None:
    new_job(jobs)
    assert [jobs.tasks.task_started("j1", "t1:0") for _ in range(3)] == [1, 2, 3], "three starts, none ended"
    assert jobs.tasks.task_started("j1", "t1:1") == 1 and jobs.tasks.task_started("j1", "t2:0") == 1
    jobs.tasks.task_ended("j1", "t2:0")
    assert jobs.tasks.task_started("j1", "t2:0") == 1, "a start that ended is not counted"
    assert jobs.tasks.task_started("other", "t1:0") == 0, "no job, nothing counted"
    jobs.tasks.task_ended("other", "t1:0")
    jobs.records.delete(["j1"])
    assert jobs.tasks.task_started("j1", "t1:0") == 0
    jobs.tasks.task_ended("j1", "t1:0")
    new_job(jobs)
    assert jobs.tasks.task_started("j1", "t1:0") == 1, "a job made again under the id starts from nothing"
