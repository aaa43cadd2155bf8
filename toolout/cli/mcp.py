"""`toolout mcp`: serve the toolout tools and stored outputs to MCP clients (Claude Code, Cursor, Claude Desktop).

Needs the `mcp` extra (`pip install 'toolout[mcp]'`); without it the command says so instead of
failing with a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from toolout.cli.client import DEFAULT_URL, ApiKey, ApiUrl
from toolout.mcp import DEFAULT_MAX_BYTES

T = TypeVar("T")
mcp_app = typer.Typer()
"""Its commands are merged into the top-level `toolout` app (`toolout.cli`)."""


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def needs_mcp(command: Callable[..., T]) -> Callable[..., T]:
    """A command built on the MCP SDK: without the `mcp` extra it says what to install."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> T:
        if importlib.util.find_spec("mcp") is None:
            name = command.__name__.replace("_", "-")
            typer.echo(
                f"`toolout {name}` needs the MCP SDK, which is not installed: pip install 'toolout[mcp]'", err=True
            )
            raise typer.Exit(2)
        return command(*args, **kwargs)

    return checked


@mcp_app.command()
@needs_mcp
def mcp(
    transport: Annotated[Transport, typer.Option(help="stdio (a client spawns us) or streamable HTTP at /mcp")] = (
        Transport.stdio
    ),
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port to listen on")] = 8931,
    session: Annotated[
        str | None,
        typer.Option(
            envvar="TOOLOUT_SESSION", help="the session whose outputs are listed and whose variables buffer_ops uses"
        ),
    ] = None,
    max_resource_bytes: Annotated[
        int, typer.Option(min=16, help="the most bytes of an output one resources/read returns")
    ] = DEFAULT_MAX_BYTES,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
    model: Annotated[
        str | None,
        typer.Option(envvar="TOOLOUT_MCP_MODEL", help="the model tool_output asks the API for (one it allows)"),
    ] = None,
) -> None:
    """Serve tool_output, tool_output_cache, tool_output_cache_grep and buffer_ops, and the stored outputs as
    resources, over stdio or streamable HTTP (there each request's `Authorization: Bearer` key is forwarded)."""
    from toolout.mcp.server import ServerConfig, run_http, run_stdio

    config = ServerConfig(api_url, api_key, session, max_resource_bytes=max_resource_bytes, model=model)
    if transport is Transport.stdio:
        asyncio.run(run_stdio(config))
    else:
        typer.echo(f"toolout mcp: streamable HTTP at http://{host}:{port}/mcp (API {api_url})", err=True)
        asyncio.run(run_http(config, host=host, port=port))
