"""toolout over the Model Context Protocol (needs the `toolout[mcp]` extra: the official `mcp` SDK).

* `tools` — the toolout tool layer, MCP-neutral: the four standard tools as `mcp.types.Tool`s
  (the toolkit's exact schemas) and `call_toolout_tool`, which answers one call through an
  `AsyncToolOutClient`. `toolout mcp` serves them; `toolout mcp-proxy` adds them to another server's.
* `server` — `toolout mcp`: those tools plus the stored outputs as resources
  (`toolout://outputs/{handle}`), over stdio or streamable HTTP.

Only the SDK, httpx, pydantic and toolout's client side are imported here: no server dependency.
"""

from __future__ import annotations

DEFAULT_MAX_BYTES = 256 * 1024
"""The most bytes of a stored output one `resources/read` returns. The official client refuses a
streamable-HTTP (SSE) event over 1 MiB, and JSON escaping can grow text several times over, so a
window stays well under that; `_meta.toolout.next` pages through the rest."""

KEEP_ALIVE_SECONDS = 75
"""How long the MCP HTTP servers keep an idle connection open: longer than a client reuses one (httpx, which the MCP
clients use: 5 s), so a request is never sent on a connection the server is closing (a reset)."""

OUTPUT_URI_PREFIX = "toolout://outputs/"
"""A stored output's resource URI is this prefix plus its handle (`toolout://outputs/{handle}`)."""


SESSION_URI_PREFIX = "toolout://sessions/"
"""A session's resource URI is this prefix plus its id: its outputs as a JSON listing."""


def output_uri(handle: str) -> str:
    return f"{OUTPUT_URI_PREFIX}{handle}"


def lines_uri(handle: str, first: int, last: int) -> str:
    """The resource of lines `first`-`last` of a stored output (an answer's cited lines)."""
    return f"{OUTPUT_URI_PREFIX}{handle}/lines/{first}-{last}"
