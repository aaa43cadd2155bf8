"""Which jobs may answer again, and the new job a cache hit creates from one of them."""

from __future__ import annotations

import time

from extraction.protocols import Usage
from infra.stores.jobs import JobRecord, JobStatus


def cacheable(job: JobRecord) -> bool:
    """A job whose answer may be served again: succeeded with a real final report, no fallback, nothing lost.

    That leaves out failures, cancels, the truncate fallback (its answer says the strategy broke),
    explicit truncate (no model: nothing to save), the unknown-handle answer (no report) and a
    partial answer (`chunks_failed`: its WARNING names parts a transient fault may have cost it).
    """
    return (
        job.status is JobStatus.SUCCEEDED
        and job.report is not None
        and job.fallback_reason is None
        and job.chunks_failed == 0
        and job.result is not None
    )


def answered_from(source: JobRecord, job: JobRecord) -> JobRecord:
    """`job` (this request's own id, session and handle) finished at once with `source`'s answer.

    The answer names its handle (the ABSTRACT header, and a read-grep answer may cite the file by
    it): `source`'s handle is rewritten to `job`'s, so the text is what a job on this output would
    have answered. Handles are random UUIDs, so nothing else in the text can match. The tool name
    needs no rewriting: it is part of the cache key. Nothing was spent, so `usage` stays zero;
    `cached_from` names the job that ran the model (the source's own source if it was a hit too).
    """
    now = time.time()

    def rewrite(text: str) -> str:
        return text.replace(source.handle, job.handle)

    report = dict(source.report or {})
    if isinstance(report.get("content"), str):
        report["content"] = rewrite(report["content"])
    return job.model_copy(
        update={
            "status": JobStatus.SUCCEEDED,
            "mode_used": source.mode_used,
            "routing_reason": source.routing_reason,
            "chunks_total": source.chunks_total,
            "chunks_done": source.chunks_done,
            "reduce_level": source.reduce_level,
            "reduce_tree": source.reduce_tree,
            "result": rewrite(source.result or ""),
            "report": report,
            "evidence": source.evidence,
            "unread": source.unread,
            "usage": Usage(),
            "started_at": now,
            "finished_at": now,
            "cached": True,
            "cached_from": source.cached_from or source.id,
        }
    )
