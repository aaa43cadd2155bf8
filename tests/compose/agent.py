"""What an agent does against the stack's published API port: store tool outputs, start extractions, poll them.

Plain HTTP with a Bearer key, as any agent framework's client sends it; nothing here reaches inside a container.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

FINISHED = {"succeeded", "failed", "cancelled"}


@dataclass
class Agent:
    http: httpx.Client

    @classmethod
    def connect(cls, base_url: str, key: str) -> Agent:
        return cls(httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30))

    def store(self, path: Path, tool_name: str, content_type: str) -> str:
        """A new session holding `path`'s bytes as one tool output: its handle."""
        session = self.http.post("/v1/sessions")
        session.raise_for_status()
        url = f"/v1/sessions/{session.json()['id']}/outputs"
        headers = {"X-Tool-Name": tool_name, "Content-Type": content_type}
        # A new API container's first upload waits for its lazy set-up: allow it minutes, not the usual 30 s.
        stored = self.http.post(url, content=path.read_bytes(), headers=headers, timeout=180)
        assert stored.status_code == 201, stored.text
        return str(stored.json()["handle"])

    def extract(self, handle: str, question: str, mode: str) -> str:
        """Start one extraction (never answered from the result cache): its job id."""
        body = {"handle": handle, "extract": question, "mode": mode, "cache": False}
        started = self.http.post("/v1/extractions", json=body)
        assert started.status_code == 202, started.text
        return str(started.json()["id"])

    def job(self, job_id: str) -> dict[str, Any]:
        answer = self.http.get(f"/v1/extractions/{job_id}")
        answer.raise_for_status()
        return dict(answer.json())

    def trace(self, job_id: str) -> list[dict[str, Any]]:
        answer = self.http.get(f"/v1/extractions/{job_id}/trace")
        answer.raise_for_status()
        return list(answer.json()["events"])

    def workers_of(self, job_id: str) -> set[str]:
        """The hosts that made the job's model calls, as its trace names them."""
        return {event["worker"] for event in self.trace(job_id) if "worker" in event}

    def finish(self, job_ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
        """Every job's record once all have finished (or `timeout` passed: then the unfinished ones as they are)."""
        deadline = time.monotonic() + timeout
        records: dict[str, dict[str, Any]] = {}
        while True:
            records.update(
                {j: self._job_or_gap(j) for j in job_ids if records.get(j, {}).get("status") not in FINISHED}
            )
            if all(r.get("status") in FINISHED for r in records.values()) or time.monotonic() > deadline:
                return records
            time.sleep(0.5)

    def _job_or_gap(self, job_id: str) -> dict[str, Any]:
        """The job's record, or a stand-in saying why not while the API cannot answer (a backend restarting)."""
        try:
            return self.job(job_id)
        except httpx.HTTPError as exc:
            return {"id": job_id, "status": "unreadable", "error": repr(exc)}
