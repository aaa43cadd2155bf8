"""The embedded mode: the service's pipeline in one process, with the in-memory stores and a thread pool."""

from __future__ import annotations

import threading

from extraction.protocols import LLMReply
from extraction.strategies.mapreduce import ModelLimits
from extraction.testing import ScriptedLLM
from infra.stores.jobs import JobStatus, new_job
from tests.workers.conftest import CHUNK_NOTES, needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from tests.workers.job.test_read_grep import LOG, grepping_model
from toolout.local import LocalToolOut, extract

SMALL = ModelLimits(context_tokens=4000, max_output_tokens=500)
SHORT_ANSWERS = ModelLimits(context_tokens=4000, max_output_tokens=100)
"""Answers of at most 100 tokens: the ~25 map outputs fit one reduce call (the reduce tree is planned for
full-length answers), so the job is its maps plus one final reduce."""


def test_extract_runs_map_reduce_over_many_chunks_and_finds_the_needle() -> None:
    llm = needle_model(NEEDLE, misses=CHUNK_NOTES)  # every chunk answers something: the answers are reduced
    result = extract(document(), "database pool errors", "full-chunked", llm=llm, limits=SHORT_ANSWERS)
    job = result.job
    assert job.status is JobStatus.SUCCEEDED and job.mode_used == "full-chunked"
    assert job.chunks_total > 10 and job.chunks_done == job.chunks_total
    assert result.text == job.result and result.text.startswith("ABSTRACT FROM TOOL OUTPUT unknown WITH HANDLE ")
    assert NEEDLE in result.text and job.usage.calls == job.chunks_total + 1


def test_read_grep_runs_the_sub_agent() -> None:
    with LocalToolOut(llm=grepping_model(), limits=SMALL) as local:
        stored = local.store(LOG, tool_name="logs.fetch", tool_args='{"service": "billing"}')
        result = local.extract(stored.handle, "connection pool incidents")
    assert stored.oversized and stored.message.startswith(f"Tool output is too large ({len(LOG)} bytes,")
    assert result.job.mode_used == "read-grep" and result.job.routing_reason.startswith("auto:")
    assert "ERROR billing: connection pool exhausted" in result.text
    assert result.text.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {stored.handle}, STRATEGY:read-grep:"
    )


def test_a_small_output_is_not_oversized_and_truncate_mode_needs_no_model() -> None:
    with LocalToolOut(llm=ScriptedLLM(lambda m, t: LLMReply(content="unused")), limits=SMALL) as local:
        stored = local.store("a short tool output\n")
        result = local.extract(stored.handle, "anything", "truncate")
    assert (stored.oversized, stored.message) == (False, None)
    framed, _, sources = result.text.rpartition("\n\n")  # the answer, then the lines it shows
    assert result.job.mode_used == "truncate" and framed.endswith("a short tool output\n")
    assert sources == "SOURCES: L1"
    assert result.job.usage.calls == 0


def test_a_step_that_breaks_ends_the_job_failed_instead_of_leaving_it_live() -> None:
    def explode(messages, tools):
        raise RuntimeError("provider SDK bug")

    result = extract(document(), "errors", "full-chunked", llm=ScriptedLLM(explode), limits=SMALL)
    assert result.job.status is JobStatus.FAILED and "RuntimeError: provider SDK bug" in result.job.error
    assert result.text.startswith("TOOL_OUTPUT FAILED FOR unknown WITH HANDLE ")


def test_jobs_run_in_parallel_on_the_dispatcher() -> None:
    both_in_flight = threading.Barrier(2, timeout=10)
    inner = needle_model(NEEDLE)

    def respond(messages, tools):
        both_in_flight.wait()  # each job's single map call waits for the other's: only concurrency passes
        return inner.complete(messages, tools=tools)

    with LocalToolOut(
        llm=ScriptedLLM(respond), limits=ModelLimits(context_tokens=128_000, max_output_tokens=500)
    ) as local:
        handles = [local.store(f"{NEEDLE}\nfiller {i}\n").handle for i in range(2)]
        outputs = [local.stores.records.outputs.get_output(h) for h in handles]
        jobs = [local.stores.jobs.records.create(new_job(output, "errors", "full-chunked")) for output in outputs]
        futures = [local.dispatcher.start(job.id) for job in jobs]
        for future in futures:
            future.result(timeout=30)
        assert all(local.stores.jobs.records.get(job.id).status is JobStatus.SUCCEEDED for job in jobs)
