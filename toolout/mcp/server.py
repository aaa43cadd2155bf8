"""`toolout mcp`: an MCP server (the official SDK's low-level `Server`) in front of the toolout API.

* tools — the four toolout tools (`toolout.mcp.tools`): `tools/call` answers through the API;
  `tool_output` sends `notifications/progress` (the SDK drops them unless the request carries a
  progress token).
* resources — the stored outputs (`toolout.mcp.resources`): `resources/list` lists the session's
  variables and files (a page of 100 at a time), two templates address any output by handle (`resources/read` returns a
  window of its text), a third any session (its listing, as JSON).
* transports — stdio (one client, the API key from `--api-key` / `TOOLOUT_API_KEY`) or streamable
  HTTP at `/mcp` (many clients: each request's `Authorization: Bearer <key>` is forwarded as its
  toolout API key, `X-Toolout-Session` picks its session; the server's own key and session are the
  fallback).

Errors: a client mistake the API reports is a tool result with `isError` (see `tools`); an unknown
tool or a bad resource URI is INVALID_PARAMS; an unknown handle read as a resource is -32002
(resource not found); the API unreachable or failing (5xx) is INTERNAL_ERROR naming the API URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from toolout.client import AsyncToolOutClient, NotFoundError, ToolOutAPIError, TransportError, UnavailableError
from toolout.mcp import DEFAULT_MAX_BYTES, KEEP_ALIVE_SECONDS
from toolout.mcp.clients import DEFAULT_MAX_CLIENTS, ClientCache
from toolout.mcp.resources import (
    RESOURCES_PER_PAGE,
    BadCursor,
    BadResourceURI,
    list_outputs,
    page_of,
    read_resource,
    resource_templates,
)
from toolout.mcp.tools import DEFAULT_TIMEOUT, UnknownToolError, call_toolout_tool, toolout_tools

RESOURCE_NOT_FOUND = -32002
SESSION_HEADER = "x-toolout-session"
INSTRUCTIONS = (
    "toolout stores tool outputs too large for your context. Call tool_output with a handle and a precise "
    "extraction request to get an ABSTRACT of what it holds; page or search an output with tool_output_cache "
    "and tool_output_cache_grep; work on the session's variables with buffer_ops. Stored outputs are "
    "resources at toolout://outputs/{handle}."
)
T = TypeVar("T")
Context = ServerRequestContext[Any, Any]


@dataclass(frozen=True)
class ServerConfig:
    """Where the API is and on whose behalf: the defaults every request starts from."""

    api_url: str
    api_key: str | None = None
    session_id: str | None = None
    max_resource_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT
    resources_per_page: int = RESOURCES_PER_PAGE
    max_clients: int = DEFAULT_MAX_CLIENTS
    """API clients kept, one per key (`toolout.mcp.clients`): an HTTP server meets one key per tenant."""
    model: str | None = None
    """The model `tool_output` extractions ask the API for (one of its allowed models; None: the API's own)."""


@dataclass(frozen=True)
class Caller:
    client: AsyncToolOutClient
    session_id: str | None


Connect = Callable[[str, str | None], AsyncToolOutClient]
"""`connect(api_url, api_key)`: a new API client (tests pass one bound to a fake service)."""


def _connect(api_url: str, api_key: str | None) -> AsyncToolOutClient:
    return AsyncToolOutClient(api_url, api_key=api_key)


class Backend:
    """The API clients, one per API key (HTTP callers bring their own; `toolout.mcp.clients` bounds how
    many are kept), closed with the server."""

    def __init__(self, config: ServerConfig, connect: Connect = _connect) -> None:
        self.config = config
        self._clients = ClientCache(lambda key: _asking(connect(config.api_url, key), config.model), config.max_clients)

    @contextlib.asynccontextmanager
    async def caller(self, ctx: Context) -> AsyncIterator[Caller]:
        """The client and session for this request: its HTTP headers' when it has them, else the server's."""
        headers = getattr(ctx.request, "headers", None) or {}
        key = _bearer(headers.get("authorization")) or self.config.api_key
        async with self._clients.using(key) as client:
            yield Caller(client, headers.get(SESSION_HEADER) or self.config.session_id)

    async def aclose(self) -> None:
        await self._clients.aclose()


def _asking(client: AsyncToolOutClient, model: str | None) -> AsyncToolOutClient:
    """The client, its extractions asking for `model` when the server was given one."""
    if model is not None:
        client.model = model
    return client


def _bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def build_server(backend: Backend) -> Server[Any]:
    """The MCP server: its handlers close over `backend`."""
    config = backend.config

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=toolout_tools())

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        async with backend.caller(ctx) as caller:
            call = call_toolout_tool(
                caller.client,
                params.name,
                params.arguments,
                progress=ctx.session.report_progress,  # a no-op unless the caller asked for progress
                session_id=caller.session_id,
                timeout=config.timeout,
            )
            return await _translated(call, config.api_url)

    async def list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        async def listing(caller: Caller) -> tuple[list[types.Resource], str | None]:
            listed = await list_outputs(caller.client, caller.session_id)
            return page_of(listed, params.cursor if params else None, config.resources_per_page)

        async with backend.caller(ctx) as caller:
            page, next_cursor = await _translated(listing(caller), config.api_url)
        return types.ListResourcesResult(resources=page, next_cursor=next_cursor)

    async def list_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resource_templates())

    async def read(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        async with backend.caller(ctx) as caller:
            read = read_resource(caller.client, params.uri, max_bytes=config.max_resource_bytes)
            return await _translated(read, config.api_url, not_found=RESOURCE_NOT_FOUND)

    return Server(
        "toolout",
        version=package_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read,
    )


async def _translated(work: Awaitable[T], api_url: str, *, not_found: int = INVALID_PARAMS) -> T:
    """The API's and the caller's failures as MCP errors (see the module docstring); a 404 gets `not_found`."""
    try:
        return await work
    except (UnknownToolError, BadResourceURI, BadCursor) as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
    except ToolOutAPIError as exc:
        raise _mcp_error(exc, api_url, not_found) from exc


def _mcp_error(exc: ToolOutAPIError, api_url: str, not_found: int) -> MCPError:
    """A 404 is `not_found`, an unreachable or failing service INTERNAL_ERROR, any other 4xx INVALID_PARAMS."""
    if isinstance(exc, TransportError):
        return MCPError(INTERNAL_ERROR, f"cannot reach the toolout API at {api_url}: {exc.message}")
    if isinstance(exc, NotFoundError):
        return MCPError(not_found, exc.message, {"code": exc.code})
    return MCPError(INTERNAL_ERROR if isinstance(exc, UnavailableError) else INVALID_PARAMS, f"toolout API: {exc}")


def package_version() -> str:
    """toolout's installed version, for the serverInfo both MCP servers announce."""
    from importlib.metadata import PackageNotFoundError, version

    with contextlib.suppress(PackageNotFoundError):
        return version("toolout")
    return "0"


@contextlib.asynccontextmanager
async def serving(config: ServerConfig) -> AsyncIterator[Server[Any]]:
    """The server, with its API clients closed when it stops."""
    backend = Backend(config)
    try:
        yield build_server(backend)
    finally:
        await backend.aclose()


async def run_stdio(config: ServerConfig) -> None:
    """Serve one client over this process's stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    async with serving(config) as server, stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def run_http(config: ServerConfig, *, host: str, port: int) -> None:
    """Serve streamable HTTP at `http://host:port/mcp` until interrupted."""
    import uvicorn

    async with serving(config) as server:
        app = server.streamable_http_app(host=host)
        web = uvicorn.Server(
            uvicorn.Config(
                app, host=host, port=port, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_SECONDS
            )
        )
        await web.serve()
