"""Composite tools (docs/spec/tools.md §Composite tools): one tool whose input is a list of calls to its sub-tools.

Input `{"calls": [{"name": <sub-tool>, "args": {...}}]}`; output (JSON)
`{"results": [{"name": ..., "result": ...}]}` in call order.

* Advertised schema: `calls` items are a discriminated union on `name` (`const` per sub-tool,
  `args` = that sub-tool's input schema); its strict variant is an `anyOf` of closed objects,
  which OpenAI strict mode supports (nested, never at the root).
* Validation is per call, not per union: the composite itself only checks the `calls` shape, then
  each call is looked up and validated by its sub-tool, so an unknown name is that call's
  `{"error": "Unknown sub-tool: <name>"}` and bad arguments are that call's
  `{"error": "Invalid arguments for tool ..."}` - the other calls still run.
* Each call runs with its sub-tool's own callbacks and timeout; an execute error is
  `{"error": message}` (or what the sub-tool's `on_error`/`format_output` made of it). A sub-tool
  *callback* that raises (which propagates for a single tool) is caught here and becomes that
  call's `{"error": message}`: one failing call never stops the others.
* Sequential by default (in the given order: later calls may rely on earlier ones);
  `concurrent=True` runs them all at once (`asyncio.gather`: async sub-tools interleave, sync ones
  run in worker threads) and still reports in call order.
* Sub-calls share the composite call's context (one dependency cache for the whole call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from toolout.toolkit.callbacks import CallbackFn, Callbacks, error_message
from toolout.toolkit.context import ToolContext
from toolout.toolkit.errors import ToolDefinitionError
from toolout.toolkit.tool import Tool, outcome_value

_CLOSED = ConfigDict(extra="forbid")


class CompositeCall(BaseModel):
    """One call as the composite validates it: any name (checked per call), any arguments object."""

    model_config = _CLOSED
    name: str
    args: dict[str, Any] | None = None


class CompositeInput(BaseModel):
    model_config = _CLOSED
    calls: list[CompositeCall]


def composite_tool(
    name: str,
    description: str,
    tools: Sequence[Tool],
    *,
    concurrent: bool = False,
    timeout: float | None = None,
    **callbacks: CallbackFn | None,
) -> Tool:
    """A tool that runs several calls to `tools` in one model turn (see the module docstring)."""
    sub_tools = _index(name, tools)

    async def execute(args: CompositeInput, ctx: ToolContext) -> dict[str, Any]:
        if concurrent:
            results = await asyncio.gather(*(_run_call(sub_tools, call, ctx) for call in args.calls))
        else:
            results = [await _run_call(sub_tools, call, ctx) for call in args.calls]
        return {"results": list(results)}

    return Tool(
        name=name,
        description=composite_description(description, list(sub_tools.values()), concurrent=concurrent),
        input_model=CompositeInput,
        schema_model=_advertised_model(name, list(sub_tools.values())),
        execute=execute,
        callbacks=Callbacks(**callbacks),
        timeout=timeout,
    )


async def _run_call(sub_tools: dict[str, Tool], call: CompositeCall, ctx: ToolContext) -> dict[str, Any]:
    sub_tool = sub_tools.get(call.name)
    if sub_tool is None:
        return {"name": call.name, "result": {"error": f"Unknown sub-tool: {call.name}"}}
    try:
        outcome = await sub_tool.outcome(call.args or {}, ctx)
    except Exception as exc:
        ctx.logger.warning("a callback of sub-tool %r raised", call.name, exc_info=True)
        return {"name": call.name, "result": {"error": error_message(exc)}}
    return {"name": call.name, "result": outcome_value(outcome)}


def _index(name: str, tools: Sequence[Tool]) -> dict[str, Tool]:
    if not tools:
        raise ToolDefinitionError(f"composite tool {name!r} needs at least one sub-tool", tool=name)
    index: dict[str, Tool] = {}
    for sub_tool in tools:
        if not isinstance(sub_tool, Tool):
            raise ToolDefinitionError(f"composite tool {name!r}: {sub_tool!r} is not a Tool", tool=name)
        if sub_tool.name in index:
            raise ToolDefinitionError(f"composite tool {name!r}: two sub-tools named {sub_tool.name!r}", tool=name)
        index[sub_tool.name] = sub_tool
    return index


def _advertised_model(name: str, tools: list[Tool]) -> type[BaseModel]:
    """`{calls: [ {name: const, args: <sub-tool input>} | ... ]}`, discriminated on `name`."""
    variants = [_variant(name, sub_tool) for sub_tool in tools]
    item: Any = variants[0]
    if len(variants) > 1:
        item = Annotated[cast(Any, Union)[tuple(variants)], Field(discriminator="name")]
    calls = (list[item], Field(description="The sub-tool calls, in the order to run them."))
    return create_model(f"{name}_input", __config__=_CLOSED, calls=calls)


def _variant(name: str, sub_tool: Tool) -> type[BaseModel]:
    return create_model(
        f"{name}__{sub_tool.name}_call",
        __config__=_CLOSED,
        name=(cast(Any, Literal)[sub_tool.name], ...),
        args=(sub_tool.schema_model, ...),
    )


def composite_description(description: str, tools: list[Tool], *, concurrent: bool) -> str:
    """The composite's description: its purpose, how calls run, every sub-tool and its args."""
    order = "all at once" if concurrent else "one after another, in the given order"
    lines = [
        description.strip(),
        "",
        'Pass one or more calls in `calls`, each {"name": <sub-tool>, "args": {...}}. The calls run '
        f"{order}; each gets its own result and a failing call does not stop the others. Returns "
        '{"results": [{"name": ..., "result": ...}]} in call order; a failed call\'s result is {"error": "..."}.',
        "",
        "Sub-tools:",
    ]
    for sub_tool in tools:
        lines.append(f"- {sub_tool.name}: " + sub_tool.description.replace("\n", "\n  "))
        lines.append("  args: " + (describe_args(sub_tool.parameters) or "none"))
    return "\n".join(lines)


def describe_args(schema: dict[str, Any]) -> str:
    """`a (integer), limit (integer, optional): at most this many` for a parameters schema."""
    required = set(schema.get("required", []))
    parts = []
    for field_name, sub in schema.get("properties", {}).items():
        kind = _type_name(sub) + ("" if field_name in required else ", optional")
        text = f"{field_name} ({kind})"
        parts.append(f"{text}: {sub['description']}" if sub.get("description") else text)
    return "; ".join(parts)


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type_name(option) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    return "|".join(kind) if isinstance(kind, list) else str(kind)
