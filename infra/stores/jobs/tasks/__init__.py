"""A job's Celery task messages: ids to revoke, starts not ended (`tasks.redis`, and its twin `tasks.memory`)."""

from infra.stores.jobs.tasks.base import JobTasks

__all__ = ["JobTasks"]
