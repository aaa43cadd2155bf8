"""What a job will spend before it runs: model calls and tokens, from the same chunk and reduce plans the job follows.

* full-chunked — the chunks are the planner's (`chunking.plan_chunks`, at the budget the start step
  computes), so the map calls are exact and their input tokens are each chunk's tokens plus its
  map prompt. The reduce tree is not: the job groups the answers it really gets by their real
  sizes (`mapreduce.plan_reduce_groups`), and answers that find nothing take no room. So the
  estimate counts the tree twice: for answers of `answer_tokens` (`calls`, `reduce_calls`,
  `reduce_levels`) and for every answer at the model's full `max_output_tokens` (`calls_max`,
  `reduce_calls_max`, `reduce_levels_max`): an upper bound, as long as the model honours
  `max_tokens` and every call answers on its first attempt.
* read-grep — a sub-agent decides its own turns; only its bounds are known: at most `max_turns`
  calls, and at most `max_total_tokens` plus one last turn's window. The numbers are those bounds.
* truncate — no model call at all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from extraction.documents.chunking import Chunk
from extraction.documents.tokens import count_tokens
from extraction.strategies.agent import AgentBounds
from extraction.strategies.mapreduce import (
    LABEL_TOKENS,
    ModelLimits,
    answer_slot_tokens,
    messages_tokens,
    reduce_budget,
    reduce_overhead_tokens,
    sizing_context,
)
from extraction.strategies.reduce_plan import uniform_groups, uniform_tree
from extraction.texts.prompts import PromptContext, map_messages, read_grep_messages

Tree = list[list[list[int]]]
"""Reduce levels, each a list of groups of positions (the final reduce's one group last)."""


class UsageEstimate(BaseModel):
    """Model calls and tokens a job is expected to spend, with upper bounds."""

    basis: Literal["plan", "bounds", "none"] = Field(
        description="plan: counted from the job's own chunk and reduce plans; bounds: the sub-agent's limits; "
        "none: no model call"
    )
    calls: int
    calls_max: int
    exact_calls: bool = Field(
        description="the job makes exactly `calls` calls if every call answers on its first try (full-chunked: only "
        "a single chunk; otherwise the reduce follows the real answers, at most `calls_max`)"
    )
    map_calls: int = 0
    reduce_calls: int = Field(0, description="reduce calls for answers of the estimated size")
    reduce_calls_max: int = Field(0, description="reduce calls if every answer took the model's full output limit")
    reduce_levels: int = Field(0, description="levels of group reduces before the final one (the job's reduce_level)")
    reduce_levels_max: int = Field(0, description="reduce_levels if every answer took the model's full output limit")
    input_tokens: int
    input_tokens_max: int
    output_tokens: int
    output_tokens_max: int


def no_model_calls() -> UsageEstimate:
    """Truncate: the top and bottom of the output, no model involved."""
    return UsageEstimate(
        basis="none",
        calls=0,
        calls_max=0,
        exact_calls=True,
        input_tokens=0,
        input_tokens_max=0,
        output_tokens=0,
        output_tokens_max=0,
    )


def full_chunked(
    chunks: Sequence[Chunk],
    ctx: PromptContext,
    limits: ModelLimits,
    *,
    overlap_percent: float,
    answer_tokens: int,
) -> UsageEstimate:
    """Maps over `chunks`, then the reduce tree of that many answers: of `answer_tokens` each, and (the
    bound) of the model's full output limit each."""
    answer = min(answer_tokens, limits.max_output_tokens)
    likely, bound = reduce_trees(len(chunks), ctx, limits, answer)
    likely_calls, bound_calls = _reduce_calls(likely), _reduce_calls(bound)
    overhead = reduce_overhead_tokens(ctx, limits)
    maps_in = sum(map_call_tokens(chunk, len(chunks), ctx, limits, overlap_percent) for chunk in chunks)
    calls, calls_max = len(chunks) + len(likely_calls), len(chunks) + len(bound_calls)
    return UsageEstimate(
        basis="plan",
        calls=calls,
        calls_max=calls_max,
        exact_calls=not bound_calls,
        map_calls=len(chunks),
        reduce_calls=len(likely_calls),
        reduce_calls_max=len(bound_calls),
        reduce_levels=max(len(likely) - 1, 0),
        reduce_levels_max=max(len(bound) - 1, 0),
        input_tokens=maps_in + sum(overhead + size * (answer + LABEL_TOKENS) for size in likely_calls),
        input_tokens_max=maps_in + sum(overhead + size * answer_slot_tokens(limits) for size in bound_calls),
        output_tokens=calls * answer,
        output_tokens_max=calls_max * limits.max_output_tokens,
    )


def reduce_trees(count: int, ctx: PromptContext, limits: ModelLimits, answer_tokens: int) -> tuple[Tree, Tree]:
    """The reduce levels of `count` answers of `answer_tokens` each, and of full answers each (the bound).

    When two full answers do not fit one reduce call there is no such bound (the job still groups
    what it gets); the answers of `answer_tokens` stand in for it.
    """
    budget = reduce_budget(ctx, limits)
    likely = uniform_tree(count, budget, answer_tokens + LABEL_TOKENS) or []
    bound = uniform_tree(count, budget, answer_slot_tokens(limits))
    return likely, likely if bound is None else bound


def full_answers_fit(ctx: PromptContext, limits: ModelLimits) -> bool:
    """Whether two full answers fit one reduce call: the condition for `calls_max` to be a bound."""
    return uniform_groups(2, reduce_budget(ctx, limits), answer_slot_tokens(limits)) is not None


def _reduce_calls(tree: Tree) -> list[int]:
    """How many answers each reduce call of the tree takes (a group of one passes its answer up: no call)."""
    return [len(group) for level in tree for group in level if len(group) > 1]


def map_call_tokens(chunk: Chunk, total: int, ctx: PromptContext, limits: ModelLimits, overlap_percent: float) -> int:
    """One map call's input: the map prompt at this chunk's numbering, plus the chunk's own tokens (and, when
    the chunk is shown line-numbered, its lines' numbers)."""
    prompt = map_messages(
        sizing_context(ctx), "", chunk_index=chunk.index + 1, chunk_total=total, overlap_percent=overlap_percent
    )
    return messages_tokens(prompt, limits.encoding) + chunk.tokens + numbers_tokens(chunk, ctx)


def numbers_tokens(chunk: Chunk, ctx: PromptContext) -> int:
    """What the Read-style numbers of a chunk's lines take: its share of the document's lines, each number at
    what numbers cost on this document (`PromptContext.number_tokens`)."""
    if not ctx.cite or not ctx.doc_tokens:
        return 0
    return math.ceil(chunk.tokens * ctx.doc_lines / ctx.doc_tokens * ctx.number_tokens)


def read_grep(
    ctx: PromptContext,
    limits: ModelLimits,
    bounds: AgentBounds,
    *,
    handle_filename: str,
    root: str,
    tools: Sequence[dict[str, Any]],
) -> UsageEstimate:
    """The sub-agent's bounds: `max_turns` calls; tokens up to its budget plus one last window."""
    opening = messages_tokens(
        read_grep_messages(sizing_context(ctx), handle_filename=handle_filename, root=root), limits.encoding
    )
    opening += count_tokens(json.dumps(list(tools)), limits.encoding)
    answer = bounds.max_output_tokens or limits.max_output_tokens
    spend = bounds.max_total_tokens + limits.context_tokens
    input_max = max(opening, min(bounds.max_turns * limits.context_tokens, spend))
    output_max = min(bounds.max_turns * answer, spend)
    return UsageEstimate(
        basis="bounds",
        calls=bounds.max_turns,
        calls_max=bounds.max_turns,
        exact_calls=False,
        input_tokens=input_max,
        input_tokens_max=input_max,
        output_tokens=output_max,
        output_tokens_max=output_max,
    )
