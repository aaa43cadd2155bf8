"""Plans for extraction jobs: submit, poll, wait (long-poll or progress polling), cancel, `tool_output`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from toolout.sdk.evidence import Source, sources_of
from toolout.sdk.plans import Plan, Sleep, ToolOutAPIError, call_json, without_none

TERMINAL = {"succeeded", "failed", "canceled"}
LONG_POLL_SECONDS = 5.0


def submit(
    handle: str,
    extract: str,
    mode: str = "auto",
    *,
    idempotency_key: str | None = None,
    callback_url: str | None = None,
    cache: bool = True,
    max_input_tokens: int | None = None,
    max_cost_usd: float | None = None,
    model: str | None = None,
) -> Plan[dict[str, Any]]:
    """Queue an extraction (or get an identical earlier one's answer at once, unless `cache=False`).

    With `idempotency_key`, resubmitting returns the same job instead of a second one; with
    `callback_url`, the finished job is POSTed there (signed; see the README's webhooks); with
    `max_input_tokens` / `max_cost_usd`, a job estimated over budget is refused (`ToolOutAPIError`, 422);
    with `model`, every stage calls that model (one of the service's allowed models, else a 422).
    """
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    body = extraction_body(handle, extract, mode, cache=cache, callback_url=callback_url, model=model)
    body |= without_none({"max_input_tokens": max_input_tokens, "max_cost_usd": max_cost_usd}) or {}
    return (yield from call_json("POST", "/v1/extractions", json=body, headers=headers))


def estimate(
    handle: str, extract: str, mode: str = "auto", *, cache: bool = True, model: str | None = None
) -> Plan[dict[str, Any]]:
    """What `submit` would run and cost (mode, chunks, calls, tokens, USD per stage and model, whether the cache
    answers); nothing runs."""
    body = extraction_body(handle, extract, mode, cache=cache, model=model)
    return (yield from call_json("POST", "/v1/extractions/estimate", json=body))


def extraction_body(
    handle: str,
    extract: str,
    mode: str,
    *,
    cache: bool = True,
    callback_url: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The request body; options left at their defaults are not sent (an older server knows only the rest)."""
    body: dict[str, Any] = {"handle": handle, "extract": extract, "mode": mode}
    options = {"cache": None if cache else False, "callback_url": callback_url, "model": model}
    return body | (without_none(options) or {})


def job(job_id: str, *, wait: float = 0) -> Plan[dict[str, Any]]:
    """The job record; `wait` > 0 long-polls until it changes state or `wait` seconds pass."""
    params = {"wait": wait} if wait else None
    return (yield from call_json("GET", f"/v1/extractions/{job_id}", params=params))


def session_jobs(session_id: str) -> Plan[list[dict[str, Any]]]:
    """Every extraction job of the session, oldest first."""
    body = yield from call_json("GET", f"/v1/sessions/{session_id}/extractions")
    return list(body["items"])


def trace(job_id: str, *, after: int = 0) -> Plan[dict[str, Any]]:
    """The job's trace: each map, reduce and sub-agent step with what it read and said (`events`, from `after`
    on), the job's `status`, the `next` cursor and whether the trace was `truncated` at its byte bound."""
    params = {"after": after} if after else None
    return (yield from call_json("GET", f"/v1/extractions/{job_id}/trace", params=params))


def webhook_secret() -> Plan[dict[str, Any]]:
    """Your tenant's webhook signing secret and the signature scheme, to check `X-Toolout-Signature`."""
    return (yield from call_json("GET", "/v1/webhooks/secret"))


def cancel(job_id: str) -> Plan[dict[str, Any]]:
    """`POST /v1/extractions/{id}/cancel`: stop a queued or running job and answer it, now `canceled`.

    Canceling twice is harmless; a job that already finished otherwise is a `ConflictError` (409)."""
    return (yield from call_json("POST", f"/v1/extractions/{job_id}/cancel"))


def wait(
    job_id: str,
    *,
    timeout: float = 600,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    poll_interval: float = 0.1,
) -> Plan[dict[str, Any]]:
    """Wait until the job ends: long-polls, or polls every `poll_interval` when `on_progress` wants each record."""
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.0, deadline - time.monotonic())
        record = yield from job(job_id, wait=0 if on_progress else min(LONG_POLL_SECONDS, left))
        if on_progress:
            on_progress(record)
        if record["status"] in TERMINAL or time.monotonic() >= deadline:
            return record
        if on_progress:
            yield Sleep(min(poll_interval, left))


def tool_output(
    handle: str,
    extract: str,
    mode: str = "auto",
    *,
    timeout: float = 600,
    cache: bool = True,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    poll_interval: float = 0.1,
    model: str | None = None,
) -> Plan[str]:
    """The `tool_output` tool: submit, wait, and return the text to give the model (`model`: as in `submit`).

    An unknown handle is not an exception: the API's 404 carries the text the model should read.
    Canceled while waiting (a cancel token given to the transport), it cancels the job on the
    service before the cancellation propagates: nobody will read that result. `on_progress` sees
    each polled job record (as in `wait`), e.g. to relay progress to an MCP client.
    """
    options: dict[str, Any] = {"timeout": timeout, "on_progress": on_progress, "poll_interval": poll_interval}
    text, _ = yield from tool_output_answer(handle, extract, mode, cache=cache, model=model, **options)
    return text


def tool_output_answer(
    handle: str,
    extract: str,
    mode: str = "auto",
    *,
    timeout: float = 600,
    cache: bool = True,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    poll_interval: float = 0.1,
    model: str | None = None,
) -> Plan[tuple[str, tuple[Source, ...]]]:
    """`tool_output`, with the answer's sources (`toolout.sdk.evidence`): the text and where it came from."""
    try:
        started = yield from submit(handle, extract, mode, cache=cache, model=model)
    except ToolOutAPIError as exc:
        if exc.status == 404 and "tool_result" in exc.details:
            return str(exc.details["tool_result"]), ()
        raise
    try:
        finished = yield from wait(started["id"], timeout=timeout, on_progress=on_progress, poll_interval=poll_interval)
    except asyncio.CancelledError:
        yield from _cancel_quietly(started["id"])
        raise
    text = str(finished.get("result") or f"tool_output job {started['id']} did not finish in {timeout:.0f}s")
    return text, sources_of(finished)


def _cancel_quietly(job_id: str) -> Plan[None]:
    """Best effort: a job that already ended (409) or expired (404) needs no cancelling."""
    with contextlib.suppress(ToolOutAPIError):
        yield from cancel(job_id)
