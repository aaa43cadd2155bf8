"""The Python SDK: typed clients for toolout's REST API, sync (`ToolOutClient`) and async (`AsyncToolOutClient`).

Both have the same methods with the same parameters (`toolout.sdk.endpoint.Endpoints`): each REST
call is described once, as a plan (`toolout.sdk`), and run by the client's transport, so the two
clients cannot drift apart. Agents' tool loops call `store()` when a tool result is too large,
hand the returned message to the model, and call `tool_output()` when the model asks for an
extraction; the agent toolkit (`toolout.toolkit.Toolkit`) does all of that for you.

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

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

import httpx

from toolout.sdk.endpoint import Endpoints
from toolout.sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    ToolOutAPIError,
    TooManyRequestsError,
    TransportError,
    UnavailableError,
    api_error,
    wrapped_transport_errors,
)
from toolout.sdk.jobs import TERMINAL
from toolout.sdk.plans import ToolText
from toolout.sdk.transport import AsyncTransport, SyncTransport

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
STREAM_HEADERS = {"Content-Type": "text/plain; charset=utf-8"}


def _auth(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _resolve_stream_path(session_id: str) -> str:
    return f"/v1/sessions/{session_id}/resolve-stream"


class ToolOutClient(SyncTransport, Endpoints):
    """Synchronous client; one instance per agent process is plenty (it pools connections)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        http: httpx.Client | None = None,
        model: str | None = None,
    ) -> None:
        """`http`: an httpx client to send through instead (e.g. a test client bound to an in-process app).
        `model`: what every extraction asks for unless the call names one (the service's allow-list decides)."""
        self.model = model
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self._http.headers.update(_auth(api_key))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ToolOutClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def resolve_stream(self, session_id: str, chunks: Iterable[str]) -> Iterator[str]:
        """`POST /resolve-stream`: the text with its `$refs` resolved by the service, as it streams back.

        The request is sent whole before the answer starts (HTTP/1.1): for an agent's live text
        stream use `toolout.toolkit.Toolkit.resolve_stream`, which resolves chunk by chunk.
        """
        body = (chunk.encode("utf-8") for chunk in chunks)
        path = _resolve_stream_path(session_id)
        with wrapped_transport_errors(), self._http.stream("POST", path, content=body, headers=STREAM_HEADERS) as r:
            if r.status_code >= 400:
                r.read()
                raise api_error(r)
            yield from r.iter_text()


class AsyncToolOutClient(AsyncTransport, Endpoints):
    """Asynchronous client (httpx.AsyncClient); same methods as `ToolOutClient`, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        http: httpx.AsyncClient | None = None,
        model: str | None = None,
    ) -> None:
        """`http`: an httpx async client to send through instead (e.g. one bound to an ASGI app or a mock).
        `model`: as for `ToolOutClient`."""
        self.model = model
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._http.headers.update(_auth(api_key))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncToolOutClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def resolve_stream(self, session_id: str, chunks: AsyncIterable[str] | Iterable[str]) -> AsyncIterator[str]:
        """`POST /resolve-stream` (see `ToolOutClient.resolve_stream`)."""

        async def body() -> AsyncIterator[bytes]:
            if isinstance(chunks, AsyncIterable):
                async for chunk in chunks:
                    yield chunk.encode("utf-8")
            else:
                for chunk in chunks:
                    yield chunk.encode("utf-8")

        path = _resolve_stream_path(session_id)
        with wrapped_transport_errors():
            async with self._http.stream("POST", path, content=body(), headers=STREAM_HEADERS) as r:
                if r.status_code >= 400:
                    await r.aread()
                    raise api_error(r)
                async for text in r.aiter_text():
                    yield text
