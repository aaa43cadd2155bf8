"""toolout for LangChain v1 agents, LangGraph's `ToolNode` and deepagents: one `AgentMiddleware`.

    agent = create_agent(model, tools, middleware=[ToolOutMiddleware()])        # TOOLOUT_API_URL / _KEY
    agent = create_deep_agent(model=model, tools=tools, middleware=[ToolOutMiddleware(api_url=...)])
    node = ToolNode([*tools, *mw.tools], wrap_tool_call=mw.wrap_tool_call, awrap_tool_call=mw.awrap_tool_call)

`wrap_tool_call` / `awrap_tool_call` run the tool, then hand its `ToolMessage` to the service
(`toolout.integrations.service`): over the service's oversize policy it is stored with the tool's name
and arguments and its content becomes the exact "Tool output is too large" message, with the handle in
`artifact` (`{"toolout_handle": ..., "artifact": <the tool's own artifact, if any>}`) and the message's
id, name, tool_call_id and status kept. A small one is returned as it came. Tool messages inside a
`Command` result's `update` are handled the same way. Error messages and messages with non-text content
blocks are left alone. The middleware's own tools (`tools`: `tool_output`, `tool_output_cache`,
`tool_output_cache_grep`, and `buffer_ops` with `buffer_ops=True`) are answered by the service and never
offloaded.

Session: `before_agent` opens one for the run (kept in the state as `toolout_session`), `after_agent`
deletes it unless `session_id=` was given or `keep_session=True`. A bare `ToolNode` (no agent hooks)
uses one session per middleware, deleted by `close()` / `aclose()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from toolout.integrations.service import RunSession, ToolOutService, report_text
from toolout.toolkit.call_pipeline import CallReport
from toolout.toolkit.standard import ServiceTool

SESSION_KEY = "toolout_session"
"""The key of the run's toolout session id in the agent state (`ToolOutState`)."""
Result = ToolMessage | Command[Any]

__all__ = ["SESSION_KEY", "ToolOutMiddleware", "ToolOutState"]
"""The public API, as the Python reference renders it (`tests/test_python_reference.py`)."""


class ToolOutState(AgentState[Any]):
    """The agent state plus the run's toolout session id."""

    toolout_session: NotRequired[str]


class ToolOutMiddleware(AgentMiddleware[ToolOutState, Any, Any]):
    """LangChain v1 agent middleware: a tool result too large for the context is stored in toolout and the model
    sees the too-large message instead (the handle in the `ToolMessage`'s `artifact`); the agent gains
    `tool_output` and the cache tools. Each run gets its own session, deleted when the run ends."""

    state_schema = ToolOutState
    """The agent state this middleware adds to: the run's session id under `SESSION_KEY`."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None, **options: Any) -> None:
        """The service as `Toolkit` takes it (`api_url`, `api_key`, else `TOOLOUT_API_URL`/`TOOLOUT_API_KEY`);
        `options`: `session_id`, `keep_session`, `routes`, `buffer_ops`, `client` (`ToolOutService`)."""
        super().__init__()
        self.service = ToolOutService(api_url, api_key, **options)
        self.tools: list[BaseTool] = [self._tool(tool) for tool in self.service.tools.values()]

    # --- the run's session ---------------------------------------------------------------------------
    def before_agent(self, state: ToolOutState, runtime: Any) -> dict[str, Any] | None:
        """Open the run's session and keep its id in the state."""
        return {SESSION_KEY: self.service.open_session().id}

    async def abefore_agent(self, state: ToolOutState, runtime: Any) -> dict[str, Any] | None:
        """`before_agent` on the async client."""
        return {SESSION_KEY: (await self.service.aopen_session()).id}

    def after_agent(self, state: ToolOutState, runtime: Any) -> dict[str, Any] | None:
        """Delete the run's session, unless it was given (`session_id`) or kept (`keep_session=True`)."""
        self.service.close_session(self._run_session(state))
        return None

    async def aafter_agent(self, state: ToolOutState, runtime: Any) -> dict[str, Any] | None:
        """`after_agent` on the async client."""
        await self.service.aclose_session(self._run_session(state))
        return None

    def close(self) -> None:
        """Delete the shared session (used outside a run) and close the client this middleware opened."""
        self.service.close()

    async def aclose(self) -> None:
        """`close` on the async client."""
        await self.service.aclose()

    # --- tool calls ----------------------------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]) -> Result:
        """Answer toolout's own tools with the run's session; run any other tool, and replace a result too large
        for the context by the too-large message."""
        name, args, call_id = _call(request)
        session = _state_session(request.state) or self.service.shared_session()
        if name in self.service.tools:
            return _message(self.service.call_tool(session, name, args, call_id), call_id, name)
        result = handler(request)
        return _each_message(result, lambda m: self._offloaded(m, name, args, session))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        """`wrap_tool_call` for async tools and the async client."""
        name, args, call_id = _call(request)
        session = _state_session(request.state) or await self.service.ashared_session()
        if name in self.service.tools:
            return _message(await self.service.acall_tool(session, name, args, call_id), call_id, name)
        result = await handler(request)
        replaced = {}
        for message in _tool_messages(result):
            text = _text(message)
            if text is not None:
                report = await self.service.aoffload(session, message.name or name, args, text)
                replaced[id(message)] = _replaced(message, report)
        return _each_message(result, lambda m: replaced.get(id(m), m))

    def _offloaded(self, message: ToolMessage, name: str, args: Any, session: str) -> ToolMessage:
        text = _text(message)
        if text is None:
            return message
        return _replaced(message, self.service.offload(session, message.name or name, args, text))

    def _run_session(self, state: Any) -> RunSession | None:
        found = _state_session(state)
        if not found or found == self.service.session_id or self.service.keep_session:
            return None
        return RunSession(found, owned=True)

    def _tool(self, tool: ServiceTool) -> BaseTool:
        """A LangChain tool for one of toolout's; it runs only where no middleware wraps it (else `wrap_tool_call`
        answers it with the run's session)."""

        def run(**args: Any) -> str:
            return report_text(self.service.call_tool(self.service.shared_session(), tool.name, args))

        async def arun(**args: Any) -> str:
            report = await self.service.acall_tool(await self.service.ashared_session(), tool.name, args)
            return report_text(report)

        function = tool.definition()["function"]
        return StructuredTool(
            name=tool.name,
            description=function["description"],
            args_schema=function["parameters"],
            func=run,
            coroutine=arun,
        )


def _call(request: ToolCallRequest) -> tuple[str, dict[str, Any], str]:
    call = request.tool_call
    return str(call["name"]), dict(call.get("args") or {}), str(call.get("id") or "")


def _state_session(state: Any) -> str | None:
    value = state.get(SESSION_KEY) if isinstance(state, dict) else getattr(state, SESSION_KEY, None)
    return str(value) if value else None


def _text(message: ToolMessage) -> str | None:
    """The message's text, or None when it must be left alone (an error; content blocks that are not text)."""
    if message.status == "error":
        return None
    if isinstance(message.content, str):
        return message.content
    texts = [block if isinstance(block, str) else block.get("text") for block in message.content]
    if any(not isinstance(text, str) for text in texts):
        return None
    return "".join(str(text) for text in texts)


def _replaced(message: ToolMessage, report: CallReport) -> ToolMessage:
    if not (report.oversized or report.routed):
        return message
    artifact: dict[str, Any] = {"toolout_handle": report.handle}
    if message.artifact is not None:
        artifact["artifact"] = message.artifact
    return message.model_copy(update={"content": report_text(report), "artifact": artifact})


def _message(report: CallReport, call_id: str, name: str) -> ToolMessage:
    status = "error" if report.message.is_error else "success"
    return ToolMessage(content=report_text(report), tool_call_id=call_id, name=name, status=status)


def _tool_messages(result: Result) -> list[ToolMessage]:
    if isinstance(result, ToolMessage):
        return [result]
    update = result.update
    messages = update.get("messages", []) if isinstance(update, dict) else []
    return [m for m in messages if isinstance(m, ToolMessage)]


def _each_message(result: Result, change: Callable[[ToolMessage], ToolMessage]) -> Result:
    """`change` applied to the result's tool messages: the message itself, or those of a `Command`'s update."""
    if isinstance(result, ToolMessage):
        return change(result)
    update = result.update
    if not isinstance(update, dict) or not isinstance(update.get("messages"), list):
        return result
    messages = [change(m) if isinstance(m, ToolMessage) else m for m in update["messages"]]
    return dataclasses.replace(result, update={**update, "messages": messages})
