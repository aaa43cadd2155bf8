"""A toolkit's state for one service session, and every operation on it as an SDK plan (no I/O here).

`ToolSession` knows the tools, the routes, the naming function, the service session id (created
on first use) and which stored output backs each tool call (`refs`, for compaction). Its methods
return plans (`toolout.sdk.plans`); `toolout.toolkit.runtime.Toolkit` runs them on a sync or an
async client, so each operation is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolout.sdk import outputs, variables
from toolout.sdk.plans import Plan
from toolout.sdk.variables import Style
from toolout.toolkit.adapters import ToolCall, content_text, field
from toolout.toolkit.call_pipeline import (
    CallReport,
    CallSettings,
    payload,
    service_tool_call,
    unknown_tool,
    user_tool_call,
)
from toolout.toolkit.compaction import compacted, select_for_compaction
from toolout.toolkit.context import ToolContext
from toolout.toolkit.results import TextResult
from toolout.toolkit.standard import ServiceTool
from toolout.toolkit.stream import StreamResolver
from toolout.toolkit.tool import Tool


class ToolSession:
    def __init__(
        self,
        tools: dict[str, Tool],
        service_tools: dict[str, ServiceTool],
        settings: CallSettings,
        *,
        session_id: str | None = None,
    ) -> None:
        self.tools, self.service_tools, self.settings = tools, service_tools, settings
        self.session_id = session_id
        self.created_session = False
        self.refs: dict[str, str] = {}
        """tool_call_id -> handle of the stored output behind that tool message."""

    @property
    def tool_names(self) -> list[str]:
        return [*self.tools, *self.service_tools]

    def session(self) -> Plan[str]:
        """The service session, created on first use."""
        if self.session_id is None:
            self.session_id = yield from outputs.create_session()
            self.created_session = True
        return self.session_id

    def call(self, call: ToolCall, ctx: ToolContext) -> Plan[CallReport]:
        """One tool call, whichever kind of tool it names (see `toolout.toolkit.call_pipeline`)."""
        session = yield from self.session()
        if call.name in self.tools:
            done = yield from user_tool_call(self.tools[call.name], call, session, ctx, self.settings)
        elif call.name in self.service_tools:
            done = yield from service_tool_call(self.service_tools[call.name], call, session, self.settings)
        else:
            done = unknown_tool(call, self.tool_names)
        if done.handle and not done.routed:
            self.refs[call.id] = done.handle
        return done

    def calls(self, calls: Sequence[ToolCall], ctx: ToolContext) -> Plan[list[CallReport]]:
        """The calls in order (a later call may pass an earlier one's variable), one report each."""
        reports = []
        for call in calls:
            reports.append((yield from self.call(call, ctx)))
        return reports

    def instructions(self, style: Style = "full") -> Plan[str]:
        """The variable instructions (docs/spec/variables.md §Instructions), with the session's current variables."""
        session = yield from self.session()
        return (yield from variables.instructions(session, style=style))

    def stream(self) -> Plan[StreamResolver]:
        session = yield from self.session()
        return StreamResolver(session, max_value_chars=self.settings.max_value_chars)

    def resolve_text(self, text: str) -> Plan[str]:
        """The references in a finished text, resolved leniently (as a stream would)."""
        if "$" not in text:
            return text
        resolver = yield from self.stream()
        pieces = yield from resolver.push(text)
        tail = yield from resolver.end()
        return "".join([*pieces, *tail])

    def compact(
        self, messages: Sequence[Any], budget_tokens: int, count: Callable[[str], int], *, keep_last: int = 1
    ) -> Plan[list[Any]]:
        """The oldest tool results past the budget become references (docs/spec/tools.md §Compaction)."""
        chosen = select_for_compaction(messages, budget_tokens, count, keep_last=keep_last)
        result = list(messages)
        for index in chosen:
            ref = yield from self._reference(messages, index)
            result[index] = compacted(messages[index], ref)
        return result

    def _reference(self, messages: Sequence[Any], index: int) -> Plan[str]:
        """The handle behind a tool message: known from its call, or stored now."""
        call_id = str(field(messages[index], "tool_call_id") or "")
        if call_id in self.refs:
            return self.refs[call_id]
        session = yield from self.session()
        content, content_type = payload(TextResult(content_text(messages[index])))
        tool = _tool_name_of(messages[:index], call_id)
        answer = yield from outputs.store(session, content.encode("utf-8"), tool_name=tool, content_type=content_type)
        self.refs[call_id] = str(answer["handle"])
        return self.refs[call_id]


def _tool_name_of(history: Sequence[Any], call_id: str) -> str:
    """The name of the tool an assistant message called with `call_id` ("unknown" if not found)."""
    for message in reversed(history):
        for call in field(message, "tool_calls") or []:
            if field(call, "id") == call_id:
                return str(field(field(call, "function"), "name") or "unknown")
    return "unknown"
