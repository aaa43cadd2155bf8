"""Traces in process memory: each job's `Trace` kept on its in-memory record."""

from __future__ import annotations

from collections.abc import Sequence

from infra.stores.jobs.memory_state import MemoryJobState
from infra.stores.jobs.traces.base import JobTraces
from infra.stores.jobs.traces.events import TraceEvent


class MemoryJobTraces(JobTraces):
    """`JobTraces` over the in-memory jobs, each trace bounded to `max_bytes`."""

    def __init__(self, state: MemoryJobState, max_bytes: int) -> None:
        self._s, self.max_bytes = state, max_bytes

    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is not None:
                job.trace.add(events, self.max_bytes)

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        with self._s.lock:
            job = self._s.job(job_id)
            return [] if job is None else job.trace.read(after)
