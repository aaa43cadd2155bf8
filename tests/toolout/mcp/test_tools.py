"""The MCP tool layer on the fake service: the toolkit's schemas, results, links, errors and progress."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from tests.toolout.fake_service import FakeService
from toolout.mcp import output_uri
from toolout.mcp.tools import (
    NO_SESSION,
    ProgressRelay,
    UnknownToolError,
    call_toolout_tool,
    is_toolout_tool,
    job_progress,
    toolout_tools,
)
from toolout.toolkit.standard import STANDARD_NAMES, standard_tools

ROOT = Path(__file__).resolve().parents[3]
LINES = "\n".join(f"line {n}: {'needle' if n == 7 else 'hay'}" for n in range(1, 40))


def stored(service: FakeService) -> tuple[Any, str, str]:
    """A client on the fake service, a session and the handle of an output stored in it."""
    client = service.sync_client()
    session = client.create_session()
    handle = client.store(session, LINES, tool_name="logs.fetch")["handle"]
    return service.async_client(), session, handle


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def links(result: types.CallToolResult) -> list[str]:
    return [block.uri for block in result.content if isinstance(block, types.ResourceLink)]


def test_the_four_tools_carry_the_toolkits_exact_schemas() -> None:
    tools = {tool.name: tool for tool in toolout_tools()}
    assert list(tools) == list(STANDARD_NAMES)
    for name, service_tool in standard_tools().items():
        assert tools[name].input_schema == service_tool.parameters
        assert tools[name].description == service_tool.definition_dict["function"]["description"]
    wire = tools["tool_output"].model_dump(by_alias=True, exclude_none=True)
    assert wire["inputSchema"]["required"] == ["handle", "extract"]
    assert all(is_toolout_tool(name) for name in STANDARD_NAMES) and not is_toolout_tool("Read")
    read_only = {name for name, tool in tools.items() if tool.annotations and tool.annotations.read_only_hint}
    assert read_only == {"tool_output", "tool_output_cache", "tool_output_cache_grep"}


def test_tool_output_offers_query_only_when_the_environment_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def modes() -> list[str]:
        (tool,) = [t for t in toolout_tools() if t.name == "tool_output"]
        return tool.input_schema["properties"]["mode"]["enum"]

    assert modes() == ["auto", "full-chunked", "read-grep", "truncate"]
    monkeypatch.setenv("TOOLOUT_TOOL_OUTPUT_OFFERS_QUERY", "true")
    assert modes() == ["auto", "full-chunked", "read-grep", "truncate", "query"]
    assert (
        standard_tools(offer_query=True)["tool_output"]
        .input_model.model_validate({"handle": "h", "extract": "x", "mode": "query"})
        .mode
        == "query"
    )


def test_cache_read_returns_numbered_lines_and_links_the_output() -> None:
    service = FakeService()
    client, _, handle = stored(service)
    result = asyncio.run(call_toolout_tool(client, "tool_output_cache", {"ref_id": handle, "offset": 7, "limit": 2}))
    assert not result.is_error
    assert texts(result)[0].startswith("     7\tline 7: needle\n     8\tline 8: hay\n")
    assert links(result) == [output_uri(handle)]


def test_cache_grep_finds_the_line() -> None:
    service = FakeService()
    client, _, handle = stored(service)
    result = asyncio.run(call_toolout_tool(client, "tool_output_cache_grep", {"ref_id": handle, "pattern": "needle"}))
    assert "7" in texts(result)[0] and "needle" in texts(result)[0]
    assert links(result) == [output_uri(handle)]


def test_a_4xx_is_an_error_result_the_model_can_read() -> None:
    service = FakeService()
    client, _, _ = stored(service)
    result = asyncio.run(call_toolout_tool(client, "tool_output_cache", {"ref_id": "no-such-handle"}))
    assert result.is_error
    assert texts(result) == ["Error: no output no-such-handle"]
    assert links(result) == []


def test_invalid_arguments_are_an_error_result_naming_the_field() -> None:
    service = FakeService()
    client, _, handle = stored(service)
    result = asyncio.run(call_toolout_tool(client, "tool_output_cache", {"ref_id": handle, "offset": 0}))
    assert result.is_error
    assert texts(result)[0].startswith('Error: Invalid arguments for tool "tool_output_cache": offset')
    assert service.paths("GET") == []  # refused before any request


def test_an_unknown_tool_is_a_lookup_error() -> None:
    with pytest.raises(UnknownToolError, match="toolout's are tool_output"):
        asyncio.run(call_toolout_tool(FakeService().async_client(), "Read", {}))


def test_buffer_ops_runs_on_the_session_and_needs_one() -> None:
    service = FakeService()
    client, session, _ = stored(service)
    listed = asyncio.run(call_toolout_tool(client, "buffer_ops", {"operation": "list"}, session_id=session))
    assert not listed.is_error and "logs_fetch_1" in texts(listed)[0]
    missing = asyncio.run(call_toolout_tool(client, "buffer_ops", {"operation": "list"}))
    assert missing.is_error and texts(missing) == [NO_SESSION]


def test_tool_output_answers_the_abstract_and_reports_progress() -> None:
    service = FakeService()
    client, _, handle = stored(service)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    arguments = {"handle": handle, "extract": "the needle line"}
    result = asyncio.run(call_toolout_tool(client, "tool_output", arguments, progress=progress))
    assert not result.is_error
    assert "ABSTRACT" in texts(result)[0] and handle in texts(result)[0]
    assert links(result) == [output_uri(handle)]
    assert len(seen) >= 1 and seen[0][2] is not None and seen[0][2].startswith("succeeded")


def test_progress_values_only_increase_and_all_are_delivered() -> None:
    delivered: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        await asyncio.sleep(0.001)
        delivered.append(done)

    def job(status: str, done: int) -> dict[str, Any]:
        usage = {"calls": done, "input_tokens": 10 * done, "output_tokens": done}
        return {"status": status, "mode_used": "full-chunked", "chunks_done": done, "chunks_total": 4, "usage": usage}

    async def run() -> None:
        relay = ProgressRelay(progress)
        async with relay.running():
            for status, done in [("queued", 0), ("running", 0), ("running", 2), ("running", 1), ("succeeded", 3)]:
                relay.see(job(status, done))

    asyncio.run(run())
    assert delivered == [0.0, 2.0, 4.0]  # repeats and regressions dropped; a finished job is complete


def test_job_progress_of_a_read_grep_job_counts_agent_turns() -> None:
    record = {"status": "running", "mode_used": "read-grep", "agent_turns": 3, "chunks_done": 0, "chunks_total": 0}
    done, total, message = job_progress(record | {"usage": {"calls": 3, "input_tokens": 1200, "output_tokens": 40}})
    assert (done, total) == (3.0, None)
    assert message == "running · read-grep · 3 LLM calls · 1,200 in / 40 out tokens"


def test_a_failing_progress_callback_does_not_fail_the_call() -> None:
    service = FakeService()
    client, _, handle = stored(service)

    async def broken(done: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("client went away")

    arguments = {"handle": handle, "extract": "x"}
    result = asyncio.run(call_toolout_tool(client, "tool_output", arguments, progress=broken))
    assert not result.is_error and "ABSTRACT" in texts(result)[0]


PROBE = """
import importlib, json, pkgutil, sys
import toolout.cli, toolout.mcp
for module in pkgutil.iter_modules(toolout.mcp.__path__):
    importlib.import_module(f"toolout.mcp.{module.name}")
print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))
"""
SERVER_PACKAGES = {"fastapi", "celery", "kombu", "redis", "boto3", "botocore", "litellm"}


def test_the_mcp_package_loads_no_server_package() -> None:
    """Every module of toolout.mcp (server, proxy, upstream…) and the CLI, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "mcp" in loaded and "httpx" in loaded
    assert loaded & SERVER_PACKAGES == set()
