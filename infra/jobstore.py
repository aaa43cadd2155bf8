"""Our own record of every extraction job, in Redis.

Celery's AsyncResult is not enough: PENDING there also means "unknown", and its results expire on
their own schedule. This record is the single source of truth the API polls. Transitions to a
terminal state and every counted result go through Lua scripts, so a redelivered task or a late
worker can neither apply a chunk twice nor overwrite a job that was already finished or canceled.
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from typing import Any

import redis
from pydantic import BaseModel, Field

from extraction.errors import NotFound
from extraction.protocols import Usage
from infra import jobstore_lua as lua
from infra import keys
from infra.errors import TooManyRequests
from infra.redis_client import redis_errors

MAX_REDUCE_LEVELS = 8
RETRY_AFTER_SECONDS = 5
"""What a tenant over its live-job limit is told to wait: jobs take seconds to minutes."""


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED})


class JobRecord(BaseModel):
    """Everything a client (or an operator) may want to know about one extraction job."""

    id: str
    session_id: str
    tenant: str = "dev"
    handle: str
    tool_name: str = "unknown"
    extract: str
    mode_requested: str = "auto"
    status: JobStatus = JobStatus.QUEUED
    mode_used: str | None = None
    routing_reason: str | None = None
    chunks_total: int = 0
    chunks_done: int = 0
    reduce_level: int = 0
    agent_turns: int = 0
    agent_tool_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    created_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    deadline_at: float = 0.0
    result: str | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    fallback_reason: str | None = None
    attempts: int = 0
    llm_calls_reserved: int = Field(0, description="LLM calls reserved against max_llm_calls_per_job")
    nonce: str = Field("", exclude=True, repr=False)


_INT_FIELDS = {
    "chunks_total",
    "chunks_done",
    "reduce_level",
    "agent_turns",
    "agent_tool_calls",
    "attempts",
    "llm_calls_reserved",
}
_FLOAT_FIELDS = {"created_at", "started_at", "finished_at", "deadline_at"}
_USAGE_FIELDS = {"usage_calls": "calls", "usage_input_tokens": "input_tokens", "usage_output_tokens": "output_tokens"}


def _encode(record: JobRecord) -> dict[str, str]:
    """Flatten a record into hash fields; None values are simply absent."""
    data = record.model_dump(exclude={"usage", "report", "nonce"})
    fields = {k: str(v) for k, v in data.items() if v is not None}
    fields.update(_usage_fields(record.usage))
    fields["nonce"] = record.nonce
    if record.report is not None:
        fields["report"] = json.dumps(record.report)
    return fields


def _usage_fields(usage: Usage) -> dict[str, str]:
    fields = {name: str(getattr(usage, attr)) for name, attr in _USAGE_FIELDS.items()}
    if usage.cost_usd is not None:
        fields["usage_cost_usd"] = repr(usage.cost_usd)
    return fields


def _decode(fields: dict[str, str]) -> JobRecord:
    data: dict[str, Any] = {}
    for name, value in fields.items():
        if name in _INT_FIELDS:
            data[name] = int(value)
        elif name in _FLOAT_FIELDS:
            data[name] = float(value)
        elif name == "report":
            data[name] = json.loads(value)
        elif not name.startswith("usage_"):
            data[name] = value
    data["usage"] = _decode_usage(fields)
    return JobRecord.model_validate(data)


def _decode_usage(fields: dict[str, str]) -> Usage:
    counts = {attr: int(fields.get(name, 0)) for name, attr in _USAGE_FIELDS.items()}
    cost = fields.get("usage_cost_usd")
    return Usage(**counts, cost_usd=float(cost) if cost is not None else None)


def _flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]


def _pairs(fields: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name, value in fields.items():
        if value is not None:
            out += [name, json.dumps(value) if isinstance(value, dict) else str(value)]
    return out


class OverdueAction(StrEnum):
    """What the watchdog does with a job past its deadline (decided atomically in Redis)."""

    RETRY = "retry"
    GIVE_UP = "give_up"
    SKIP = "skip"


class JobStore:
    """Create, advance and finish job records; methods raise `NotFound` / `BackendUnavailable`."""

    def __init__(self, client: redis.Redis, *, ttl_seconds: int, deadline_seconds: int) -> None:
        self._r = client
        self._ttl = ttl_seconds
        self._deadline = deadline_seconds
        self._create = client.register_script(lua.CREATE)
        self._finish = client.register_script(lua.FINISH)
        self._record_part = client.register_script(lua.RECORD_PART)
        self._update_live = client.register_script(lua.UPDATE_LIVE)
        self._reserve_call = client.register_script(lua.RESERVE_CALL)
        self._retry_overdue = client.register_script(lua.RETRY_OVERDUE)

    # --- lifecycle ----------------------------------------------------------------------------
    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        """Write a new live job; with `max_live` > 0, `TooManyRequests` when its tenant already has that many.

        Admission and creation are one Lua script, so concurrent creates cannot both take the last slot.
        """
        record = record.model_copy(
            update={"deadline_at": record.created_at + self._deadline, "attempts": max(record.attempts, 1)}
        )
        if self._admit(record, max_live) or (self._prune_live(record.tenant) and self._admit(record, max_live)):
            return record
        raise TooManyRequests(
            f"tenant {record.tenant!r} already has {max_live} extraction jobs running; retry when one has finished",
            retry_after=RETRY_AFTER_SECONDS,
            limit=max_live,
        )

    def _admit(self, record: JobRecord, max_live: int) -> bool:
        job_keys = [
            keys.job(record.id),
            keys.JOBS_ACTIVE,
            keys.session_jobs(record.session_id),
            keys.tenant_live_jobs(record.tenant),
        ]
        args = [
            record.id,
            max_live,
            self._ttl + self._deadline,
            record.deadline_at,
            record.created_at,
            *_flat(_encode(record)),
        ]
        with redis_errors():
            return self._create(keys=job_keys, args=args) == 1

    def _prune_live(self, tenant: str) -> bool:
        """Drop ids of jobs that no longer exist or already ended (deleted, expired); True if any went."""
        live_key = keys.tenant_live_jobs(tenant)
        with redis_errors():
            ids = list(self._r.smembers(live_key))
            pipe = self._r.pipeline()
            for job_id in ids:
                pipe.hget(keys.job(job_id), "status")
            stale = [
                job_id
                for job_id, status in zip(ids, pipe.execute(), strict=True)
                if status is None or JobStatus(status).terminal
            ]
            return bool(stale) and bool(self._r.srem(live_key, *stale))

    def count_live(self, tenant: str) -> int:
        """The tenant's non-terminal jobs (what `max_live` is checked against)."""
        with redis_errors():
            return int(self._r.scard(keys.tenant_live_jobs(tenant)))

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        with redis_errors():
            fields = self._r.hgetall(keys.job(job_id))
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return _decode(fields)

    def update(self, job_id: str, **fields: Any) -> bool:
        """Set fields on a job that is still live; False when it is already terminal."""
        with redis_errors():
            return self._update_live(keys=[keys.job(job_id)], args=_pairs(fields)) == 1

    def mark_running(self, job_id: str) -> bool:
        return self.update(job_id, status=JobStatus.RUNNING.value, started_at=time.time())

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        """Move a live job to a terminal state exactly once; later calls return False and change nothing."""
        assert status.terminal, status
        values = {"status": status.value, "finished_at": time.time(), **fields}
        with redis_errors():
            tenant = self._r.hget(keys.job(job_id), "tenant") or ""
            owned = keys.job_keys(job_id, MAX_REDUCE_LEVELS)[1:]
            job_keys = [keys.job(job_id), keys.JOBS_ACTIVE, keys.tenant_live_jobs(tenant), *owned]
            outcome = self._finish(keys=job_keys, args=[job_id, self._ttl, *_pairs(values)])
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return outcome == 1

    def cancel(self, job_id: str) -> bool:
        return self.finish(job_id, JobStatus.CANCELED, error="canceled by the client")

    def is_terminal(self, job_id: str) -> bool:
        with redis_errors():
            status = self._r.hget(keys.job(job_id), "status")
        return status is None or JobStatus(status).terminal

    # --- faults: LLM call budget, overdue jobs, scheduled tasks ---------------------------------
    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        """Count one LLM call against the job's budget before it is made.

        False when `limit` calls were already reserved or the job ended (or is gone): the caller
        must not call the model. Atomic in Lua, so concurrent map tasks can never overshoot.
        """
        with redis_errors():
            return self._reserve_call(keys=[keys.job(job_id)], args=[limit]) == 1

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        """Decide, once and atomically, what happens to a job found past its deadline.

        RETRY: `attempts` was incremented and a new deadline set (the caller re-submits the job);
        GIVE_UP: it already had `max_attempts` (the caller fails it); SKIP: it ended meanwhile
        (dropped from the active set) or another watchdog already gave it a new deadline.
        """
        args = [job_id, now, now + self._deadline, max_attempts]
        with redis_errors():
            return OverdueAction(self._retry_overdue(keys=[keys.job(job_id), keys.JOBS_ACTIVE], args=args))

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        """Remember Celery task ids scheduled for the job, so cancelling can revoke the queued ones."""
        if not task_ids:
            return
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.sadd(keys.job_tasks(job_id), *task_ids)
            pipe.expire(keys.job_tasks(job_id), self._ttl + self._deadline)
            pipe.execute()

    def task_ids(self, job_id: str) -> list[str]:
        with redis_errors():
            return sorted(self._r.smembers(keys.job_tasks(job_id)))

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        """True for the one caller that takes this tick's lock (it expires after `seconds`, never released)."""
        with redis_errors():
            return bool(self._r.set(keys.WATCHDOG_LOCK, owner, nx=True, px=max(1, int(seconds * 1000))))

    # --- results, counted once ----------------------------------------------------------------
    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        """Store a map output and count it; a second delivery of the same chunk counts nothing."""
        return self._record(keys.job_chunks(job_id), job_id, index, text, usage, counter="chunks_done")

    def chunk_output(self, job_id: str, index: int) -> str | None:
        with redis_errors():
            return self._r.hget(keys.job_chunks(job_id), str(index))

    def chunk_outputs(self, job_id: str) -> dict[int, str]:
        with redis_errors():
            return {int(k): v for k, v in self._r.hgetall(keys.job_chunks(job_id)).items()}

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        return self._record(keys.job_reduce(job_id, level), job_id, group, text, usage, counter="")

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None:
        with redis_errors():
            return self._r.hget(keys.job_reduce(job_id, level), str(group))

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]:
        with redis_errors():
            return {int(k): v for k, v in self._r.hgetall(keys.job_reduce(job_id, level)).items()}

    def add_usage(self, job_id: str, usage: Usage) -> None:
        """Count LLM calls whose output is not a stored part (final reduce, agent turns, failed attempts)."""
        with redis_errors():
            pipe = self._r.pipeline()
            for name, value in _usage_fields(usage).items():
                if name == "usage_cost_usd":
                    pipe.hincrbyfloat(keys.job(job_id), name, float(value))
                else:
                    pipe.hincrby(keys.job(job_id), name, int(value))
            pipe.execute()

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.hincrby(keys.job(job_id), "agent_turns", turns)
            pipe.hincrby(keys.job(job_id), "agent_tool_calls", tool_calls)
            pipe.execute()

    def _record(self, key: str, job_id: str, index: int, text: str, usage: Usage, *, counter: str) -> bool:
        cost = "" if usage.cost_usd is None else repr(usage.cost_usd)
        args = [
            index,
            text,
            counter,
            usage.calls,
            usage.input_tokens,
            usage.output_tokens,
            cost,
            self._ttl + self._deadline,
        ]
        with redis_errors():
            outcome = self._record_part(keys=[keys.job(job_id), key], args=args)
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return outcome == 1

    # --- queries ------------------------------------------------------------------------------
    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        with redis_errors():
            ids = self._r.zrange(keys.session_jobs(session_id), 0, -1)
        return [job for job in (self._find(job_id, tenant) for job_id in ids) if job is not None]

    def _find(self, job_id: str, tenant: str | None) -> JobRecord | None:
        try:
            return self.get(job_id, tenant)
        except NotFound:
            return None

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        """Live jobs whose deadline has passed (the watchdog's work list)."""
        with redis_errors():
            return self._r.zrangebyscore(keys.JOBS_ACTIVE, 0, now or time.time(), start=0, num=limit)

    def count_active(self, session_ids: list[str] | None = None) -> int:
        with redis_errors():
            return int(self._r.zcard(keys.JOBS_ACTIVE))

    def delete(self, job_ids: list[str]) -> None:
        if not job_ids:
            return
        tenants = self._tenants(job_ids)
        with redis_errors():
            pipe = self._r.pipeline()
            for job_id, tenant in zip(job_ids, tenants, strict=True):
                pipe.delete(*keys.job_keys(job_id, MAX_REDUCE_LEVELS))
                pipe.zrem(keys.JOBS_ACTIVE, job_id)
                if tenant is not None:
                    pipe.srem(keys.tenant_live_jobs(tenant), job_id)
            pipe.execute()

    def _tenants(self, job_ids: list[str]) -> list[str | None]:
        with redis_errors():
            pipe = self._r.pipeline()
            for job_id in job_ids:
                pipe.hget(keys.job(job_id), "tenant")
            return pipe.execute()
