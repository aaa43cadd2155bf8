"""Accounting in Redis: each budget and counter is one script on the job's slot, beside its per-slot totals copy
(`infra.stores.jobs.redis_indexes`); the totals are summed over every copy when read."""

from __future__ import annotations

from typing import Any

from extraction.protocols import Usage
from infra.redis import keys
from infra.stores.jobs.accounting.base import HEDGE_COUNTS, JobAccounting, UsageTotal
from infra.stores.jobs.model import MAX_FALLBACKS_KEPT, ModelFallback
from infra.stores.jobs.model_calls import ModelCall, ModelUsageTotal, totals_from_fields
from infra.stores.jobs.redis_context import RedisJobContext, not_found
from infra.stores.jobs.scripts import TOTALS_SEPARATOR, ScriptSet, usage_args

SCRIPTS = ScriptSet(
    "infra.stores.jobs.accounting",
    ("reserve_call", "add_usage", "add_progress", "count_model_call", "note_waiting", "reserve_hedge", "count_hedges"),
)


class RedisJobAccounting(JobAccounting):
    """`JobAccounting` on one Redis."""

    def __init__(self, context: RedisJobContext) -> None:
        context.register(SCRIPTS)
        self._c, self._index = context, context.index

    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        return bool(self._c.run("reserve_call", *self.reserve_call_script(job_id, limit)) == 1)

    @staticmethod
    def reserve_call_script(job_id: str, limit: int) -> tuple[list[str], list[Any]]:
        """`reserve_call`'s keys and arguments (run alone, or in a map's first round trip)."""
        return [keys.job(job_id)], [limit]

    def add_usage(self, job_id: str, usage: Usage) -> None:
        self._c.run("add_usage", [keys.job(job_id), self._index.usage.key_for(job_id)], usage_args(usage))

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None:
        counts = ["agent_turns", turns, "agent_tool_calls", tool_calls]
        if self._c.run("add_progress", [keys.job(job_id)], counts) == -1:
            raise not_found(job_id)

    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        self._c.run("count_model_call", *self.count_call_script(job_id, ModelCall(stage, model, usage, fallback)))

    def count_call_script(self, job_id: str, call: ModelCall) -> tuple[list[str], list[Any]]:
        """`count_model_call`'s keys and arguments (run alone, or in a map's last round trip)."""
        noted = call.fallback.model_dump_json() if call.fallback is not None else ""
        args = [call.stage, call.model, *usage_args(call.usage), noted, MAX_FALLBACKS_KEPT]
        return [keys.job(job_id), self._index.model_usage.key_for(job_id)], args

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        self._c.run("note_waiting", [keys.job(job_id)], [delta, repr(seconds)])

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        return bool(self._c.run("reserve_hedge", [keys.job(job_id)], [limit]) == 1)

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        args = [sent, int(won), cost.input_tokens, cost.output_tokens]
        self._c.run("count_hedges", [keys.job(job_id), self._index.hedges.key_for(job_id)], args)

    def usage_totals(self) -> list[UsageTotal]:
        fields = self._index.summed(self._index.usage)
        owners: dict[tuple[str, str], dict[str, str]] = {}
        for field, value in fields.items():
            tenant, model, name = field.rsplit(TOTALS_SEPARATOR, 2)
            owners.setdefault((tenant, model), {})[name] = value
        return [
            UsageTotal(tenant=tenant, model=model, usage=Usage.model_validate(counts))
            for (tenant, model), counts in sorted(owners.items())
        ]

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        return totals_from_fields(self._index.summed(self._index.model_usage))

    def hedge_totals(self) -> dict[str, int]:
        counts = self._index.summed(self._index.hedges)
        return {name: int(counts.get(name, 0)) for name in HEDGE_COUNTS}

    def failed_chunk_counts(self) -> dict[str, int]:
        counts = self._index.summed(self._index.chunks_failed)
        return {stage: int(counts.get(stage, 0)) for stage in ("map", "reduce")}
