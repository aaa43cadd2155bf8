"""Tool callbacks (docs/spec/tools.md §Callbacks): `before_call`, `on_success`, `on_error`, `format_output`.

Order, for arguments that validated (invalid arguments never reach the callbacks):
1. `before_call(args)` - a non-None return short-circuits: execute and `on_success` are skipped
   and that value is the output;
2. `execute(args, ctx)`;
3. on success `on_success(args, output)` - a non-None return replaces the output;
   on an exception `on_error(args, {"error": message})` - a non-None return replaces that dict;
4. `format_output(output)` - always last, on success, short-circuit and error alike; a non-None
   return replaces the output (None keeps it, as for the other callbacks).
`args` is the validated input model instance; `message` is `str(exception)` (the exception's class
name when that is empty). Every callback may be sync or async; sync ones run inline on the event
loop (keep them quick, make them async for I/O).

Which exceptions propagate (the table of docs/spec/tools.md §Callbacks):
| raised in     | effect                                              |
| before_call   | propagates (uncaught)                               |
| execute       | caught: becomes `{"error": message}`, goes to on_error |
| on_success    | propagates (uncaught)                               |
| on_error      | propagates (uncaught)                               |
`format_output` is a callback like the others, so it propagates.
A propagated exception is the callback's own exception, re-raised unchanged through `Tool.run`
(and `execute_raw`) with a note naming the callback and the tool. Cancellation
(`asyncio.CancelledError`, incl. `ToolCanceled`) is never caught.

`{"error": message}` and `Error executing tool: <message>`: the callbacks
see the dict. If it reaches the end untouched (no callback replaced it), a single tool
renders it as the text, and a composite tool puts the dict itself in its results
(docs/spec/tools.md §Composite tools). A replacement is rendered like any output (str -> text, else
JSON) and stays flagged `is_error`, unless the replacement is a `ToolResult`, whose own `is_error` stands.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

CallbackFn = Callable[..., Any]


@dataclass(frozen=True)
class Callbacks:
    before_call: CallbackFn | None = None
    on_success: CallbackFn | None = None
    on_error: CallbackFn | None = None
    format_output: CallbackFn | None = None


@dataclass(frozen=True)
class Outcome:
    """How one call ended, before it is rendered for a single tool or nested in a composite's results.

    `kind`: "ok" (execute or before_call produced `output`), "raised" (execute raised; `error` is
    its message and `untouched` says whether `output` is still the original `{"error": message}`),
    "invalid" (the arguments did not validate; `error` is the model-facing text).
    """

    kind: Literal["ok", "raised", "invalid"]
    output: Any
    error: str | None = None
    untouched: bool = False

    @property
    def is_error(self) -> bool:
        return self.kind != "ok"


def error_message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def run_with_callbacks(
    execute: Callable[[], Awaitable[Any]], args: Any, callbacks: Callbacks, tool_name: str
) -> Outcome:
    """Run `execute` between the callbacks, following the order and the propagation table above."""
    short_circuit = await _call(callbacks.before_call, "before_call", tool_name, args)
    if short_circuit is not None:
        return await _finish(Outcome("ok", short_circuit), callbacks, tool_name)
    try:
        output = await execute()
    except Exception as exc:  # noqa: BLE001 - any error in execute becomes {"error": message}
        return await _failed(args, error_message(exc), callbacks, tool_name)
    replaced = await _call(callbacks.on_success, "on_success", tool_name, args, output)
    return await _finish(Outcome("ok", output if replaced is None else replaced), callbacks, tool_name)


async def _failed(args: Any, message: str, callbacks: Callbacks, tool_name: str) -> Outcome:
    error = {"error": message}
    replaced = await _call(callbacks.on_error, "on_error", tool_name, args, error)
    output = error if replaced is None else replaced
    untouched = output is error and error == {"error": message}  # not replaced, not edited in place
    return await _finish(Outcome("raised", output, message, untouched=untouched), callbacks, tool_name)


async def _finish(outcome: Outcome, callbacks: Callbacks, tool_name: str) -> Outcome:
    formatted = await _call(callbacks.format_output, "format_output", tool_name, outcome.output)
    if formatted is None or formatted is outcome.output:
        return outcome
    return Outcome(outcome.kind, formatted, outcome.error, untouched=False)


async def _call(callback: CallbackFn | None, role: str, tool_name: str, *args: Any) -> Any:
    """Call a sync or async callback; its exception propagates, annotated with where it came from."""
    if callback is None:
        return None
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        exc.add_note(f"raised in the {role} callback of tool {tool_name!r}")
        raise
    return result
