"""What a job will spend before it runs: model calls and tokens, from the same plans the job follows.

* full-chunked — the chunks are the planner's (`chunking.plan_chunks`, at the budget the start step
  computes), so the map calls are exact and their input tokens are each chunk's tokens plus its
  map prompt. The reduce tree is `mapreduce.plan_reduce_groups`' plan, which depends only on how
  many outputs there are (every output gets the room of a full answer), so the reduce calls are
  exact too — as long as every part answers with something on its first attempt (a retried call,
  an empty or failed part changes the job's count) and the model honours `max_tokens`. What no plan
  can know is how long the answers will be: reduce input and all output tokens assume answers of
  `answer_tokens`, with the full `max_output_tokens` as the upper bound.
* read-grep — a sub-agent decides its own turns; only its bounds are known: at most `max_turns`
  calls, and at most `max_total_tokens` plus one last turn's window. The numbers are those bounds.
* truncate — no model call at all.
"""

from __future__ import annotations

import json
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
from extraction.strategies.reduce_plan import uniform_tree
from extraction.texts.prompts import PromptContext, map_messages, read_grep_messages


class UsageEstimate(BaseModel):
    """Model calls and tokens a job is expected to spend, with upper bounds."""

    basis: Literal["plan", "bounds", "none"] = Field(
        description="plan: counted from the job's own chunk and reduce plans; bounds: the sub-agent's limits; "
        "none: no model call"
    )
    calls: int
    calls_max: int
    exact_calls: bool = Field(description="the job makes exactly `calls` calls if every call answers on its first try")
    map_calls: int = 0
    reduce_calls: int = 0
    reduce_levels: int = Field(0, description="levels of group reduces before the final one (the job's reduce_level)")
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
    """Maps over `chunks`, then the reduce tree `plan_reduce_groups` builds for that many outputs."""
    answer = min(answer_tokens, limits.max_output_tokens)
    tree, exact = reduce_tree(len(chunks), ctx, limits, answer)
    reduce_inputs = [len(group) for level in tree for group in level if len(group) > 1]
    overhead = reduce_overhead_tokens(ctx, limits)
    maps_in = sum(map_call_tokens(chunk, len(chunks), ctx, limits, overlap_percent) for chunk in chunks)
    calls = len(chunks) + len(reduce_inputs)
    return UsageEstimate(
        basis="plan",
        calls=calls,
        calls_max=calls,
        exact_calls=exact,
        map_calls=len(chunks),
        reduce_calls=len(reduce_inputs),
        reduce_levels=max(len(tree) - 1, 0),
        input_tokens=maps_in + sum(overhead + size * (answer + LABEL_TOKENS) for size in reduce_inputs),
        input_tokens_max=maps_in + sum(overhead + size * answer_slot_tokens(limits) for size in reduce_inputs),
        output_tokens=calls * answer,
        output_tokens_max=calls * limits.max_output_tokens,
    )


def reduce_tree(count: int, ctx: PromptContext, limits: ModelLimits, answer_tokens: int) -> tuple[list[Any], bool]:
    """The reduce levels the job will run for `count` map outputs, and whether that is certain.

    Certain when the job plans by count (`plan_reduce_groups`); when two full answers do not fit one
    reduce call the job groups by the answers' real sizes, and this assumes answers of `answer_tokens`.
    """
    budget = reduce_budget(ctx, limits)
    planned = uniform_tree(count, budget, answer_slot_tokens(limits))
    if planned is not None:
        return planned, True
    return uniform_tree(count, budget, answer_tokens + LABEL_TOKENS) or [], False


def map_call_tokens(chunk: Chunk, total: int, ctx: PromptContext, limits: ModelLimits, overlap_percent: float) -> int:
    """One map call's input: the map prompt at this chunk's numbering, plus the chunk's own tokens."""
    prompt = map_messages(
        sizing_context(ctx), "", chunk_index=chunk.index + 1, chunk_total=total, overlap_percent=overlap_percent
    )
    return messages_tokens(prompt, limits.encoding) + chunk.tokens


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
