"""One tool call through the toolkit, as an SDK plan (sans-I/O; `toolout.toolkit.runtime` runs it sync or async).

For one of the agent's own tools:
1. `$var` references in the arguments are resolved by the service (`POST /resolve`) — only when
   the decoded arguments contain one (`extraction.variables.refs.contains_variable_ref`): no round
   trip otherwise. A reference the service cannot resolve (unknown variable, missing field, value
   too large) is the call's result: `Error resolving variable references for tool "<tool>": <message>`,
   flagged as an error; the tool does not run.
2. The tool runs (`Tool.run`: validation, callbacks, errors as text), under the call's cancel token.
3. Its output is uploaded (`POST /outputs`, store=always): saved as a variable — named by the
   service (`<tool>_<n>`, docs/spec/variables.md §Names) unless `naming` returns a name — or routed per the tool's
   route (`variable:`/`file:`/`discard`, with its write mode).
4. What the model sees: a routed output's manifest; an oversized one's exact "Tool output is too
   large" message (the service's bytes/token policy decides); otherwise the output unchanged.

Not uploaded (the model sees them as they are): error results (an error is not data to keep),
and results with content parts (images have no text form to store). A text output that is JSON
(it parses, and starts with `{` or `[`) is uploaded as `application/json`, so `$name.field` works.
A 4xx from the upload (e.g. over the service's upload limit) is the call's error result
`Error storing the output of tool "<tool>": <message>`; a 5xx propagates.

The standard tools (`toolout.toolkit.standard`) skip all of this: their arguments are validated
and sent to the service, their answers are shown as they are and not saved as variables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from extraction.directives.specs import DestinationKind, OutputRoute
from extraction.variables.names import validate_name
from extraction.variables.refs import contains_variable_ref
from toolout.sdk import outputs, variables
from toolout.sdk.errors import ToolOutAPIError, UnavailableError
from toolout.sdk.plans import Local, Plan
from toolout.toolkit.adapters import ToolCall
from toolout.toolkit.args import InvalidArguments
from toolout.toolkit.context import ToolContext
from toolout.toolkit.results import JsonResult, PartsResult, TextResult, ToolMessage, ToolResult, tool_message
from toolout.toolkit.standard import ServiceTool
from toolout.toolkit.tool import Tool

Naming = Callable[[str, Any, Any], str | None]
"""`naming(tool_name, arguments, output) -> variable name`, or None for the service's default `<tool>_<n>`."""
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"
MAX_TOOL_ARGS_BYTES = 8_000
"""The arguments travel in the `X-Tool-Args` header (the extraction prompts quote them); servers cap header
sizes (uvicorn/h11 at 16 KiB), so longer arguments are sent as `{"truncated_arguments": <their head>}`."""


@dataclass(frozen=True)
class CallReport:
    """How one tool call went: the message for the model, and where its output went."""

    call: ToolCall
    message: ToolMessage
    variable: str | None = None
    handle: str | None = None
    routed: bool = False
    oversized: bool = False
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def to_openai(self) -> dict[str, Any]:
        return self.message.to_openai()


@dataclass
class CallSettings:
    """What the pipeline needs to know about the toolkit (no client: plans do no I/O)."""

    routes: dict[str, OutputRoute | None]
    naming: Naming | None = None
    max_value_chars: int | None = None
    extraction_timeout: float = 600.0


def report(call: ToolCall, result: ToolResult, **where: Any) -> CallReport:
    return CallReport(call, tool_message(result, call.id, name=call.name), **where)


def unknown_tool(call: ToolCall, available: list[str]) -> CallReport:
    text = f"Unknown tool: {call.name}. Available tools: {', '.join(available)}"
    return report(call, TextResult(text, is_error=True))


def decoded(arguments: Any) -> dict[str, Any] | None:
    """The arguments as an object, or None when they are not one (the tool then reports the problem)."""
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str) or not arguments.strip():
        return None
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def user_tool_call(
    tool: Tool, call: ToolCall, session: str, ctx: ToolContext, settings: CallSettings
) -> Plan[CallReport]:
    """Steps 1-4 of the module docstring for one of the agent's tools."""
    arguments: Any = call.arguments
    args = decoded(arguments)
    warnings: list[dict[str, Any]] = []
    if args is not None and contains_variable_ref(args):
        try:
            resolved = yield from variables.resolve(session, args, max_value_chars=settings.max_value_chars)
        except ToolOutAPIError as exc:
            if isinstance(exc, UnavailableError):
                raise
            text = f'Error resolving variable references for tool "{tool.name}": {exc.message}'
            return report(call, TextResult(text, is_error=True))
        arguments = args = resolved["value"]
        warnings = list(resolved.get("warnings") or [])
    result = yield Local(lambda: tool.run_sync(arguments, ctx), lambda: tool.run(arguments, ctx))
    if result.is_error or isinstance(result, PartsResult):
        return report(call, result, warnings=warnings)
    return (yield from _save(tool.name, call, session, result, args, settings, warnings))


def foreign_output(
    call: ToolCall, session: str, result: TextResult | JsonResult, settings: CallSettings
) -> Plan[CallReport]:
    """Steps 3-4 for a tool that ran elsewhere (an agent framework's own tool, `toolout.integrations`).

    Stored only when oversized (`store=if_oversized`) unless routed: a small output costs the service
    nothing and the model sees it unchanged.
    """
    args = decoded(call.arguments)
    return (yield from _save(call.name, call, session, result, args, settings, [], store="if_oversized"))


def _save(
    name: str,
    call: ToolCall,
    session: str,
    result: TextResult | JsonResult,
    args: Any,
    settings: CallSettings,
    warnings: list[dict[str, Any]],
    store: str = "always",
) -> Plan[CallReport]:
    content, content_type = payload(result)
    route = settings.routes.get(name)
    target = _upload_target(name, route, args, result, settings)
    try:
        answer = yield from outputs.store(
            session, content.encode("utf-8"), tool_name=name, tool_args=header_arguments(call.arguments_text),
            content_type=content_type, store=store, name=target.name, output=target.output,
            write_mode=target.write_mode,
        )  # fmt: skip
    except ToolOutAPIError as exc:
        if isinstance(exc, UnavailableError):
            raise
        text = f'Error storing the output of tool "{name}": {exc.message}'
        return report(call, TextResult(text, is_error=True), warnings=warnings)
    return _answered(call, result, answer, warnings)


@dataclass(frozen=True)
class UploadTarget:
    """The upload's `name` (inline) or `output`/`write_mode` (routed); None: the service's default."""

    name: str | None = None
    output: str | None = None
    write_mode: str | None = None


def _upload_target(
    name: str, route: OutputRoute | None, args: Any, result: TextResult | JsonResult, settings: CallSettings
) -> UploadTarget:
    if route is not None and route.output.kind is not DestinationKind.INLINE:
        mode = route.write_mode.value if route.write_mode is not None else None
        return UploadTarget(output=str(route.output), write_mode=mode)
    if settings.naming is None:
        return UploadTarget()
    output = result.value if isinstance(result, JsonResult) else result.text
    chosen = settings.naming(name, args, output)
    return UploadTarget(name=validate_name(chosen) if chosen is not None else None)


def _answered(
    call: ToolCall, result: TextResult | JsonResult, answer: dict[str, Any], warnings: list[dict[str, Any]]
) -> CallReport:
    where = {"variable": answer.get("name"), "handle": answer.get("handle"), "warnings": warnings}
    if answer.get("stored") is False:  # store=if_oversized and it fits: nothing kept
        return report(call, result, warnings=warnings)
    if answer.get("routed"):
        return report(call, TextResult(str(answer["manifest"])), routed=True, **where)
    if answer.get("oversized"):
        return report(call, TextResult(str(answer["message"])), oversized=True, **where)
    return report(call, result, **where)


def header_arguments(text: str) -> str:
    """The call's arguments for `X-Tool-Args`: verbatim, or valid JSON holding their head when too long."""
    if len(text.encode("utf-8")) <= MAX_TOOL_ARGS_BYTES:
        return text
    head = text.encode("utf-8")[: MAX_TOOL_ARGS_BYTES // 2].decode("utf-8", "ignore")
    return json.dumps({"truncated_arguments": head})


def payload(result: TextResult | JsonResult) -> tuple[str, str]:
    """The text to store and its content type (JSON for JSON values and for text that is JSON)."""
    if isinstance(result, JsonResult):
        content = tool_message(result, "").content
        return str(content), JSON_TYPE
    return result.text, JSON_TYPE if is_json_text(result.text) else TEXT_TYPE


def is_json_text(text: str) -> bool:
    """True for an object or array in JSON text (a bare string or number stays text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def service_tool_call(tool: ServiceTool, call: ToolCall, session: str, settings: CallSettings) -> Plan[CallReport]:
    """A standard tool's call: validate, let the service answer, show the answer as it is."""
    try:
        args = tool.arguments(call.arguments)
    except InvalidArguments as exc:
        return report(call, TextResult(exc.message, is_error=True))
    answer = yield from tool.run(args, session, settings.extraction_timeout)
    return report(call, TextResult(answer.text, is_error=answer.is_error))
