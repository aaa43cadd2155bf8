"""Real ids for the coverage and fuzzing phases of `make schemathesis`, made through the API on first use.

Those phases generate ids at random, and a random session, handle or job only ever reaches the 404 branch: the
report then names the operation "never reached with real data" however many requests it sent. So every other
request meant to be valid that names one gets a real one instead (tests/api/schemathesis_hooks.py), and its
query, headers and body, as generated, reach the code behind the 404 (the stateful phase reaches the same code
by following the document's links; this is the unit phases' share). The other half keeps its random ids, so the
404 answers stay tested.

A delete gets a resource of its own, made for it, so it does not delete the ones the other requests share; a
cancel gets a job still running (each model call of the run's offline model takes a second), and every other
job operation a job that already finished, so a follow of its events ends at once. A shared resource that
answers 404 (a generated delete or TTL found it anyway) is made again: for the next request when the request
got the 404, at once when making a resource under it did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

VARIABLE = "pooled"
TEXT = b"error: disk full on /var\nwarning: retrying in 5s\nerror: disk full on /var\n"
EXTRACT = "the lines that report an error"


class Gone(LookupError):
    """What the pool made a resource under is no longer there: a generated request deleted it or cut its TTL."""


@dataclass
class Pool:
    base_url: str
    http: httpx.Client | None = None
    """What sends the pool's requests (default: a plain `httpx.post` to `base_url`; a test passes its TestClient)."""
    shared: dict[str, str] = field(default_factory=dict)

    def session(self) -> str:
        return self._shared("session", self.new_session)

    def handle(self) -> str:
        return self._shared("handle", lambda: self.new_output(self.session()))

    def finished_job(self) -> str:
        return self._shared("job", lambda: self.new_job(self.handle(), mode="truncate"))

    def forget(self) -> None:
        """Make every shared resource again on next use: one of them answered 404."""
        self.shared.clear()

    def new_output(self, session: str) -> str:
        stored = self._post(f"/v1/sessions/{session}/outputs", params={"name": VARIABLE}, content=TEXT)
        return str(stored["handle"])

    def new_job(self, handle: str, mode: str = "full-chunked") -> str:
        body = {"handle": handle, "extract": EXTRACT, "mode": mode, "cache": False}
        return str(self._post("/v1/extractions", json=body)["id"])

    def new_session(self) -> str:
        return str(self._post("/v1/sessions")["id"])

    def _shared(self, kind: str, make: Callable[[], str]) -> str:
        if kind not in self.shared:
            self.shared[kind] = make()
        return self.shared[kind]

    def _post(self, path: str, **kwargs: Any) -> dict[str, Any]:
        if self.http is not None:
            answer = self.http.post(f"{self.base_url}{path}", **kwargs)
        else:
            answer = httpx.post(f"{self.base_url}{path}", timeout=30, **kwargs)
        if answer.status_code == 404:
            raise Gone(f"POST {path}: 404 {answer.text}")
        answer.raise_for_status()
        body: dict[str, Any] = answer.json()
        return body
