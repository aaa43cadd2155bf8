"""Estimates from the plans a job follows; that they match real jobs: tests/workers/job/test_estimates.py."""

from __future__ import annotations

from extraction.documents.chunking import Chunk
from extraction.strategies import estimate
from extraction.strategies.agent import AgentBounds
from extraction.strategies.mapreduce import (
    LABEL_TOKENS,
    ModelLimits,
    messages_tokens,
    reduce_overhead_tokens,
    sizing_context,
)
from extraction.texts.prompts import map_messages
from extraction.texts.tools import grep_tool, read_tool
from tests.extraction.strategies.test_planning import context

WIDE = ModelLimits(context_tokens=128_000, max_output_tokens=4_096)


def chunks(count: int, tokens: int = 1_000) -> list[Chunk]:
    return [Chunk(index=i, start=i * 10, end=i * 10 + 10, tokens=tokens) for i in range(count)]


def test_maps_plus_one_reduce_when_every_full_answer_fits_one_call() -> None:
    ctx = context()
    found = estimate.full_chunked(chunks(3), ctx, WIDE, overlap_percent=10.0, answer_tokens=500)
    map_prompts = [
        messages_tokens(
            map_messages(sizing_context(ctx), "", chunk_index=i, chunk_total=3, overlap_percent=10.0), "o200k_base"
        )
        for i in (1, 2, 3)
    ]
    reduce_in = reduce_overhead_tokens(ctx, WIDE) + 3 * (500 + LABEL_TOKENS)
    assert (found.calls, found.map_calls, found.reduce_calls, found.reduce_levels) == (4, 3, 1, 0)
    assert (found.calls_max, found.reduce_calls_max, found.reduce_levels_max) == (4, 1, 0)
    assert not found.exact_calls and found.basis == "plan", "answers that find nothing need no reduce"
    assert found.input_tokens == sum(map_prompts) + 3 * 1_000 + reduce_in
    assert found.input_tokens_max == found.input_tokens + 3 * (4_096 - 500)
    assert (found.output_tokens, found.output_tokens_max) == (4 * 500, 4 * 4_096)


def test_many_chunks_bound_their_reduce_by_full_answers_and_estimate_it_by_likely_ones() -> None:
    found = estimate.full_chunked(chunks(128), context(), WIDE, overlap_percent=10.0, answer_tokens=2_000)
    assert (found.map_calls, found.reduce_calls_max, found.reduce_levels_max) == (128, 5 + 1, 1)
    assert found.calls_max == 134 and not found.exact_calls
    # 2000-token answers: 61 per call, so 3 group reduces and a final one
    assert (found.calls, found.reduce_calls, found.reduce_levels) == (128 + 4, 4, 1)
    assert found.input_tokens < found.input_tokens_max and found.output_tokens < found.output_tokens_max


def test_one_chunk_is_its_own_answer() -> None:
    found = estimate.full_chunked(chunks(1), context(), WIDE, overlap_percent=10.0, answer_tokens=500)
    assert (found.calls, found.reduce_calls, found.output_tokens) == (1, 0, 500)
    assert found.exact_calls and found.calls_max == 1


def test_answers_are_assumed_no_longer_than_the_model_may_write() -> None:
    small = ModelLimits(context_tokens=8_000, max_output_tokens=300)
    found = estimate.full_chunked(chunks(2), context(), small, overlap_percent=10.0, answer_tokens=5_000)
    assert found.output_tokens == found.output_tokens_max == 3 * 300


def test_a_window_too_small_for_two_full_answers_has_no_bound_but_the_likely_tree() -> None:
    cramped = ModelLimits(context_tokens=2_600, max_output_tokens=1_200)
    found = estimate.full_chunked(chunks(6, 300), context(), cramped, overlap_percent=10.0, answer_tokens=100)
    assert not found.exact_calls and found.calls == found.calls_max == 7  # six 112-token answers fit one reduce
    assert not estimate.full_answers_fit(context(), cramped) and estimate.full_answers_fit(context(), WIDE)


def test_read_grep_gives_the_agents_bounds() -> None:
    bounds = AgentBounds(max_turns=15, max_total_tokens=200_000, max_output_tokens=4_096)
    found = estimate.read_grep(
        context(), WIDE, bounds, handle_filename="h", root="sessions/s/", tools=[read_tool(), grep_tool()]
    )
    assert (found.basis, found.calls, found.exact_calls) == ("bounds", 15, False)
    assert found.input_tokens == found.input_tokens_max == 200_000 + 128_000
    assert found.output_tokens == 15 * 4_096


def test_read_grep_with_few_turns_is_bounded_by_the_turns() -> None:
    bounds = AgentBounds(max_turns=2, max_total_tokens=10**9)
    found = estimate.read_grep(context(), WIDE, bounds, handle_filename="h", root="r/", tools=[])
    assert found.input_tokens == 2 * 128_000 and found.output_tokens == 2 * 4_096


def test_truncate_calls_no_model() -> None:
    found = estimate.no_model_calls()
    assert (found.calls, found.input_tokens, found.output_tokens, found.exact_calls) == (0, 0, 0, True)
