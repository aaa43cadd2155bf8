"""Tools (docs/spec/tools.md §Defining a tool): `define_tool(...)`, the `@tool` decorator, and `Tool` itself.

A `Tool` is data plus one entry point: `await tool.run(raw_args, ctx) -> ToolResult` (alias
`execute_raw`; `run_sync` for sync agent loops). `run` does what every agent
loop would otherwise repeat: decode and validate the arguments (`toolout.toolkit.args`), run
`execute` between the callbacks (`toolout.toolkit.callbacks`), turn an exception into
`Error executing tool: <message>` and the return value into a `ToolResult`
(`toolout.toolkit.results`). `tool.definition(strict=...)` is the OpenAI function-tool dict.

Execution model (`toolout.toolkit.execution`): async core; a sync `execute` runs in a worker
thread; the whole call is raced against the context's cancel token (cancelling it makes `run`
raise `ToolCanceled` at once); `timeout=` bounds `execute` alone and a timeout is an execution
error (`Error executing tool: timed out after N s`), so `on_error` sees it. A callback's exception
propagates out of `run` (docs/spec/tools.md §Callbacks; `toolout.toolkit.callbacks`).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import Any, overload

from pydantic import BaseModel

from extraction.errors import StrictSchemaError
from extraction.schemas.strict_schema import strict_schema
from toolout.sdk.cancellation import until_canceled
from toolout.toolkit.args import InvalidArguments, RawArguments, parse_arguments
from toolout.toolkit.callbacks import CallbackFn, Callbacks, Outcome, run_with_callbacks
from toolout.toolkit.context import ToolContext
from toolout.toolkit.errors import ToolDefinitionError, ToolkitError
from toolout.toolkit.execution import call_tool_code, with_timeout
from toolout.toolkit.results import (
    TOOL_RESULT_TYPES,
    TextResult,
    ToolResult,
    execution_error,
    result_value,
    to_tool_result,
)
from toolout.toolkit.schema import Schema, input_schema, validate_tool_name
from toolout.toolkit.signature import infer_signature

Execute = Callable[[Any, ToolContext], Awaitable[Any]]


class Tool:
    """A callable tool: name, description, input model, and how to run it.

    `execute` here is `async (args, ctx) -> output`; `define_tool` and `@tool` adapt any sync or
    async function to that. `schema_model` (default: `input_model`) is what the model is shown,
    when it differs from what is validated (a composite tool's discriminated union).
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_model: type[BaseModel],
        execute: Execute,
        callbacks: Callbacks | None = None,
        timeout: float | None = None,
        schema_model: type[BaseModel] | None = None,
    ) -> None:
        self.name = validate_tool_name(name)
        if not description or not description.strip():
            raise ToolDefinitionError(f"tool {name!r} needs a description (description= or a docstring)", tool=name)
        self.description = description.strip()
        self.input_model = input_model
        self.schema_model = schema_model or input_model
        self.callbacks = callbacks or Callbacks()
        self.timeout = timeout
        self._execute = execute

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    @cached_property
    def parameters(self) -> Schema:
        """The parameters schema the model sees (`additionalProperties: false` at every level)."""
        return input_schema(self.schema_model)

    @cached_property
    def strict_parameters(self) -> Schema:
        """The OpenAI strict-mode parameters; raises `StrictSchemaError` if the input has no strict form."""
        return strict_schema(self.parameters)

    @property
    def supports_strict(self) -> bool:
        """Whether the input has a strict-mode form (a `dict[str, X]` or `Any` field has none)."""
        try:
            self.strict_parameters  # noqa: B018 - computing it is the check
        except StrictSchemaError:
            return False
        return True

    def definition(self, *, strict: bool = False) -> dict[str, Any]:
        """The OpenAI chat-completions function tool (`"strict": true` with the strict parameters)."""
        function: dict[str, Any] = {"name": self.name, "description": self.description}
        function["parameters"] = copy.deepcopy(self.strict_parameters if strict else self.parameters)
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    async def run(self, raw_args: RawArguments = None, ctx: ToolContext | None = None) -> ToolResult:
        """One tool call: raw arguments (JSON text, a mapping, or nothing) -> ToolResult."""
        call_ctx = (ctx or ToolContext()).for_call(self.name)
        outcome = await until_canceled(self.outcome(raw_args, call_ctx), call_ctx.cancel_token)
        return render(outcome)

    async def execute_raw(self, raw_args_json: RawArguments, ctx: ToolContext | None = None) -> ToolResult:
        """Alias of `run`, for code written against `executeRaw`."""
        return await self.run(raw_args_json, ctx)

    def run_sync(self, raw_args: RawArguments = None, ctx: ToolContext | None = None) -> ToolResult:
        """`run` for synchronous agent loops (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(raw_args, ctx))
        raise ToolkitError(f"{self.name}.run_sync() called inside a running event loop: use `await tool.run(...)`")

    async def outcome(self, raw_args: RawArguments, ctx: ToolContext) -> Outcome:
        """Validate, then execute between the callbacks, in `ctx` as given (a composite's sub-calls use this)."""
        try:
            args = parse_arguments(raw_args, self.input_model, self.input_schema, self.name)
        except InvalidArguments as exc:
            return Outcome("invalid", {"error": exc.message}, exc.message)
        return await run_with_callbacks(lambda: self._run_execute(args, ctx), args, self.callbacks, self.name)

    @cached_property
    def input_schema(self) -> Schema:
        """The schema of what `execute` accepts (guides dropping strict-mode nulls before validation)."""
        return self.parameters if self.schema_model is self.input_model else input_schema(self.input_model)

    async def _run_execute(self, args: BaseModel, ctx: ToolContext) -> Any:
        try:
            return await with_timeout(self._execute(args, ctx), self.timeout)
        except Exception:
            ctx.logger.warning("tool %r raised", self.name, exc_info=True)
            raise


def render(outcome: Outcome) -> ToolResult:
    """A single tool's result for an outcome (see `toolout.toolkit.callbacks` for the error rules)."""
    if outcome.kind == "invalid":
        return TextResult(outcome.error or "", is_error=True)
    if outcome.kind == "raised" and outcome.untouched:
        return execution_error(outcome.error or "")
    return to_tool_result(outcome.output, is_error=outcome.is_error)


def outcome_value(outcome: Outcome) -> Any:
    """An outcome as a value inside a composite's results: errors as `{"error": message}` (docs/spec/tools.md)."""
    if outcome.kind == "invalid":
        return {"error": outcome.error}
    return result_value(outcome.output) if isinstance(outcome.output, TOOL_RESULT_TYPES) else outcome.output


def define_tool(
    *,
    name: str,
    description: str,
    input: type[BaseModel],
    execute: Callable[..., Any],
    before_call: CallbackFn | None = None,
    on_success: CallbackFn | None = None,
    on_error: CallbackFn | None = None,
    format_output: CallbackFn | None = None,
    timeout: float | None = None,
) -> Tool:
    """Define a tool (docs/spec/tools.md §Defining a tool): `execute(args, ctx)` (or `execute(args)`), sync or async."""
    if not (isinstance(input, type) and issubclass(input, BaseModel)):
        raise ToolDefinitionError(f"tool {name!r}: input must be a pydantic model class, got {input!r}", tool=name)
    return Tool(
        name=name,
        description=description,
        input_model=input,
        execute=_bind_execute(execute),
        callbacks=Callbacks(before_call, on_success, on_error, format_output),
        timeout=timeout,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    before_call: CallbackFn | None = None,
    on_success: CallbackFn | None = None,
    on_error: CallbackFn | None = None,
    format_output: CallbackFn | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: `@tool` or `@tool(name=..., description=..., input=..., callbacks..., timeout=...)`.

    With `input=`, the function is `execute(args, ctx)` as in `define_tool`. Without, the input
    model is inferred from the signature (`toolout.toolkit.signature`). The name defaults to the
    function's, the description to its docstring.
    """
    if fn is None:
        return lambda function: _tool_from_function(function, **options)
    return _tool_from_function(fn, **options)


def _tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    timeout: float | None = None,
    **callbacks: CallbackFn | None,
) -> Tool:
    tool_name = validate_tool_name(name or fn.__name__)
    if input is not None:
        doc = description or inspect.getdoc(fn) or ""
        return define_tool(name=tool_name, description=doc, input=input, execute=fn, timeout=timeout, **callbacks)
    signature = infer_signature(fn, tool_name)

    async def execute(args: BaseModel, ctx: ToolContext) -> Any:
        return await call_tool_code(fn, **await signature.call_kwargs(args, ctx))

    return Tool(
        name=tool_name,
        description=description or signature.description,
        input_model=signature.model,
        execute=execute,
        callbacks=Callbacks(**callbacks),
        timeout=timeout,
    )


def _bind_execute(execute: Callable[..., Any]) -> Execute:
    """`execute(args, ctx)` or `execute(args)`: the context is passed when the function takes two arguments."""
    takes_context = _positional_capacity(execute) >= 2

    async def run(args: BaseModel, ctx: ToolContext) -> Any:
        return await (call_tool_code(execute, args, ctx) if takes_context else call_tool_code(execute, args))

    return run


def _positional_capacity(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume (args, ctx)
        return 2
    kinds = [param.kind for param in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return 2
    return sum(kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for kind in kinds)
