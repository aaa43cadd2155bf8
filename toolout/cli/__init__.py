"""The `toolout` command: client commands for people and scripts, and the commands that run the server.

\b
  toolout store big.json                      the session, the handle and the too-large message
  toolout extract HANDLE "what to extract"    a live progress bar, then the ABSTRACT
  toolout mcp                                 an MCP server: the toolout tools and stored outputs (toolout[mcp])
  toolout mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem /data   an MCP gateway (toolout[mcp])
  toolout dev                                 a development service until Ctrl-C (needs toolout[server])
  toolout api | worker | offline-model | demo | keys ...   the server (needs toolout[server])
  toolout --version                           the installed toolout's version
"""

from __future__ import annotations

from importlib.metadata import version

import typer

from toolout.cli.client import client_app
from toolout.cli.dev import dev_app
from toolout.cli.mcp import mcp_app
from toolout.cli.mcp_proxy import mcp_proxy_app
from toolout.cli.server import keys_app, server_app

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, rich_markup_mode=None)
app.registered_commands += client_app.registered_commands + mcp_app.registered_commands + server_app.registered_commands
app.registered_commands += mcp_proxy_app.registered_commands + dev_app.registered_commands
app.add_typer(keys_app, name="keys")


def _print_version(asked: bool) -> None:
    """`--version`: which release an install or an image holds, from the installed distribution's metadata."""
    if asked:
        typer.echo(f"toolout {version('toolout')}")
        raise typer.Exit()


@app.callback()
def _options(
    _version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="print the version"),
) -> None:
    """Options taken before any command."""


__all__ = ["app"]
