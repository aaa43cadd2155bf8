"""A job's trace as the store keeps it: appended in order within a byte bound, read from any point
(the events' format: `infra.stores.jobs.traces.events`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from infra.stores.jobs.traces.events import TraceEvent


class JobTraces(Protocol):
    """Each job's trace; it lives and dies with its job record."""

    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        """Append events (`events.event_json`) to the job's trace within the store's byte bound, while the
        job exists (a step running after its session ended leaves nothing behind)."""
        ...

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        """The job's trace events from `after` on, each with its `seq`; empty for an unknown job."""
        ...
