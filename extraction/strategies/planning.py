"""What a job's start step decides before any model call, as plain functions: the chunk budget and the mode choice.

The worker's start step (`workers.job.pipeline`) and the estimate (`infra.planning.estimates`) both call these,
so an estimate chooses the mode and budgets exactly as the job will. Both measure prompts with the widest
nonce (`mapreduce.sizing_context`), so the answer is the same for every job on the same document.
"""

from __future__ import annotations

from dataclasses import dataclass

from extraction.documents.chunking import MIN_CHUNK_TOKENS, chunk_budget, estimate_chunk_count
from extraction.evidence.citations import NUMBER_TOKENS
from extraction.strategies.mapreduce import ModelLimits, map_prompt_tokens
from extraction.strategies.routing import Mode, RoutingDecision, route
from extraction.texts.prompts import PromptContext


@dataclass(frozen=True)
class PlanningRules:
    """The settings that shape a chunk plan and the mode choice: chunk overlap and `auto`'s two thresholds."""

    chunk_overlap: float = 0.10
    max_chunks_for_full: int = 1
    long_line_bytes: int = 1000

    @property
    def overlap_percent(self) -> float:
        """The overlap as the map prompt states it (`Overlap: 10%`)."""
        return round(self.chunk_overlap * 100, 1)


NUMBERING_MARGIN = 0.9
"""Room left for chunks denser in lines than the document on average (their numbers cost more)."""


def chunk_budget_for(ctx: PromptContext, limits: ModelLimits, rules: PlanningRules) -> int:
    """Tokens of document one chunk may take next to the map prompt of `ctx` (independent of the job's nonce).

    A chunk shown line-numbered (the job asks for evidence) costs its numbers too: the budget for the
    document's own tokens shrinks by the share the numbers add on this document's lines.
    """
    prompt = map_prompt_tokens(ctx, limits, overlap_percent=rules.overlap_percent)
    budget = chunk_budget(limits.context_tokens, limits.max_output_tokens, prompt)
    if not ctx.cite or not ctx.doc_tokens:
        return budget
    share = ctx.doc_tokens / (ctx.doc_tokens + NUMBER_TOKENS * ctx.doc_lines)
    return max(MIN_CHUNK_TOKENS, int(budget * share * NUMBERING_MARGIN))


def route_document(
    requested: Mode | str,
    *,
    tokens: int,
    avg_line_bytes: float,
    budget: int,
    rules: PlanningRules,
    structured: str | None = None,
) -> RoutingDecision:
    """The strategy for a document of `tokens` tokens, `budget` per chunk (docs/spec/tool-output.md §Mode choice)."""
    return route(
        requested,
        chunk_count=estimate_chunk_count(tokens, budget, rules.chunk_overlap),
        avg_line_bytes=avg_line_bytes,
        max_chunks_for_full=rules.max_chunks_for_full,
        long_line_bytes=rules.long_line_bytes,
        structured=structured,
    )
