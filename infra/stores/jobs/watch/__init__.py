"""The watchdog's part of the job store: overdue jobs, their retry, the tick's lock (`watch.redis`, `watch.memory`)."""

from infra.stores.jobs.watch.base import JobWatch

__all__ = ["JobWatch"]
