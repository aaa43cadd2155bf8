"""Over streamable HTTP, each caller's `Authorization: Bearer` key is the one `toolout mcp` uses on the API.

The API runs with keys on (two tenants); the MCP server has no key of its own. Tenant A's caller reads
A's output; tenant B's caller, through the same MCP server, is told it does not exist (tenants are
isolated); a caller without a key is refused by the API, and the error says so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from tests.fixtures.tenants import KEY_A, KEY_B, bearer, keys_mode
from tests.toolout.mcp.clients import http_server, over_http
from toolout.client import ToolOutClient
from toolout.mcp import output_uri
from toolout.mcp.server import RESOURCE_NOT_FOUND

SECRET = "tenant A's numbers: 42\n"


async def read(url: str, headers: dict[str, str], handle: str) -> Any:
    session: ClientSession
    async with over_http(url, headers) as session:
        try:
            return (await session.read_resource(output_uri(handle))).contents[0].text
        except MCPError as exc:
            return exc.error


@pytest.mark.parametrize("api_server", [keys_mode()], indirect=True)
def test_each_http_caller_is_its_own_tenant(api_server: Any, tmp_path: Path) -> None:
    with ToolOutClient(api_server.url, api_key=KEY_A) as tenant_a:
        session = tenant_a.create_session()
        handle = tenant_a.store(session, SECRET, tool_name="ledger")["handle"]

    with http_server({"TOOLOUT_API_URL": api_server.url, "TOOLOUT_API_KEY": ""}, tmp_path) as url:
        as_a = asyncio.run(read(url, bearer(KEY_A), handle))
        as_b = asyncio.run(read(url, bearer(KEY_B), handle))
        anonymous = asyncio.run(read(url, {}, handle))

    assert as_a == SECRET
    assert as_b.code == RESOURCE_NOT_FOUND
    assert anonymous.code == -32602 and "401" in anonymous.message, anonymous.message
