"""`toolout mcp-proxy` in front of a Streamable HTTP upstream and a stdio one, on the live test API.

The upstream is `tiny_upstream.py` (one tool per behaviour); the official client talks to the proxy:
* over HTTP upstream: tools listed, small results unchanged, an oversized one replaced, a tool error
  result and an image passed through as they are, a JSON-RPC error kept (code, message, data);
* an HTTP upstream's multi-megabyte result (also as one server-sent event, from a pre-2026 server): stored;
* the upstream's resources and prompts, its instructions, its progress notifications: passed on;
* the upstream command's environment: the proxy's, without `TOOLOUT_*`;
* an upstream that does not answer in `--timeout`, dies during a call, or whose HTTP server went away:
  an MCP error within seconds;
* the proxy itself served over Streamable HTTP (`--transport http`).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.toolout.mcp import tiny_upstream
from toolout.devstack import processes
from toolout.mcp import output_uri
from toolout.mcp.resources import resource_templates
from toolout.mcp.server import INSTRUCTIONS
from toolout.toolkit.standard import STANDARD_NAMES

# Every test here runs the proxy and its upstream as processes (stdio or HTTP servers) against a live API.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.twin("the MCP proxy's upstream transport; the API behind it is the test's stand-in"),
]

ROOT = Path(__file__).resolve().parents[3]
TINY = str(Path(tiny_upstream.__file__).resolve())
ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}


def listening(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


@pytest.fixture(params=["http"])
def http_upstream(request, tmp_path) -> Iterator[tuple[str, processes.Service]]:
    """The tiny upstream on Streamable HTTP (`http-legacy`: as a server from before 2026-07-28): URL, process."""
    port = processes.free_port()
    service = processes.Service(
        "tiny-upstream", [sys.executable, TINY, request.param, str(port)], ENV, tmp_path / "upstream.log"
    )
    service.ready = lambda: listening(port)
    with processes.running(service, timeout=30):
        yield f"http://127.0.0.1:{port}/mcp", service


def proxy(api_url: str, *options: str) -> StdioServerParameters:
    args = ["-m", "toolout.cli", "mcp-proxy", "--api-url", api_url, *options]
    return StdioServerParameters(command=sys.executable, args=args, env=ENV, cwd=str(ROOT))


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def same_result(got: object, expected: types.CallToolResult) -> bool:
    """Equal but for `_meta`'s server stamp (on 2026-07-28 each server stamps its own: here, the proxy's)."""
    assert isinstance(got, types.CallToolResult)
    assert (got.meta or {}).get(types.SERVER_INFO_META_KEY, {}).get("name") == "toolout-mcp-proxy"
    return got.model_copy(update={"meta": None}) == expected


def test_an_http_upstream_through_the_proxy(live_api, http_upstream) -> None:
    url, _ = http_upstream

    async def scenario() -> dict[str, object]:
        async with Client(proxy(live_api.url, "--upstream-url", url), cache=None) as client:
            seen: dict[str, object] = {"tools": [t.name for t in (await client.list_tools()).tools]}
            seen["instructions"] = client.instructions
            seen["echo"] = await client.call_tool("echo", {"text": "hi ✓"})
            seen["lines"] = await client.call_tool("lines", {"count": 3000})
            seen["broken"] = await client.call_tool("broken", {})
            seen["picture"] = await client.call_tool("picture", {})
            try:
                await client.call_tool("refuse", {})
            except MCPError as exc:
                seen["refuse"] = exc
            return seen

    seen = anyio.run(scenario)
    assert seen["tools"] == [tool.name for tool in tiny_upstream.TOOLS] + list(STANDARD_NAMES)
    assert seen["instructions"] == f"{tiny_upstream.INSTRUCTIONS}\n\n{INSTRUCTIONS}"  # the upstream's, then toolout's
    assert same_result(seen["echo"], tiny_upstream.text("hi ✓"))
    assert same_result(seen["broken"], tiny_upstream.text("the widget is broken", is_error=True))
    picture = seen["picture"]
    assert isinstance(picture, types.CallToolResult) and picture.content[0].type == "image"
    lines = seen["lines"]
    assert isinstance(lines, types.CallToolResult)
    [message] = texts(lines)
    [link] = [block for block in lines.content if isinstance(block, types.ResourceLink)]
    size = len(tiny_upstream.numbered_lines(3000).encode())
    assert message.startswith(f"Tool output is too large ({size} bytes, 3000 lines, ")
    assert f'Call tool_output(handle = "{link.name.removeprefix("output ")}"' in message
    assert link.uri == output_uri(link.name.removeprefix("output "))
    refused = seen["refuse"]
    assert isinstance(refused, MCPError)
    code, text, data = tiny_upstream.REFUSAL
    assert (refused.code, refused.data) == (code, data) and text in refused.message


@pytest.mark.parametrize("http_upstream", ["http", "http-legacy"], indirect=True)
def test_a_multi_megabyte_result_from_an_http_upstream_is_stored_not_refused(live_api, http_upstream) -> None:
    url, _ = http_upstream
    count = 200_000  # about 5.5 MB: as one server-sent event (legacy), over the SDK client's default 1 MiB limit

    async def scenario() -> types.CallToolResult:
        async with Client(proxy(live_api.url, "--upstream-url", url), cache=None) as client:
            return await client.call_tool("lines", {"count": count})

    result = anyio.run(scenario)
    size = len(tiny_upstream.numbered_lines(count).encode())
    assert size > 4 << 20 and not result.is_error
    assert texts(result)[0].startswith(f"Tool output is too large ({size} bytes, {count} lines, ")


def test_the_upstreams_resources_and_prompts_pass_through_with_the_stored_outputs(live_api, http_upstream) -> None:
    url, _ = http_upstream

    async def scenario() -> dict[str, object]:
        async with Client(proxy(live_api.url, "--upstream-url", url), cache=None) as client:
            big = await client.call_tool("lines", {"count": 3000})
            [link] = [block for block in big.content if isinstance(block, types.ResourceLink)]
            return {
                "link": link.uri,
                "resources": [str(r.uri) for r in (await client.list_resources()).resources],
                "templates": [t.uri_template for t in (await client.list_resource_templates()).resource_templates],
                "greeting": await client.read_resource("tiny://greeting"),
                "stored": await client.read_resource(link.uri),
                "prompts": [p.name for p in (await client.list_prompts()).prompts],
                "haiku": await client.get_prompt("haiku", {"topic": "gateways"}),
            }

    seen = anyio.run(scenario)
    assert seen["resources"] == ["tiny://greeting", seen["link"]]  # the upstream's, then the session's outputs
    assert seen["templates"] == [t.uri_template for t in resource_templates()]
    greeting, stored, haiku = seen["greeting"], seen["stored"], seen["haiku"]
    assert isinstance(greeting, types.ReadResourceResult) and greeting.contents[0].text == "hello from tiny"
    assert isinstance(stored, types.ReadResourceResult) and stored.contents[0].uri == seen["link"]
    assert stored.contents[0].text == tiny_upstream.numbered_lines(3000)
    assert seen["prompts"] == ["haiku"]
    assert isinstance(haiku, types.GetPromptResult) and haiku.messages[0].content.text == "A haiku on gateways"


def test_an_upstream_call_over_the_timeout_is_an_error_not_a_hang(live_api) -> None:
    upstream = ["--timeout", "1", "--", sys.executable, TINY, "stdio"]

    async def scenario() -> tuple[float, MCPError, types.CallToolResult]:
        async with Client(proxy(live_api.url, *upstream), cache=None) as client:
            started = time.monotonic()
            with pytest.raises(MCPError) as failed:
                with anyio.fail_after(15):
                    await client.call_tool("sleep", {"seconds": 30})
            elapsed = time.monotonic() - started
            return elapsed, failed.value, await client.call_tool("echo", {"text": "still here"})

    elapsed, error, after = anyio.run(scenario)
    assert elapsed < 6 and "upstream MCP server" in error.message and "sleep" in error.message
    assert texts(after) == ["still here"]


def test_the_upstreams_progress_reaches_the_client(live_api) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def scenario() -> types.CallToolResult:
        async with Client(proxy(live_api.url, "--", sys.executable, TINY, "stdio"), cache=None) as client:
            return await client.call_tool("sleep", {"seconds": 0.3}, progress_callback=progress)

    assert texts(anyio.run(scenario)) == ["awake"]
    steps = tiny_upstream.STEPS
    assert seen == [(n, steps, f"slept {n}/{steps}") for n in range(1, steps + 1)]


def test_the_upstream_command_gets_the_proxys_environment_but_not_the_toolout_key(live_api) -> None:
    params = proxy(live_api.url, "--", sys.executable, TINY, "stdio")
    params = params.model_copy(update={"env": {**ENV, "UPSTREAM_TOKEN": "t-123", "TOOLOUT_API_KEY": "tk_secret"}})

    async def scenario() -> list[str]:
        async with Client(params, cache=None) as client:
            token = await client.call_tool("getenv", {"name": "UPSTREAM_TOKEN"})
            key = await client.call_tool("getenv", {"name": "TOOLOUT_API_KEY"})
            return texts(token) + texts(key)

    assert anyio.run(scenario) == ["t-123", "(unset)"]


def test_an_upstream_that_dies_during_a_call_fails_that_call_at_once(live_api, tmp_path) -> None:
    pid_file = tmp_path / "upstream.pid"
    upstream = ["sh", "-c", f'echo $$ > "{pid_file}"; exec "{sys.executable}" "{TINY}" stdio']

    async def scenario() -> tuple[float, MCPError]:
        async with Client(proxy(live_api.url, "--", *upstream), cache=None) as client, anyio.create_task_group() as tg:

            async def kill_soon() -> None:
                await anyio.sleep(1)
                os.kill(int(pid_file.read_text()), signal.SIGKILL)

            tg.start_soon(kill_soon)
            started = time.monotonic()
            with pytest.raises(MCPError) as failed:
                with anyio.fail_after(15):
                    await client.call_tool("sleep", {"seconds": 60})
            return time.monotonic() - started, failed.value

    elapsed, error = anyio.run(scenario)
    assert elapsed < 5 and "upstream MCP server" in error.message and "sleep" in error.message


def test_an_http_upstream_that_went_away_is_an_error_not_a_hang(live_api, http_upstream) -> None:
    url, service = http_upstream

    async def scenario() -> tuple[float, MCPError]:
        async with Client(proxy(live_api.url, "--upstream-url", url, "--timeout", "20"), cache=None) as client:
            assert texts(await client.call_tool("echo", {"text": "before"})) == ["before"]
            service.stop()
            started = time.monotonic()
            with pytest.raises(MCPError) as failed:
                with anyio.fail_after(30):
                    await client.call_tool("echo", {"text": "after"})
            return time.monotonic() - started, failed.value

    elapsed, error = anyio.run(scenario)
    assert elapsed < 10 and "upstream MCP server" in error.message


def test_the_proxy_served_over_streamable_http(live_api, tmp_path) -> None:
    port = processes.free_port()
    argv = [
        *processes.toolout_argv("mcp-proxy", "--api-url", live_api.url, "--transport", "http", "--port", str(port)),
        *("--", sys.executable, TINY, "stdio"),
    ]
    service = processes.Service("proxy", argv, ENV, tmp_path / "proxy.log", ready=lambda: listening(port))

    async def scenario() -> tuple[list[str], types.CallToolResult]:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, await client.call_tool("echo", {"text": "over http"})

    with processes.running(service, timeout=60):
        names, echoed = anyio.run(scenario)
    assert names == [tool.name for tool in tiny_upstream.TOOLS] + list(STANDARD_NAMES)
    assert texts(echoed) == ["over http"]
