"""toolout for PydanticAI: the `ToolOut` capability.

    agent = Agent(model, tools=[get_orders], capabilities=[ToolOut()])      # TOOLOUT_API_URL / _KEY

`after_tool_execute` hands every tool's result — function tools and MCP toolsets alike — to the service
(`toolout.integrations.service`): an oversized one is stored with the tool's name and arguments and the
model gets the exact "Tool output is too large" message instead (a routed one: its manifest); anything
else is returned as the tool returned it. `get_toolset` contributes toolout's tools (`tool_output`,
`tool_output_cache`, `tool_output_cache_grep`, and `buffer_ops` with `buffer_ops=True`), whose answers
are never offloaded.

Session: `for_run` gives each run its own instance; `wrap_run` opens the run's session and deletes it when
the run ends (even by an error), unless `session_id=` was given or `keep_session=True`.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic_ai import FunctionToolset, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import WrapRunHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_json

from toolout.integrations.service import RunSession, ToolOutService, report_text

__all__ = ["ToolOut"]
"""The public API, as the Python reference renders it (`tests/test_python_reference.py`)."""


class ToolOut(AbstractCapability[Any]):
    """A PydanticAI capability: a tool result too large for the context is stored in toolout and the model sees
    the too-large message instead; the agent gains `tool_output` and the cache tools. Each run gets its own
    session, deleted when the run ends."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None, **options: Any) -> None:
        """The service as `Toolkit` takes it (`api_url`, `api_key`, else `TOOLOUT_API_URL`/`TOOLOUT_API_KEY`);
        `options`: `session_id`, `keep_session`, `routes`, `buffer_ops`, `client` (`ToolOutService`)."""
        self.service = ToolOutService(api_url, api_key, **options)
        self.run_session: RunSession | None = None

    async def for_run(self, ctx: RunContext[Any]) -> ToolOut:
        """A copy per run, so concurrent runs of one agent keep their sessions apart."""
        fresh = copy.copy(self)
        fresh.run_session = None
        return fresh

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        """Open the run's session before the run and delete it after, however the run ends."""
        self.run_session = await self.service.aopen_session()
        try:
            return await handler()
        finally:
            session, self.run_session = self.run_session, None
            await self.service.aclose_session(session)

    def get_toolset(self) -> FunctionToolset[Any]:
        """toolout's tools for the agent: `tool_output`, the cache tools (and `buffer_ops` when asked for)."""
        return FunctionToolset([self._tool(name) for name in self.service.tools])

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, result: Any
    ) -> Any:
        """Store a result too large for the context (or routed by `routes`) and hand the model the message."""
        text = _text(result)
        if tool_def.name in self.service.tools or text is None:
            return result
        report = await self.service.aoffload(await self._session(), tool_def.name, call.args_as_dict(), text)
        return report_text(report) if report.oversized or report.routed else result

    async def _session(self) -> str:
        """The run's session; outside a run (a toolset used on its own), the service's shared one."""
        return self.run_session.id if self.run_session else await self.service.ashared_session()

    def _tool(self, name: str) -> Tool[Any]:
        function = self.service.tools[name].definition()["function"]

        async def run(**args: Any) -> str:
            return report_text(await self.service.acall_tool(await self._session(), name, args))

        return Tool.from_schema(run, name, function["description"], function["parameters"])


def _text(result: Any) -> str | None:
    """The result as the text to measure: a string, or JSON for data; None for what must be left alone."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list):
        return to_json(result).decode()
    return None
