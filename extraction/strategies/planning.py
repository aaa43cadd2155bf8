"""What a job's start step decides before any model call, as plain functions: the chunk budget and the route.

The worker's start step (`workers.job.pipeline`) and the estimate (`infra.planning.estimates`) both call these,
so an estimate routes and budgets exactly as the job will. Both measure prompts with the widest
nonce (`mapreduce.sizing_context`), so the answer is the same for every job on the same document.
"""

from __future__ import annotations

from dataclasses import dataclass

from extraction.documents.chunking import chunk_budget, estimate_chunk_count
from extraction.strategies.mapreduce import ModelLimits, map_prompt_tokens
from extraction.strategies.routing import Mode, RoutingDecision, route
from extraction.texts.prompts import PromptContext


@dataclass(frozen=True)
class PlanningRules:
    """The settings that shape a plan: chunk overlap and the two auto-routing thresholds."""

    chunk_overlap: float = 0.10
    max_chunks_for_full: int = 1
    long_line_bytes: int = 1000

    @property
    def overlap_percent(self) -> float:
        """The overlap as the map prompt states it (`Overlap: 10%`)."""
        return round(self.chunk_overlap * 100, 1)


def chunk_budget_for(ctx: PromptContext, limits: ModelLimits, rules: PlanningRules) -> int:
    """Tokens one chunk may take next to the map prompt of `ctx` (independent of the job's nonce)."""
    prompt = map_prompt_tokens(ctx, limits, overlap_percent=rules.overlap_percent)
    return chunk_budget(limits.context_tokens, limits.max_output_tokens, prompt)


def route_document(
    requested: Mode | str,
    *,
    tokens: int,
    avg_line_bytes: float,
    budget: int,
    rules: PlanningRules,
    structured: str | None = None,
) -> RoutingDecision:
    """The strategy for a document of `tokens` tokens, `budget` per chunk (docs/spec/tool-output.md §Routing)."""
    return route(
        requested,
        chunk_count=estimate_chunk_count(tokens, budget, rules.chunk_overlap),
        avg_line_bytes=avg_line_bytes,
        max_chunks_for_full=rules.max_chunks_for_full,
        long_line_bytes=rules.long_line_bytes,
        structured=structured,
    )
