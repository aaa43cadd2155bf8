"""Accounting in process memory: the same promises as Redis, kept by the shared state's one lock."""

from __future__ import annotations

from extraction.protocols import Usage
from infra.stores.jobs.accounting.base import HEDGE_COUNTS, JobAccounting, UsageTotal
from infra.stores.jobs.memory_state import MemoryJobState
from infra.stores.jobs.model import MAX_FALLBACKS_KEPT, ModelFallback
from infra.stores.jobs.model_calls import ModelUsageTotal


class MemoryJobAccounting(JobAccounting):
    """`JobAccounting` over the in-memory jobs; the usage totals are the state's, shared with the fan-in."""

    def __init__(self, state: MemoryJobState) -> None:
        self._s = state
        self._model_totals: dict[tuple[str, str, str], Usage] = {}
        self._hedges: dict[str, int] = {}

    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None or job.record.status.terminal or job.record.llm_calls_reserved >= limit:
                return False
            job.record.llm_calls_reserved += 1
            return True

    def add_usage(self, job_id: str, usage: Usage) -> None:
        with self._s.lock:
            self._s.spend(self._s.existing(job_id), usage)

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None:
        with self._s.lock:
            record = self._s.existing(job_id).record
            record.agent_turns += turns
            record.agent_tool_calls += tool_calls

    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None:
                return
            record = job.record
            record.model_usage[model] = record.model_usage.get(model, Usage()) + usage
            owner = (record.tenant, model, stage)
            self._model_totals[owner] = self._model_totals.get(owner, Usage()) + usage
            if fallback is not None and len(record.model_fallbacks) < MAX_FALLBACKS_KEPT:
                record.model_fallbacks.append(fallback)

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is not None:
                job.record.calls_waiting += delta
                job.record.rate_limit_wait_seconds += seconds

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None or job.record.status.terminal or job.record.hedges_sent >= limit:
                return False
            job.record.hedges_sent += 1
            return True

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None:
                return
            job.record.hedges_won += int(won)
            job.record.hedge_input_tokens += cost.input_tokens
            job.record.hedge_output_tokens += cost.output_tokens
            for name, count in zip(HEDGE_COUNTS, (sent, int(won), cost.input_tokens, cost.output_tokens), strict=True):
                self._hedges[name] = self._hedges.get(name, 0) + count

    def usage_totals(self) -> list[UsageTotal]:
        with self._s.lock:
            totals = sorted(self._s.totals.items())
        return [UsageTotal(tenant=tenant, model=model, usage=usage) for (tenant, model), usage in totals]

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        with self._s.lock:
            totals = sorted(self._model_totals.items())
        return [ModelUsageTotal(tenant=t, model=m, stage=s, usage=u) for (t, m, s), u in totals]

    def hedge_totals(self) -> dict[str, int]:
        with self._s.lock:
            return {name: self._hedges.get(name, 0) for name in HEDGE_COUNTS}

    def failed_chunk_counts(self) -> dict[str, int]:
        with self._s.lock:
            return dict(self._s.failed_chunks)
