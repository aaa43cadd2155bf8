"""The job store in process memory: the same promises as Redis, kept by one lock.

For the embedded mode (`toolout.local`) and for unit tests of the pipeline and the API that should
not need a Redis server. Expiry follows an injectable clock, so a test moves time instead of
sleeping through a TTL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.redis.hash_codec import HashCodec
from infra.stores.jobs.base import (
    HEDGE_COUNTS,
    JobStore,
    UsageTotal,
    admitted,
    check_finished,
    failure_stage,
    too_many_requests,
)
from infra.stores.jobs.model import MAX_FALLBACKS_KEPT, JobRecord, JobStatus, ModelFallback, OverdueAction
from infra.stores.jobs.model_calls import ModelUsageTotal
from infra.stores.jobs.traces import DEFAULT_TRACE_MAX_BYTES, Trace, TraceEvent

Clock = Callable[[], float]
CODEC = HashCodec(JobRecord, flatten=("usage",))


@dataclass
class _Job:
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


MAP_LEVEL = -1


class MemoryJobStore(JobStore):
    """`JobStore` in a dict; thread-safe within one process."""

    def __init__(
        self,
        *,
        ttl_seconds: int,
        deadline_seconds: int,
        clock: Clock = time.time,
        trace_max_bytes: int = DEFAULT_TRACE_MAX_BYTES,
    ) -> None:
        self._ttl, self._deadline, self._clock = ttl_seconds, deadline_seconds, clock
        self._trace_max_bytes = trace_max_bytes
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.RLock()
        self._tick: tuple[str, float] | None = None
        self._totals: dict[tuple[str, str], Usage] = {}
        self._model_totals: dict[tuple[str, str, str], Usage] = {}
        self._failed_chunks = {"map": 0, "reduce": 0}
        self._hedges: dict[str, int] = {}

    # --- lifecycle ----------------------------------------------------------------------------
    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        record = admitted(record, self._deadline)
        with self._lock:
            if max_live > 0 and self.count_live(record.tenant) >= max_live:
                raise too_many_requests(record.tenant, max_live)
            self._jobs[record.id] = _Job(_copy(record))
        return record

    def create_finished(self, record: JobRecord) -> JobRecord:
        check_finished(record)
        with self._lock:
            self._jobs[record.id] = _Job(_copy(record), expires_at=self._clock() + self._ttl)
        self.notify_finished(record.id)
        return record

    def count_live(self, tenant: str) -> int:
        with self._lock:
            return sum(1 for job in self._live() if job.record.tenant == tenant)

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        with self._lock:
            job = self._job(job_id)
            if job is None or (tenant is not None and job.record.tenant != tenant):
                raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
            return _copy(job.record)

    def update(self, job_id: str, **fields: Any) -> bool:
        with self._lock:
            job = self._existing(job_id)
            if job.record.status.terminal:
                return False
            job.record = _with(job.record, fields)
            return True

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        assert status.terminal, status
        with self._lock:
            job = self._existing(job_id)
            if job.record.status.terminal:
                return False
            job.record = _with(job.record, {"status": status, "finished_at": self._clock(), **fields})
            job.expires_at = self._clock() + self._ttl
        self.notify_finished(job_id)
        return True

    def is_terminal(self, job_id: str) -> bool:
        with self._lock:
            job = self._job(job_id)
            return job is None or job.record.status.terminal

    # --- faults ---------------------------------------------------------------------------------
    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        with self._lock:
            job = self._job(job_id)
            if job is None or job.record.status.terminal or job.record.llm_calls_reserved >= limit:
                return False
            job.record.llm_calls_reserved += 1
            return True

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        with self._lock:
            job = self._job(job_id)
            if job is None or job.record.status.terminal or job.record.deadline_at > now:
                return OverdueAction.SKIP
            if job.record.attempts >= max_attempts:
                return OverdueAction.GIVE_UP
            job.record = _with(job.record, {"attempts": job.record.attempts + 1, "deadline_at": now + self._deadline})
            return OverdueAction.RETRY

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        now = self._clock() if now is None else now
        with self._lock:
            due = sorted(
                (job.record.deadline_at, job.record.id) for job in self._live() if job.record.deadline_at <= now
            )
        return [job_id for _, job_id in due[:limit]]

    def count_active(self) -> int:
        with self._lock:
            return sum(1 for _ in self._live())

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        with self._lock:
            job = self._job(job_id)
            if job is not None:
                job.task_ids.update(task_ids)

    def task_ids(self, job_id: str) -> list[str]:
        with self._lock:
            job = self._job(job_id)
            return sorted(job.task_ids) if job is not None else []

    def task_started(self, job_id: str, delivery: str) -> int:
        return self._count_start(job_id, delivery, 1)

    def task_ended(self, job_id: str, delivery: str) -> None:
        self._count_start(job_id, delivery, -1)

    def _count_start(self, job_id: str, delivery: str, delta: int) -> int:
        with self._lock:
            job = self._job(job_id)
            if job is None:
                return 0
            job.deliveries[delivery] = job.deliveries.get(delivery, 0) + delta
            return job.deliveries[delivery]

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        with self._lock:
            if self._tick is not None and self._tick[1] > self._clock():
                return False
            self._tick = (owner, self._clock() + seconds)
            return True

    # --- fan-in -----------------------------------------------------------------------------------
    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        with self._lock:
            self._existing(job_id).fanin[level] = (expected, then)

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        with self._lock:
            job = self._job(job_id)
            if job is None or job.record.status.terminal or level not in job.fanin:
                return None
            expected, then = job.fanin[level]
            at = MAP_LEVEL if level == 0 else level
            settled = sum(1 for part, _ in job.parts if part == at) + sum(1 for lvl, _ in job.failed if lvl == level)
            claim = (job.record.attempts, level)
            holder = job.fanin_sent.get(claim)
            if settled < expected or (holder is not None and (not by or holder != by)):
                return None
            job.fanin_sent[claim] = by or ""
            return then

    # --- results, counted once ----------------------------------------------------------------
    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        return self._record(job_id, (MAP_LEVEL, index), text, usage, count_chunk=True)

    def chunk_outputs(self, job_id: str) -> dict[int, str]:
        return self._level(job_id, MAP_LEVEL)

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        return self._record(job_id, (level, group), text, usage, count_chunk=False)

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]:
        return self._level(job_id, level)

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        part = (MAP_LEVEL if failure.level == 0 else failure.level, failure.index)
        with self._lock:
            job = self._existing(job_id)
            settled = part in job.parts or _failure_key(part) in job.failed
            if job.record.status.terminal or settled:
                return False
            job.failed.add(_failure_key(part))
            lost = len(failure.chunks)
            job.record = _with(
                job.record,
                {
                    "failed_ranges": [*job.record.failed_ranges, failure],
                    "chunks_failed": job.record.chunks_failed + lost,
                    "usage": job.record.usage + (usage or Usage()),
                },
            )
            self._total(job.record, usage or Usage())
            self._failed_chunks[failure_stage(failure.level)] += lost
            return True

    def failed_chunk_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._failed_chunks)

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        with self._lock:
            job = self._job(job_id)
            if job is None or job.record.status.terminal or job.record.hedges_sent >= limit:
                return False
            job.record.hedges_sent += 1
            return True

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        with self._lock:
            job = self._job(job_id)
            if job is None:
                return
            job.record.hedges_won += int(won)
            job.record.hedge_input_tokens += cost.input_tokens
            job.record.hedge_output_tokens += cost.output_tokens
            for name, count in zip(HEDGE_COUNTS, (sent, int(won), cost.input_tokens, cost.output_tokens), strict=True):
                self._hedges[name] = self._hedges.get(name, 0) + count

    def hedge_totals(self) -> dict[str, int]:
        with self._lock:
            return {name: self._hedges.get(name, 0) for name in HEDGE_COUNTS}

    def add_usage(self, job_id: str, usage: Usage) -> None:
        with self._lock:
            job = self._existing(job_id)
            self._spend(job, usage)

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None:
        with self._lock:
            record = self._existing(job_id).record
            record.agent_turns += turns
            record.agent_tool_calls += tool_calls

    def _record(self, job_id: str, part: tuple[int, int], text: str, usage: Usage, *, count_chunk: bool) -> bool:
        with self._lock:
            job = self._existing(job_id)
            if part in job.parts or _failure_key(part) in job.failed:
                return False
            job.parts[part] = text
            job.record.chunks_done += int(count_chunk)
            self._spend(job, usage)
            return True

    def _spend(self, job: _Job, usage: Usage) -> None:
        """Count `usage` on the job and in the store-wide totals of its tenant and model (under the lock)."""
        job.record.usage = job.record.usage + usage
        self._total(job.record, usage)

    def _total(self, record: JobRecord, usage: Usage) -> None:
        owner = (record.tenant, record.model or "")
        self._totals[owner] = self._totals.get(owner, Usage()) + usage

    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        with self._lock:
            job = self._job(job_id)
            if job is None:
                return
            record = job.record
            record.model_usage[model] = record.model_usage.get(model, Usage()) + usage
            owner = (record.tenant, model, stage)
            self._model_totals[owner] = self._model_totals.get(owner, Usage()) + usage
            if fallback is not None and len(record.model_fallbacks) < MAX_FALLBACKS_KEPT:
                record.model_fallbacks.append(fallback)

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        with self._lock:
            totals = sorted(self._model_totals.items())
        return [ModelUsageTotal(tenant=t, model=m, stage=s, usage=u) for (t, m, s), u in totals]

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        with self._lock:
            job = self._job(job_id)
            if job is not None:
                job.record.calls_waiting += delta
                job.record.rate_limit_wait_seconds += seconds

    def usage_totals(self) -> list[UsageTotal]:
        with self._lock:
            totals = sorted(self._totals.items())
        return [UsageTotal(tenant=tenant, model=model, usage=usage) for (tenant, model), usage in totals]

    def _level(self, job_id: str, level: int) -> dict[int, str]:
        with self._lock:
            job = self._job(job_id)
            parts = job.parts if job is not None else {}
            return {index: text for (at, index), text in parts.items() if at == level}

    # --- queries and removal ------------------------------------------------------------------
    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        with self._lock:
            found = [job.record for job in self._present() if job.record.session_id == session_id]
        mine = [record for record in found if tenant is None or record.tenant == tenant]
        return [_copy(record) for record in sorted(mine, key=lambda record: record.created_at)]

    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        with self._lock:
            job = self._job(job_id)
            if job is not None:
                job.trace.add(events, self._trace_max_bytes)

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        with self._lock:
            job = self._job(job_id)
            return [] if job is None else job.trace.read(after)

    def delete(self, job_ids: list[str]) -> None:
        with self._lock:
            for job_id in job_ids:
                self._jobs.pop(job_id, None)

    def delete_session_jobs(self, session_id: str) -> None:
        with self._lock:
            self.delete([job_id for job_id, job in self._jobs.items() if job.record.session_id == session_id])

    # --- internals ----------------------------------------------------------------------------
    def _job(self, job_id: str) -> _Job | None:
        job = self._jobs.get(job_id)
        if job is not None and job.expires_at is not None and job.expires_at <= self._clock():
            del self._jobs[job_id]
            return None
        return job

    def _existing(self, job_id: str) -> _Job:
        job = self._job(job_id)
        if job is None:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return job

    def _present(self) -> list[_Job]:
        return [job for job_id in list(self._jobs) if (job := self._job(job_id)) is not None]

    def _live(self) -> list[_Job]:
        return [job for job in self._present() if not job.record.status.terminal]


def _failure_key(part: tuple[int, int]) -> tuple[int, int]:
    """A part's key in `_Job.failed`: chunks are level 0 there (-1 among the outputs)."""
    level, index = part
    return (0 if level == MAP_LEVEL else level, index)


def _with(record: JobRecord, fields: dict[str, Any]) -> JobRecord:
    """`record` with `fields` set, checked as Redis would store them (a bad field name raises)."""
    CODEC.fields(**fields)
    return record.model_validate({**record.model_dump(), "nonce": record.nonce, **fields})


def _copy(record: JobRecord) -> JobRecord:
    """Callers get copies: mutating what `get` returned must not change the stored job."""
    return record.model_copy(deep=True)
