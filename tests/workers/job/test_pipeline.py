"""Full-chunked map-reduce, step by step, as the Celery tasks drive it."""

from __future__ import annotations

import pytest

from extraction.protocols import LLMReply, Usage
from extraction.testing import ScriptedLLM
from extraction.texts.results import unknown_handle_text
from infra.stores.jobs import JobStatus
from tests.workers.conftest import needle_model, store_output, submit
from workers.job import context, pipeline
from workers.job.steps import Fanout, Map, ReadGrep

pytestmark = pytest.mark.twin(
    "map-reduce steps with a scripted model; the same jobs run on file:// and S3 in tests/integration (stack)"
)

FILLER = "".join(f"2026-11-01T00:00:{i % 60:02d}Z INFO request {i} served in {i % 97} ms\n" for i in range(3000))
NEEDLE = "ERROR db pool exhausted on billing-7"


def document() -> bytes:
    half = len(FILLER) // 2
    return (FILLER[:half] + NEEDLE + "\n" + FILLER[half:]).encode()


def drive(rt, job_id: str) -> None:
    """Run every step the way the Celery tasks would, one part after the other, until the job has no next step."""
    step = context.start(rt, job_id)
    while step is not None:
        if not isinstance(step, Fanout):
            raise AssertionError(f"unexpected step {step}")
        for part in step.parts:
            if isinstance(part, Map):
                pipeline.run_map(rt, job_id, part.index, part.start, part.end)
            else:
                pipeline.run_reduce_group(rt, job_id, part.level, part.group, part.members, part.cover)
        step = pipeline.run_reduce_stage(rt, job_id, step.then.level, step.then.covers)


def test_full_chunked_finds_the_needle_across_many_chunks(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    output = store_output(rt, document())
    job = submit(rt, output, "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED
    assert done.chunks_total > 10 and done.chunks_done == done.chunks_total
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:full-chunked:\n\n"
    )
    assert NEEDLE in done.result
    assert done.usage.calls == len(rt.llm.calls) and done.usage.input_tokens == 100 * done.usage.calls


def test_small_context_forces_a_recursive_reduce(make_runtime) -> None:
    rt = make_runtime(needle_model("INFO"), context_tokens=2600, max_output_tokens=1200)
    output = store_output(rt, document())
    job = submit(rt, output, "all INFO lines", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED, done.error
    assert done.reduce_level >= 1


def test_one_chunk_needs_no_reduce_call(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=128_000)
    output = store_output(rt, document())
    job = submit(rt, output, "database pool errors", mode="auto")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert (done.mode_used, done.chunks_total, len(rt.llm.calls)) == ("full-chunked", 1, 1)
    assert "auto" in done.routing_reason and NEEDLE in done.result


def test_not_found_is_a_success_that_says_what_was_searched(make_runtime) -> None:
    rt = make_runtime(needle_model("no such thing anywhere"), context_tokens=128_000)
    output = store_output(rt, document())
    job = submit(rt, output, "kernel panics", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and done.report["found"] is False
    assert "NO RELEVANT DATA FOUND" in done.result and "kernel panics" in done.result


def test_chunks_without_a_wrapper_are_retried_once_and_past_a_quarter_the_job_falls_back(make_runtime) -> None:
    rt = make_runtime(
        ScriptedLLM(lambda messages, tools: LLMReply(content="I think the answer is 42", usage=Usage(calls=1)))
    )
    output = store_output(rt, document())
    job = submit(rt, output, "anything", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    over = done.chunks_total // 4 + 1
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "truncate"
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:truncate:\n\n"
        f"WARNING: tool_output fallback to truncate ({over} of {done.chunks_total} chunks could not be read, "
        "more than max_failed_chunk_fraction=0.25 allows (first: chunk 1, bytes 0-"
    )
    assert done.chunks_failed == over and [part.index for part in done.failed_ranges] == list(range(over))
    assert len(rt.llm.calls) == 2 * over == done.usage.calls, "each failed chunk was asked twice, later ones never"


def test_a_redelivered_map_task_does_not_call_the_model_again(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    output = store_output(rt, document())
    job = submit(rt, output, "errors", mode="full-chunked")
    chunks = context.start(rt, job.id).parts
    first = chunks[0]
    pipeline.run_map(rt, job.id, first.index, first.start, first.end)
    pipeline.run_map(rt, job.id, first.index, first.start, first.end)
    assert len(rt.llm.calls) == 1 and rt.jobs.records.get(job.id).chunks_done == 1


def test_a_canceled_job_does_no_more_work(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    output = store_output(rt, document())
    job = submit(rt, output, "errors", mode="full-chunked")
    step = context.start(rt, job.id)
    rt.jobs.records.cancel(job.id)
    for chunk in step.parts:
        pipeline.run_map(rt, job.id, chunk.index, chunk.start, chunk.end)
    assert pipeline.run_reduce_stage(rt, job.id, 0, step.then.covers) is None
    assert rt.llm.calls == [] and rt.jobs.records.get(job.id).status is JobStatus.CANCELED


def test_explicit_truncate_keeps_top_and_bottom(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    output = store_output(rt, document())
    job = submit(rt, output, "anything", mode="truncate")
    assert context.start(rt, job.id) is None
    done = rt.jobs.records.get(job.id)
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:truncate:\n\n"
    )
    assert "WARNING" not in done.result and "bytes truncated" in done.result
    assert FILLER[:40] in done.result and rt.llm.calls == []


def test_an_output_deleted_before_the_job_runs_gives_the_unknown_handle_text(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    output = store_output(rt, document())
    job = submit(rt, output, "anything")
    rt.records.outputs.delete_output(output)
    assert context.start(rt, job.id) is None
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED
    assert done.result == unknown_handle_text(output.handle, "logs.fetch")


def test_auto_routes_a_multi_line_log_to_read_grep(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    output = store_output(rt, document())
    job = submit(rt, output, "errors", mode="auto")
    assert isinstance(context.start(rt, job.id), ReadGrep)
    record = rt.jobs.records.get(job.id)
    assert record.mode_used == "read-grep" and "auto" in record.routing_reason
