"""Job records: the `JobStore` interface, its Redis implementation and its in-memory twin."""

from infra.jobstore.base import JobStore
from infra.jobstore.memory import MemoryJobStore
from infra.jobstore.model import (
    MAX_REDUCE_LEVELS,
    TERMINAL,
    JobRecord,
    JobStatus,
    ModelFallback,
    OverdueAction,
    new_job,
)
from infra.jobstore.model_calls import ModelCall
from infra.jobstore.redis import RedisJobStore

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
