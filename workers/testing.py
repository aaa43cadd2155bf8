"""Test doubles that ship with the code, as `extraction.testing.ScriptedLLM` does for the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RecordingDispatcher:
    """A `Dispatcher` that runs nothing: it records submitted and revoked job ids.

    Set `error` to make the next submissions raise it (a broker outage is `BackendUnavailable`);
    `replies` is what `ping` answers (empty: no worker answered); `revoked_tasks` is what `revoke`
    reports per job; `ping_error` makes `ping` raise (a probe that breaks instead of answering);
    `preloaded` holds the (handle, tenant) of each preload asked for.
    """

    submitted: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)
    error: Exception | None = None
    replies: list[Any] = field(default_factory=lambda: [{"celery@test": {"ok": "pong"}}])
    revoked_tasks: int = 0
    ping_error: Exception | None = None
    finished_jobs: list[str] = field(default_factory=list)
    preloaded: list[tuple[str, str]] = field(default_factory=list)

    def submit(self, job_id: str) -> None:
        if self.error is not None:
            raise self.error
        self.submitted.append(job_id)

    def revoke(self, job_id: str) -> int:
        self.revoked.append(job_id)
        return self.revoked_tasks

    def finished(self, job_id: str) -> None:
        self.finished_jobs.append(job_id)

    def preload(self, handle: str, tenant: str) -> None:
        self.preloaded.append((handle, tenant))

    def ping(self) -> list[Any]:
        if self.ping_error is not None:
            raise self.ping_error
        return list(self.replies)
