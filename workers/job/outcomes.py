"""How a job ends: with a report, with the truncate fallback, or failed; and how one of its parts fails without
ending it. Decided here and nowhere else.

A part is one chunk's map call, or one reduce group's call in a recursive reduce. When its call
still fails after its retry, the job degrades instead of sinking: the part is recorded on the job
(`JobFanIn.record_failure`, settled once like an output) and the reduce runs over the others. Only
past `max_failed_chunk_fraction` of the chunks does the job fall back to truncate.

Which failures belong to a part (`PART_FAILURES`): a reply without a valid final report after the
wrapper retry, and a provider error after litellm's own retries — both about this one call. Every
other `ExtractionError` is about the job and ends it as before: the job ended meanwhile (`JobEnded`:
not a failure at all), its LLM call budget is spent (`LLMBudgetExhausted`: no other part could call
the model either, so the truncate fallback), or a failure this list does not foresee.
"""

from __future__ import annotations

import logging
from typing import Any

from extraction.errors import ExtractionError, ReportParseError, ToolOutError
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange, coverage_warning, limit_reason, over_limit
from extraction.strategies.truncate import fallback_text, read_sizes, truncate_head_tail
from extraction.texts.report import FinalReport
from extraction.texts.results import abstract_text, failed_text, not_found_abstract, unknown_handle_text
from infra.errors import LLMCallError
from infra.outputs.content import read_content
from infra.stores.jobs import JobRecord, JobStatus, traces
from infra.stores.records import OutputRecord
from workers.job.evidence import Evidence, for_view
from workers.job.runtime import Runtime
from workers.job.steps import Cover

log = logging.getLogger("toolout.workers")

PART_FAILURES: tuple[type[ExtractionError], ...] = (ReportParseError, LLMCallError)
REASON_MAX_CHARS = 500
"""A failure's reason as stored on the job (the WARNING shows a shorter headline)."""


def finish_with_report(
    rt: Runtime,
    job: JobRecord,
    report: FinalReport,
    mode_used: str,
    evidence: Evidence | None = None,
    **fields: Any,
) -> bool:
    """A real final report: ABSTRACT text (a not-found report is a success that says what was searched).

    When parts of a map-reduce job could not be read (`job.failed_ranges`), the abstract opens with
    the WARNING that names them: the answer is partial and the agent must know which part is missing.
    With `evidence`, a WARNING says when a quote could not be verified and one line names the sources.
    `fields` are set on the job with its ending (the reduce tree it ran).
    """
    body = report.content if report.found else not_found_abstract(job.extract, _not_found_detail(report.content))
    warning = coverage_warning(job.failed_ranges, job.chunks_total)
    body = f"{warning}\n\n{body}" if warning else body
    if evidence is not None:
        body, fields = evidence.framed(body), fields | evidence.fields()
    text = abstract_text(job.tool_name, job.handle, mode_used, body)
    report_fields = {"content": report.content, "found": report.found}
    return rt.jobs.records.finish(
        job.id, JobStatus.SUCCEEDED, result=text, report=report_fields, mode_used=mode_used, **fields
    )


def _not_found_detail(content: str) -> str:
    return content.partition("\n")[2].strip()


def finish_truncate(rt: Runtime, job: JobRecord, output: OutputRecord) -> bool:
    """Truncate mode asked for (or chosen by `auto`): the same view as the fallback, without the WARNING."""
    view, evidence = truncated_view(rt, output), view_evidence(rt, output)
    text = abstract_text(job.tool_name, job.handle, "truncate", evidence.framed(view) if evidence else view)
    extra = evidence.fields() if evidence else {}
    return rt.jobs.records.finish(job.id, JobStatus.SUCCEEDED, result=text, mode_used="truncate", **extra)


def finish_unknown_handle(rt: Runtime, job: JobRecord) -> bool:
    """The output vanished (deleted, expired) between submission and execution."""
    return rt.jobs.records.finish(job.id, JobStatus.SUCCEEDED, result=unknown_handle_text(job.handle, job.tool_name))


def fall_back_to_truncate(rt: Runtime, job: JobRecord, output: OutputRecord, reason: str) -> bool:
    """The strategy could not execute: answer with the top and bottom of the output and a WARNING.

    A job that already ended (canceled, or finished by a twin task) keeps its ending: nothing is read or logged.
    """
    if rt.jobs.records.is_terminal(job.id):
        return False
    log.warning("job %s: falling back to truncate: %s", job.id, reason)
    rt.note(job.id, traces.fallback_event(reason))
    try:
        body = fallback_text(reason, truncated_view(rt, output))
    except ToolOutError as exc:
        return fail(rt, job, f"{reason}; the truncate fallback failed too: {exc.message}", mode_used="truncate")
    evidence = view_evidence(rt, output)
    text = abstract_text(job.tool_name, job.handle, "truncate", evidence.framed(body) if evidence else body)
    extra = evidence.fields() if evidence else {}
    return rt.jobs.records.finish(
        job.id, JobStatus.SUCCEEDED, result=text, mode_used="truncate", fallback_reason=reason, error=reason, **extra
    )


def truncated_view(rt: Runtime, output: OutputRecord) -> str:
    """Top and bottom halves of the byte budget, read with two ranged reads."""
    head_size, tail_size = read_sizes(rt.settings.truncate_bytes)
    size = output.stats.bytes
    head = read_content(rt.blobs, output, 0, head_size)
    tail = read_content(rt.blobs, output, max(head_size, size - tail_size), size)
    return truncate_head_tail(head, tail, size, rt.settings.truncate_bytes)


def view_ranges(rt: Runtime, output: OutputRecord) -> list[tuple[int, int]]:
    """The byte ranges the truncated view is cut from: the whole output when it fits, else its head and tail."""
    head_size, tail_size = read_sizes(rt.settings.truncate_bytes)
    size = output.stats.bytes
    if size <= head_size + tail_size:
        return [(0, size)]
    return [(0, head_size), (max(head_size, size - tail_size), size)]


def view_evidence(rt: Runtime, output: OutputRecord) -> Evidence | None:
    """What a truncated view shows and leaves out, when the deployment keeps evidence (a failure to read the
    line index leaves the view without it rather than failing the answer)."""
    if not rt.settings.evidence:
        return None
    try:
        return for_view(rt, output, view_ranges(rt, output))
    except ToolOutError:
        return None


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
    return fail(rt, rt.jobs.records.get(job_id), error)


def fail(rt: Runtime, job: JobRecord, error: str, *, mode_used: str | None = None) -> bool:
    mode = mode_used or job.mode_used or job.mode_requested
    text = failed_text(job.tool_name, job.handle, mode, error)
    return rt.jobs.records.finish(job.id, JobStatus.FAILED, result=text, error=error, mode_used=mode)


# --- a part that could not be read ----------------------------------------------------------------
def failed_part(job: JobRecord, level: int, index: int, cover: Cover, exc: ExtractionError) -> FailedRange:
    """The record of a part that could not be read: the chunks it held and the byte range they span.

    The reason may quote the wrapper the model missed; the job's nonce in it becomes `NONCE`, since the
    record is visible to clients while the job still runs (the nonce never is).
    """
    reason = exc.message.replace(job.nonce, "NONCE") if job.nonce else exc.message
    reason = reason if len(reason) <= REASON_MAX_CHARS else reason[: REASON_MAX_CHARS - 3] + "..."
    return FailedRange(
        level=level,
        index=index,
        chunks=[chunk for chunk, _, _ in cover],
        start=min(start for _, start, _ in cover),
        end=max(end for _, _, end in cover),
        reason=reason,
    )


def part_failed(job: JobRecord, level: int, index: int) -> bool:
    """Whether the part was already recorded as failed (a redelivered task must not call the model again)."""
    return any(part.level == level and part.index == index for part in job.failed_ranges)


def record_failed_part(
    rt: Runtime, job: JobRecord, output: OutputRecord, failure: FailedRange, exc: ExtractionError
) -> None:
    """Record the failed part once, with the usage its attempts spent; past the limit, the job falls back now.

    Falling back as soon as the limit is crossed spares the model calls of the parts still queued:
    they find the job ended at the gate.
    """
    spent = Usage.model_validate(exc.details.get("usage") or {})
    if not rt.jobs.fanin.record_failure(job.id, failure, spent):
        return  # settled by a twin or an earlier delivery, or the job ended: nothing to count
    log.warning("job %s: part %d:%d could not be read: %s", job.id, failure.level, failure.index, failure.reason)
    rt.note(job.id, traces.failed_event(failure))
    fall_back_if_over_limit(rt, rt.jobs.records.get(job.id), output)


def fall_back_if_over_limit(rt: Runtime, job: JobRecord, output: OutputRecord) -> bool:
    """End the job with the truncate fallback when too many chunks are lost; True when it did (or it ended)."""
    fraction = rt.settings.max_failed_chunk_fraction
    if not over_limit(job.chunks_failed, job.chunks_total, fraction):
        return False
    fall_back_to_truncate(rt, job, output, limit_reason(job.failed_ranges, job.chunks_total, fraction))
    return True
