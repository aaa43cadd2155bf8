"""A tiny MCP server for `toolout mcp-proxy`'s tests: each tool is one behaviour a gateway must carry.

    python tests/toolout/mcp/tiny_upstream.py stdio
    python tests/toolout/mcp/tiny_upstream.py http PORT        # Streamable HTTP at http://127.0.0.1:PORT/mcp
    python tests/toolout/mcp/tiny_upstream.py http-legacy PORT # the same, as a server from before 2026-07-28

Tools: `echo` (text back), `lines` (N numbered lines, one planted needle), `sleep` (answers after
`seconds`, reporting progress), `broken` (a tool error result), `refuse` (a JSON-RPC error),
`picture` (an image block), `getenv` (this process's environment); one resource
(`tiny://greeting`) and one prompt (`haiku`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

NEEDLE = "the vault code is 4417"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
STEPS = 3
"""`sleep` reports its progress in this many steps."""
REFUSAL = (types.INVALID_PARAMS, "refuse always refuses", {"why": "by design"})


def _tool(tool: str, description: str, **properties: Any) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return types.Tool(name=tool, description=description, input_schema=schema)


TOOLS = [
    _tool("echo", "Say it back.", text={"type": "string"}),
    _tool("lines", "N numbered lines, one of them holding a secret.", count={"type": "integer"}),
    _tool("sleep", "Answer after a while.", seconds={"type": "number"}),
    _tool("broken", "Always an error result."),
    _tool("refuse", "Always a protocol error."),
    _tool("picture", "A one-pixel PNG."),
    _tool("getenv", "An environment variable of this server's process.", name={"type": "string"}),
]


def numbered_lines(count: int) -> str:
    return "\n".join(f"line {n}: {NEEDLE if n == count // 2 else 'nothing to see'}" for n in range(1, count + 1))


def text(value: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=is_error)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return text(str(args["text"]))
    if params.name == "lines":
        return text(numbered_lines(int(args["count"])))
    if params.name == "sleep":
        for step in range(1, STEPS + 1):
            await anyio.sleep(float(args["seconds"]) / STEPS)
            await ctx.session.report_progress(step, STEPS, f"slept {step}/{STEPS}")
        return text("awake")
    if params.name == "broken":
        return text("the widget is broken", is_error=True)
    if params.name == "refuse":
        raise MCPError(*REFUSAL)
    if params.name == "getenv":
        return text(os.environ.get(str(args["name"]), "(unset)"))
    if params.name == "picture":
        return types.CallToolResult(content=[types.ImageContent(type="image", data=PIXEL, mime_type="image/png")])
    raise MCPError(types.METHOD_NOT_FOUND, f"no tool {params.name}")


async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


GREETING = types.Resource(uri="tiny://greeting", name="greeting", mime_type="text/plain")
INSTRUCTIONS = "Use lines to find the vault code."
PROMPT = types.Prompt(name="haiku", description="A haiku about a topic.")


async def list_resources(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[GREETING])


async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    if str(params.uri) != str(GREETING.uri):
        raise MCPError(-32002, f"no resource {params.uri}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text="hello from tiny")])


async def list_prompts(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[PROMPT])


async def get_prompt(_ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    topic = (params.arguments or {}).get("topic", "rain")
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"A haiku on {topic}"))
    return types.GetPromptResult(messages=[message])


def server() -> Server[Any]:
    return Server(
        "tiny-upstream",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    app = server()
    async with stdio_server() as (read_stream, write_stream):
        await app.run(read_stream, write_stream, app.create_initialization_options())


def serve_http(port: int, *, legacy: bool = False) -> None:
    """`legacy`: answer like a server from before 2026-07-28 (no `server/discover`), so clients fall back to
    the initialize handshake and get results as server-sent events."""
    import uvicorn

    app = server()
    if legacy:
        app._request_handlers.pop("server/discover")  # the SDK has no switch for it: this is the test's stand-in
    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(serve_stdio)
    else:
        serve_http(int(sys.argv[2]), legacy=sys.argv[1] == "http-legacy")
