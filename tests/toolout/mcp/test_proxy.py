"""`toolout mcp-proxy` in front of a real third-party MCP server, on the real stack.

The official MCP client talks over stdio to `toolout mcp-proxy` (the CLI, a process), which runs the
reference filesystem server from npm (`@modelcontextprotocol/server-filesystem`, on node) and stores
through the real stack (API + Celery worker + offline model):

* `tools/list`: the filesystem server's tools, field for field, then toolout's four;
* a small file, and a missing one (a tool error): the upstream's results byte for byte;
* a 5 MB log: the exact too-large message and a `resource_link` (readable through the proxy);
  `tool_output` through the proxy extracts the planted incident from it, relaying the job's progress;
* `--route 'read_text_file(output=variable:files)'`: the manifest, and `buffer_ops` reads the file back;
* the upstream killed mid-session: the next call fails within seconds, and the one after reconnects.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from extraction.directives.manifest import chars_of, tool_manifest
from extraction.documents.stats import measure
from extraction.texts.oversize import too_large_message
from tests.toolout.mcp.npm_filesystem import filesystem_server_entry, node
from toolout.devstack import datasets
from toolout.mcp import lines_uri, output_uri
from toolout.toolkit.standard import STANDARD_NAMES

BIG_BYTES = 5 << 20
SMALL_TEXT = "line one of a small file\nline two: café ✓\n"
ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A directory for the filesystem server: a small file and a 5 MB service log with planted incidents."""
    folder = tmp_path_factory.mktemp("fs-upstream")
    (folder / "small.txt").write_text(SMALL_TEXT, encoding="utf-8")
    with (folder / "service.log").open("wb") as out:
        for block in datasets.service_log(BIG_BYTES):
            out.write(block)
    return folder.resolve()


@pytest.fixture(scope="module")
def upstream_argv(files) -> list[str]:
    return [node(), str(filesystem_server_entry()), str(files)]


def proxy(api_url: str, upstream: list[str], *options: str) -> StdioServerParameters:
    """`toolout mcp-proxy [options] -- UPSTREAM...` as an MCP client's configuration starts it."""
    args = ["-m", "toolout.cli", "mcp-proxy", "--api-url", api_url, *options, "--", *upstream]
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(ROOT))


@asynccontextmanager
async def connected(server: StdioServerParameters | list[str], mode: str = "auto") -> AsyncIterator[Client]:
    """The official client on a server: the proxy's parameters, or an upstream's argv directly.

    `mode="legacy"` speaks the upstream's protocol version (2025-11-25) to the proxy too: on the
    newer 2026-07-28 the SDK itself leaves out fields that version dropped (a tool's `execution`),
    so only the same version on both sides can show the bytes are the upstream's.
    """
    if isinstance(server, list):
        server = StdioServerParameters(command=server[0], args=server[1:])
    async with Client(server, cache=None, read_timeout_seconds=120, mode=mode) as client:
        yield client


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def links(result: types.CallToolResult) -> list[str]:
    return [block.uri for block in result.content if isinstance(block, types.ResourceLink)]


def test_the_proxy_lists_the_upstreams_tools_unchanged_then_toolouts(local_stack, upstream_argv) -> None:
    async def scenario() -> tuple[list[types.Tool], list[types.Tool]]:
        async with connected(upstream_argv) as direct:
            theirs = (await direct.list_tools()).tools
        async with connected(proxy(local_stack.api_url, upstream_argv), mode="legacy") as client:
            listed = (await client.list_tools()).tools
        return theirs, listed

    theirs, listed = anyio.run(scenario)
    assert "read_text_file" in [tool.name for tool in theirs]
    dump = [tool.model_dump(mode="json", by_alias=True) for tool in listed[: len(theirs)]]
    assert dump == [tool.model_dump(mode="json", by_alias=True) for tool in theirs]
    assert [tool.name for tool in listed[len(theirs) :]] == list(STANDARD_NAMES)


def test_a_small_file_and_an_error_pass_through_byte_for_byte(local_stack, upstream_argv, files) -> None:
    calls = [{"path": str(files / "small.txt")}, {"path": str(files / "missing.txt")}]

    async def scenario() -> tuple[list[types.CallToolResult], list[types.CallToolResult]]:
        async with connected(upstream_argv) as direct:
            theirs = [await direct.call_tool("read_text_file", arguments) for arguments in calls]
        async with connected(proxy(local_stack.api_url, upstream_argv), mode="legacy") as client:
            return theirs, [await client.call_tool("read_text_file", arguments) for arguments in calls]

    theirs, proxied = anyio.run(scenario)
    assert texts(theirs[0]) == [SMALL_TEXT] and theirs[1].is_error and "missing.txt" in texts(theirs[1])[0]
    assert [r.model_dump_json(by_alias=True) for r in proxied] == [r.model_dump_json(by_alias=True) for r in theirs]


def test_a_5_mb_file_becomes_the_too_large_message_and_tool_output_extracts_from_it(
    local_stack, upstream_argv, files
) -> None:
    log = files / "service.log"

    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult, types.ReadResourceResult]:
        async with connected(proxy(local_stack.api_url, upstream_argv)) as client:
            big = await client.call_tool("read_text_file", {"path": str(log)})
            handle = links(big)[0].removeprefix("toolout://outputs/")
            request = {"handle": handle, "extract": datasets.POOL_INCIDENT.request}
            abstract = await client.call_tool("tool_output", request, progress_callback=on_progress)
            return big, abstract, await client.read_resource(links(big)[0])

    started = time.monotonic()
    big, abstract, window = anyio.run(scenario)
    elapsed = time.monotonic() - started
    [handle_uri] = links(big)
    handle = handle_uri.removeprefix("toolout://outputs/")
    stats = measure([log.read_bytes()]).stats
    assert texts(big) == [too_large_message(stats, handle)] and handle_uri == output_uri(handle)
    assert big.structured_content == {"content": texts(big)[0]}  # the tool's outputSchema still holds
    assert not big.is_error and not abstract.is_error
    [answer] = texts(abstract)
    assert answer.startswith(f"ABSTRACT FROM TOOL OUTPUT read_text_file WITH HANDLE {handle}, STRATEGY:")
    assert datasets.POOL_INCIDENT.needle in answer
    incidents = [n for n, line in enumerate(log.read_text().splitlines(), 1) if datasets.POOL_INCIDENT.needle in line]
    assert links(abstract) == [handle_uri, *(lines_uri(handle, n, n) for n in incidents)]  # the output, its sources
    [head] = window.contents  # the link reads as a resource through the proxy: the log's first window
    assert isinstance(head, types.TextResourceContents) and log.read_text().startswith(head.text) and head.text
    assert progress and progress == sorted(set(progress))  # the job's progress, relayed by the proxy
    assert elapsed < 240


def test_a_routed_tool_answers_with_the_manifest_and_buffer_ops_reads_it_back(
    local_stack, upstream_argv, files
) -> None:
    route = "read_text_file(output=variable:files, write-mode=replace)"
    read_back = {"operation": "read", "target": "files", "start_line": 1, "end_line": 2}

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connected(proxy(local_stack.api_url, upstream_argv, "--route", route)) as client:
            routed = await client.call_tool("read_text_file", {"path": str(files / "small.txt")})
            return routed, await client.call_tool("buffer_ops", read_back)

    routed, buffer = anyio.run(scenario)
    assert texts(routed) == [tool_manifest("read_text_file", "variable:files", chars_of(SMALL_TEXT))]
    assert not buffer.is_error
    assert "line one of a small file" in texts(buffer)[0] and "line two: café ✓" in texts(buffer)[0]


def test_a_route_for_a_tool_the_upstream_lacks_stops_the_proxy_with_a_message(local_stack, upstream_argv) -> None:
    params = proxy(local_stack.api_url, upstream_argv, "--route", "read_fiel(output=variable:x)")
    done = subprocess.run(
        [params.command, *params.args], env={**os.environ, **(params.env or {})}, cwd=ROOT,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "routes name unknown tool(s) ['read_fiel']" in done.stderr and "read_text_file" in done.stderr


def test_an_upstream_killed_mid_session_fails_the_call_promptly_and_the_next_call_reconnects(
    local_stack, files, tmp_path
) -> None:
    pid_file = tmp_path / "upstream.pid"
    entry = filesystem_server_entry()
    upstream = ["sh", "-c", f'echo $$ > "{pid_file}"; exec "{node()}" "{entry}" "{files}"']
    arguments = {"path": str(files / "small.txt")}

    async def scenario() -> tuple[float, MCPError, types.CallToolResult]:
        async with connected(proxy(local_stack.api_url, upstream)) as client:
            assert texts(await client.call_tool("read_text_file", arguments)) == [SMALL_TEXT]
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            started = time.monotonic()
            with pytest.raises(MCPError) as failed:
                with anyio.fail_after(10):
                    await client.call_tool("read_text_file", arguments)
            elapsed = time.monotonic() - started
            return elapsed, failed.value, await client.call_tool("read_text_file", arguments)

    elapsed, error, again = anyio.run(scenario)
    assert elapsed < 5
    assert "upstream MCP server" in error.message and "Connection closed" in error.message
    assert texts(again) == [SMALL_TEXT]
