"""toolout for the OpenAI Agents SDK: `offload(agent)` and `toolout_tools()`.

    agent = offload(Agent(name="shop", tools=[get_orders]))      # TOOLOUT_API_URL / TOOLOUT_API_KEY
    result = await Runner.run(agent, "…")

`offload` returns a copy of the agent whose `FunctionTool`s (and the tools of its MCP servers, as the SDK
lists them each run) have their `on_invoke_tool` wrapped: the output goes to the service
(`toolout.integrations.service`), and an oversized one comes back as the exact "Tool output is too large"
message (a routed one as its manifest); anything else is returned as the tool returned it. The toolout
tools are added (`toolout_tools()`: `tool_output`, `tool_output_cache`, `tool_output_cache_grep`,
`buffer_ops`) and their answers never offloaded.

Session: one per `Runner.run` (the run's `usage` object is what every tool call of a run shares), made on
the first call that needs one and deleted when the agent ends (its `hooks.on_end`, added when the agent
has no hooks of its own) unless `session_id=` was given or `keep_session=True`; else by `aclose(agent)`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, AgentHooks, FunctionTool, RunContextWrapper, Tool
from agents.tool_context import ToolContext

from toolout.integrations.service import RunSession, ToolOutService, report_text

__all__ = ["aclose", "offload", "toolout_tools"]
"""The public API, as the Python reference renders it (`tests/test_python_reference.py`)."""

Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


class _Runs:
    """The toolout session of each run in progress, keyed by the run's shared `usage` object."""

    def __init__(self, service: ToolOutService) -> None:
        self.service = service
        self.sessions: dict[int, RunSession] = {}

    async def session(self, ctx: RunContextWrapper[Any]) -> str:
        key = id(ctx.usage)
        if key not in self.sessions:
            self.sessions[key] = await self.service.aopen_session()
        return self.sessions[key].id

    async def end(self, ctx: RunContextWrapper[Any]) -> None:
        await self.service.aclose_session(self.sessions.pop(id(ctx.usage), None))

    async def end_all(self) -> None:
        while self.sessions:
            await self.service.aclose_session(self.sessions.popitem()[1])


class _EndHooks(AgentHooks[Any]):
    def __init__(self, runs: _Runs) -> None:
        self.runs = runs

    async def on_end(self, context: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> None:
        await self.runs.end(context)


def toolout_tools(
    api_url: str | None = None, api_key: str | None = None, *, service: ToolOutService | None = None, **options: Any
) -> list[FunctionTool]:
    """toolout's four tools as `FunctionTool`s (for an agent you do not `offload`; their session: one per
    `ToolOutService`, deleted by its `aclose()`)."""
    service = service or ToolOutService(api_url, api_key, buffer_ops=True, **options)
    return _service_tools(service, lambda ctx: service.ashared_session())


def offload(agent: Agent[Any], api_url: str | None = None, api_key: str | None = None, **options: Any) -> Agent[Any]:
    """A copy of `agent` whose tools' oversized outputs go to toolout (module docstring); `options`:
    `session_id`, `keep_session`, `routes`, `buffer_ops` (default True here), `client`."""
    service = ToolOutService(api_url, api_key, **{"buffer_ops": True, **options})
    runs = _Runs(service)
    tools = [_offloaded(tool, runs) for tool in agent.tools]
    copy = _OffloadedAgent(**{f.name: getattr(agent, f.name) for f in dataclasses.fields(agent) if f.init})
    copy.tools = [*tools, *_service_tools(service, runs.session)]
    copy.hooks = agent.hooks or _EndHooks(runs)
    copy._toolout_runs = runs
    return copy


async def aclose(agent: Agent[Any]) -> None:
    """Delete the sessions of the `offload`ed agent's runs that are still open, and close its client."""
    runs: _Runs | None = getattr(agent, "_toolout_runs", None)
    if runs is not None:
        await runs.end_all()
        await runs.service.aclose()


@dataclasses.dataclass
class _OffloadedAgent(Agent[Any]):
    """An `Agent` whose MCP tools are offloaded too (the SDK lists them afresh each run)."""

    _toolout_runs: _Runs | None = None

    async def get_mcp_tools(self, run_context: RunContextWrapper[Any]) -> list[Tool]:
        found = await super().get_mcp_tools(run_context)
        return found if self._toolout_runs is None else [_offloaded(tool, self._toolout_runs) for tool in found]


def _offloaded(tool: Tool, runs: _Runs) -> Tool:
    """A `FunctionTool` whose output is offered to the service; other kinds of tool as they are."""
    if not isinstance(tool, FunctionTool) or tool.name in runs.service.tools:
        return tool
    invoke = tool.on_invoke_tool

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> Any:
        output = await invoke(ctx, arguments)
        text = output if isinstance(output, str) else _json_text(output)
        if text is None:
            return output
        report = await runs.service.aoffload(await runs.session(ctx), tool.name, arguments, text)
        return report_text(report) if report.oversized or report.routed else output

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


def _json_text(output: Any) -> str | None:
    """A dict or list output as JSON text (what the SDK would show the model); other kinds are left alone."""
    if isinstance(output, dict | list):
        try:
            return json.dumps(output, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return None
    return None


def _service_tools(service: ToolOutService, session: Callable[[Any], Awaitable[str]]) -> list[FunctionTool]:
    def make(name: str) -> FunctionTool:
        function = service.tools[name].definition()["function"]

        async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
            return report_text(await service.acall_tool(await session(ctx), name, arguments, ctx.tool_call_id))

        return FunctionTool(
            name=name,
            description=function["description"],
            params_json_schema=function["parameters"],
            on_invoke_tool=on_invoke_tool,
            strict_json_schema=False,
        )

    return [make(name) for name in service.tools]
