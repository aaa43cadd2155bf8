"""Parts of a map-reduce job that could not be read: which failures are a part's, and recording them once.

A part is one chunk's map call, or one reduce group's call in a recursive reduce. When its call
still fails after its retry, the job degrades instead of sinking: the part is recorded on the job
(`JobStore.record_failure`, settled once like an output) and the reduce runs over the others. Only
past `max_failed_chunk_fraction` of the chunks does the job fall back to truncate.

Which failures belong to a part (`PART_FAILURES`): a reply without a valid final report after the
wrapper retry, and a provider error after litellm's own retries — both about this one call. Every
other `ExtractionError` is about the job and ends it as before: the job ended meanwhile (`JobEnded`:
not a failure at all), its LLM call budget is spent (`LLMBudgetExhausted`: no other part could call
the model either, so the truncate fallback), or a failure this list does not foresee.

A cover is what one reduce input holds of the document: `[chunk index, start byte, end byte]` per
chunk, as JSON-friendly lists because covers travel in Celery task arguments (the chunk plan is
computed once, at the start, and is not stored).
"""

from __future__ import annotations

import logging

from extraction.documents.chunking import Chunk
from extraction.errors import ExtractionError, ReportParseError
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange, limit_reason, over_limit
from infra.errors import LLMCallError
from infra.stores.jobs import JobRecord
from infra.stores.records import OutputRecord
from workers.job import outcomes, trace
from workers.job.next import Cover
from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers")

PART_FAILURES: tuple[type[ExtractionError], ...] = (ReportParseError, LLMCallError)
REASON_MAX_CHARS = 500
"""A failure's reason as stored on the job (the WARNING shows a shorter headline)."""


def chunk_covers(chunks: list[Chunk]) -> list[Cover]:
    """Level 0: each map output covers its own chunk."""
    return [[[chunk.index, chunk.start, chunk.end]] for chunk in chunks]


def group_covers(groups: list[list[int]], covers: list[Cover]) -> list[Cover]:
    """What each reduce group covers: everything its members (positions in `covers`) cover."""
    return [[span for member in members for span in covers[member]] for members in groups]


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


def settled(job: JobRecord, level: int, index: int) -> bool:
    """Whether the part was already recorded as failed (a redelivered task must not call the model again)."""
    return any(part.level == level and part.index == index for part in job.failed_ranges)


def record(rt: Runtime, job: JobRecord, output: OutputRecord, failure: FailedRange, exc: ExtractionError) -> None:
    """Record the failed part once, with the usage its attempts spent; past the limit, the job falls back now.

    Falling back as soon as the limit is crossed spares the model calls of the parts still queued:
    they find the job ended at the gate.
    """
    spent = Usage.model_validate(exc.details.get("usage") or {})
    if not rt.jobs.record_failure(job.id, failure, spent):
        return  # settled by a twin or an earlier delivery, or the job ended: nothing to count
    log.warning("job %s: part %d:%d could not be read: %s", job.id, failure.level, failure.index, failure.reason)
    trace.note(rt, job.id, trace.failed_event(failure))
    fall_back_if_over_limit(rt, rt.jobs.get(job.id), output)


def fall_back_if_over_limit(rt: Runtime, job: JobRecord, output: OutputRecord) -> bool:
    """End the job with the truncate fallback when too many chunks are lost; True when it did (or it ended)."""
    fraction = rt.settings.max_failed_chunk_fraction
    if not over_limit(job.chunks_failed, job.chunks_total, fraction):
        return False
    outcomes.fall_back_to_truncate(rt, job, output, limit_reason(job.failed_ranges, job.chunks_total, fraction))
    return True
