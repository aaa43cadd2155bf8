"""`toolout mcp-proxy`: an MCP gateway that keeps oversized tool results out of the agent's context.

    toolout mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem /data
    toolout mcp-proxy --upstream-url http://127.0.0.1:9000/mcp --route 'search(output=variable:hits)'

The proxy is an MCP server (stdio, or Streamable HTTP) in front of one upstream MCP server (a command
on stdio, or a URL; `toolout.mcp.upstream`):

* `tools/list`: the upstream's tools exactly as the upstream lists them, then toolout's tools
  (`tool_output`, `tool_output_cache`, `tool_output_cache_grep`, `buffer_ops`, from `toolout.mcp.tools`);
* `tools/call` on an upstream tool: the upstream's result, through `toolout.mcp.results.shrink`
  (small: unchanged; oversized: the too-large message and a `resource_link`; routed: the manifest);
* `tools/call` on a toolout tool: answered by the toolout service, in the proxy's session;
* resources and prompts: the upstream's, plus the stored outputs as `toolout://outputs/...`
  resources, so a `resource_link` can be read (`toolout.mcp.passthrough`).

Routes are `@tools` text (docs/spec/directives.md, `toolout.toolkit.routes`); a route naming a tool the upstream does
not have stops the proxy at startup, as it stops a toolkit (a typo would silently leave it inline).
The proxy's toolout session is `--session`, or one it creates on first use and deletes when it exits.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

from extraction.directives.specs import OutputRoute
from toolout.client import AsyncToolOutClient, ToolOutAPIError
from toolout.mcp import KEEP_ALIVE_SECONDS, passthrough
from toolout.mcp.passthrough import service_call, unavailable
from toolout.mcp.results import StorePolicy, Upload, shrink, unstamped
from toolout.mcp.server import INSTRUCTIONS, package_version
from toolout.mcp.tools import Progress, call_toolout_tool, is_toolout_tool, toolout_tools
from toolout.mcp.upstream import Upstream, UpstreamSpec
from toolout.toolkit.routes import parse_routes

logger = logging.getLogger(__name__)
SERVER_NAME = "toolout-mcp-proxy"


@dataclass(frozen=True)
class ProxyConfig:
    """Everything `toolout mcp-proxy` is told: the upstream, the service, the routes."""

    upstream: UpstreamSpec
    api_url: str
    api_key: str | None = None
    session: str | None = None
    routes: Sequence[str] = field(default_factory=tuple)
    store: StorePolicy = "if_oversized"

    @property
    def route_text(self) -> str | None:
        """The `--route` options as one `@tools` directive text (None when there are none)."""
        lines = [text if text.lstrip().startswith("@tools") else f"@tools {text}" for text in self.routes]
        return "\n".join(lines) or None


class Proxy:
    """The gateway's state: the upstream, the service client, the session and the routes."""

    def __init__(self, config: ProxyConfig, upstream: Upstream, client: AsyncToolOutClient) -> None:
        self.config, self.upstream, self.client = config, upstream, client
        self.routes: dict[str, OutputRoute | None] = {}
        self.session_id = config.session
        self.created_session = False
        self._session_lock = anyio.Lock()

    async def start(self) -> None:
        """Connect to the upstream and parse `--route` against its tools, before serving: a wrong command or
        URL, or a route for a tool the upstream lacks (`ToolDefinitionError`), stops the proxy with a message."""
        names = [tool.name for tool in await self.upstream.list_tools()]
        self.routes = parse_routes(self.config.route_text, names)

    async def list_tools(self) -> list[types.Tool]:
        """The upstream's tools unchanged, then toolout's (an upstream tool with a toolout name is hidden)."""
        listed = await self.upstream.list_tools()
        hidden = [tool.name for tool in listed if is_toolout_tool(tool.name)]
        if hidden:
            logger.warning("the upstream's tool(s) %s are hidden: toolout's tools have those names", hidden)
        return [tool for tool in listed if not is_toolout_tool(tool.name)] + toolout_tools()

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, progress: Progress | None = None
    ) -> types.CallToolResult:
        """One call: a toolout tool answered by the service, else the upstream's result through `shrink`.

        `progress`: the client's progress reporter (when it asked for progress); the upstream's progress
        notifications and `tool_output`'s job progress are relayed to it.
        """
        if is_toolout_tool(name):
            session = await self.session()
            return await service_call(
                name, call_toolout_tool(self.client, name, arguments, progress=progress, session_id=session)
            )
        result = unstamped(await self.upstream.call_tool(name, arguments, progress=progress))
        if result.is_error:
            return result
        upload = Upload(await self.session(), name, arguments, self.routes.get(name), self.config.store)
        try:
            return await service_call(name, shrink(self.client, result, upload))
        except ToolOutAPIError as exc:  # a 4xx: this output cannot be stored (e.g. over the upload limit)
            text = f'Error storing the output of tool "{name}": {exc.message}'
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    async def session(self) -> str:
        """The toolout session: `--session`, or one created on first use."""
        async with self._session_lock:
            if self.session_id is None:
                try:
                    self.session_id = await self.client.create_session()
                except ToolOutAPIError as exc:
                    raise unavailable("creating a session", exc) from exc
                self.created_session = True
            return self.session_id

    async def close(self) -> None:
        """Delete the session the proxy created (its stored outputs go with it)."""
        if self.created_session and self.session_id:
            with contextlib.suppress(ToolOutAPIError):
                await self.client.delete_session(self.session_id)
            self.created_session = False


def build_server(proxy: Proxy) -> Server[Any]:
    """The lowlevel MCP server whose handlers are the proxy's."""

    async def on_list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await proxy.list_tools())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        progress = ctx.session.report_progress if progress_token_from_params(ctx.params) is not None else None
        return await proxy.call_tool(params.name, params.arguments, progress)

    up, client = proxy.upstream, proxy.client

    async def on_list_resources(_ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return await passthrough.list_resources(up, client, await proxy.session(), params)

    async def on_list_templates(
        _ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return await passthrough.list_resource_templates(up, params)

    async def on_read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await passthrough.read_resource(up, client, params)

    async def on_list_prompts(_ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return await passthrough.list_prompts(up, params)

    async def on_get_prompt(_ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await passthrough.get_prompt(up, params)

    return Server(
        SERVER_NAME,
        version=package_version(),
        instructions="\n\n".join(text for text in (up.instructions, INSTRUCTIONS) if text),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
    )


@contextlib.asynccontextmanager
async def running_proxy(config: ProxyConfig) -> AsyncIterator[Proxy]:
    """The upstream connected, the routes checked, the service client open; all closed on exit."""
    async with Upstream(config.upstream) as upstream, AsyncToolOutClient(config.api_url, api_key=config.api_key) as c:
        proxy = Proxy(config, upstream, c)
        await proxy.start()
        try:
            yield proxy
        finally:
            with anyio.CancelScope(shield=True):
                await proxy.close()


async def serve_stdio(config: ProxyConfig) -> None:
    """Serve the proxy on this process's stdin/stdout (how MCP clients start a configured server)."""
    from mcp.server.stdio import stdio_server

    async with running_proxy(config) as proxy:
        server = build_server(proxy)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(config: ProxyConfig, host: str, port: int) -> None:
    """Serve the proxy over Streamable HTTP at `http://host:port/mcp`."""
    import uvicorn

    async with running_proxy(config) as proxy:
        app = build_server(proxy).streamable_http_app(host=host)
        await uvicorn.Server(
            uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_keep_alive=KEEP_ALIVE_SECONDS)
        ).serve()
