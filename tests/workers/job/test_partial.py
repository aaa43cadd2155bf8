"""Degrade, don't sink: a part that cannot be read is named in the answer, not fatal to the job.

Every rule on the in-memory twins with a scripted model: which failures are a part's, settled once
however often a task is delivered, the limit past which the job falls back, empty answers, groups.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from extraction.protocols import LLMReply, Message, Usage
from extraction.testing import ScriptedLLM
from infra.errors import LLMCallError
from infra.stores.jobs import JobStatus
from tests.workers.conftest import CHUNK_NOTES, NONCE_RE, needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from workers.job import context, pipeline
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin(
    "which parts fail and how often, with a scripted model; blob reads go through the contract-tested BlobStore"
)

INDEX_RE = re.compile(r"^- Index: (\d+) of (\d+)$", re.M)
Fault = Callable[[list[Message]], LLMReply | None]


def chunk_number(messages: list[Message]) -> int | None:
    """The 1-based chunk a map call is about (None for a reduce call)."""
    match = INDEX_RE.search(str(messages[0]["content"]))
    return int(match.group(1)) if match else None


def is_reduce(messages: list[Message]) -> bool:
    return "CHUNK OUTPUTS" in str(messages[0]["content"])


def wrapped(messages: list[Message], body: str) -> LLMReply:
    nonce = NONCE_RE.search(str(messages[0]["content"])).group(1)
    return LLMReply(
        content=f'<ai-agent-{nonce}-FINAL format="text">{body}</ai-agent-{nonce}-FINAL>', usage=Usage(calls=1)
    )


def no_wrapper(messages: list[Message]) -> LLMReply:
    return LLMReply(content="Sure, here is what I found: nothing in a wrapper.", usage=Usage(calls=1))


def provider_down(messages: list[Message]) -> LLMReply:
    raise LLMCallError("model call failed (InternalServerError): litellm.InternalServerError: boom", retryable=True)


def faulty(fault: Fault, *, inner: ScriptedLLM | None = None) -> ScriptedLLM:
    """`inner` answers, except where `fault` returns a reply (or raises) first. By default the needle model
    with every chunk answering something (`CHUNK_NOTES`), so the maps are followed by a reduce."""
    inner = inner or needle_model(NEEDLE, misses=CHUNK_NOTES)

    def respond(messages, tools):
        return fault(messages) or inner.complete(messages, tools=tools)

    return ScriptedLLM(respond)


def on_chunks(numbers: set[int], reply: Callable[[list[Message]], LLMReply]) -> Fault:
    return lambda messages: reply(messages) if chunk_number(messages) in numbers else None


def model_calls(job) -> int:
    """Calls counted per model on the job (`JobAccounting.count_model_call`), whatever became of them."""
    return sum(usage.calls for usage in job.model_usage.values())


def calls_for_chunk(rt, number: int) -> int:
    return sum(1 for call in rt.llm.calls if chunk_number(call["messages"]) == number)


ONE_REDUCE_OUTPUT_TOKENS = 100
"""Answers of at most 100 tokens: the ~22 map outputs fit one reduce call even at full length, so the
maps are followed by one final reduce."""


def run(make_runtime, fault: Fault, *, extract: str = "database pool errors", **settings):
    settings.setdefault("max_output_tokens", ONE_REDUCE_OUTPUT_TOKENS)
    rt = make_runtime(faulty(fault), context_tokens=4000, **settings)
    output = store_output(rt, document())
    job = submit(rt, output, extract, mode="full-chunked")
    drive(rt, job.id)
    return rt, output, rt.jobs.records.get(job.id)


def plan(rt, job_id: str):
    return {chunk.index: chunk for chunk in context.start(rt, job_id).parts}


# --- one bad chunk ------------------------------------------------------------------------------
def test_one_chunk_without_a_wrapper_twice_is_named_and_the_rest_is_answered(make_runtime) -> None:
    rt, output, done = run(make_runtime, on_chunks({3}, no_wrapper))
    failed = done.failed_ranges[0]
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and done.fallback_reason is None
    assert (done.chunks_failed, done.chunks_done) == (1, done.chunks_total - 1)
    assert (failed.level, failed.index, failed.chunks) == (0, 2, [2]) and calls_for_chunk(rt, 3) == 2
    assert failed.reason == (
        'no valid final report after 2 attempt(s): no final-report wrapper <ai-agent-NONCE-FINAL format="text"> '
        "in the reply"
    ), "the job's nonce is never shown to clients"
    header = f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:full-chunked:\n\n"
    assert done.result.startswith(
        f"{header}WARNING: 1 of {done.chunks_total} chunks could not be read (bytes {failed.start:,}-"
        f"{failed.end - 1:,}: no valid final report after 2 attempt(s)); the answer below does not cover it.\n\n"
    )
    assert NEEDLE in done.result
    assert done.usage.calls == len(rt.llm.calls), "the failed attempts are charged too"
    assert model_calls(done) == len(rt.llm.calls), "and counted per model, though no output took them"


def test_the_named_range_is_the_failed_chunks_own(make_runtime) -> None:
    rt = make_runtime(faulty(on_chunks({3}, no_wrapper)), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    chunk = plan(rt, job.id)[2]
    drive(rt, job.id)
    failed = rt.jobs.records.get(job.id).failed_ranges
    assert [(f.start, f.end) for f in failed] == [(chunk.start, chunk.end)]


def test_a_provider_error_after_litellms_retries_fails_only_its_chunk(make_runtime) -> None:
    rt, _, done = run(make_runtime, on_chunks({5}, provider_down))
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and NEEDLE in done.result
    assert calls_for_chunk(rt, 5) == 1, "litellm already retried: no wrapper retry for a provider error"
    assert done.failed_ranges[0].reason.startswith("model call failed (InternalServerError)")
    assert ": model call failed (InternalServerError)); the answer below" in done.result


def test_a_bad_first_reply_that_the_retry_fixes_is_no_failure(make_runtime) -> None:
    seen: set[int] = set()

    def once(messages):
        number = chunk_number(messages)
        if number == 4 and number not in seen:
            seen.add(number)
            return no_wrapper(messages)
        return None

    rt, _, done = run(make_runtime, once)
    assert done.chunks_failed == 0 and done.failed_ranges == [] and "WARNING" not in done.result
    assert calls_for_chunk(rt, 4) == 2
    assert model_calls(done) == len(rt.llm.calls), "the bad first reply counted with the output its retry wrote"


# --- empty answers --------------------------------------------------------------------------------
def test_an_empty_wrapper_from_a_map_means_nothing_relevant_there_and_is_not_retried(make_runtime) -> None:
    rt, _, done = run(make_runtime, on_chunks({2}, lambda m: wrapped(m, "")))
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and "WARNING" not in done.result
    assert (done.chunks_failed, done.chunks_done) == (0, done.chunks_total) and calls_for_chunk(rt, 2) == 1
    reduce_prompt = next(call["messages"] for call in rt.llm.calls if is_reduce(call["messages"]))
    assert reduce_prompt[1]["content"].startswith(f"Synthesize the {done.chunks_total - 1} chunk outputs")


def test_an_empty_wrapper_on_every_map_is_no_relevant_data_without_a_reduce_call(make_runtime) -> None:
    rt, output, done = run(make_runtime, lambda m: wrapped(m, "   "), extract="kernel panics")
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and done.report["found"] is False
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:full-chunked:\n\n"
        "NO RELEVANT DATA FOUND\n\nSearched for: kernel panics\n\nWhat the document contains instead: "
    )
    assert not any(is_reduce(call["messages"]) for call in rt.llm.calls)
    assert len(rt.llm.calls) == done.chunks_total == done.chunks_done


def test_an_empty_final_reduce_is_no_relevant_data(make_runtime) -> None:
    rt, _, done = run(make_runtime, lambda m: wrapped(m, "") if is_reduce(m) else None, extract="pool errors")
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and done.report["found"] is False
    assert "\n\nNO RELEVANT DATA FOUND\n\nSearched for: pool errors\n\n" in done.result
    assert sum(is_reduce(call["messages"]) for call in rt.llm.calls) == 1, "an empty answer is not retried"


# --- the limit --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("failing", "answered"), [(5, True), (6, False)])
def test_exactly_the_allowed_share_failing_is_still_answered_and_one_more_is_not(
    make_runtime, failing: int, answered: bool
) -> None:
    rt = make_runtime(faulty(on_chunks(set(range(1, failing + 1)), no_wrapper)), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    total = len(plan(rt, job.id))  # the plan depends on the job's nonce: set the limit from this job's own
    rt.settings = rt.settings.model_copy(update={"max_failed_chunk_fraction": 5 / total})
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.chunks_total == total and done.chunks_failed == failing
    if answered:
        assert done.mode_used == "full-chunked"
        assert done.result.split("\n\n")[1].startswith(f"WARNING: 5 of {total} chunks could not be read (bytes 0-")
    else:
        assert done.mode_used == "truncate" and done.fallback_reason.startswith(f"6 of {total} chunks")


def test_past_the_limit_the_job_falls_back_at_once_and_later_chunks_make_no_call(make_runtime) -> None:
    rt, _, done = run(make_runtime, on_chunks(set(range(1, 100, 3)), no_wrapper))  # every third chunk: > 25%
    over = done.chunks_total // 4 + 1
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "truncate" and done.chunks_failed == over
    assert done.fallback_reason.startswith(
        f"{over} of {done.chunks_total} chunks could not be read, more than max_failed_chunk_fraction=0.25 allows "
        "(first: chunk 1, bytes 0-"
    )
    assert "WARNING: tool_output fallback to truncate (" in done.result and NEEDLE not in done.result
    last_failed = max(part.index for part in done.failed_ranges) + 1
    assert all(chunk_number(c["messages"]) <= last_failed for c in rt.llm.calls), "the gate refused the rest"
    assert model_calls(done) == len(rt.llm.calls), "the calls of the failure that ended the job are counted"


def test_zero_tolerance_brings_back_the_old_fallback(make_runtime) -> None:
    _, _, done = run(make_runtime, on_chunks({3}, no_wrapper), max_failed_chunk_fraction=0.0)
    assert done.mode_used == "truncate" and done.fallback_reason.startswith("1 of ")


def test_a_spent_call_budget_is_still_a_job_level_fallback(make_runtime) -> None:
    _, _, done = run(make_runtime, lambda m: None, max_llm_calls_per_job=3)
    assert done.mode_used == "truncate" and done.chunks_failed == 0
    assert "LLM call budget is spent" in done.fallback_reason


def test_a_final_reduce_that_cannot_run_falls_back_with_the_warning(make_runtime) -> None:
    rt, _, done = run(make_runtime, lambda m: no_wrapper(m) if is_reduce(m) or chunk_number(m) == 2 else None)
    assert done.mode_used == "truncate" and done.fallback_reason.startswith("reduce failed: no valid final report")
    assert done.chunks_failed == 1, "the chunk that failed before stays on the record"
    assert sum(is_reduce(call["messages"]) for call in rt.llm.calls) == 2, "the final reduce was retried once"


# --- settled once -----------------------------------------------------------------------------------
def test_a_redelivered_failed_chunk_makes_no_call_and_counts_nothing_even_if_the_model_now_answers(
    make_runtime,
) -> None:
    """Rule: a part's first outcome is final. A chunk that failed and is delivered again (a redelivery, the
    watchdog's re-submission) is not asked again, so the answer and its WARNING always describe the same parts."""
    healthy = {"now": False}
    rt = make_runtime(faulty(lambda m: None if healthy["now"] else on_chunks({3}, no_wrapper)(m)), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    chunk = plan(rt, job.id)[2]
    pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    healthy["now"] = True
    calls = len(rt.llm.calls)
    pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    record = rt.jobs.records.get(job.id)
    assert len(rt.llm.calls) == calls == 2
    assert (record.chunks_failed, record.chunks_done, len(record.failed_ranges), record.usage.calls) == (1, 0, 1, 2)
    assert rt.jobs.accounting.failed_chunk_counts()["map"] == 1


def test_a_job_resubmitted_by_the_watchdog_keeps_its_failures_and_counts_them_once(make_runtime) -> None:
    """The maps ran (chunk 3 failed) but the chord body was lost; the re-submitted job asks no map again."""
    healthy = {"now": False}
    fault = faulty(lambda m: None if healthy["now"] else on_chunks({3}, no_wrapper)(m))
    rt = make_runtime(fault, context_tokens=4000, max_output_tokens=ONE_REDUCE_OUTPUT_TOKENS)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    for chunk in context.start(rt, job.id).parts:
        pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    maps = len(rt.llm.calls)
    healthy["now"] = True
    drive(rt, job.id)  # what the watchdog's re-submission runs
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and NEEDLE in done.result
    assert len(rt.llm.calls) == maps + 1, "only the final reduce was asked"
    assert (done.chunks_failed, len(done.failed_ranges), rt.jobs.accounting.failed_chunk_counts()["map"]) == (1, 1, 1)
    assert "WARNING: 1 of " in done.result and done.usage.calls == len(rt.llm.calls)


def test_a_cancel_between_attempts_is_no_failure(make_runtime) -> None:
    def cancel_then_no_wrapper(messages):
        if chunk_number(messages) == 1:
            rt.jobs.records.cancel(job.id)
            return no_wrapper(messages)
        return None

    rt = make_runtime(faulty(cancel_then_no_wrapper), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    chunk = plan(rt, job.id)[0]
    pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    done = rt.jobs.records.get(job.id)
    assert (
        done.status is JobStatus.CANCELED
        and done.chunks_failed == 0
        and rt.jobs.accounting.failed_chunk_counts()["map"] == 0
    )


# --- the same steps in process ----------------------------------------------------------------------
def test_the_local_dispatcher_degrades_the_same_way(make_runtime) -> None:
    """Chunk boundaries depend on the job's nonce (it is part of the measured prompt), so each job is
    checked against its own plan."""
    rt = make_runtime(faulty(on_chunks({3}, no_wrapper)), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    chunk = plan(rt, job.id)[2]
    dispatcher = LocalDispatcher(rt, concurrency=4)
    try:
        dispatcher.start(job.id).result(timeout=30)
    finally:
        dispatcher.close()
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and NEEDLE in done.result
    assert [(f.index, f.start, f.end) for f in done.failed_ranges] == [(2, chunk.start, chunk.end)]
    assert done.result.split("\n\n")[1] == (
        f"WARNING: 1 of {done.chunks_total} chunks could not be read (bytes {chunk.start:,}-{chunk.end - 1:,}: "
        "no valid final report after 2 attempt(s)); the answer below does not cover it."
    )


# --- reduce groups ----------------------------------------------------------------------------------
SUMMARY_RE = re.compile(r"chunk (\d+) summary|saw chunk (\d+)")


def summarising_model(fault: Fault) -> ScriptedLLM:
    """Map answers of ~500 tokens (so a small context needs a recursive reduce); a reduce names the chunks it saw."""

    def respond(messages, tools):
        if (reply := fault(messages)) is not None:
            return reply
        number = chunk_number(messages)
        if number is not None:
            return wrapped(messages, f"chunk {number} summary: " + "word " * 500)
        seen = sorted({int(a or b) for a, b in SUMMARY_RE.findall(str(messages[0]["content"]))})
        return wrapped(messages, "\n".join(f"saw chunk {n}" for n in seen))

    return ScriptedLLM(respond)


def group_holding(number: int) -> Callable[[list[Message]], bool]:
    return lambda m: is_reduce(m) and f"chunk {number} summary:" in str(m[0]["content"])


def run_groups(make_runtime, fault: Fault, **settings):
    rt = make_runtime(summarising_model(fault), context_tokens=4000, max_output_tokens=500, **settings)
    job = submit(rt, store_output(rt, document()), "summaries", mode="full-chunked")
    chunks = plan(rt, job.id)
    drive(rt, job.id)
    return rt, chunks, rt.jobs.records.get(job.id)


def test_a_failing_reduce_group_is_retried_once_then_named_by_its_chunks(make_runtime) -> None:
    fails = group_holding(7)
    rt, chunks, done = run_groups(make_runtime, lambda m: no_wrapper(m) if fails(m) else None)
    [group] = done.failed_ranges
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "full-chunked" and done.reduce_level == 1
    assert sum(fails(call["messages"]) for call in rt.llm.calls) == 2, "the group was asked twice"
    assert group.level == 1 and 6 in group.chunks and group.chunks == list(range(group.chunks[0], group.chunks[-1] + 1))
    assert (group.start, group.end) == (chunks[group.chunks[0]].start, chunks[group.chunks[-1]].end)
    assert 1 < len(group.chunks) <= done.chunks_total // 4 and done.chunks_failed == len(group.chunks)
    first, last = group.chunks[0] + 1, group.chunks[-1] + 1
    assert done.result.split("\n\n")[1] == (
        f"WARNING: {len(group.chunks)} of {done.chunks_total} chunks could not be read (bytes {group.start:,}-"
        f"{group.end - 1:,} (chunks {first}-{last}, reduce group {group.index + 1} of level 1): no valid final "
        "report after 2 attempt(s)); the answer below does not cover them."
    )
    answered = {int(n) for n in re.findall(r"saw chunk (\d+)", done.result)}
    assert answered == set(range(1, done.chunks_total + 1)) - set(range(first, last + 1))
    assert rt.jobs.accounting.failed_chunk_counts() == {"map": 0, "reduce": len(group.chunks)}


def test_a_chunk_lost_at_the_map_is_not_counted_again_by_its_failing_group(make_runtime) -> None:
    group_fails = group_holding(7)

    def fault(messages):
        return no_wrapper(messages) if chunk_number(messages) == 8 or group_fails(messages) else None

    _, _, done = run_groups(make_runtime, fault, max_failed_chunk_fraction=0.5)
    chunk, group = sorted(done.failed_ranges, key=lambda part: part.level)
    assert (chunk.level, chunk.chunks) == (0, [7]) and 7 not in group.chunks and 6 in group.chunks
    assert done.chunks_failed == 1 + len(group.chunks) and done.mode_used == "full-chunked"


def test_a_failing_group_over_the_limit_falls_back(make_runtime) -> None:
    fails = group_holding(7)
    _, _, done = run_groups(make_runtime, lambda m: no_wrapper(m) if fails(m) else None, max_failed_chunk_fraction=0.1)
    assert done.mode_used == "truncate" and done.fallback_reason.startswith(
        f"{done.chunks_failed} of {done.chunks_total} chunks could not be read, more than "
        "max_failed_chunk_fraction=0.1 allows (first: bytes "
    )
