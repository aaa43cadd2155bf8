"""The Python SDK: a thin, typed wrapper over toolout's REST API.

Agents' tool loops call `store()` when a tool result is too large, hand the returned message to
the model, and call `tool_output()` when the model asks for an extraction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx

TERMINAL = {"succeeded", "failed", "canceled"}


class ToolOutAPIError(Exception):
    """The API answered with its error shape; `code`, `status` and `details` say what was wrong."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details


class ToolOutClient:
    """Synchronous client; one instance per agent process is plenty (it pools connections)."""

    def __init__(
        self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0, http: httpx.Client | None = None
    ) -> None:
        """`http`: an httpx client to send through instead (e.g. a test client bound to an in-process app)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self._http.headers.update(headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ToolOutClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- sessions and outputs -------------------------------------------------------------------
    def create_session(self) -> str:
        return str(self._json("POST", "/v1/sessions")["id"])

    def delete_session(self, session_id: str) -> None:
        self._json("DELETE", f"/v1/sessions/{session_id}")

    def store(
        self,
        session_id: str,
        content: bytes | Iterable[bytes],
        *,
        tool_name: str = "unknown",
        tool_args: str = "{}",
        content_type: str = "text/plain",
        store: str = "always",
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Upload a tool output (bytes or an iterable of blocks, streamed) and return its stats and handle.

        With `idempotency_key`, a retry after a dropped connection replays the first answer instead of storing twice.
        """
        headers = {
            "X-Tool-Name": tool_name,
            "X-Tool-Args": tool_args,
            "Content-Type": content_type,
            **_idempotency(idempotency_key),
        }
        return self._json(
            "POST", f"/v1/sessions/{session_id}/outputs", content=content, headers=headers, params={"store": store}
        )

    def output(self, handle: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/outputs/{handle}")

    def read(self, handle: str, *, offset: int = 1, limit: int = 2000) -> str:
        return self._text("GET", f"/v1/outputs/{handle}/lines", params={"offset": offset, "limit": limit})

    def grep(self, handle: str, pattern: str, **options: Any) -> str:
        """Options are the Grep tool's (regex, ignore_case, before, after, max_matches); None means "not
        given", as in strict-mode tool calls, and is dropped (httpx would send `regex=`, a 422).
        """
        params = {"pattern": pattern, **{name: value for name, value in options.items() if value is not None}}
        return self._text("GET", f"/v1/outputs/{handle}/grep", params=params)

    # --- extraction jobs ------------------------------------------------------------------------
    def submit(
        self, handle: str, extract: str, mode: str = "auto", *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Queue an extraction; with `idempotency_key`, resubmitting returns the same job instead of a second one."""
        body = {"handle": handle, "extract": extract, "mode": mode}
        return self._json("POST", "/v1/extractions", json=body, headers=_idempotency(idempotency_key))

    def job(self, job_id: str, *, wait: float = 0) -> dict[str, Any]:
        return self._json("GET", f"/v1/extractions/{job_id}", params={"wait": wait} if wait else None)

    def session_jobs(self, session_id: str) -> list[dict[str, Any]]:
        """Every extraction job of the session, oldest first."""
        return list(self._json("GET", f"/v1/sessions/{session_id}/extractions")["items"])

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/extractions/{job_id}/cancel")

    def wait(
        self,
        job_id: str,
        *,
        timeout: float = 600,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        poll_interval: float = 0.1,
    ) -> dict[str, Any]:
        """Wait until the job ends: long-polls, or polls every `poll_interval` when `on_progress` wants each record."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            job = self.job(job_id, wait=0 if on_progress else min(5.0, left))
            if on_progress:
                on_progress(job)
            if job["status"] in TERMINAL or time.monotonic() >= deadline:
                return job
            if on_progress:
                time.sleep(min(poll_interval, left))

    def tool_output(self, handle: str, extract: str, mode: str = "auto", *, timeout: float = 600) -> str:
        """The `tool_output` tool: submit, wait, and return the text to give the model."""
        try:
            job = self.submit(handle, extract, mode)
        except ToolOutAPIError as exc:
            if exc.status == 404 and "tool_result" in exc.details:
                return str(exc.details["tool_result"])
            raise
        return (
            self.wait(job["id"], timeout=timeout).get("result")
            or f"tool_output job {job['id']} did not finish in {timeout:.0f}s"
        )

    # --- plumbing -------------------------------------------------------------------------------
    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, url, **kwargs)
        if response.status_code >= 400:
            raise _api_error(response)
        return response

    def _json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, url, **kwargs)
        return response.json() if response.content else {}

    def _text(self, method: str, url: str, **kwargs: Any) -> str:
        return self._send(method, url, **kwargs).text


def _idempotency(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key} if key else {}


def _api_error(response: httpx.Response) -> ToolOutAPIError:
    try:
        error = response.json()["error"]
        return ToolOutAPIError(response.status_code, error["code"], error["message"], error.get("details") or {})
    except (ValueError, KeyError, TypeError):
        return ToolOutAPIError(response.status_code, "http_error", response.text[:500], {})
