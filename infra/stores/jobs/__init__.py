"""The job store, one part per concern (`infra.stores.jobs.stores`): records and their lifecycle, fan-in,
accounting, traces, the watchdog's view and the jobs' task messages."""

from infra.stores.jobs.accounting.base import JobAccounting, UsageTotal
from infra.stores.jobs.fanin.base import JobFanIn
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
from infra.stores.jobs.records.base import JobRecords
from infra.stores.jobs.stores import JobStores, memory_job_stores, redis_job_stores
from infra.stores.jobs.tasks.base import JobTasks
from infra.stores.jobs.traces.base import JobTraces
from infra.stores.jobs.watch.base import JobWatch

__all__ = [
    "MAX_REDUCE_LEVELS",
    "TERMINAL",
    "JobAccounting",
    "JobFanIn",
    "JobRecord",
    "JobRecords",
    "JobStatus",
    "JobStores",
    "JobTasks",
    "JobTraces",
    "JobWatch",
    "ModelCall",
    "ModelFallback",
    "OverdueAction",
    "UsageTotal",
    "memory_job_stores",
    "new_job",
    "redis_job_stores",
]
