"""How a job ends (`workers.job.outcomes`): every ending's exact text and record; an ended job keeps its ending."""

from __future__ import annotations

import pytest

from extraction.protocols import LLMReply
from extraction.testing import ScriptedLLM
from extraction.texts.report import FinalReport
from infra.stores.jobs import JobStatus
from tests.workers.conftest import store_output, submit
from workers.job import outcomes

pytestmark = pytest.mark.twin(
    "how a job ends (report, fallback, deadline) in the job store; blob reads go through the contract-tested BlobStore"
)

DATA = "".join(f"line {i}: status ok\n" for i in range(400)).encode()


def idle_model() -> ScriptedLLM:
    return ScriptedLLM(lambda messages, tools: LLMReply(content="never asked"))


def ended(make_runtime, data: bytes = DATA):
    rt = make_runtime(idle_model())
    output = store_output(rt, data)
    return rt, output, submit(rt, output, "errors")


def header(output, strategy: str) -> str:
    return f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:{strategy}:\n\n"


def test_a_report_becomes_the_abstract(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    assert outcomes.finish_with_report(
        rt, job, FinalReport(content="3 errors at 10:02", found=True, closed=True), "read-grep"
    )
    done = rt.jobs.records.get(job.id)
    assert (done.status, done.mode_used, done.report) == (
        JobStatus.SUCCEEDED,
        "read-grep",
        {"content": "3 errors at 10:02", "found": True},
    )
    assert done.result == header(output, "read-grep") + "3 errors at 10:02"


def test_not_found_is_a_success_that_says_what_was_searched(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    report = FinalReport(content="NO RELEVANT DATA FOUND\nOnly status lines.", found=False, closed=True)
    outcomes.finish_with_report(rt, job, report, "full-chunked")
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED
    assert done.result == header(output, "full-chunked") + (
        "NO RELEVANT DATA FOUND\n\nSearched for: errors\n\nWhat the document contains instead: Only status lines."
    )


def test_the_fallback_shows_top_and_bottom_with_the_warning(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    assert outcomes.fall_back_to_truncate(rt, job, output, "chunk 2 of 5 failed: no final report")
    done = rt.jobs.records.get(job.id)
    assert (done.status, done.mode_used, done.fallback_reason, done.error) == (
        JobStatus.SUCCEEDED,
        "truncate",
        "chunk 2 of 5 failed: no final report",
        "chunk 2 of 5 failed: no final report",
    )
    body = done.result.removeprefix(header(output, "truncate"))
    assert body.startswith(
        "WARNING: tool_output fallback to truncate (chunk 2 of 5 failed: no final report).\n\nline 0:"
    )
    view, _, sources = body.rstrip().rpartition("\n\n")
    assert "bytes truncated" in view and view.rstrip().endswith("line 399: status ok")
    assert sources.startswith("SOURCES: L1-L") and "not read: L" in sources


def test_an_ended_job_keeps_its_ending(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    rt.jobs.records.cancel(job.id)
    assert not outcomes.fall_back_to_truncate(rt, job, output, "late failure")
    assert not outcomes.finish_with_report(rt, job, FinalReport(content="late", found=True, closed=True), "read-grep")
    assert not outcomes.fail(rt, job, "late error")
    done = rt.jobs.records.get(job.id)
    assert (done.status, done.result, done.fallback_reason) == (JobStatus.CANCELED, None, None)


def test_a_fallback_that_cannot_read_the_output_fails_the_job(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    rt.blobs.delete(output.blob_key)
    assert outcomes.fall_back_to_truncate(rt, job, output, "reduce failed: timeout")
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.FAILED and done.mode_used == "truncate"
    assert done.error.startswith("reduce failed: timeout; the truncate fallback failed too:")
    assert done.result.startswith(
        f"TOOL_OUTPUT FAILED FOR logs.fetch WITH HANDLE {output.handle}, STRATEGY:truncate:\n\n"
    )


def test_an_overdue_job_is_failed_with_its_deadline_and_attempts(make_runtime) -> None:
    rt, _, job = ended(make_runtime)
    assert outcomes.give_up_overdue(rt, rt.jobs.records.get(job.id))
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.FAILED and done.mode_used == "auto"
    assert done.error == (
        "the job did not finish within its deadline (1800s per attempt) after 1 attempt(s); "
        "its tasks were lost or its workers died"
    )


def test_a_vanished_output_answers_with_the_unknown_handle_text(make_runtime) -> None:
    rt, output, job = ended(make_runtime)
    assert outcomes.finish_unknown_handle(rt, job)
    done = rt.jobs.records.get(job.id)
    assert done.status is JobStatus.SUCCEEDED and output.handle in done.result and "No tool output" in done.result
