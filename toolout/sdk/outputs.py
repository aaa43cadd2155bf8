"""Plans for sessions and stored outputs: create/delete a session, upload, metadata, Read and Grep.

Each function takes the call's parameters and returns its plan (`toolout.sdk.plans`); the clients
expose them as methods with the same name and signature.
"""

from __future__ import annotations

from typing import Any

from toolout.sdk.plans import Content, Plan, call_bytes, call_json, call_text


def create_session() -> Plan[str]:
    """A new session; outputs, variables and jobs live in one (and go when it is deleted or idles out)."""
    body = yield from call_json("POST", "/v1/sessions")
    return str(body["id"])


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
) -> Plan[dict[str, Any]]:
    """Upload a tool output (bytes, text, or an iterable of blocks, streamed) and return the upload answer.

    Inline (the default): the stats, the handle, `oversized` and the too-large `message`, and the
    variable `name` it was saved as (`name`, or the service's `<tool>_<n>`). `output=` routes it
    instead (`variable:NAME`, `file:PATH`, `discard`; `write_mode` append|replace|new): the answer is
    `{"routed": true, "destination", "name", "path", "handle", "chars", "bytes", "manifest"}`.
    With `idempotency_key`, a retry after a dropped connection replays the first answer.
    """
    headers: dict[str, str | bytes] = {
        "X-Tool-Name": tool_name.encode("utf-8"),  # raw UTF-8: the API decodes it (httpx would refuse non-ASCII text)
        "X-Tool-Args": tool_args.encode("utf-8"),
        "Content-Type": content_type,
    }
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    params = {"store": store, "name": name, "output": output, "write_mode": write_mode}
    path = f"/v1/sessions/{session_id}/outputs"
    return (yield from call_json("POST", path, params=params, content=content, headers=headers))


def output(handle: str) -> Plan[dict[str, Any]]:
    """A stored output's metadata (bytes, lines, tokens, tool, ...)."""
    return (yield from call_json("GET", f"/v1/outputs/{handle}"))


def content(handle: str, *, start: int = 0, length: int | None = None) -> Plan[bytes]:
    """The stored bytes: all of them, or `length` bytes from `start` (fewer at the end; a `start` past
    the end is a 416). A multi-byte character may be cut at either end of a range."""
    if start < 0 or (length is not None and length < 1):
        raise ValueError(f"a byte range needs start >= 0 and length >= 1, not start={start}, length={length}")
    if start == 0 and length is None:
        return (yield from call_bytes("GET", f"/v1/outputs/{handle}/content"))
    last = "" if length is None else str(start + length - 1)
    headers = {"Range": f"bytes={start}-{last}"}
    return (yield from call_bytes("GET", f"/v1/outputs/{handle}/content", headers=headers))


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
