"""The pipeline's steps as the executors run them: each one a span of its job's trace (`infra.tracing`).

Celery tasks (`workers.celery.tasks`) and the local thread pool (`workers.local`) call these, not `workers.job.pipeline`
directly, so a step is traced the same way wherever it runs. A step's parent is the trace stored on its job
at creation, not whoever sent the step: a reduce is sent by whichever map settled its level last, and in
the thread pool no context travels at all. Off (no OTLP endpoint), a step costs one context-variable set
(the job id, for logs) and no Redis read.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import Any

from extraction.errors import NotFound
from infra import tracing
from workers.job import pipeline
from workers.job.agent import run_read_grep as _run_read_grep
from workers.job.parts import Cover
from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers")


def step_span(rt: Runtime, name: str, job_id: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span of the job's trace (parent: the request that created the job), with its tenant."""
    traceparent = None
    if tracing.enabled():
        try:
            job = rt.jobs.get(job_id)
            traceparent, attributes = job.traceparent, {"tenant": job.tenant, **attributes}
        except NotFound:
            pass  # deleted meanwhile: the step will find out and stop; its span stands alone
    return tracing.job_span(name, job_id, traceparent, **attributes)


def start(rt: Runtime, job_id: str) -> pipeline.Next:
    with step_span(rt, "job.start", job_id):
        return pipeline.start(rt, job_id)


def run_map(
    rt: Runtime, job_id: str, index: int, start: int, end: int, *, by: str | None = None
) -> pipeline.Settled | None:
    with step_span(rt, "job.map", job_id, chunk_index=index, start=start, end=end):
        return pipeline.run_map(rt, job_id, index, start, end, by=by)


def run_reduce_stage(rt: Runtime, job_id: str, level: int, covers: list[Cover]) -> pipeline.Next:
    with step_span(rt, "job.reduce", job_id, level=level, inputs=len(covers)):
        return pipeline.run_reduce_stage(rt, job_id, level, covers)


def run_reduce_group(rt: Runtime, job_id: str, level: int, group: int, members: list[int], cover: Cover) -> None:
    with step_span(rt, "job.reduce_group", job_id, level=level, group_index=group, inputs=len(members)):
        pipeline.run_reduce_group(rt, job_id, level, group, members, cover)


def run_read_grep(rt: Runtime, job_id: str) -> None:
    with step_span(rt, "job.read_grep", job_id):
        _run_read_grep(rt, job_id)


def preload(rt: Runtime, handle: str, tenant: str) -> str:
    """The query strategy's preload of a just-stored output (`workers.job.query.preload`); never raises."""
    try:
        from workers.job.query import preload as _preload  # DuckDB: imported by the worker that runs a preload

        return _preload(rt, handle, tenant)
    except Exception:
        log.warning("output %s: preload failed; its first question will load it", handle, exc_info=True)
        return "failed"


def run_query(rt: Runtime, job_id: str) -> pipeline.Next:
    with step_span(rt, "job.query", job_id):
        from workers.job.query import run_query as _run_query  # DuckDB: imported by the worker that runs a query job

        return _run_query(rt, job_id)
