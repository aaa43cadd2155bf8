"""The offline model as a simple agent: it follows a task that names tools, so agent loops are testable.

Used when a request offers tools and its system prompt is not one of toolout's extraction prompts
(no WHAT TO EXTRACT section). Every answer is a pure function of the conversation, decided in
this order, one tool call per turn:

1. **Follow-ups to the newest tool results** (the tool messages after the last assistant message),
   when the tool needed is offered and was not already called for that result:
   * `Tool output is too large … Call tool_output(handle = "<uuid>", …)` → `tool_output`
     `{"handle": "<uuid>", "extract": <the task's extract>}`;
   * `[tool output routed] <tool> -> variable:<name> (…)` → `buffer_ops`
     `{"operation": "peek", "target": "<name>"}`;
   * `[output_ref <id>] …` (a compacted result) → `tool_output_cache` `{"ref_id": "<id>"}`;
   * `Tool result too large, … saved in the filesystem at this path: <path>` (deepagents' eviction) →
     `read_file` `{"file_path": "<path>", "offset": 0, "limit": 100}`, as that message asks.
2. **The next step of the task.** The task is the last user message. Its steps are the offered
   tools it names (whole words), in order; a name may be followed by `with` and a JSON object,
   which is the call's arguments (else `{}`). The standard tools (`tool_output`,
   `tool_output_cache`, `tool_output_cache_grep`, `buffer_ops`) are steps only when followed by
   arguments (a task may mention them in passing). A step is done when the conversation has a
   call to its tool after the previous step's call. In the arguments, a reference `$<tool>`
   (e.g. `"$get_orders.items[0]"`) that names an offered tool but no variable becomes a reference
   to that tool's newest variable as the system prompt lists it (`- \\`$get_orders_1\\` (get_orders): …`,
   the instructions of docs/spec/variables.md) — what a model reading its instructions would write.
3. **The answer**, once no step or follow-up is left: `Done. Tools called: a, b, c.` then
   `Last tool result:` and the newest tool result (at most `ANSWER_RESULT_CHARS` characters).

The task's extract (for `tool_output`) is the text after `Extract:` on its line, else the task.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from offline_model.prompt import message_text, system_prompt

STANDARD = ("tool_output", "tool_output_cache", "tool_output_cache_grep", "buffer_ops")
ANSWER_RESULT_CHARS = 1500
_TOO_LARGE = re.compile(r'Tool output is too large \(.*?\)\.\s*Call tool_output\(handle = "([^"]+)"', re.S)
_ROUTED = re.compile(r"\[tool output routed\] \S+ -> variable:([A-Za-z_][A-Za-z0-9_]*) \(")
_OUTPUT_REF = re.compile(r"^\[output_ref ([^\]\s]+)\]")
_EVICTED = re.compile(r"^Tool result too large, .*? saved in the filesystem at this path: (\S+)")
_EXTRACT = re.compile(r"^\s*Extract:\s*(.+)$", re.M | re.I)
_LISTED = re.compile(r"^- `\$([A-Za-z_][A-Za-z0-9_]*)` \(([^)]*)\):", re.M)
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_WITH = re.compile(r"\s*(?:with\s+)?")


@dataclass(frozen=True)
class Step:
    """One tool call to make."""

    name: str
    arguments: dict[str, Any]


def offered_tools(tools: list[dict[str, Any]] | None) -> list[str]:
    return [str((t.get("function") or {}).get("name")) for t in tools or [] if isinstance(t, dict)]


def agent_turn(body: dict[str, Any]) -> tuple[Step | None, str | None]:
    """The next tool call, or the final answer (rules in the module docstring)."""
    messages = body.get("messages") or []
    offered = offered_tools(body.get("tools"))
    calls = _calls(messages)
    follow_up = _follow_up(messages, offered, calls)
    if follow_up is not None:
        return follow_up, None
    task = _task(messages)
    steps = [_with_variables(step, system_prompt(messages), offered) for step in task_steps(task, offered)]
    done = _steps_done(steps, calls)
    if done < len(steps):
        return steps[done], None
    return None, final_answer(messages, calls)


def call_id(step: Step, turn: int) -> str:
    """Deterministic, and distinct for the same call made on different turns."""
    digest = hashlib.sha256(f"{turn}:{step.name}:{json.dumps(step.arguments, sort_keys=True)}".encode()).hexdigest()
    return f"call_{digest[:24]}"


def _task(messages: list[dict[str, Any]]) -> str:
    users = [m for m in messages if m.get("role") == "user"]
    return message_text(users[-1]) if users else ""


def _calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every tool call the assistant made, in order, with decoded arguments."""
    found = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            found.append((str(function.get("name")), _decoded(function.get("arguments"))))
    return found


def _decoded(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _newest_results(messages: list[dict[str, Any]]) -> list[str]:
    """The tool results after the last assistant message."""
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message_text(message))
    return results


def _follow_up(
    messages: list[dict[str, Any]], offered: list[str], calls: list[tuple[str, dict[str, Any]]]
) -> Step | None:
    for result in _newest_results(messages):
        for step in _follow_ups_of(result, _task(messages)):
            if step.name in offered and (step.name, step.arguments) not in calls:
                return step
    return None


def _follow_ups_of(result: str, task: str) -> list[Step]:
    steps = []
    if match := _TOO_LARGE.search(result):
        steps.append(Step("tool_output", {"handle": match.group(1), "extract": task_extract(task)}))
    if match := _ROUTED.search(result):
        steps.append(Step("buffer_ops", {"operation": "peek", "target": match.group(1)}))
    if match := _OUTPUT_REF.search(result):
        steps.append(Step("tool_output_cache", {"ref_id": match.group(1)}))
    if match := _EVICTED.search(result):
        steps.append(Step("read_file", {"file_path": match.group(1), "offset": 0, "limit": 100}))
    return steps


def task_extract(task: str) -> str:
    match = _EXTRACT.search(task)
    return (match.group(1) if match else task).strip() or "everything relevant"


def task_steps(task: str, offered: list[str]) -> list[Step]:
    """The offered tools the task names, in order, with the JSON arguments written after them."""
    names = sorted(offered, key=len, reverse=True)  # the longest name wins where names overlap
    if not names:
        return []
    mention = re.compile(r"(?<![A-Za-z0-9_$])(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9_])")
    steps = []
    for match in mention.finditer(task):
        arguments = _arguments_after(task, match.end())
        if arguments is None and match.group(1) in STANDARD:
            continue
        steps.append(Step(match.group(1), arguments or {}))
    return steps


def _arguments_after(task: str, at: int) -> dict[str, Any] | None:
    start = _WITH.match(task, at)
    position = start.end() if start else at
    if not task.startswith("{", position):
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(task, position)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _steps_done(steps: list[Step], calls: list[tuple[str, dict[str, Any]]]) -> int:
    """How many steps have a call to their tool, each after the previous step's."""
    done, position = 0, 0
    for step in steps:
        names = [name for name, _ in calls[position:]]
        if step.name not in names:
            break
        position += names.index(step.name) + 1
        done += 1
    return done


def _with_variables(step: Step, system: str, offered: list[str]) -> Step:
    """`$<tool>` → `$<that tool's newest listed variable>` in the step's string arguments."""
    newest: dict[str, str] = {}
    for name, tool in _LISTED.findall(system):
        newest[tool] = name
    listed = {name for name, _ in _LISTED.findall(system)}

    def rename(match: re.Match[str]) -> str:
        word = match.group(1)
        if word in offered and word not in listed and word in newest:
            return f"${newest[word]}"
        return match.group(0)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _REF.sub(rename, value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return Step(step.name, walk(step.arguments))


def final_answer(messages: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]]) -> str:
    results = [message_text(m) for m in messages if m.get("role") == "tool"]
    called = ", ".join(name for name, _ in calls) or "none"
    if not results:
        return f"Done. Tools called: {called}."
    return f"Done. Tools called: {called}.\nLast tool result:\n{results[-1][:ANSWER_RESULT_CHARS]}"
