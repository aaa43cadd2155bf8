"""The MCP server in-process (the official `mcp.Client` on the `Server` object) on the fake service:
resources, windows, error mapping, and which key and session an HTTP caller gets. Fast: no processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types.jsonrpc import INVALID_PARAMS

from tests.toolout.fake_service import FakeService
from toolout.client import AsyncToolOutClient
from toolout.mcp import output_uri
from toolout.mcp.resources import parse_uri, utf8_prefix, window_uri
from toolout.mcp.server import RESOURCE_NOT_FOUND, Backend, Caller, ServerConfig, build_server

TEXT = "".join(f"{n:03d} ünïcödé line\n" for n in range(200))  # multi-byte characters everywhere


def setup(service: FakeService, **config: Any) -> tuple[Backend, str, str]:
    """A backend on the fake service whose session holds one stored output; the session and its handle."""
    sync = service.sync_client()
    session = sync.create_session()
    handle = sync.store(session, TEXT, tool_name="notes.fetch")["handle"]
    connect = lambda url, key: service.async_client()  # noqa: E731
    return Backend(ServerConfig("http://fake", session_id=session, **config), connect), session, handle


def run(backend: Backend, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with Client(build_server(backend)) as client:
            return await scenario(client)

    return asyncio.run(go())


def test_lists_the_sessions_variables_as_resources() -> None:
    backend, _, handle = setup(FakeService())
    listed = run(backend, lambda c: c.list_resources()).resources
    assert [(r.uri, r.name, r.size) for r in listed] == [(output_uri(handle), "notes_fetch_1", len(TEXT.encode()))]
    assert listed[0].description.startswith("variable $notes_fetch_1 from notes.fetch: ")


def test_a_long_listing_comes_a_page_at_a_time_in_storing_order() -> None:
    service = FakeService()
    backend, session, first = setup(service, resources_per_page=2)
    sync = service.sync_client()
    handles = [first] + [sync.store(session, f"output {n}", tool_name="notes.fetch")["handle"] for n in range(4)]

    async def scenario(client: Client) -> tuple[list[list[str]], list[str | None], MCPError]:
        pages: list[list[str]] = []
        cursors: list[str | None] = []
        cursor = None
        while True:
            result = await client.list_resources(cursor=cursor)
            pages.append([str(r.uri) for r in result.resources])
            cursor = result.next_cursor
            cursors.append(cursor)
            if cursor is None:
                break
        with pytest.raises(MCPError) as bad:
            await client.list_resources(cursor="not-ours")
        return pages, cursors, bad.value

    pages, cursors, bad = run(backend, scenario)
    assert pages == [[output_uri(h) for h in handles[i : i + 2]] for i in (0, 2, 4)]
    assert cursors == ["2", "4", None]
    assert bad.error.code == INVALID_PARAMS and "not-ours" in bad.error.message


def test_without_a_session_the_list_is_empty() -> None:
    service = FakeService()
    backend, _, _ = setup(service)
    bare = Backend(ServerConfig("http://fake"), lambda url, key: service.async_client())
    assert run(bare, lambda c: c.list_resources()).resources == []
    del backend


def test_a_session_template_reads_any_sessions_listing() -> None:
    service = FakeService()
    backend, session, handle = setup(service)
    other = service.sync_client().create_session()

    async def scenario(client: Client) -> tuple[Any, Any, MCPError]:
        mine = (await client.read_resource(f"toolout://sessions/{session}")).contents[0]
        empty = (await client.read_resource(f"toolout://sessions/{other}")).contents[0]
        with pytest.raises(MCPError) as raised:
            await client.read_resource("toolout://sessions/no-such-session")
        return mine, empty, raised.value

    mine, empty, missing = run(backend, scenario)
    listing = json.loads(mine.text)
    assert mine.mime_type == "application/json" and listing["session_id"] == session
    assert [(r["uri"], r["name"], r["mimeType"]) for r in listing["resources"]] == [
        (output_uri(handle), "notes_fetch_1", "text/plain")
    ]
    assert json.loads(empty.text)["resources"] == []
    assert missing.error.code == RESOURCE_NOT_FOUND


def test_small_windows_page_through_the_text_without_cutting_a_character() -> None:
    backend, _, handle = setup(FakeService(), max_resource_bytes=101)

    async def scenario(client: Client) -> list[Any]:
        pages, uri = [], output_uri(handle)
        while uri is not None:
            content = (await client.read_resource(uri)).contents[0]
            pages.append(content)
            uri = content.meta["toolout"]["next"]
        return pages

    pages = run(backend, scenario)
    assert "".join(page.text for page in pages) == TEXT
    assert all(len(page.text.encode()) <= 101 for page in pages)
    assert any(len(page.text.encode()) < 101 for page in pages[:-1])  # some window ended before a split character
    ends = [page.meta["toolout"]["end"] for page in pages]
    assert [page.meta["toolout"]["offset"] for page in pages] == [0, *ends[:-1]]
    assert pages[-1].meta["toolout"]["next"] is None and ends[-1] == len(TEXT.encode())


def test_resource_errors_are_protocol_errors_with_their_codes() -> None:
    backend, _, handle = setup(FakeService())

    async def scenario(client: Client) -> list[tuple[int, str]]:
        found = []
        for uri in (output_uri("missing"), "file:///etc/passwd", f"{output_uri(handle)}/bytes/999999"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            found.append((raised.value.error.code, raised.value.error.message))
        return found

    (missing, foreign, past_end) = run(backend, scenario)
    assert missing == (RESOURCE_NOT_FOUND, "no output missing")
    assert foreign[0] == -32602 and "not a toolout resource URI" in foreign[1]
    assert past_end[0] == -32602 and "past the end" in past_end[1]


def test_an_unknown_tool_is_invalid_params() -> None:
    backend, _, _ = setup(FakeService())

    async def scenario(client: Client) -> MCPError:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("Read", {})
        return raised.value

    error = run(backend, scenario)
    assert error.error.code == -32602 and "toolout's are tool_output" in error.error.message


def test_an_unreachable_api_is_an_internal_error_naming_it() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    def connect(url: str, key: str | None) -> AsyncToolOutClient:
        return AsyncToolOutClient(url, http=httpx.AsyncClient(base_url=url, transport=httpx.MockTransport(refuse)))

    backend = Backend(ServerConfig("http://127.0.0.1:9", session_id="s"), connect)

    async def scenario(client: Client) -> MCPError:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("tool_output_cache", {"ref_id": "h"})
        return raised.value

    error = run(backend, scenario)
    assert error.error.code == -32603 and "cannot reach the toolout API at http://127.0.0.1:9" in error.error.message


def test_tool_output_in_process_reports_progress_and_links_the_output() -> None:
    backend, _, handle = setup(FakeService())
    seen: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    result = run(backend, lambda c: c.call_tool("tool_output", {"handle": handle, "extract": "x"}, None, on_progress))
    assert not result.is_error and result.content[1].uri == output_uri(handle)
    assert seen == [0.0]  # the fake finishes at once and reports no chunks: one notification


def headers(**values: str) -> Any:
    return SimpleNamespace(request=SimpleNamespace(headers=values))


def test_http_callers_bring_their_key_and_session() -> None:
    keys: list[str | None] = []

    def connect(url: str, key: str | None) -> AsyncToolOutClient:
        keys.append(key)
        return AsyncToolOutClient(url, api_key=key)

    backend = Backend(ServerConfig("http://api", api_key="server-key", session_id="server-session"), connect)

    async def callers(*contexts: Any) -> list[Caller]:
        found = []
        for ctx in contexts:
            async with backend.caller(ctx) as caller:
                found.append(caller)
        return found

    mine, basic, bare, default, again = asyncio.run(
        callers(
            headers(**{"authorization": "Bearer caller-key", "x-toolout-session": "caller-session"}),
            headers(authorization="Basic xyz"),
            SimpleNamespace(request=None),
            headers(),
            headers(authorization="bearer caller-key"),
        )
    )
    assert mine.session_id == "caller-session" and mine.client._http.headers["Authorization"] == "Bearer caller-key"
    assert basic.session_id == "server-session" and bare.client is default.client is basic.client
    assert again.client is mine.client
    assert keys == ["caller-key", "server-key"]  # one client per key, reused
    asyncio.run(backend.aclose())


def test_uris_and_utf8_windows() -> None:
    assert parse_uri("toolout://outputs/abc").handle == "abc" and parse_uri("toolout://outputs/abc").offset == 0
    assert parse_uri(window_uri("abc", 42)).offset == 42 and window_uri("abc", 0) == output_uri("abc")
    data = "aé".encode()  # b"a\xc3\xa9"
    assert utf8_prefix(data[:2], at_end=False) == ("a", 1)  # the cut "é" waits for the next window
    assert utf8_prefix(data[:2], at_end=True) == ("a\ufffd", 2)  # at the end it is what it is
    assert utf8_prefix(b"\xff ok", at_end=False) == ("\ufffd ok", 4)
