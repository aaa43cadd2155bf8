"""The official MCP client connected to `toolout mcp`, spawned over stdio or started as an HTTP server."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from toolout.devstack import processes

TOOLOUT = processes.toolout_argv()


@contextlib.asynccontextmanager
async def over_stdio(env: Mapping[str, str], *args: str) -> AsyncIterator[ClientSession]:
    """`toolout mcp` as a child process speaking on its stdin/stdout, the way Claude Desktop runs it."""
    params = StdioServerParameters(command=TOOLOUT[0], args=[*TOOLOUT[1:], "mcp", *args], env=dict(env))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def over_http(url: str, headers: Mapping[str, str]) -> AsyncIterator[ClientSession]:
    """A streamable-HTTP session with `toolout mcp --transport http` at `url` (…/mcp)."""
    http: httpx2.AsyncClient = create_mcp_http_client(headers=dict(headers))
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _listening(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


@contextlib.contextmanager
def http_server(env: Mapping[str, str], log_dir: Path, *args: str) -> Iterator[str]:
    """`toolout mcp --transport http` on a free port; yields its endpoint URL and stops it afterwards."""
    port = processes.free_port()
    argv = [*TOOLOUT, "mcp", "--transport", "http", "--port", str(port), *args]
    service = processes.Service("mcp-http", argv, env, log_dir / "mcp-http.log", ready=lambda: _listening(port))
    with processes.running(service, timeout=60):
        yield f"http://127.0.0.1:{port}/mcp"
