"""Running a job's steps, the one place that knows which code a step is and what follows it, for every executor.

`run` maps a step (`workers.job.steps`) to its code; `advance` hands what the step answered to an `Executor`,
which supplies only *how* work is sent: Celery publishes task messages (`workers.celery.tasks`), the
embedded mode runs them on a thread pool (`workers.local`). So a job follows the same path, and ends the
same way, on either.
"""

from __future__ import annotations

import logging
from typing import Protocol

from workers.job import pipeline
from workers.job.agent import run_read_grep
from workers.job.runtime import Runtime
from workers.job.steps import Fanout, Map, Next, Query, ReadGrep, ReduceGroup, ReduceStage, Settled, Start, Step

log = logging.getLogger("toolout.workers")


class Executor(Protocol):
    """How an executor sends work; what to send is `advance`'s to decide."""

    def fan_out(self, fanout: Fanout) -> None:
        """Run the parts (in any order, at once if it can), then `fanout.then` once all are settled."""
        ...

    def send(self, step: Step) -> None:
        """Run one step (and whatever it answers, through `advance`)."""
        ...


def advance(executor: Executor, answer: Next | Settled) -> None:
    """Hand a step's answer on: a fan-out, one step, or nothing (the job ended, or a part's fan-in is the store's)."""
    if isinstance(answer, Fanout):
        executor.fan_out(answer)
    elif answer is not None and not isinstance(answer, Settled):
        executor.send(answer)


def run(rt: Runtime, step: Step, *, by: str | None = None) -> Next | Settled:
    """Run one step here; `by` is the task that runs it (a part settles its level under that id)."""
    if isinstance(step, Map):
        return pipeline.run_map(rt, step.job_id, step.index, step.start, step.end, by=by)
    if isinstance(step, ReduceGroup):
        pipeline.run_reduce_group(rt, step.job_id, step.level, step.group, step.members, step.cover)
        return None
    if isinstance(step, ReduceStage):
        return pipeline.run_reduce_stage(rt, step.job_id, step.level, step.covers)
    return run_alone(rt, step)


def run_alone(rt: Runtime, step: Start | ReadGrep | Query) -> Next:
    """The steps that are no part of a fan-out."""
    if isinstance(step, Start):
        return pipeline.start(rt, step.job_id)
    if isinstance(step, ReadGrep):
        run_read_grep(rt, step.job_id)
        return None
    from workers.job.query import run_query  # DuckDB: imported by the worker that runs a query job

    return run_query(rt, step.job_id)
