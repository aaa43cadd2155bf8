"""The job store, split by concern: each part a small protocol with its Redis implementation and in-memory twin.

A caller names the part it works with (`jobs.records.get`, `jobs.fanin.begin_map`, `jobs.accounting.usage_totals`),
so each protocol stays small and each contract suite checks one concern. The parts share one backend: on Redis a
`RedisJobContext` (one client, every part's scripts), in memory a `MemoryJobState` (the jobs, one lock); a job's
records, parts, counters, trace and tasks all live and die together, as `JobRecords.delete` says.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from infra.stores.jobs.accounting.base import JobAccounting
from infra.stores.jobs.accounting.memory import MemoryJobAccounting
from infra.stores.jobs.accounting.redis import SCRIPTS as ACCOUNTING_SCRIPTS
from infra.stores.jobs.accounting.redis import RedisJobAccounting
from infra.stores.jobs.fanin.base import JobFanIn
from infra.stores.jobs.fanin.memory import MemoryJobFanIn
from infra.stores.jobs.fanin.redis import SCRIPTS as FANIN_SCRIPTS
from infra.stores.jobs.fanin.redis import RedisJobFanIn
from infra.stores.jobs.memory_state import MemoryJobState
from infra.stores.jobs.records.base import JobRecords
from infra.stores.jobs.records.memory import MemoryJobRecords
from infra.stores.jobs.records.redis import SCRIPTS as RECORDS_SCRIPTS
from infra.stores.jobs.records.redis import RedisJobRecords
from infra.stores.jobs.redis_context import RedisJobContext
from infra.stores.jobs.scripts import SHARED_SCRIPTS, ScriptSet
from infra.stores.jobs.tasks.base import JobTasks
from infra.stores.jobs.tasks.memory import MemoryJobTasks
from infra.stores.jobs.tasks.redis import SCRIPTS as TASKS_SCRIPTS
from infra.stores.jobs.tasks.redis import RedisJobTasks
from infra.stores.jobs.traces.base import JobTraces
from infra.stores.jobs.traces.events import DEFAULT_TRACE_MAX_BYTES
from infra.stores.jobs.traces.memory import MemoryJobTraces
from infra.stores.jobs.traces.redis import SCRIPTS as TRACES_SCRIPTS
from infra.stores.jobs.traces.redis import RedisJobTraces
from infra.stores.jobs.watch.base import JobWatch
from infra.stores.jobs.watch.memory import MemoryJobWatch
from infra.stores.jobs.watch.redis import SCRIPTS as WATCH_SCRIPTS
from infra.stores.jobs.watch.redis import RedisJobWatch

JOB_SCRIPTS: tuple[ScriptSet, ...] = (
    SHARED_SCRIPTS,
    RECORDS_SCRIPTS,
    FANIN_SCRIPTS,
    ACCOUNTING_SCRIPTS,
    TRACES_SCRIPTS,
    WATCH_SCRIPTS,
    TASKS_SCRIPTS,
)
"""Every Lua script of the job store, by the part that owns it."""


@dataclass(frozen=True)
class JobStores:
    """The parts of the job store, over one backend."""

    records: JobRecords
    fanin: JobFanIn
    accounting: JobAccounting
    traces: JobTraces
    watch: JobWatch
    tasks: JobTasks


def redis_job_stores(
    client: redis.Redis,
    *,
    ttl_seconds: int,
    deadline_seconds: int,
    clock: Callable[[], float] = time.time,
    trace_max_bytes: int = DEFAULT_TRACE_MAX_BYTES,
) -> JobStores:
    """The job store on one Redis (or Redis Cluster); safe to share between threads and processes."""
    context = RedisJobContext(client, ttl_seconds=ttl_seconds, deadline_seconds=deadline_seconds, clock=clock)
    accounting, traces = RedisJobAccounting(context), RedisJobTraces(context, trace_max_bytes)
    return JobStores(
        records=RedisJobRecords(context),
        fanin=RedisJobFanIn(context, accounting, traces),
        accounting=accounting,
        traces=traces,
        watch=RedisJobWatch(context),
        tasks=RedisJobTasks(context),
    )


def memory_job_stores(
    *,
    ttl_seconds: int,
    deadline_seconds: int,
    clock: Callable[[], float] = time.time,
    trace_max_bytes: int = DEFAULT_TRACE_MAX_BYTES,
) -> JobStores:
    """The job store in process memory (the embedded mode, unit tests); thread-safe within one process."""
    state = MemoryJobState(ttl_seconds=ttl_seconds, deadline_seconds=deadline_seconds, clock=clock)
    accounting, traces = MemoryJobAccounting(state), MemoryJobTraces(state, trace_max_bytes)
    return JobStores(
        records=MemoryJobRecords(state),
        fanin=MemoryJobFanIn(state, accounting, traces),
        accounting=accounting,
        traces=traces,
        watch=MemoryJobWatch(state),
        tasks=MemoryJobTasks(state),
    )
