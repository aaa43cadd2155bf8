"""Job records: the `JobStore` interface, its Redis implementation and its in-memory twin."""

from infra.stores.jobs.base import JobStore
from infra.stores.jobs.memory import MemoryJobStore
from infra.stores.jobs.model import (
    MAX_REDUCE_LEVELS,
    TERMINAL,
    JobRecord,
    JobStatus,
    ModelFallback,
    OverdueAction,
    new_job,
)
from infra.stores.jobs.model_calls import ModelCall
from infra.stores.jobs.redis import RedisJobStore

__all__ = [
    "MAX_REDUCE_LEVELS",
    "TERMINAL",
    "JobRecord",
    "JobStatus",
    "JobStore",
    "MemoryJobStore",
    "ModelCall",
    "ModelFallback",
    "OverdueAction",
    "RedisJobStore",
    "new_job",
]
