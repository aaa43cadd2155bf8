"""The start step's decisions as pure functions: budgets that ignore the nonce, routing, the reduce plan."""

from __future__ import annotations

import pytest

from extraction.documents.chunking import estimate_chunk_count
from extraction.strategies.mapreduce import (
    ModelLimits,
    answer_slot_tokens,
    map_prompt_tokens,
    messages_tokens,
    output_sizes,
    plan_reduce_groups,
    reduce_budget,
    reduce_inputs,
)
from extraction.strategies.planning import PlanningRules, chunk_budget_for, route_document
from extraction.strategies.routing import Mode
from extraction.texts.nonce import NONCE_BYTES, WIDEST_NONCE, new_nonce
from extraction.texts.prompts import PromptContext, map_messages, reduce_messages

LIMITS = ModelLimits(context_tokens=4096, max_output_tokens=512)


def context(nonce: str | None = None, extract: str = "every ERROR line with its timestamp") -> PromptContext:
    return PromptContext(
        tool_name="logs.fetch",
        tool_args_json='{"service": "billing", "since": "2026-11-01"}',
        extract=extract,
        nonce=nonce or new_nonce(),
        doc_bytes=1_234_567,
        doc_lines=8_910,
        doc_tokens=345_678,
    )


def test_the_widest_nonce_is_a_real_nonces_length() -> None:
    assert len(WIDEST_NONCE) == len(new_nonce()) == 2 * NONCE_BYTES


def test_the_chunk_budget_is_the_same_whatever_the_jobs_nonce() -> None:
    """It used to move with the nonce's token count, so one document planned 127-129 chunks from job to job."""
    budgets = {chunk_budget_for(context(), LIMITS, PlanningRules()) for _ in range(300)}
    assert len(budgets) == 1


def test_budgets_measured_with_the_widest_nonce_cover_every_real_prompt() -> None:
    """No real nonce makes the map or reduce prompt longer than what the budgets reserved for it."""
    reserved_map = map_prompt_tokens(context(), LIMITS, overlap_percent=10.0)
    reserved_reduce = LIMITS.context_tokens - LIMITS.max_output_tokens - reduce_budget(context(), LIMITS)
    for _ in range(2000):
        ctx = context()
        real_map = map_messages(ctx, "", chunk_index=99_999, chunk_total=99_999, overlap_percent=10.0)
        assert messages_tokens(real_map, LIMITS.encoding) <= reserved_map, ctx.nonce
        assert messages_tokens(reduce_messages(ctx, []), LIMITS.encoding) <= reserved_reduce, ctx.nonce


@pytest.mark.parametrize(
    ("tokens", "avg_line", "expected"),
    [(2_000, 80.0, Mode.FULL_CHUNKED), (200_000, 80.0, Mode.READ_GREP), (200_000, 5_000.0, Mode.FULL_CHUNKED)],
)
def test_routing_counts_chunks_at_the_budget(tokens: int, avg_line: float, expected: Mode) -> None:
    rules = PlanningRules(chunk_overlap=0.1, max_chunks_for_full=1, long_line_bytes=1000)
    budget = chunk_budget_for(context(), LIMITS, rules)
    decision = route_document("auto", tokens=tokens, avg_line_bytes=avg_line, budget=budget, rules=rules)
    assert decision.mode is expected
    assert f"{estimate_chunk_count(tokens, budget, 0.1)} chunk" in decision.reason


def test_reduce_groups_follow_the_real_sizes_of_the_outputs_not_their_number() -> None:
    ctx = context()
    short = [f"line {i}" for i in range(40)]
    longer = [f"line {i}: " + "detail " * 40 for i in range(40)]
    budget = reduce_budget(ctx, LIMITS)
    assert budget // answer_slot_tokens(LIMITS) < 40, "forty full answers would not fit one call"
    assert plan_reduce_groups(short, ctx, LIMITS) == [list(range(40))], "forty short ones do: one call"
    groups = plan_reduce_groups(longer, ctx, LIMITS)
    sizes = output_sizes(longer, ctx, LIMITS)
    assert len(groups) == -(-sum(sizes) // budget) and all(sum(sizes[i] for i in g) <= budget for g in groups)
    assert max(map(len, groups)) - min(map(len, groups)) <= 1, "even groups: the longest call sets the pace"


def test_answers_that_found_nothing_take_no_room_once_one_found_something() -> None:
    outputs = ["NO RELEVANT DATA FOUND\nfiller", "", "the pool ran dry", "**NO RELEVANT DATA FOUND**", "retry storm"]
    assert reduce_inputs(outputs) == [2, 4]
    assert reduce_inputs(["NO RELEVANT DATA FOUND\nlogs", " ", "NO RELEVANT DATA FOUND\nmetrics"]) == [0, 2]
    assert reduce_inputs(["", "  "]) == []


def test_outputs_longer_than_their_answer_slot_are_regrouped_by_their_real_size() -> None:
    """A model that ignores max_tokens must not get a reduce prompt larger than the window."""
    ctx = context()
    tiny = ModelLimits(context_tokens=4096, max_output_tokens=64)
    outputs = ["word " * 400 for _ in range(12)]  # ~400 tokens each, far over a 64-token answer
    groups = plan_reduce_groups(outputs, ctx, tiny)
    sizes = output_sizes(outputs, ctx, tiny)
    budget = reduce_budget(ctx, tiny)
    assert len(groups) > 1 and all(sum(sizes[i] for i in g) <= budget for g in groups)


def test_when_two_full_answers_never_fit_the_groups_follow_the_real_sizes() -> None:
    ctx = context()
    cramped = ModelLimits(context_tokens=2600, max_output_tokens=1200)
    assert plan_reduce_groups(["a short answer"] * 10, ctx, cramped) == [list(range(10))]
