"""A small agent loop on litellm: the model, the toolkit's tools, until the model answers or turns run out.

One plan (`agent_plan`), run by the toolkit sync (`litellm.completion`) or async
(`litellm.acompletion`). Each turn:
1. the system message is the caller's system text followed by the toolkit's variable
   instructions (docs/spec/variables.md §Instructions: `"{base}\\n\\n{instructions}"`, refreshed every
   turn so newly saved variables are listed); without a system message one is added;
2. with `budget_tokens`, the history is compacted (docs/spec/tools.md §Compaction) before the call;
3. the model is called with the toolkit's tools (`strict` for OpenAI strict mode);
4. no tool calls: its text, with `$var` references resolved, is the answer; otherwise the
   toolkit handles the calls and their tool messages are appended.

litellm is imported lazily, inside the loop: the light install (no litellm) imports the toolkit
fine and only `run_agent` says what to install.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolout.sdk.plans import Local, Plan
from toolout.sdk.variables import Style
from toolout.toolkit.adapters import content_text, message_dict, tool_calls_of
from toolout.toolkit.context import ToolContext
from toolout.toolkit.errors import ToolkitError
from toolout.toolkit.session import ToolSession

Stop = Literal["answered", "max_turns"]


@dataclass
class AgentResult:
    """How the loop ended: the answer (`text`, references resolved; `raw_text` as the model wrote it)."""

    text: str
    raw_text: str
    messages: list[dict[str, Any]]
    turns: int
    stop: Stop
    tool_calls: int = 0
    reports: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class AgentOptions:
    model: str
    max_turns: int = 10
    budget_tokens: int | None = None
    keep_last: int = 1
    style: Style = "full"
    tools: list[dict[str, Any]] = field(default_factory=list)
    completion: dict[str, Any] = field(default_factory=dict)


def litellm_module() -> Any:
    """litellm, imported on first use (seconds); its cost map from the package, not fetched from the internet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise ToolkitError(
            "run_agent needs litellm, which the light install does not include: pip install litellm "
            "(or toolout[server]); or run your own loop with Toolkit.handle()"
        ) from exc
    return litellm


def completion_effect(options: AgentOptions, history: list[dict[str, Any]]) -> Local:
    """One model call, for either transport (a snapshot of the history is sent)."""
    request = {"model": options.model, "messages": list(history), **options.completion}
    if options.tools:
        request["tools"] = options.tools
        # litellm 1.106 routes any request with tools through its MCP gateway, which imports the optional `mcp`
        # package and fails without it; our tools are plain functions (the same flag as infra/llm/client.py's SKIP_MCP).
        request["_skip_mcp_handler"] = True
    return Local(
        run_sync=lambda: litellm_module().completion(**request),
        run_async=lambda: litellm_module().acompletion(**request),
    )


def with_instructions(history: list[dict[str, Any]], base: str | None, instructions: str) -> None:
    """Set the system message to `base` + instructions (docs/spec/variables.md §Instructions), adding one if none."""
    text = f"{base}\n\n{instructions}" if base else instructions.lstrip("\n")
    if history and history[0].get("role") == "system":
        history[0] = {**history[0], "content": text}
    else:
        history.insert(0, {"role": "system", "content": text})


def agent_plan(
    session: ToolSession,
    messages: Sequence[Any],
    options: AgentOptions,
    ctx: ToolContext,
    count: Callable[[str], int],
) -> Plan[AgentResult]:
    if options.max_turns < 1:
        raise ToolkitError(f"max_turns must be at least 1, got {options.max_turns}")
    history = [message_dict(m) for m in messages]
    base = content_text(history[0]) if history and history[0].get("role") == "system" else None
    reports: list[Any] = []
    for turn in range(1, options.max_turns + 1):
        with_instructions(history, base, (yield from session.instructions(options.style)))
        if options.budget_tokens is not None:
            history = yield from session.compact(history, options.budget_tokens, count, keep_last=options.keep_last)
        response = yield completion_effect(options, history)
        message = response.choices[0].message
        history.append(message_dict(message))
        calls = tool_calls_of(message)
        if not calls:
            raw = content_text(message)
            text = yield from session.resolve_text(raw)
            return AgentResult(text, raw, history, turn, "answered", len(reports), reports)
        done = yield from session.calls(calls, ctx)
        reports += done
        history += [report.to_openai() for report in done]
    return AgentResult("", "", history, options.max_turns, "max_turns", len(reports), reports)
