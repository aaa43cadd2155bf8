"""The toolout tool layer as MCP-neutral functions: `toolout mcp` serves it, `toolout mcp-proxy` reuses it.

* `toolout_tools()` — `tool_output`, `tool_output_cache`, `tool_output_cache_grep` and `buffer_ops`
  as `mcp.types.Tool`s. Their input schemas are the agent toolkit's own (`toolout.toolkit.standard`,
  which takes `tool_output` from `extraction.texts.tools` and `buffer_ops` from `extraction.buffers.ops`):
  one definition, whichever way an agent reaches the service.
* `call_toolout_tool(client, name, arguments, progress=...)` — one call, answered by the service
  through the toolkit's SDK plans. A client mistake (invalid arguments, any 4xx: unknown handle, bad
  pattern) is a result with `isError` and the text `Error: …`, so the model can correct itself; a
  5xx or a lost connection raises (`toolout.client.UnavailableError`): the operator must see it.
  A result about a stored output ends with a `resource_link` block to `toolout://outputs/{handle}`.
  `tool_output` relays the job's progress (chunks done/total, or agent turns for read-grep) to
  `progress(done, total, message)`, each value larger than the last, at least once.
* `is_toolout_tool(name)` — whether a tool name is one of the four (the proxy routes by it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import mcp.types as types

from extraction.buffers.ops import BUFFER_OPS_NAME
from extraction.texts.tools import TOOL_OUTPUT_NAME
from toolout.client import AsyncToolOutClient
from toolout.mcp import lines_uri, output_uri
from toolout.sdk.evidence import Source
from toolout.sdk.jobs import TERMINAL
from toolout.sdk.plans import ToolText
from toolout.toolkit.args import InvalidArguments
from toolout.toolkit.standard import (
    CACHE_GREP_NAME,
    CACHE_NAME,
    STANDARD_NAMES,
    CacheGrepArgs,
    CacheReadArgs,
    ServiceTool,
    ToolOutputArgs,
    standard_tools,
    tool_output_text,
)

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""`progress(done, total, message)`: an MCP server passes its request's progress reporter."""
DEFAULT_TIMEOUT = 600.0
PROGRESS_POLL_SECONDS = 0.25
"""How often `tool_output` polls its job when relaying progress (without a `progress` it long-polls)."""
logger = logging.getLogger(__name__)
NO_SESSION = (
    "Error: buffer_ops works on a session's variables, and none is configured: start the server with --session "
    "(or send the X-Toolout-Session header)."
)


class UnknownToolError(LookupError):
    """The name is not one of the toolout tools (an MCP server answers with a protocol error)."""


OFFER_QUERY_ENV = "TOOLOUT_TOOL_OUTPUT_OFFERS_QUERY"


def toolout_tools() -> list[types.Tool]:
    """The four toolout tools, with the toolkit's exact input schemas (`query` in tool_output's mode enum
    when `TOOLOUT_TOOL_OUTPUT_OFFERS_QUERY` is true)."""
    offer = os.environ.get(OFFER_QUERY_ENV, "").strip().lower() in ("1", "true", "yes")
    return [_mcp_tool(tool) for tool in standard_tools(offer_query=offer).values()]


def is_toolout_tool(name: str) -> bool:
    return name in STANDARD_NAMES


_READ_ONLY: dict[str, Any] = {"read_only_hint": True, "idempotent_hint": True, "open_world_hint": False}
ANNOTATIONS = {
    TOOL_OUTPUT_NAME: types.ToolAnnotations(title="Extract from a stored tool output", **_READ_ONLY),
    CACHE_NAME: types.ToolAnnotations(title="Read a stored tool output", **_READ_ONLY),
    CACHE_GREP_NAME: types.ToolAnnotations(title="Search a stored tool output", **_READ_ONLY),
    BUFFER_OPS_NAME: types.ToolAnnotations(
        title="Work on the session's variables", read_only_hint=False, destructive_hint=False, open_world_hint=False
    ),
}
"""Hints for clients: only `buffer_ops` writes (its `export` adds to a session file); `tool_output` runs a
job but changes nothing, and an identical call is answered from the service's result cache."""


def _mcp_tool(tool: ServiceTool) -> types.Tool:
    description = tool.definition_dict["function"]["description"]
    return types.Tool(
        name=tool.name, description=description, input_schema=tool.parameters, annotations=ANNOTATIONS[tool.name]
    )


async def call_toolout_tool(
    client: AsyncToolOutClient,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    progress: Progress | None = None,
    session_id: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> types.CallToolResult:
    """Answer one call of a toolout tool (see the module docstring for errors, links and progress).

    `session_id`: the session whose variables `buffer_ops` works on (the other tools take a handle).
    `timeout`: how long `tool_output` follows its job before answering that it has not finished.
    """
    tool = standard_tools().get(name)
    if tool is None:
        raise UnknownToolError(f"unknown tool {name!r}: toolout's are {', '.join(STANDARD_NAMES)}")
    try:
        args = tool.arguments(dict(arguments or {}))
    except InvalidArguments as exc:
        return error_result(f"Error: {exc}")
    if tool.name == BUFFER_OPS_NAME and not session_id:
        return error_result(NO_SESSION)
    answer = await _answer(client, tool, args, session_id or "", timeout, progress)
    return tool_result(answer, _handle_of(args))


async def _answer(
    client: AsyncToolOutClient,
    tool: ServiceTool,
    args: Any,
    session_id: str,
    timeout: float,
    progress: Progress | None,
) -> ToolText:
    if not isinstance(args, ToolOutputArgs) or progress is None:
        return await client.execute(tool.run(args, session_id, timeout))
    relay = ProgressRelay(progress)
    async with relay.running():
        plan = tool_output_text(args, timeout=timeout, on_progress=relay.see, poll_interval=PROGRESS_POLL_SECONDS)
        return await client.execute(plan)


def _handle_of(args: Any) -> str | None:
    """The stored output a call is about (its result links to it)."""
    if isinstance(args, ToolOutputArgs):
        return args.handle
    if isinstance(args, CacheReadArgs | CacheGrepArgs):
        return args.ref_id
    return None


def tool_result(answer: ToolText, handle: str | None) -> types.CallToolResult:
    """The text for the model, then (unless it reports an error) a link to the output it is about."""
    content: list[types.ContentBlock] = [types.TextContent(text=answer.text)]
    if handle and not answer.is_error:
        content.append(output_link(handle))
        content += [source_link(handle, source) for source in answer.sources if not source.is_query]
    return types.CallToolResult(content=content, is_error=answer.is_error)


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def output_link(handle: str) -> types.ResourceLink:
    """A `resource_link` to a stored output; `resources/read` on its URI returns the text."""
    return types.ResourceLink(
        uri=output_uri(handle),
        name=f"output {handle}",
        description="the stored tool output (read it as a resource, or page it with tool_output_cache)",
        mime_type="text/plain",
    )


def source_link(handle: str, source: Source) -> types.ResourceLink:
    """A `resource_link` to the lines an answer cites; `resources/read` on it returns them numbered, as Read does."""
    checked = f"verified ({source.match}): {source.quote}" if source.verified else f"NOT verified: {source.why}"
    what = checked if source.quote or not source.verified else f"the lines the model was shown ({source.kind})"
    return types.ResourceLink(
        uri=lines_uri(handle, source.start_line, source.end_line),
        name=f"L{source.start_line}-L{source.end_line}",
        description=f"source of the answer: {what}"[:500],
        mime_type="text/plain",
    )


def job_progress(job: Mapping[str, Any]) -> tuple[float, float | None, str]:
    """One polled job record as (done, total, message): chunks for a chunked job, agent turns for
    read-grep (no total); a finished job with a total reports it complete."""
    usage = job.get("usage") or {}
    tokens = f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out tokens"
    message = f"{job['status']} · {job.get('mode_used') or 'routing'} · {usage.get('calls', 0)} LLM calls · {tokens}"
    if job.get("mode_used") in ("read-grep", "query"):
        return float(job.get("agent_turns") or 0), None, message
    total = float(job.get("chunks_total") or 0) or None
    done = float(job.get("chunks_done") or 0)
    if total is not None and job["status"] in TERMINAL:
        done = max(done, total)
    return done, total, message


class ProgressRelay:
    """Carries the job records a plan polls (synchronously, inside the transport) to an async
    `progress` callback, in order, dropping those that would not advance the progress value
    (MCP requires each notification's progress to be larger than the previous one's)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._queue: asyncio.Queue[tuple[float, float | None, str]] = asyncio.Queue()
        self._last = -1.0

    def see(self, job: dict[str, Any]) -> None:
        done, total, message = job_progress(job)
        if done > self._last:
            self._last = done
            self._queue.put_nowait((done, total, message))

    async def _pump(self) -> None:
        while True:
            done, total, message = await self._queue.get()
            try:
                await self._progress(done, total, message)
            except Exception:  # progress is best effort: a client that stopped listening must not fail the call
                logger.warning("progress notification not delivered", exc_info=True)
            finally:
                self._queue.task_done()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Relays while the body runs; on exit, every progress already seen is delivered first."""
        pump = asyncio.create_task(self._pump())
        try:
            yield
            await self._queue.join()
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
