"""`toolout mcp` end to end: the official MCP client, over stdio and over streamable HTTP, in front of the
real stack (API + Celery worker + Redis + the offline model, as processes).

Each transport gets its own 10 MB JSON output (a different seed, so the result cache cannot answer
the second one) with the planted order; the client lists the tools and resources, runs
`tool_output` with a progress callback, and reads the output back as a resource, window by window.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from tests.toolout.mcp.clients import http_server, over_http, over_stdio
from toolout.devstack import datasets
from toolout.mcp import DEFAULT_MAX_BYTES, output_uri
from toolout.toolkit.standard import STANDARD_NAMES, standard_tools

OUTPUT_BYTES = 10 << 20
SEEDS = {"stdio": 7, "http": 8}
pytestmark = pytest.mark.slow

Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]


@dataclass
class Served:
    """A stored output and how to open an MCP session with a `toolout mcp` whose session holds it."""

    transport: str
    session_id: str
    handle: str
    content: bytes
    connect: Connect


def _store(local_stack: Any, seed: int) -> tuple[str, str, bytes]:
    content = b"".join(datasets.json_orders(OUTPUT_BYTES, seed=seed))
    with local_stack.client() as client:
        session = client.create_session()
        meta = client.store(session, content, tool_name="orders.export", content_type="application/json")
    return session, meta["handle"], content


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, local_stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    session, handle, content = _store(local_stack, SEEDS[request.param])
    if request.param == "stdio":
        env = {"TOOLOUT_API_URL": local_stack.api_url, "TOOLOUT_SESSION": session, "TOOLOUT_API_KEY": "dev-key"}
        yield Served("stdio", session, handle, content, lambda: over_stdio(env))
        return
    headers = {"Authorization": "Bearer dev-key", "X-Toolout-Session": session}
    with http_server({"TOOLOUT_API_URL": local_stack.api_url}, tmp_path_factory.mktemp("mcp-http")) as url:
        yield Served("http", session, handle, content, lambda: over_http(url, headers))


def run(served: Served, scenario: Callable[[ClientSession], Any]) -> Any:
    async def go() -> Any:
        async with served.connect() as session:
            return await scenario(session)

    return asyncio.run(go())


def test_lists_exactly_the_four_toolout_tools_with_the_toolkits_schemas(served: Served) -> None:
    listed = run(served, lambda s: s.list_tools()).tools
    assert [tool.name for tool in listed] == list(STANDARD_NAMES)
    schemas = {name: tool.parameters for name, tool in standard_tools().items()}
    assert {tool.name: tool.input_schema for tool in listed} == schemas


def test_lists_the_sessions_outputs_and_the_templates(served: Served) -> None:
    async def scenario(session: ClientSession) -> tuple[Any, Any]:
        return await session.list_resources(), await session.list_resource_templates()

    resources, templates = run(served, scenario)
    (only,) = resources.resources
    assert (only.uri, only.name, only.size) == (output_uri(served.handle), "orders_export_1", len(served.content))
    assert only.mime_type == "application/json"
    assert [t.uri_template for t in templates.resource_templates] == [
        "toolout://outputs/{handle}",
        "toolout://outputs/{handle}/bytes/{offset}",
        "toolout://outputs/{handle}/lines/{first}-{last}",
        "toolout://sessions/{session_id}",
    ]


def test_tool_output_on_10_mb_reports_progress_and_finds_the_planted_order(served: Served) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def scenario(session: ClientSession) -> Any:
        arguments = {"handle": served.handle, "extract": datasets.ORDER_NEEDLE.request}
        return await session.call_tool("tool_output", arguments, progress_callback=on_progress)

    started = time.monotonic()
    result = run(served, scenario)
    elapsed = time.monotonic() - started
    assert not result.is_error, result.content
    text, link, *_sources = result.content
    assert text.text.startswith(f"ABSTRACT FROM TOOL OUTPUT orders.export WITH HANDLE {served.handle}, STRATEGY:")
    assert datasets.ORDER_NEEDLE.needle in text.text
    assert isinstance(link, types.ResourceLink) and link.uri == output_uri(served.handle)
    values = [done for done, _, _ in progress]
    assert len(values) >= 1 and values == sorted(set(values)), progress
    assert all(message and " LLM calls · " in message for _, _, message in progress)
    print(f"tool_output over {served.transport}: {elapsed:.1f}s, {len(progress)} progress notifications: {progress}")


LOG_NEEDLE = "2024-03-07T10:15:00 ERROR payment gateway declined order ORD-77341 (code E_CARD_DECLINED)"


def test_the_answers_sources_are_resource_links_to_the_cited_lines(served: Served, local_stack: Any) -> None:
    lines = [f"2024-03-07T10:{i // 60 % 60:02d}:{i % 60:02d} INFO worker-{i % 7} batch {i}" for i in range(20_000)]
    lines[12_345] = LOG_NEEDLE
    content = ("\n".join(lines) + "\n").encode()
    with local_stack.client() as client:
        handle = client.store(served.session_id, content, tool_name=f"logs.{served.transport}")["handle"]

    async def scenario(session: ClientSession) -> tuple[Any, list[Any]]:
        arguments = {"handle": handle, "extract": "the payment error for order ORD-77341", "mode": "full-chunked"}
        result = await session.call_tool("tool_output", arguments)
        links = [block for block in result.content if isinstance(block, types.ResourceLink)][1:]
        return result, [await session.read_resource(link.uri) for link in links]

    result, reads = run(served, scenario)
    text = result.content[0].text
    links = [block for block in result.content if isinstance(block, types.ResourceLink)][1:]
    assert links and text.rstrip().splitlines()[-1].startswith("SOURCES: L12346") and "WARNING" not in text
    for link, read in zip(links, reads, strict=True):
        first, last = (int(n) for n in str(link.uri).rsplit("/", 1)[1].split("-"))
        assert str(link.uri) == f"{output_uri(handle)}/lines/{first}-{last}" and link.name == f"L{first}-L{last}"
        assert link.description.startswith("source of the answer: verified (exact): ")
        shown = read.contents[0].text
        assert f"{first:>6}\t" in shown and link.description.split("): ", 1)[1] in "\n".join(lines[first - 1 : last])
    assert any(LOG_NEEDLE in read.contents[0].text for read in reads)


def test_reading_the_resource_window_by_window_gives_the_stored_bytes(served: Served) -> None:
    async def scenario(session: ClientSession) -> list[types.ReadResourceResult]:
        pages, uri = [], output_uri(served.handle)
        while uri is not None:
            page = await session.read_resource(uri)
            pages.append(page)
            uri = page.contents[0].meta["toolout"]["next"]
        return pages

    pages = run(served, scenario)
    assert len(pages) == -(-len(served.content) // DEFAULT_MAX_BYTES)
    texts = [page.contents[0].text for page in pages]
    assert "".join(texts).encode() == served.content
    first = pages[0].contents[0]
    assert first.mime_type == "application/json"
    assert first.meta["toolout"] == {
        "bytes": len(served.content),
        "offset": 0,
        "end": DEFAULT_MAX_BYTES,
        "next": f"{output_uri(served.handle)}/bytes/{DEFAULT_MAX_BYTES}",
    }


def test_client_mistakes_come_back_as_error_results_and_protocol_errors(served: Served) -> None:
    async def scenario(session: ClientSession) -> tuple[Any, Any, list[MCPError]]:
        missing = await session.call_tool("tool_output_cache", {"ref_id": "00000000-0000-0000-0000-000000000000"})
        arguments = {"ref_id": served.handle, "pattern": "(", "regex": True}
        invalid = await session.call_tool("tool_output_cache_grep", arguments)
        errors = []
        for uri in (output_uri("00000000-0000-0000-0000-000000000000"), "toolout://elsewhere/x"):
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                errors.append(exc)
        return missing, invalid, errors

    missing, invalid, errors = run(served, scenario)
    assert missing.is_error and missing.content[0].text.startswith("Error: ")
    assert len(missing.content) == 1  # no link to an output that does not exist
    assert invalid.is_error and invalid.content[0].text.startswith("Error: ")  # the service's 4xx for a bad regex
    assert [e.error.code for e in errors] == [-32002, -32602]


def test_buffer_ops_works_on_the_configured_session(served: Served) -> None:
    result = run(served, lambda s: s.call_tool("buffer_ops", {"operation": "list"}))
    assert not result.is_error
    assert "orders_export_1" in result.content[0].text
