"""What one API call is, independent of how it is sent: an SDK plan, which yields effects.

An SDK plan is a generator: it yields a `Request` and receives the parsed answer (or has the API's
`ToolOutAPIError` thrown into it), yields a `Sleep` to wait, and finally returns its result. The
sync and async transports (`toolout.sdk.transport`) are the only code that performs effects, so
every call - including `wait`'s polling loop and `tool_output`'s submit-then-wait - is written
once and runs on both `ToolOutClient` and `AsyncToolOutClient`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar, cast

import httpx

from toolout.sdk.errors import ToolOutAPIError as ToolOutAPIError  # re-exported: plans catch it from here
from toolout.sdk.errors import api_error
from toolout.sdk.evidence import Source

T = TypeVar("T")
Content = bytes | str | Iterable[bytes] | AsyncIterable[bytes]


class ToolText(NamedTuple):
    """A text answer meant for the model as a tool result; `is_error` when it reports a misuse."""

    text: str
    is_error: bool = False
    sources: tuple[Source, ...] = ()
    """A `tool_output` answer's sources: the cited lines of the stored output, each quote checked."""


def parse_json(response: httpx.Response) -> Any:
    return response.json() if response.content else {}


def parse_text(response: httpx.Response) -> str:
    return response.text


def parse_bytes(response: httpx.Response) -> bytes:
    return response.content


def parse_tool_text(response: httpx.Response) -> ToolText:
    """`buffer_ops`' answer: the text, and whether the header flags it as the model's mistake."""
    return ToolText(response.text, response.headers.get("X-Tool-Error", "").lower() == "true")


@dataclass(frozen=True)
class Request:
    """One HTTP exchange: what to send and how to read the (successful) answer."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    content: Content | None = None
    headers: Mapping[str, str | bytes] = field(default_factory=dict)
    parse: Callable[[httpx.Response], Any] = parse_json

    def send_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `httpx.Client.request` / `AsyncClient.request`."""
        kwargs: dict[str, Any] = {"params": without_none(self.params), "headers": dict(self.headers)}
        if self.json is not None:
            kwargs["json"] = self.json
        if self.content is not None:
            kwargs["content"] = self.content
        return kwargs


EXTRACTION_PATHS = frozenset({"/v1/extractions", "/v1/extractions/estimate"})


def with_model(request: Request, model: str | None) -> Request:
    """An extraction request (a job, an estimate) names the client's default `model` unless it names one itself."""
    body = request.json
    if model is None or request.method != "POST" or request.path not in EXTRACTION_PATHS:
        return request
    if not isinstance(body, dict) or "model" in body:
        return request
    return replace(request, json={**body, "model": model})


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Local:
    """Work a plan needs done in this process (the toolkit runs a tool this way): the sync transport
    calls `run_sync()`, the async one awaits `run_async()`; the result is sent back into the plan."""

    run_sync: Callable[[], Any]
    run_async: Callable[[], Awaitable[Any]]


Effect = Request | Sleep | Local
Plan = Generator[Effect, Any, T]


def call(request: Request) -> Plan[Any]:
    """The plan of a single request: send it, return its parsed answer."""
    return (yield request)


def call_json(method: str, path: str, **request: Any) -> Plan[dict[str, Any]]:
    """A request whose answer is a JSON object (an empty body reads as `{}`)."""
    body = yield Request(method, path, **request)
    return cast(dict[str, Any], body)


def call_text(method: str, path: str, **request: Any) -> Plan[str]:
    """A request whose answer is plain text."""
    text = yield Request(method, path, parse=parse_text, **request)
    return str(text)


def call_bytes(method: str, path: str, **request: Any) -> Plan[bytes]:
    """A request whose answer is raw bytes (a stored output's content)."""
    body = yield Request(method, path, parse=parse_bytes, **request)
    return cast(bytes, body)


def call_tool_text(method: str, path: str, **request: Any) -> Plan[ToolText]:
    """A request whose answer is a tool result for the model (`X-Tool-Error` marks a misuse)."""
    result = yield Request(method, path, parse=parse_tool_text, **request)
    return cast(ToolText, result)


def without_none(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters minus the ones not given (httpx would send `name=`, which the API rejects)."""
    if params is None:
        return None
    return {name: value for name, value in params.items() if value is not None}


def answer(request: Request, response: httpx.Response) -> Any:
    """The parsed answer, or the typed error: a 4xx/5xx, or a success whose body is not what it should be."""
    if response.status_code >= 400:
        raise api_error(response)
    try:
        return request.parse(response)
    except ValueError as exc:  # e.g. a proxy's HTML page where JSON was due
        raise ToolOutAPIError(response.status_code, "invalid_response", f"unreadable answer: {exc}") from exc


def json_body(args: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments sent verbatim: JSON text as is, a mapping serialised."""
    if isinstance(args, Mapping):
        return {"content": json.dumps(dict(args)).encode(), "headers": {"Content-Type": "application/json"}}
    raw = args.encode() if isinstance(args, str) else args
    return {"content": raw, "headers": {"Content-Type": "application/json"}}
