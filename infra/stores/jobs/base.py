"""The job store interface: one record per extraction job, the single source of truth the API polls.

Celery's AsyncResult is not enough: PENDING there also means "unknown", and its results expire on
their own schedule. Every implementation keeps these promises, which the contract suite
(`tests/infra/stores/test_job_store_contract.py`) checks on each of them:

* a job enters a terminal state exactly once; later finishes, updates and parts change nothing;
* a map or reduce output is stored and counted once, however often its task is delivered;
* a part (a chunk, or a reduce group) is settled once: as an output or as a failure, never both,
  so a part that failed is never also counted as done, nor counted as failed twice;
* a tenant never has more than `max_live` live jobs, even under concurrent creates;
* an LLM call is reserved against the job's budget before it is made, atomically;
* every usage counted on a job is also counted, in the same atomic step, in the store-wide totals
  per tenant and model (`usage_totals`: what `/metrics` exports);
* every model call is counted under the model that answered it, on the job and per tenant, model and
  stage (`count_model_call`, `model_usage_totals`), with the fallbacks the job took.

`RedisJobStore` (Lua scripts make each promise one atomic step) runs in production;
`MemoryJobStore` (one lock) serves the embedded mode and the unit tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.errors import TooManyRequests
from infra.stores.jobs.model import RETRY_AFTER_SECONDS, JobRecord, JobStatus, ModelFallback, OverdueAction
from infra.stores.jobs.model_calls import ModelCall, ModelUsageTotal
from infra.stores.jobs.traces import TraceEvent

log = logging.getLogger("toolout.jobs")
HEDGE_COUNTS = ("sent", "won", "prompt", "completion")
"""The store-wide hedge totals (`JobStore.hedge_totals`): hedges sent, won, the losing copies' tokens."""


class JobStore(Protocol):
    """Create, advance and finish job records; methods raise `NotFound` / `BackendUnavailable`."""

    # --- lifecycle ----------------------------------------------------------------------------
    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        """Write a new live job with its deadline; with `max_live` > 0, `TooManyRequests` when its
        tenant already has that many live jobs (admission is one atomic step: concurrent creates never
        admit more than `max_live`; a refused job is never written)."""
        ...

    def create_finished(self, record: JobRecord) -> JobRecord:
        """Write a job that is already terminal (a result served from the cache): readable and listed in
        its session until the TTL, never live (no slot, no deadline, nothing for the watchdog); its finish
        listeners are told, as for any job that ends (a webhook goes out)."""
        ...

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        """The job (`NotFound` when unknown, or another tenant's when `tenant` is given)."""
        ...

    def update(self, job_id: str, **fields: Any) -> bool:
        """Set fields on a job that is still live; False when it is already terminal."""
        ...

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        """Move a live job to a terminal state exactly once; later calls return False and change nothing."""
        ...

    def is_terminal(self, job_id: str) -> bool:
        """True for an ended job, and for one that no longer exists."""
        ...

    def count_live(self, tenant: str) -> int:
        """The tenant's non-terminal jobs (what `max_live` is checked against)."""
        ...

    def listen_finished(self, listener: FinishListener) -> None:
        """Call `listener(job_id)` after each job's one terminal transition (webhooks hang off this).

        A listener runs in the finishing thread and must not block; its exceptions are logged, never
        raised into the step that finished the job.
        """
        _listeners(self).append(listener)

    def notify_finished(self, job_id: str) -> None:
        """What an implementation calls when its `finish` (or `cancel`) really ended the job."""
        for listener in list(_listeners(self)):
            try:
                listener(job_id)
            except Exception:
                log.exception("job %s: a finish listener failed", job_id)

    def mark_running(self, job_id: str) -> bool:
        return self.update(job_id, status=JobStatus.RUNNING, started_at=time.time())

    def cancel(self, job_id: str) -> bool:
        return self.finish(job_id, JobStatus.CANCELED, error="canceled by the client")

    # --- faults: LLM call budget, overdue jobs, scheduled tasks ---------------------------------
    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        """Count one LLM call against the job's budget before it is made.

        False when `limit` calls were already reserved or the job ended (or is gone): the caller
        must not call the model. Atomic, so concurrent map tasks can never overshoot.
        """
        ...

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        """Decide, once and atomically, what happens to a job found past its deadline.

        RETRY: `attempts` was incremented and a new deadline set (the caller re-submits the job);
        GIVE_UP: it already had `max_attempts` (the caller fails it); SKIP: it ended meanwhile
        (dropped from the active set) or another watchdog already gave it a new deadline.
        """
        ...

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        """Live jobs whose deadline has passed (the watchdog's work list)."""
        ...

    def count_active(self) -> int:
        """Live jobs across all tenants."""
        ...

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        """Remember Celery task ids scheduled for the job, so cancelling can revoke the queued ones."""
        ...

    def task_ids(self, job_id: str) -> list[str]: ...

    def task_started(self, job_id: str, delivery: str) -> int:
        """A task message of the job (`delivery`: its task id and retry number) starts its step: how many of its
        starts have not ended, this one included (0: no such job, nothing counted). Kept as long as the job.

        `task_ended` undoes the count of a start whose step returned or raised, so what stays counted are the
        starts under which the worker died: a message the broker hands out again after its worker died counts
        one more, and a step that kills every worker that runs it is seen however many workers there are
        (`workers.celery.tasks.refuse_poison`). A start that ended but whose ack was lost with its worker (a
        thread pool dies whole) is no death."""
        ...

    def task_ended(self, job_id: str, delivery: str) -> None:
        """The step `task_started` counted returned or raised: its start is not counted any more."""
        ...

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        """True for the one caller that takes this tick's lock (it expires after `seconds`, never released)."""
        ...

    # --- fan-in: the step after a level of parts, sent once per attempt --------------------------
    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        """Before a level's parts are sent: once `expected` parts of `level` are settled (output or failure),
        `settle_level` hands `then` (the next step, opaque here) to one caller per attempt."""
        ...

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        """Called after each part of `level` settles: the `then` of `expect_parts` for the one caller that
        finds every part settled in the job's current attempt; None for everyone else, or once the job ended.

        Keyed by attempt, so a job the watchdog re-submits can send its next step again (a twin of the
        first attempt's, if that one was only slow: every step is idempotent).

        `by` is the calling task's id. The caller that got the step runs it in its own task (a reduce stage
        runs inside the map task that completed level 0, `workers.celery.tasks.run_next`), so a worker killed there
        takes the step down with it, and its message comes back (RabbitMQ redelivers it at once) under the
        same id: that caller, and only that one, is handed the step again. Without it the job would wait
        for the watchdog, its deadline. An anonymous caller (`by` None) is never handed a step twice.
        """
        ...

    # --- results, counted once ----------------------------------------------------------------
    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        """Store a map output and count it; a second delivery of the same chunk, or a chunk already
        recorded as failed, counts nothing (False)."""
        ...

    def chunk_outputs(self, job_id: str) -> dict[int, str]: ...

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        """Store a reduce output (group `group` of level `level`) once; its usage is counted with it.
        Refused (False) for a group already recorded as failed."""
        ...

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        """Record once that a part could not be read: a chunk (`failure.level` 0, its index) or a
        reduce group (level n >= 1, its group index), with the `usage` its failed attempts spent.

        False, changing nothing, when the job ended or the part is already settled (its output is
        stored, or its failure was recorded by a twin or redelivered task). Otherwise the failure
        joins `failed_ranges`, its chunks are added to `chunks_failed` and to the store-wide count
        behind `failed_chunk_counts`, and its usage to the job's, in one atomic step.
        """
        ...

    def failed_chunk_counts(self) -> dict[str, int]:
        """Chunks lost by all jobs since the store began, by stage (`map`, `reduce`): a Prometheus counter."""
        ...

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        """One hedge of the job's hedge budget, counted in `hedges_sent`: False when `limit` were sent or the
        job ended (or is gone). Atomic, so the job's concurrent calls never overshoot the budget."""
        ...

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        """What one call's hedging came to (`sent` hedges, whether one `won`, the losing copies' usage `cost`):
        on the job (`hedges_won`, `hedge_*_tokens`) and in the store-wide totals behind `hedge_totals`."""
        ...

    def hedge_totals(self) -> dict[str, int]:
        """Since the store began: hedges `sent`, `won`, and their cost in `prompt` and `completion` tokens."""
        ...

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]: ...

    def chunk_output(self, job_id: str, index: int) -> str | None:
        return self.chunk_outputs(job_id).get(index)

    # --- a map's two visits, one round trip each where the store can --------------------------------
    def begin_map(self, job_id: str, index: int, call_limit: int) -> tuple[JobRecord, str | None, bool]:
        """What a map task reads as it starts: the job, chunk `index`'s stored output (None: not yet), and
        whether one model call was reserved for it (`reserve_llm_call`; a map that then finds it has
        nothing to do leaves that call unused, which only a redelivered map does)."""
        return self.get(job_id), self.chunk_output(job_id, index), self.reserve_llm_call(job_id, call_limit)

    def record_chunk_and_settle(
        self,
        job_id: str,
        index: int,
        text: str,
        usage: Usage,
        calls: Sequence[ModelCall] = (),
        *,
        by: str | None = None,
        trace: Sequence[str] = (),
    ) -> str | None:
        """`count_model_call` for each of `calls` (the map's own, counted whatever becomes of its output),
        `add_trace`, `record_chunk`, then `settle_level(job_id, 0, by=by)`: what a map task does as it ends."""
        for call in calls:
            self.count_model_call(job_id, call.stage, call.model, call.usage, call.fallback)
        if trace:
            self.add_trace(job_id, trace)
        self.record_chunk(job_id, index, text, usage)
        return self.settle_level(job_id, 0, by=by)

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None:
        return self.reduce_outputs(job_id, level).get(group)

    def add_usage(self, job_id: str, usage: Usage) -> None:
        """Count LLM calls whose output is not a stored part (final reduce, agent turns, failed attempts)."""
        ...

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None: ...

    # --- trace (`infra.stores.jobs.traces`) -----------------------------------------------------
    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        """Append events (`traces.event_json`) to the job's trace within the store's byte bound, while the
        job exists (a step running after its session ended leaves nothing behind)."""
        ...

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        """The job's trace events from `after` on, each with its `seq`; empty for an unknown job."""
        ...

    # --- model calls: per model, fallbacks, waiting for provider limits ---------------------------
    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        """Count one call made (whatever became of its answer) under the model that answered it, on the job
        (`model_usage`) and in `model_usage_totals`; a `fallback` that answered joins `model_fallbacks`.
        Nothing happens for a job that no longer exists."""
        ...

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        """Every call counted by `count_model_call`, per tenant, model and stage (a Prometheus counter)."""
        ...

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        """A call starts (`delta` +1) or stops (-1, having waited `seconds`) waiting for its turn under its
        model's provider limits: the job's `calls_waiting` progress. Nothing for a job that no longer exists."""
        ...

    def usage_totals(self) -> list[UsageTotal]:
        """Usage counted on all jobs since the store began, per tenant and model (a Prometheus counter)."""
        ...

    # --- queries and removal ------------------------------------------------------------------
    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        """The session's jobs, oldest first (jobs that expired meanwhile are left out)."""
        ...

    def delete(self, job_ids: list[str]) -> None:
        """Remove the jobs and everything they own (parts, task ids, live slots)."""
        ...

    def delete_session_jobs(self, session_id: str) -> None:
        """Remove every job of the session (expired ones included) and the session's job list."""
        ...


class UsageTotal(BaseModel):
    """What one tenant's jobs have spent on one model, summed over every job the store has counted."""

    tenant: str
    model: str = Field(description="the job's model; empty for jobs that did not record one")
    usage: Usage


def check_finished(record: JobRecord) -> None:
    if not record.status.terminal:
        raise ValueError(f"create_finished needs a terminal job, got {record.status.value}")


FinishListener = Callable[[str], None]


def _listeners(store: object) -> list[FinishListener]:
    """The store's listeners, kept on the instance (a Protocol has no `__init__` of its own)."""
    found: list[FinishListener] = store.__dict__.setdefault("_finish_listeners", [])
    return found


def admitted(record: JobRecord, deadline_seconds: int) -> JobRecord:
    """The record as stored at creation: its deadline set and counted as its first attempt."""
    return record.model_copy(
        update={"deadline_at": record.created_at + deadline_seconds, "attempts": max(record.attempts, 1)}
    )


def failure_stage(level: int) -> str:
    """Where a part was lost: `map` for a chunk's own call, `reduce` for a reduce group."""
    return "map" if level == 0 else "reduce"


def too_many_requests(tenant: str, max_live: int) -> TooManyRequests:
    return TooManyRequests(
        f"tenant {tenant!r} already has {max_live} extraction jobs running; retry when one has finished",
        retry_after=RETRY_AFTER_SECONDS,
        limit=max_live,
    )
