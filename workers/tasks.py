"""Celery tasks: decode arguments, call one pipeline step, turn its answer into the next signatures."""

from __future__ import annotations

import logging

from celery import chord, group

from infra.errors import BackendUnavailable
from workers import pipeline
from workers.app import app
from workers.runtime import runtime

log = logging.getLogger("toolout.workers")

RETRY = {"autoretry_for": (BackendUnavailable,), "retry_backoff": True, "retry_backoff_max": 30, "max_retries": 8}
"""Only infrastructure outages are retried by Celery; strategy failures end in the truncate fallback."""


def schedule(job_id: str, step: pipeline.Next) -> None:
    """Turn a step's answer into Celery work: a chord of maps or group reduces, or the agent task."""
    if isinstance(step, pipeline.RunChunks):
        header = group(map_chunk.si(job_id, c.index, c.start, c.end) for c in step.chunks)
        chord(header, reduce_stage.si(job_id, 0)).apply_async()
    elif isinstance(step, pipeline.RunReduceGroups):
        header = group(reduce_group.si(job_id, step.level, i, members) for i, members in enumerate(step.groups))
        chord(header, reduce_stage.si(job_id, step.level + 1)).apply_async()
    elif isinstance(step, pipeline.RunAgent):
        read_grep.delay(job_id)


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
