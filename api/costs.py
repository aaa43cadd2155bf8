"""What an output and a session cost: the model calls and tokens their extraction jobs spent.

Read from the jobs' own accounting (`JobRecord.usage`, counted by the job store in the same step as each
call), summed per output and per session. A job answered from the result cache shows `cached` with zero usage:
no model was called for it, and `cached_from` names the job that paid. Only jobs the store still holds count
(a job is kept `TOOLOUT_JOB_TTL_SECONDS`, and goes with its output or session).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from extraction.protocols import Usage
from infra.stores.jobs import JobRecord

CACHED_NOTE = "served from the result cache: no model was called, nothing was spent"


class JobCost(BaseModel):
    """One job's share: what its model calls spent, or that the cache answered it for nothing."""

    id: str
    handle: str
    mode: str | None = Field(description="the strategy that ran (mode_used), or the one asked while queued")
    status: str
    cached: bool = Field(description="answered from the result cache: no model call, zero usage")
    cached_from: str | None = Field(None, description="when cached: the job whose calls paid for the answer")
    note: str | None = Field(None, description="why a job cost nothing, when it did")
    usage: Usage


class CostTotals(BaseModel):
    """Summed model usage: calls, input and output tokens, and USD where the model's price is known."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(None, description="None when no job's model has a known price")
    jobs: int = Field(0, description="extraction jobs counted")
    cached_jobs: int = Field(0, description="of them, answered from the result cache at no model cost")


class OutputUsage(CostTotals):
    """`GET /v1/outputs/{handle}/usage`: the output's jobs, oldest first, and their totals."""

    handle: str
    items: list[JobCost] = Field(default_factory=list)


class SessionUsage(CostTotals):
    """`GET /v1/sessions/{id}/usage`: the session's totals, and each output's."""

    session_id: str
    outputs: list[OutputUsage] = Field(default_factory=list, description="per output that had a job, by handle")


def job_cost(job: JobRecord) -> JobCost:
    return JobCost(
        id=job.id,
        handle=job.handle,
        mode=job.mode_used or job.mode_requested,
        status=job.status.value,
        cached=job.cached,
        cached_from=job.cached_from,
        note=CACHED_NOTE if job.cached else None,
        usage=job.usage,
    )


def totals(jobs: Iterable[JobRecord]) -> CostTotals:
    """What the jobs spent together (a cached job adds a job and nothing else)."""
    listed = list(jobs)
    spent = sum((job.usage for job in listed), Usage())
    return CostTotals(**spent.model_dump(), jobs=len(listed), cached_jobs=sum(job.cached for job in listed))


def output_usage(handle: str, jobs: Iterable[JobRecord]) -> OutputUsage:
    """The cost of the jobs on `handle` among `jobs` (the output's session's jobs)."""
    own = [job for job in jobs if job.handle == handle]
    return OutputUsage(**totals(own).model_dump(), handle=handle, items=[job_cost(job) for job in own])


def session_usage(session_id: str, jobs: Iterable[JobRecord]) -> SessionUsage:
    listed = list(jobs)
    handles = sorted({job.handle for job in listed})
    return SessionUsage(
        **totals(listed).model_dump(),
        session_id=session_id,
        outputs=[output_usage(handle, listed) for handle in handles],
    )
