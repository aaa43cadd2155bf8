"""Plans for session variables, files, routing directives and buffer_ops (REST routes for docs/spec/).

Every variable is a stored output with a handle; a name is a per-session alias of a handle.
Routes, shapes and error codes are the contract's (`docs/variables.md` on the server side).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolout.sdk.plans import Plan, ToolText, call_json, call_text, call_tool_text, json_body

Style = Literal["full", "minimal"]


def _session(session_id: str, rest: str) -> str:
    return f"/v1/sessions/{session_id}/{rest}"


def variables(session_id: str) -> Plan[list[dict[str, Any]]]:
    """The session's variables, oldest first: `{name, handle, tool, bytes, tokens, chars, preview, ...}`."""
    body = yield from call_json("GET", _session(session_id, "variables"))
    return list(body["items"])


def variable(session_id: str, name: str) -> Plan[dict[str, Any]]:
    """One variable's view; an unknown name is a 404 `unknown_variable` listing `details.available`."""
    return (yield from call_json("GET", _session(session_id, f"variables/{name}")))


def resolve(session_id: str, value: Any, *, max_value_chars: int | None = None) -> Plan[dict[str, Any]]:
    """Resolve every `$ref` in a JSON value: `{"value": <resolved>, "warnings": [...]}`.

    A whole-value reference becomes the stored value, typed; errors are 422s (`unknown_variable`,
    `missing_field`, `not_json`, `value_too_large`) whose details say what exists.
    """
    body: dict[str, Any] = {"value": value}
    if max_value_chars is not None:
        body["max_value_chars"] = max_value_chars
    return (yield from call_json("POST", _session(session_id, "resolve"), json=body))


def instructions(session_id: str, *, style: Style = "full") -> Plan[str]:
    """The variable instructions (docs/spec/variables.md §Instructions) with the session's variables."""
    params = {"style": style}
    return (yield from call_text("GET", _session(session_id, "instructions"), params=params))


def files(session_id: str) -> Plan[list[dict[str, Any]]]:
    """The session's files (outputs routed to `file:PATH`): `{path, handle, bytes, chars, ...}`."""
    body = yield from call_json("GET", _session(session_id, "files"))
    return list(body["items"])


def parse_routing(text: str | None = None, *, tools: Mapping[str, Any] | None = None) -> Plan[dict[str, Any]]:
    """The service's reading of `@tools …`/`@input …` directive text or of the dict form (a RoutingSpec as JSON)."""
    body: dict[str, Any] = {"text": text} if tools is None else {"tools": dict(tools)}
    return (yield from call_json("POST", "/v1/routing/parse", json=body))


def buffer_ops(session_id: str, args: str | bytes | Mapping[str, Any]) -> Plan[ToolText]:
    """Run a `buffer_ops` tool call (its JSON arguments verbatim): the text for the model, and whether it
    reports the model's misuse (still a 200: a tool result, not an HTTP failure)."""
    return (yield from call_tool_text("POST", _session(session_id, "buffer_ops"), **json_body(args)))


def peek_variable(session_id: str, name: str, *, offset: int = 0, max_chars: int | None = None) -> Plan[dict[str, Any]]:
    """`GET …/variables/{name}/peek`: a window of a variable's text from `offset` (at most `max_chars`
    characters, else the server's default), with its size: look before reading the whole of it."""
    params = {"offset": offset, "max_chars": max_chars}
    return (yield from call_json("GET", _session(session_id, f"variables/{name}/peek"), params=params))


def read_variable(
    session_id: str,
    name: str,
    *,
    start_line: int | None = None,
    end_line: int | None = None,
    offset: int | None = None,
    length: int | None = None,
) -> Plan[dict[str, Any]]:
    """A line range (`start_line`..`end_line`) or a character range (`offset`, `length`) of a variable."""
    params = {"start_line": start_line, "end_line": end_line, "offset": offset, "length": length}
    return (yield from call_json("GET", _session(session_id, f"variables/{name}/read"), params=params))


def search_variables(
    session_id: str,
    target: str,
    *,
    scope: str | None = None,
    regex: bool | None = None,
    ignore_case: bool | None = None,
    context: int | None = None,
) -> Plan[dict[str, Any]]:
    """Search `target` in one variable (`scope`) or in all of them."""
    params = {"target": target, "scope": scope, "regex": regex, "ignore_case": ignore_case, "context": context}
    return (yield from call_json("GET", _session(session_id, "search"), params=params))


def export_variable(
    session_id: str, name: str, destination: str, *, write_mode: str = "append"
) -> Plan[dict[str, Any]]:
    """Write a variable to a session file path (`{today}` allowed)."""
    body = {"destination": destination, "write_mode": write_mode}
    return (yield from call_json("POST", _session(session_id, f"variables/{name}/export"), json=body))
