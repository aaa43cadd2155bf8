"""The MCP server behind `toolout mcp-proxy`: a command on stdio or a Streamable HTTP URL, through the official client.

Whatever goes wrong upstream reaches the proxy's own client as an `MCPError`, promptly:

* a tool's error result (`isError`) is a result, and passes through as it is;
* a JSON-RPC error from the upstream keeps its code, message and data;
* a crash or a closed connection fails the calls in flight at once (the SDK answers them with
  `CONNECTION_CLOSED`); the next call connects again, so a restarted upstream is picked up;
* a call that takes longer than `timeout` seconds fails with `REQUEST_TIMEOUT` (the SDK's own timer);
* anything else (the command cannot start, the URL refuses connections) is `INTERNAL_ERROR` with the
  upstream's description and the cause, never a hang and never a traceback on the wire.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, types
from mcp.client import Transport
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from toolout.mcp.tools import Progress

logger = logging.getLogger(__name__)
R = TypeVar("R", bound=types.Result)
CONNECT_TIMEOUT = 60.0
"""Seconds to start the upstream and finish the handshake (an `npx -y` first run downloads the package)."""


@dataclass(frozen=True)
class UpstreamSpec:
    """Which upstream to run: `command` (argv, on stdio) or `url` (Streamable HTTP), and the per-call timeout."""

    command: tuple[str, ...] = ()
    url: str | None = None
    timeout: float = 300.0
    env: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError("an upstream is either a command or a URL (exactly one of them)")

    @property
    def label(self) -> str:
        """How the upstream is named in errors: its command line or its URL."""
        return self.url or shlex.join(self.command)

    def target(self) -> StdioServerParameters | Transport:
        """What `mcp.Client` connects to. Over HTTP, without the SDK's 1 MiB limit on one server-sent event:
        a pre-2026-07-28 server sends a tool result as one event, and big results are what the proxy is for."""
        if self.url:
            return streamable_http_client(self.url, max_sse_event_size=None)
        return StdioServerParameters(command=self.command[0], args=list(self.command[1:]), env=self.env)


class UpstreamError(MCPError):
    """The upstream could not be reached or answered with something other than a result."""


def upstream_error(spec: UpstreamSpec, what: str, cause: BaseException) -> MCPError:
    """An `MCPError` naming the upstream; the SDK's own errors (closed, timeout, the upstream's) keep their code."""
    if isinstance(cause, MCPError):
        message = f"upstream MCP server ({spec.label}) {what}: {cause.message}"
        return UpstreamError(cause.code, message, cause.data)
    detail = str(cause) or type(cause).__name__
    return UpstreamError(types.INTERNAL_ERROR, f"upstream MCP server ({spec.label}) {what}: {detail}")


class Upstream:
    """One connection to the upstream at a time, opened on first use and again after it broke.

    The connection lives in a task of its own (`async with Upstream(spec)` holds the task group): the
    SDK's client must be closed by the task that opened it, and the proxy calls from a task per request.
    """

    def __init__(self, spec: UpstreamSpec) -> None:
        self.spec = spec
        self._client: Client | None = None
        self._closing: anyio.Event | None = None
        self._lock = anyio.Lock()
        self._tasks: TaskGroup | None = None

    async def __aenter__(self) -> Upstream:
        self._tasks = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
        assert self._tasks is not None
        await self._tasks.__aexit__(None, None, None)

    @property
    def instructions(self) -> str | None:
        """The instructions the upstream gave at its handshake (None before connecting, or when it gave none)."""
        return self._client.instructions if self._client is not None else None

    async def list_tools(self) -> list[types.Tool]:
        """Every tool of the upstream (all pages), as the upstream describes it."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.request("listing its tools", types.ListToolsRequest(params=params), types.ListToolsResult)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, *, progress: Progress | None = None
    ) -> types.CallToolResult:
        """The upstream's result for one call, unvalidated and unchanged (see the module doc for failures).

        `progress`: called with the upstream's progress notifications for this call.
        """
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        return await self.request(f"calling {name}", request, types.CallToolResult, progress=progress)

    async def request(
        self, what: str, request: types.Request[Any, Any], result_type: type[R], *, progress: Progress | None = None
    ) -> R:
        """Any request, forwarded as it is; its result parsed as `result_type`, failures as in the module doc."""
        async with self._calling(what) as client:
            return await client.session.send_request(
                request, result_type, request_read_timeout_seconds=self.spec.timeout,
                progress_callback=_relay(progress) if progress is not None else None,
            )  # fmt: skip

    @contextlib.asynccontextmanager
    async def _calling(self, what: str) -> AsyncIterator[Client]:
        """The connected client; a failure becomes an `UpstreamError` and drops a broken connection."""
        client = await self._connected(what)
        try:
            yield client
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                await self.close()
            raise upstream_error(self.spec, what, exc) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            await self.close()
            raise upstream_error(self.spec, f"{what}: the connection broke", exc) from exc

    async def _connected(self, what: str) -> Client:
        async with self._lock:
            if self._client is None:
                if self._tasks is None:
                    raise RuntimeError("use the upstream inside `async with Upstream(spec)`")
                try:
                    with anyio.fail_after(CONNECT_TIMEOUT):
                        await self._tasks.start(self._own_connection)
                except Exception as exc:  # whatever the transport raised: name the upstream instead
                    raise upstream_error(self.spec, f"could not be started or reached ({what})", exc) from exc
            assert self._client is not None
            return self._client

    async def _own_connection(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the client, hand it over, and keep it open until `close()` (or until it broke)."""
        closing = anyio.Event()
        started = False
        try:
            async with Client(self.spec.target(), cache=None, read_timeout_seconds=self.spec.timeout) as client:
                self._client, self._closing, started = client, closing, True
                task_status.started()
                await closing.wait()
        except Exception:
            if not started:
                raise
            logger.debug("the upstream connection ended with an error", exc_info=True)
        finally:
            if self._closing is closing:
                self._client, self._closing = None, None

    async def close(self) -> None:
        """Stop the upstream (a stdio command is terminated) and forget the connection."""
        closing, self._client, self._closing = self._closing, None, None
        if closing is not None:
            closing.set()


def _relay(report: Progress) -> ProgressFnT:
    """The SDK's progress callback shape (named parameters) around a plain `progress(done, total, message)`."""

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        await report(progress, total, message)

    return relay
