"""The seam between the API and whatever runs the pipeline's steps.

The API (and the watchdog) hand a created job to a `Dispatcher`; whether Celery workers on other
hosts (`workers.celery.dispatch`) or a thread pool in this process (`workers.local`) then run the
steps is the only difference between the service and the embedded mode.
"""

from __future__ import annotations

from typing import Any, Protocol


class Dispatcher(Protocol):
    """Runs created jobs (and preloads) somewhere; the calls are made by the API, `submit` also by the watchdog."""

    def submit(self, job_id: str) -> None:
        """Queue the job's first step; `BackendUnavailable` when that cannot be done now (HTTP 503)."""
        ...

    def revoke(self, job_id: str) -> int:
        """Best effort, never raises: drop the canceled job's queued work; returns how many tasks were revoked."""
        ...

    def finished(self, job_id: str) -> None:
        """A job just ended (the job store's finish listener): queue its webhook if it asked for one; never blocks."""
        ...

    def preload(self, handle: str, tenant: str) -> object:
        """Best effort, never raises: load a just-stored oversized output's tables in the background, so
        the first question on it finds them kept (`workers.job.query.preload`). Callers ignore the answer
        (the local pool's is a future tests can wait on)."""
        ...

    def ping(self) -> list[Any]:
        """One entry per worker that answered within a second (empty: none did)."""
        ...
