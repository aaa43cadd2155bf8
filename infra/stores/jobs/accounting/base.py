"""Accounting: a job's call and hedge budgets, what its model calls spent, and the store-wide totals `/metrics` reads.

Every implementation keeps these promises, which `tests/infra/stores/test_job_accounting_contract.py` (with the
model-call and hedge suites) checks on each of them:

* an LLM call, or a hedge, is reserved against the job's budget before it is made, atomically;
* every usage counted on a job is also counted, in the same atomic step, in the store-wide totals per tenant
  and model (`usage_totals`: what `/metrics` exports), whichever part of the store counted it;
* every model call is counted under the model that answered it, on the job and per tenant, model and stage
  (`count_model_call`, `model_usage_totals`), with the fallbacks the job took.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from extraction.protocols import Usage
from infra.stores.jobs.model import ModelFallback
from infra.stores.jobs.model_calls import ModelUsageTotal

HEDGE_COUNTS = ("sent", "won", "prompt", "completion")
"""The store-wide hedge totals (`JobAccounting.hedge_totals`): hedges sent, won, the losing copies' tokens."""


class JobAccounting(Protocol):
    """Budgets and counters of jobs, and the totals over all of them; methods raise `NotFound` /
    `BackendUnavailable`."""

    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        """Count one LLM call against the job's budget before it is made.

        False when `limit` calls were already reserved or the job ended (or is gone): the caller
        must not call the model. Atomic, so concurrent map tasks can never overshoot.
        """
        ...

    def add_usage(self, job_id: str, usage: Usage) -> None:
        """Count LLM calls whose output is not a stored part (final reduce, agent turns, failed attempts)."""
        ...

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None: ...

    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        """Count one call made (whatever became of its answer) under the model that answered it, on the job
        (`model_usage`) and in `model_usage_totals`; a `fallback` that answered joins `model_fallbacks`.
        Nothing happens for a job that no longer exists."""
        ...

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        """A call starts (`delta` +1) or stops (-1, having waited `seconds`) waiting for its turn under its
        model's provider limits: the job's `calls_waiting` progress. Nothing for a job that no longer exists."""
        ...

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        """One hedge of the job's hedge budget, counted in `hedges_sent`: False when `limit` were sent or the
        job ended (or is gone). Atomic, so the job's concurrent calls never overshoot the budget."""
        ...

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        """What one call's hedging came to (`sent` hedges, whether one `won`, the losing copies' usage `cost`):
        on the job (`hedges_won`, `hedge_*_tokens`) and in the store-wide totals behind `hedge_totals`."""
        ...

    def usage_totals(self) -> list[UsageTotal]:
        """Usage counted on all jobs since the store began, per tenant and model (a Prometheus counter)."""
        ...

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        """Every call counted by `count_model_call`, per tenant, model and stage (a Prometheus counter)."""
        ...

    def hedge_totals(self) -> dict[str, int]:
        """Since the store began: hedges `sent`, `won`, and their cost in `prompt` and `completion` tokens."""
        ...

    def failed_chunk_counts(self) -> dict[str, int]:
        """Chunks lost by all jobs since the store began, by stage (`map`, `reduce`), as the fan-in's
        `record_failure` counted them: a Prometheus counter."""
        ...


class UsageTotal(BaseModel):
    """What one tenant's jobs have spent on one model, summed over every job the store has counted."""

    tenant: str
    model: str = Field(description="the job's model; empty for jobs that did not record one")
    usage: Usage
