"""Job records and their lifecycle: created, advanced, finished once, listed per session, removed
(`records.redis`, and its in-memory twin `records.memory`)."""

from infra.stores.jobs.records.base import FinishListener, JobRecords

__all__ = ["FinishListener", "JobRecords"]
