"""Plans for sessions and stored outputs: create/delete a session, upload, metadata, Read and Grep.

Each function takes the call's parameters and returns its plan (`toolout.sdk.plans`); the clients
expose them as methods with the same name and signature.
"""

from __future__ import annotations

from typing import Any

from toolout.sdk.plans import Content, Plan, call_bytes, call_json, call_text


def create_session(*, ttl: int | str | None = None) -> Plan[str]:
    """A new session; outputs, variables and jobs live in one (and go when it is deleted, idles out, or its
    `ttl` runs out: seconds, or `"30m"`, `"12h"`, `"7d"`; without one, the tenant's default TTL if it has one)."""
    params = {} if ttl is None else {"ttl": str(ttl)}
    body = yield from call_json("POST", "/v1/sessions", params=params)
    return str(body["id"])


def session(session_id: str) -> Plan[dict[str, Any]]:
    """The session's record: its handles, `expires_at` (idle or TTL, whichever is sooner) and `ttl_expires_at`."""
    return (yield from call_json("GET", f"/v1/sessions/{session_id}"))


def session_usage(session_id: str) -> Plan[dict[str, Any]]:
    """What the session's extraction jobs spent on models: `calls`, `input_tokens`, `output_tokens`, `cost_usd`,
    `jobs` and `cached_jobs` (answered from the result cache at no model cost), and the same per output."""
    return (yield from call_json("GET", f"/v1/sessions/{session_id}/usage"))


def delete_session(session_id: str) -> Plan[None]:
    """`DELETE /v1/sessions/{id}`: remove the session with its outputs, variables, files and jobs now, rather
    than when it has been idle for the server's `TOOLOUT_SESSION_TTL_SECONDS`."""
    yield from call_json("DELETE", f"/v1/sessions/{session_id}")


def store(
    session_id: str,
    content: Content,
    *,
    tool_name: str = "unknown",
    tool_args: str = "{}",
    content_type: str = "text/plain",
    store: str = "always",
    idempotency_key: str | None = None,
    name: str | None = None,
    output: str | None = None,
    write_mode: str | None = None,
    ttl: int | str | None = None,
) -> Plan[dict[str, Any]]:
    """Upload a tool output (bytes, text, or an iterable of blocks, streamed) and return the upload answer.

    Inline (the default): the stats, the handle, `oversized` and the too-large `message`, and the
    variable `name` it was saved as (`name`, or the service's `<tool>_<n>`). `output=` routes it
    instead (`variable:NAME`, `file:PATH`, `discard`; `write_mode` append|replace|new): the answer is
    `{"routed": true, "destination", "name", "path", "handle", "chars", "bytes", "manifest"}`.
    With `idempotency_key`, a retry after a dropped connection replays the first answer. With `ttl` (seconds,
    or `"30m"`, `"12h"`, `"7d"`) the output and all derived from it is deleted that long after it is stored.
    """
    headers: dict[str, str | bytes] = {
        "X-Tool-Name": tool_name.encode("utf-8"),  # raw UTF-8: the API decodes it (httpx would refuse non-ASCII text)
        "X-Tool-Args": tool_args.encode("utf-8"),
        "Content-Type": content_type,
    }
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    params = {"store": store, "name": name, "output": output, "write_mode": write_mode}
    if ttl is not None:
        params["ttl"] = str(ttl)
    path = f"/v1/sessions/{session_id}/outputs"
    return (yield from call_json("POST", path, params=params, content=content, headers=headers))


def output(handle: str) -> Plan[dict[str, Any]]:
    """A stored output's metadata (bytes, lines, tokens, tool, ...)."""
    return (yield from call_json("GET", f"/v1/outputs/{handle}"))


def output_usage(handle: str) -> Plan[dict[str, Any]]:
    """What the output's extraction jobs spent on models, totals and job by job (`items`); a job answered from
    the result cache has `cached: true` and zero usage."""
    return (yield from call_json("GET", f"/v1/outputs/{handle}/usage"))


def delete_output(handle: str) -> Plan[None]:
    """`DELETE /v1/outputs/{handle}`: remove the output now, with its jobs, traces, cached answers, tables and text
    view (its session and other outputs stay)."""
    yield from call_json("DELETE", f"/v1/outputs/{handle}")


def content(handle: str, *, start: int = 0, length: int | None = None, redacted: bool = False) -> Plan[bytes]:
    """The stored bytes: all of them, or `length` bytes from `start` (fewer at the end; a `start` past
    the end is a 416). A multi-byte character may be cut at either end of a range. `redacted=True`: the
    redacted view's bytes (what a model may be shown), the stored ones when the output holds no secret."""
    params = {"redacted": "true"} if redacted else {}
    if start < 0 or (length is not None and length < 1):
        raise ValueError(f"a byte range needs start >= 0 and length >= 1, not start={start}, length={length}")
    if start == 0 and length is None:
        return (yield from call_bytes("GET", f"/v1/outputs/{handle}/content", params=params))
    last = "" if length is None else str(start + length - 1)
    headers = {"Range": f"bytes={start}-{last}"}
    return (yield from call_bytes("GET", f"/v1/outputs/{handle}/content", headers=headers, params=params))


def read(handle: str, *, offset: int = 1, limit: int = 2000) -> Plan[str]:
    """Line-numbered lines `offset`.. of a stored output (the Read tool's text)."""
    params = {"offset": offset, "limit": limit}
    return (yield from call_text("GET", f"/v1/outputs/{handle}/lines", params=params))


def grep(handle: str, pattern: str, **options: Any) -> Plan[str]:
    """Line-numbered matches (the Grep tool's text). Options are the Grep tool's (regex, ignore_case,
    before, after, max_matches); None means "not given", as in strict-mode tool calls, and is dropped.
    """
    params = {"pattern": pattern, **options}
    return (yield from call_text("GET", f"/v1/outputs/{handle}/grep", params=params))
