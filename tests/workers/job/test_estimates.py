"""Estimates against the real jobs: the same output, estimated, then run through the pipeline in this process.

The model counts tokens the way the offline model (and OpenAI) do: 3 per request, 4 per message plus
its text, in o200k_base. A full-chunked job must plan the estimated chunks, stay within the upper
bound of calls and reduce levels (every answer at full length), make the estimated calls when its
answers are of the estimated size, and count input tokens within 5 % of the estimate; its record
keeps the reduce tree it really ran. A read-grep job must stay inside its estimated bounds. The same
comparison on the real stack (processes, the offline model over HTTP) is in
tests/integration/test_estimates_and_cache.py.
"""

from __future__ import annotations

import pytest

from extraction.documents.tokens import count_tokens
from extraction.protocols import LLMReply, Usage
from extraction.testing import ScriptedLLM
from infra.planning.estimates import ExtractionEstimate, estimate_extraction
from infra.planning.plans import plan_fresh
from infra.stores.jobs import JobRecord, JobStatus
from tests.workers.conftest import NONCE_RE, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document
from tests.workers.job.test_read_grep import LOG, grepping_model
from workers.job import context
from workers.job.runtime import Runtime
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin("chunk and call planning from an output's measured stats, identical on every store")

REQUEST = "database pool errors"


NOTES = "Filler lines: timestamps, request ids and latencies, one request per line."
"""A chunk's answer when it holds no needle but still says something (~15 tokens): it takes room in the reduce."""


def counting_model(needle: str = NEEDLE, misses: str = NOTES) -> ScriptedLLM:
    """Answers with the lines holding `needle` (or `misses`), counting tokens as providers do."""

    def respond(messages, tools):
        nonce = NONCE_RE.search(messages[0]["content"]).group(1)
        text = "\n".join(m["content"] or "" for m in messages)
        hits = sorted({line.strip() for line in text.splitlines() if needle in line and "WHAT TO EXTRACT" not in line})
        body = "\n".join(hits) if hits else misses
        content = f'<ai-agent-{nonce}-FINAL format="text">\n{body}\n</ai-agent-{nonce}-FINAL>'
        prompt = 3 + sum(4 + count_tokens(m["content"] or "", "o200k_base") for m in messages)
        return LLMReply(
            content=content,
            usage=Usage(calls=1, input_tokens=prompt, output_tokens=count_tokens(content, "o200k_base")),
        )

    return ScriptedLLM(respond)


def estimate_and_run(rt: Runtime, data: bytes, mode: str) -> tuple[ExtractionEstimate, JobRecord]:
    output = store_output(rt, data)
    found = estimate_extraction(
        output,
        REQUEST,
        mode,
        settings=rt.settings,
        blobs=rt.blobs,
        records=rt.records,
        limits=rt.limits,
        price=lambda *_: None,
    )
    job = submit(rt, output, REQUEST, mode)
    LocalDispatcher(rt, concurrency=4).run(job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.fallback_reason is None, done.error
    return found, done


def assert_matches(found: ExtractionEstimate, done: JobRecord, *, calls_off: int = 0) -> float:
    """The chunks, the estimated calls (within `calls_off`: the answers are not all of the estimated size) and
    reduce levels, within the bounds; input tokens within 5 %. Returns the relative token error."""
    assert_within_bounds(found, done)
    assert abs(found.calls - done.usage.calls) <= calls_off, (found.calls, done.usage.calls)
    assert found.reduce_levels == done.reduce_level, (found.reduce_levels, done.reduce_level)
    error = (found.input_tokens - done.usage.input_tokens) / done.usage.input_tokens
    print(
        f"\n{done.chunks_total} chunks, {done.usage.calls} calls (estimated {found.calls}); input tokens "
        f"{done.usage.input_tokens} counted, {found.input_tokens} estimated ({error:+.2%})"
    )
    assert abs(error) <= 0.05, f"estimate {found.input_tokens} vs counted {done.usage.input_tokens} ({error:+.1%})"
    assert found.input_tokens_max >= done.usage.input_tokens and found.output_tokens_max >= done.usage.output_tokens
    return error


def assert_within_bounds(found: ExtractionEstimate, done: JobRecord) -> None:
    """Same mode and chunks; calls and reduce levels at most the bound; the record's tree is the calls made."""
    assert (found.mode.value, found.chunks) == (done.mode_used, done.chunks_total)
    assert done.usage.calls <= found.calls_max and done.reduce_level <= found.reduce_levels_max
    reduces = sum(1 for level in done.reduce_tree for answers in level if answers > 1)
    assert done.usage.calls == done.chunks_total + reduces and len(done.reduce_tree) == done.reduce_level + (
        reduces > 0
    )


def test_maps_and_one_final_reduce(make_runtime) -> None:
    rt = make_runtime(counting_model(), context_tokens=4000, max_output_tokens=100)
    found, done = estimate_and_run(rt, document(), "full-chunked")
    assert done.chunks_total > 20 and done.reduce_level == 0 and found.reduce_calls == 1
    assert_matches(found, done)


def test_short_answers_take_one_reduce_where_full_ones_would_need_a_level_of_groups(make_runtime) -> None:
    """A 500-token answer slot: six full answers per reduce call, so the bound has a level of groups; the
    real ~15-token answers all fit one call, and the job makes that one call.

    `estimate_answer_tokens` says how long the answers are, as an operator would set it for their model
    (at this tiny window the reduce prompts are a large share of all input).
    """
    rt = make_runtime(counting_model(), context_tokens=4000, max_output_tokens=500, estimate_answer_tokens=15)
    found, done = estimate_and_run(rt, document(), "full-chunked")
    assert found.reduce_levels_max >= 1 and found.reduce_calls_max > 2
    assert (done.reduce_level, done.reduce_tree) == (0, [[done.chunks_total]])
    assert_matches(found, done)


def test_long_answers_reduce_in_groups_by_their_real_size(make_runtime) -> None:
    """~230-token answers do not all fit one 4k reduce call: a level of groups, as the estimate at that size says."""
    notes = " ".join(f"request {i} served in {i % 97} ms;" for i in range(40))
    rt = make_runtime(counting_model(misses=notes), context_tokens=4000, max_output_tokens=500)
    rt.settings = rt.settings.model_copy(update={"estimate_answer_tokens": count_tokens(notes, "o200k_base") + 6})
    found, done = estimate_and_run(rt, document(), "full-chunked")
    assert (
        done.reduce_level == 1 and len(done.reduce_tree[0]) >= 2 and done.reduce_tree[1] == [len(done.reduce_tree[0])]
    )
    assert_matches(found, done, calls_off=1)  # the needle's answer is shorter than the others


def test_answers_that_find_nothing_take_no_room(make_runtime) -> None:
    """Every chunk but the needle's says NO RELEVANT DATA FOUND: the needle's answer is the job's, no reduce call."""
    rt = make_runtime(counting_model(misses="NO RELEVANT DATA FOUND\nOnly filler lines."), max_output_tokens=100)
    found, done = estimate_and_run(rt, document(), "full-chunked")
    assert done.chunks_total > 20 and NEEDLE in done.result and done.reduce_tree == []
    assert (done.usage.calls, found.calls_max) == (done.chunks_total, done.chunks_total + 1)
    assert_within_bounds(found, done)


def test_a_realistic_window_needs_no_answer_size_hint(make_runtime) -> None:
    """At a 32k window each map holds ~30k tokens: the default answer assumption (1000 tokens) hardly matters."""
    rt = make_runtime(counting_model(), context_tokens=32_000, max_output_tokens=1_000)
    data = (document().decode() * 6).encode()
    found, done = estimate_and_run(rt, data, "full-chunked")
    assert done.chunks_total >= 4
    assert_matches(found, done)


def test_one_chunk_is_one_call(make_runtime) -> None:
    rt = make_runtime(counting_model(), context_tokens=128_000, max_output_tokens=4_096)
    found, done = estimate_and_run(rt, document(), "auto")
    assert (found.calls, found.chunks, done.usage.calls) == (1, 1, 1)
    assert_matches(found, done)


def test_read_grep_stays_within_its_estimated_bounds(make_runtime) -> None:
    rt = make_runtime(grepping_model(), context_tokens=8_000, max_output_tokens=500, agent_max_turns=4)
    found, done = estimate_and_run(rt, LOG.encode(), "read-grep")
    assert (found.basis, found.mode.value, found.calls) == ("bounds", "read-grep", 4)
    assert done.usage.calls <= found.calls_max and done.usage.input_tokens <= found.input_tokens_max


def test_truncate_costs_nothing(make_runtime) -> None:
    rt = make_runtime(counting_model())
    found, done = estimate_and_run(rt, document(), "truncate")
    assert (found.calls, found.input_tokens, found.cost_usd) == (0, 0, 0.0) == (done.usage.calls, 0, 0.0)


@pytest.mark.parametrize("context_tokens", [4_096, 128_000])
def test_every_job_on_a_document_plans_the_same_chunks(make_runtime, context_tokens: int) -> None:
    """The plan no longer depends on the job's nonce: twenty jobs, one plan (and the estimate's)."""
    rt = make_runtime(counting_model(), context_tokens=context_tokens, max_output_tokens=96)
    data = (document().decode() * (8 if context_tokens > 10_000 else 1)).encode()
    output = store_output(rt, data)
    plans = {
        tuple(c.end for c in context.start(rt, submit(rt, output, REQUEST, "full-chunked").id).parts) for _ in range(20)
    }
    found = estimate_extraction(
        output,
        REQUEST,
        "full-chunked",
        settings=rt.settings,
        blobs=rt.blobs,
        records=rt.records,
        limits=rt.limits,
        price=lambda *_: None,
    )
    assert len(plans) == 1 and len(next(iter(plans))) == found.chunks
    budget = context.chunk_budget_for(rt, context.load(rt, submit(rt, output, REQUEST, "full-chunked").id))
    fresh = plan_fresh(rt.blobs, output, budget, rt.settings.chunk_overlap)  # the jobs after the first read it kept
    assert plans == {tuple(c.end for c in fresh)}


def test_the_job_records_the_model_its_usage_is_counted_under(make_runtime) -> None:
    rt = make_runtime(counting_model(), context_tokens=128_000)
    output = store_output(rt, document())
    job = submit(rt, output, REQUEST, "auto")
    rt.jobs.records.update(job.id, model="openai/gpt-4o-mini")
    LocalDispatcher(rt).run(job.id)
    [total] = rt.jobs.accounting.usage_totals()
    assert (total.tenant, total.model, total.usage) == ("dev", "openai/gpt-4o-mini", rt.jobs.records.get(job.id).usage)


def test_the_estimate_adds_the_hedge_budget_at_its_worst_unless_the_request_turns_hedging_off(make_runtime) -> None:
    rt = make_runtime(counting_model(), context_tokens=4000, max_output_tokens=100, hedge_enabled=True)
    output = store_output(rt, document())

    def estimate(hedge: bool) -> ExtractionEstimate:
        return estimate_extraction(
            output, REQUEST, "full-chunked", settings=rt.settings, blobs=rt.blobs, records=rt.records,
            limits=rt.limits, price=lambda _model, tokens, _out: tokens / 1e6, hedge=hedge,
        )  # fmt: skip

    hedged, plain = estimate(True), estimate(False)
    assert hedged.hedge_calls_max == -(-(hedged.chunks + 1) // 10)  # 10 % of the maps and a reduce, rounded up
    per_call = -(-hedged.input_tokens_max // hedged.calls_max)
    assert hedged.hedge_input_tokens_max == hedged.hedge_calls_max * per_call
    assert hedged.hedge_cost_usd_max == pytest.approx(hedged.hedge_input_tokens_max / 1e6)
    assert (plain.hedge_calls_max, plain.hedge_input_tokens_max, plain.calls) == (0, 0, hedged.calls)
