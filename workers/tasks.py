"""Celery tasks: decode arguments, call one pipeline step, turn its answer into the next signatures."""

from __future__ import annotations

import logging

from celery import Signature, chord, group

from infra.errors import BackendUnavailable
from infra.jobstore import JobStore
from workers import pipeline
from workers.app import app
from workers.runtime import runtime

log = logging.getLogger("toolout.workers")

RETRY = {"autoretry_for": (BackendUnavailable,), "retry_backoff": True, "retry_backoff_max": 30, "max_retries": 8}
"""Only infrastructure outages are retried by Celery; strategy failures end in the truncate fallback."""


Planned = tuple[list[Signature], Signature]
"""A chord's header and body (an empty header: the body is sent alone)."""


def schedule(job_id: str, step: pipeline.Next) -> None:
    """Turn a step's answer into Celery work: a chord of maps or group reduces, or the agent task.

    Task ids are fixed and remembered on the job *before* anything is sent, so a cancel arriving
    at any moment finds every queued task to revoke.
    """
    planned = plan(job_id, step)
    if planned is not None:
        remember(runtime().jobs, job_id, planned)
        send(planned)


def plan(job_id: str, step: pipeline.Next) -> Planned | None:
    """The signatures a step asks for, not yet sent."""
    if isinstance(step, pipeline.RunChunks):
        return [map_chunk.si(job_id, c.index, c.start, c.end) for c in step.chunks], reduce_stage.si(job_id, 0)
    if isinstance(step, pipeline.RunReduceGroups):
        header = [reduce_group.si(job_id, step.level, i, members) for i, members in enumerate(step.groups)]
        return header, reduce_stage.si(job_id, step.level + 1)
    if isinstance(step, pipeline.RunAgent):
        return [], read_grep.si(job_id)
    return None


def remember(jobs: JobStore, job_id: str, planned: Planned) -> list[str]:
    """Give every signature its task id now (`freeze`) and store the ids on the job."""
    header, body = planned
    ids = [signature.freeze().id for signature in [*header, body]]
    jobs.add_task_ids(job_id, ids)
    return ids


def send(planned: Planned) -> None:
    header, body = planned
    (chord(group(header), body) if header else body).apply_async()


@app.task(name="toolout.start_extraction", **RETRY)
def start_extraction(job_id: str) -> None:
    schedule(job_id, pipeline.start(runtime(), job_id))


@app.task(name="toolout.map_chunk", **RETRY)
def map_chunk(job_id: str, index: int, start: int, end: int) -> None:
    pipeline.run_map(runtime(), job_id, index, start, end)


@app.task(name="toolout.reduce_stage", **RETRY)
def reduce_stage(job_id: str, level: int) -> None:
    schedule(job_id, pipeline.run_reduce_stage(runtime(), job_id, level))


@app.task(name="toolout.reduce_group", **RETRY)
def reduce_group(job_id: str, level: int, group_index: int, members: list[int]) -> None:
    pipeline.run_reduce_group(runtime(), job_id, level, group_index, members)


@app.task(name="toolout.read_grep", **RETRY)
def read_grep(job_id: str) -> None:
    from workers.agent import run_read_grep

    run_read_grep(runtime(), job_id)
