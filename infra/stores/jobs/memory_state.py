"""What the in-memory parts of the job store share: the jobs, one lock, the clock and the store-wide usage totals.

For the embedded mode (`toolout.local`) and for unit tests of the pipeline and the API that should not need a
Redis server. Each part keeps the same promises as its Redis twin under this one lock. Expiry follows an
injectable clock, so a test moves time instead of sleeping through a TTL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extraction.errors import NotFound
from extraction.protocols import Usage
from infra.redis.hash_codec import HashCodec
from infra.stores.jobs.model import JobRecord
from infra.stores.jobs.traces.events import Trace

Clock = Callable[[], float]
CODEC = HashCodec(JobRecord, flatten=("usage",))
MAP_LEVEL = -1


@dataclass
class MemoryJob:
    record: JobRecord
    parts: dict[tuple[int, int], str] = field(default_factory=dict)
    """(level, index) → output; level -1 holds the map outputs, level n ≥ 1 the reduce outputs."""
    failed: set[tuple[int, int]] = field(default_factory=set)
    """(level, index) of parts recorded as failed; level 0 holds the chunks, n ≥ 1 the reduce groups."""
    task_ids: set[str] = field(default_factory=set)
    deliveries: dict[str, int] = field(default_factory=dict)
    fanin: dict[int, tuple[int, str]] = field(default_factory=dict)
    """level → (parts expected, the step after them), as `expect_parts` stored it."""
    fanin_sent: dict[tuple[int, int], str] = field(default_factory=dict)
    """(attempt, level) whose next step was handed out → the task id it was handed to ('': none)."""
    trace: Trace = field(default_factory=Trace)
    expires_at: float | None = None


class MemoryJobState:
    """The jobs of one process, by id; callers hold `lock` around every read and change."""

    def __init__(self, *, ttl_seconds: int, deadline_seconds: int, clock: Clock = time.time) -> None:
        self.ttl, self.deadline, self.clock = ttl_seconds, deadline_seconds, clock
        self.jobs: dict[str, MemoryJob] = {}
        self.lock = threading.RLock()
        self.totals: dict[tuple[str, str], Usage] = {}
        self.failed_chunks = {"map": 0, "reduce": 0}

    def job(self, job_id: str) -> MemoryJob | None:
        job = self.jobs.get(job_id)
        if job is not None and job.expires_at is not None and job.expires_at <= self.clock():
            del self.jobs[job_id]
            return None
        return job

    def existing(self, job_id: str) -> MemoryJob:
        job = self.job(job_id)
        if job is None:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return job

    def read(self, job_id: str, tenant: str | None = None) -> JobRecord:
        """A copy of the job's record (`NotFound` when unknown, or another tenant's when `tenant` is given)."""
        with self.lock:
            job = self.job(job_id)
            if job is None or (tenant is not None and job.record.tenant != tenant):
                raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
            return copy(job.record)

    def present(self) -> list[MemoryJob]:
        return [job for job_id in list(self.jobs) if (job := self.job(job_id)) is not None]

    def live(self) -> list[MemoryJob]:
        return [job for job in self.present() if not job.record.status.terminal]

    def spend(self, job: MemoryJob, usage: Usage) -> None:
        """Count `usage` on the job and in the store-wide totals of its tenant and model (under the lock)."""
        job.record.usage = job.record.usage + usage
        self.total(job.record, usage)

    def total(self, record: JobRecord, usage: Usage) -> None:
        owner = (record.tenant, record.model or "")
        self.totals[owner] = self.totals.get(owner, Usage()) + usage


def with_fields(record: JobRecord, fields: dict[str, Any]) -> JobRecord:
    """`record` with `fields` set, checked as Redis would store them (a bad field name raises)."""
    CODEC.fields(**fields)
    return record.model_validate({**record.model_dump(), "nonce": record.nonce, **fields})


def copy(record: JobRecord) -> JobRecord:
    """Callers get copies: mutating what `get` returned must not change the stored job."""
    return record.model_copy(deep=True)
