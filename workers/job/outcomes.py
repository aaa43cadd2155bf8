"""How a job ends: with a report, with the truncate fallback, or failed. Decided here and nowhere else."""

from __future__ import annotations

import logging
from typing import Any

from extraction.errors import ToolOutError
from extraction.strategies.coverage import coverage_warning
from extraction.strategies.truncate import fallback_text, read_sizes, truncate_head_tail
from extraction.texts.report import FinalReport
from extraction.texts.results import abstract_text, failed_text, not_found_abstract, unknown_handle_text
from infra.outputs.content import read_content
from infra.stores.jobs import JobRecord, JobStatus
from infra.stores.records import OutputRecord
from workers.job import trace
from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers")


def finish_with_report(rt: Runtime, job: JobRecord, report: FinalReport, mode_used: str, **fields: Any) -> bool:
    """A real final report: ABSTRACT text (a not-found report is a success that says what was searched).

    When parts of a map-reduce job could not be read (`job.failed_ranges`), the abstract opens with
    the WARNING that names them: the answer is partial and the agent must know which part is missing.
    `fields` are set on the job with its ending (the reduce tree it ran).
    """
    body = report.content if report.found else not_found_abstract(job.extract, _not_found_detail(report.content))
    warning = coverage_warning(job.failed_ranges, job.chunks_total)
    text = abstract_text(job.tool_name, job.handle, mode_used, f"{warning}\n\n{body}" if warning else body)
    report_fields = {"content": report.content, "found": report.found}
    return rt.jobs.finish(job.id, JobStatus.SUCCEEDED, result=text, report=report_fields, mode_used=mode_used, **fields)


def _not_found_detail(content: str) -> str:
    return content.partition("\n")[2].strip()


def finish_truncate(rt: Runtime, job: JobRecord, output: OutputRecord) -> bool:
    """Truncate mode asked for (or routed to): the same view as the fallback, without the WARNING."""
    text = abstract_text(job.tool_name, job.handle, "truncate", truncated_view(rt, output))
    return rt.jobs.finish(job.id, JobStatus.SUCCEEDED, result=text, mode_used="truncate")


def finish_unknown_handle(rt: Runtime, job: JobRecord) -> bool:
    """The output vanished (deleted, expired) between submission and execution."""
    return rt.jobs.finish(job.id, JobStatus.SUCCEEDED, result=unknown_handle_text(job.handle, job.tool_name))


def fall_back_to_truncate(rt: Runtime, job: JobRecord, output: OutputRecord, reason: str) -> bool:
    """The strategy could not execute: answer with the top and bottom of the output and a WARNING.

    A job that already ended (canceled, or finished by a twin task) keeps its ending: nothing is read or logged.
    """
    if rt.jobs.is_terminal(job.id):
        return False
    log.warning("job %s: falling back to truncate: %s", job.id, reason)
    trace.note(rt, job.id, trace.fallback_event(reason))
    try:
        body = fallback_text(reason, truncated_view(rt, output))
    except ToolOutError as exc:
        return fail(rt, job, f"{reason}; the truncate fallback failed too: {exc.message}", mode_used="truncate")
    text = abstract_text(job.tool_name, job.handle, "truncate", body)
    return rt.jobs.finish(
        job.id, JobStatus.SUCCEEDED, result=text, mode_used="truncate", fallback_reason=reason, error=reason
    )


def truncated_view(rt: Runtime, output: OutputRecord) -> str:
    """Top and bottom halves of the byte budget, read with two ranged reads."""
    head_size, tail_size = read_sizes(rt.settings.truncate_bytes)
    size = output.stats.bytes
    head = read_content(rt.blobs, output, 0, head_size)
    tail = read_content(rt.blobs, output, max(head_size, size - tail_size), size)
    return truncate_head_tail(head, tail, size, rt.settings.truncate_bytes)


def give_up_overdue(rt: Runtime, job: JobRecord) -> bool:
    """The watchdog found the job past its deadline on its last attempt: fail it, saying why."""
    error = (
        f"the job did not finish within its deadline ({rt.settings.job_deadline_seconds}s per attempt) after "
        f"{job.attempts} attempt(s); its tasks were lost or its workers died"
    )
    log.error("job %s: %s", job.id, error)
    return fail(rt, job, error)


def give_up_poisoned(rt: Runtime, job_id: str, step: str, runs: int) -> bool:
    """A task message of the job started its step `runs` times and its worker died each time (the broker hands
    out again what a dead worker held): the job fails naming the step, which is not run again. Not the
    truncate fallback: that would read the same output on the same workers, and what kills a worker is a
    fault to see (a bug, a hostile input past the sandbox, a worker too small), not a strategy's outcome."""
    error = f"the {step} step was started {runs} times and each time its worker died before it ended; not retried"
    log.error("job %s: %s", job_id, error)
    return fail(rt, rt.jobs.get(job_id), error)


def fail(rt: Runtime, job: JobRecord, error: str, *, mode_used: str | None = None) -> bool:
    mode = mode_used or job.mode_used or job.mode_requested
    text = failed_text(job.tool_name, job.handle, mode, error)
    return rt.jobs.finish(job.id, JobStatus.FAILED, result=text, error=error, mode_used=mode)
