"""The Python SDK: typed clients for toolout's REST API, sync (`ToolOutClient`) and async (`AsyncToolOutClient`).

Both have the same methods with the same parameters (`toolout.sdk.endpoint.Endpoints`): each REST
call is described once, as an SDK plan (`toolout.sdk`), and run by the client's transport, so the two
clients cannot drift apart. What is left of each client is written once too: `toolout.sdk.async_client`
is the source, `toolout.sdk.sync_client` is generated from it (`toolout._unasync`).
Agents' tool loops call `store()` when a tool result is too large, hand the returned message to the
model, and call `tool_output()` when the model asks for an extraction; the agent toolkit
(`toolout.toolkit.Toolkit`) does all of that for you.

    with ToolOutClient("http://127.0.0.1:8000", api_key=key) as toolout:
        session = toolout.create_session()
        meta = toolout.store(session, big_bytes, tool_name="logs.fetch")

    async with AsyncToolOutClient("http://127.0.0.1:8000", api_key=key) as toolout:
        session = await toolout.create_session()

Every failure is a `ToolOutAPIError` (see `toolout.sdk.errors` for the tree): `NotFoundError`,
`ConflictError`, `BadRequestError`, `TooManyRequestsError` (`retry_after`), `UnavailableError`
(5xx) and its `TransportError` (no connection, a timeout: httpx's error is the `__cause__`).
"""

from __future__ import annotations

from toolout.sdk.async_client import AsyncToolOutClient
from toolout.sdk.driving import STREAM_HEADERS as STREAM_HEADERS
from toolout.sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    ToolOutAPIError,
    TooManyRequestsError,
    TransportError,
    UnavailableError,
)
from toolout.sdk.jobs import TERMINAL
from toolout.sdk.plans import ToolText
from toolout.sdk.sync_client import ToolOutClient

__all__ = [
    "TERMINAL",
    "AsyncToolOutClient",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "TooManyRequestsError",
    "ToolOutAPIError",
    "ToolOutClient",
    "ToolText",
    "TransportError",
    "UnavailableError",
]
