"""Each step of a job is one span of its job's trace (`infra.tracing`), wherever it runs: the decorator is on the step.

A step's parent is the trace stored on its job at creation, not whoever sent the step: a reduce is sent by
whichever map settled its level last, and in the thread pool no context travels at all. Off (no OTLP
endpoint), a step costs one context-variable set (the job id, for logs) and no Redis read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar, cast

from extraction.errors import NotFound
from infra import tracing
from workers.job.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])


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


def no_attributes(*_: Any, **__: Any) -> dict[str, Any]:
    return {}


def traced(name: str, attributes: Callable[..., dict[str, Any]] = no_attributes) -> Callable[[F], F]:
    """Run the step `(rt, job_id, …)` inside its span `name`; `attributes` picks the span's from the rest."""

    def wrap(step: F) -> F:
        @functools.wraps(step)
        def run(rt: Runtime, job_id: str, *args: Any, **kwargs: Any) -> Any:
            with step_span(rt, name, job_id, **attributes(*args, **kwargs)):
                return step(rt, job_id, *args, **kwargs)

        return cast(F, run)

    return wrap
