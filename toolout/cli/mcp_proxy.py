"""`toolout mcp-proxy`: put toolout in front of any MCP server (see `toolout.mcp.proxy`).

In an MCP client's configuration, the upstream command follows `--`:

    "command": "toolout",
    "args": ["mcp-proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"]
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from toolout.cli.client import DEFAULT_URL, UNAVAILABLE, USAGE, ApiKey, ApiUrl, err
from toolout.cli.mcp import Transport, needs_mcp

if TYPE_CHECKING:
    from toolout.mcp.proxy import ProxyConfig
    from toolout.mcp.results import StorePolicy
    from toolout.mcp.upstream import UpstreamSpec

mcp_proxy_app = typer.Typer()
"""Its command is merged into the top-level `toolout` app (`toolout.cli`)."""


@mcp_proxy_app.command("mcp-proxy")
@needs_mcp
def mcp_proxy(
    upstream: Annotated[
        list[str] | None, typer.Argument(help="the upstream MCP server's command, after --", show_default=False)
    ] = None,
    upstream_cmd: Annotated[
        str | None, typer.Option(help="the upstream's command as one shell-quoted string (instead of -- CMD...)")
    ] = None,
    upstream_url: Annotated[str | None, typer.Option(help="a Streamable HTTP MCP server's URL")] = None,
    route: Annotated[
        list[str] | None, typer.Option(help="an @tools route, e.g. 'read_file(output=variable:files)'")
    ] = None,
    session: Annotated[
        str | None, typer.Option(envvar="TOOLOUT_SESSION", help="the toolout session; default: a new one")
    ] = None,
    store_all: Annotated[
        bool, typer.Option(help="keep every text result as a session variable, not only the oversized ones")
    ] = False,
    timeout: Annotated[float, typer.Option(help="seconds an upstream tool call may take")] = 300.0,
    transport: Annotated[
        Transport, typer.Option(help="how the proxy itself is served: stdio (a client spawns it) or HTTP at /mcp")
    ] = Transport.stdio,
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port to listen on")] = 8932,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """An MCP gateway: the upstream's tools plus toolout's; oversized results become the too-large message."""
    from toolout.mcp.proxy import ProxyConfig

    spec = _upstream(upstream or [], upstream_cmd, upstream_url, timeout)
    store: StorePolicy = "always" if store_all else "if_oversized"
    config = ProxyConfig(spec, api_url, api_key=api_key, session=session, routes=tuple(route or []), store=store)
    _serve(config, transport, host, port)


def _upstream(upstream: list[str], upstream_cmd: str | None, upstream_url: str | None, timeout: float) -> UpstreamSpec:
    """The upstream from exactly one of `-- CMD...`, `--upstream-cmd`, `--upstream-url`."""
    from toolout.mcp.upstream import UpstreamSpec

    if [bool(upstream), upstream_cmd is not None, upstream_url is not None].count(True) != 1:
        _usage("give the upstream once: -- COMMAND ARGS..., --upstream-cmd 'COMMAND ARGS' or --upstream-url URL")
    command = tuple(upstream) if upstream else tuple(shlex.split(upstream_cmd or ""))
    if upstream_url is None and not command:
        _usage("--upstream-cmd is empty")
    if timeout <= 0:
        _usage("--timeout must be positive")
    return UpstreamSpec(command=command, url=upstream_url, timeout=timeout, env=upstream_environment(os.environ))


def upstream_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The proxy's environment, for the upstream command: an MCP client sets the env of the server it starts,
    and here that server is the upstream (a token it needs, say). Not the `TOOLOUT_*` variables: the
    toolout API key is not the upstream's business."""
    return {key: value for key, value in environ.items() if not key.startswith("TOOLOUT_")}


def _serve(config: ProxyConfig, transport: Transport, host: str, port: int) -> None:
    """Run the proxy until its client goes; a startup failure (upstream, routes) is a message and an exit code."""
    import anyio

    from extraction.errors import InvalidInput
    from toolout.mcp.proxy import serve_http, serve_stdio
    from toolout.mcp.upstream import UpstreamError
    from toolout.toolkit.errors import ToolkitError

    try:
        if transport is Transport.stdio:
            anyio.run(serve_stdio, config)
        else:
            err.print(f"toolout mcp-proxy: streamable HTTP at http://{host}:{port}/mcp", markup=False)
            anyio.run(serve_http, config, host, port)
    except BaseException as exc:
        known = _known(exc, (UpstreamError, ToolkitError, InvalidInput))
        if known is None:
            raise
        err.print(f"error: {known}", markup=False)
        raise typer.Exit(UNAVAILABLE if isinstance(known, UpstreamError) else USAGE) from None


def _known(exc: BaseException, kinds: tuple[type[Exception], ...]) -> BaseException | None:
    """`exc`, or the one it carries in (nested) exception groups, when it is one of `kinds`."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, kinds) else None


def _usage(message: str) -> NoReturn:
    err.print(f"error: {message}", markup=False)
    raise typer.Exit(USAGE)
