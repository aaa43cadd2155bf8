"""The `buffer_ops` tool (docs/spec/buffer-ops.md): its definition, argument checks, and execution on a `BufferStore`.

One tool, `operation` required, call shape aligned with `file_ops_safe`:

    buffer_ops(operation="list")
    buffer_ops(operation="info", target="search_results")
    buffer_ops(operation="peek", target="search_results", offset=0, max_chars=1000)
    buffer_ops(operation="read", target="search_results", start_line=1, end_line=200)
    buffer_ops(operation="search", target="TODO", scope="search_results")
    buffer_ops(operation="export", target="search_results", destination="reports/search_results.md")

Parameters per operation (anything else given non-null is refused, so a model never believes a
parameter did something it ignored):

| operation | takes |
|---|---|
| list | — |
| info | target (buffer) |
| peek | target, offset (chars, default 0), max_chars (default `BufferLimits.peek_chars`, clamped to `max_read_chars`) |
| read | target and either start_line + end_line (1-based, inclusive) or offset + length (chars) |
| search | target (text or regex), scope (a buffer; none: all), regex, ignore_case, context (lines), max_matches |
| export | target, destination (a session file path, `{today}` allowed), write_mode (append by default) |

`read` is range-based on purpose: no range, a range over `max_read_lines` lines or
`max_read_chars` characters, or a window that renders longer than `max_read_chars` is an error
whose text tells the model how to narrow it. Limits are a `BufferLimits` parameter, never settings.

Regex search needs a linear-time engine, which the engine cannot import (RE2 lives in infra):
callers pass `compile_pattern` (`infra.outputs.grep_engine.compile_matcher` on the server); the default
`literal_pattern` does substring search and refuses `regex=true` with a clear message.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from extraction.buffers.store import BufferInfo, BufferStore, unknown_buffer
from extraction.buffers.views import chars_text, export_text, info_text, lines_text, list_text, search_text
from extraction.directives.file_paths import expand_path, validate_file_path
from extraction.directives.specs import WriteMode
from extraction.documents.line_matchers import LineMatcher, LiteralMatcher
from extraction.errors import InvalidInput, NotFound, PatternError
from extraction.texts.tools import Schema, Tool, function_tool

BUFFER_OPS_NAME = "buffer_ops"
Operation = Literal["list", "info", "peek", "read", "search", "export"]
OPERATIONS: tuple[str, ...] = ("list", "info", "peek", "read", "search", "export")

ALLOWED: dict[str, frozenset[str]] = {
    "list": frozenset(),
    "info": frozenset({"target"}),
    "peek": frozenset({"target", "offset", "max_chars"}),
    "read": frozenset({"target", "start_line", "end_line", "offset", "length"}),
    "search": frozenset({"target", "scope", "regex", "ignore_case", "context", "max_matches"}),
    "export": frozenset({"target", "destination", "write_mode"}),
}

BUFFER_OPS_DESCRIPTION = (
    "Work with the session's buffers (stored and routed tool outputs, variables) without loading them whole: "
    "list them, show one's metadata, peek at characters, read a line or character range, search them "
    "(substring or regex, with context lines), or export one to a session file."
)

BUFFER_OPS_PARAMETERS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["operation"],
    "properties": {
        "operation": {
            "type": "string",
            "enum": list(OPERATIONS),
            "description": "list: names and sizes; info: metadata of target; peek: max_chars characters of target from "
            "offset; read: lines start_line-end_line (or length characters from offset) of target; search: find "
            "target in buffer scope (omit scope for every buffer); export: write target to the file destination.",
        },
        "target": {
            "type": "string",
            "minLength": 1,
            "description": "The buffer name (info, peek, read, export), or the text or regex to find (search).",
        },
        "scope": {"type": "string", "minLength": 1, "description": "search: the buffer to search; omit for all."},
        "offset": {"type": "integer", "minimum": 0, "description": "peek/read: 0-based character offset."},
        "max_chars": {"type": "integer", "minimum": 1, "description": "peek: characters to show (default 1000)."},
        "start_line": {"type": "integer", "minimum": 1, "description": "read: first line (1-based)."},
        "end_line": {"type": "integer", "minimum": 1, "description": "read: last line (inclusive)."},
        "length": {"type": "integer", "minimum": 1, "description": "read: characters from offset (not lines)."},
        "destination": {
            "type": "string",
            "minLength": 1,
            "description": "export: relative path in the session's files, e.g. reports/search_results.md "
            "({today} becomes the date).",
        },
        "write_mode": {
            "type": "string",
            "enum": [mode.value for mode in WriteMode],
            "description": "export: append (default), replace, or new (a fresh name if the file exists).",
        },
        "regex": {"type": "boolean", "description": "search: target is a regular expression (RE2). Default false."},
        "ignore_case": {"type": "boolean", "description": "search: match regardless of case. Default false."},
        "context": {"type": "integer", "minimum": 0, "description": "search: lines shown before and after each match."},
        "max_matches": {"type": "integer", "minimum": 1, "description": "search: stop after this many matching lines."},
    },
}


def buffer_ops_tool(name: str = BUFFER_OPS_NAME) -> Tool:
    """The tool definition (OpenAI function form); `extraction.texts.tools.strict()` gives the strict-mode variant."""
    return function_tool(name, BUFFER_OPS_DESCRIPTION, BUFFER_OPS_PARAMETERS)


class BufferLimits(BaseModel):
    """Size limits of one deployment (the server passes its settings, the SDK its own)."""

    max_read_chars: int = Field(20_000, ge=1)
    max_read_lines: int = Field(2_000, ge=1)
    peek_chars: int = Field(1_000, ge=1)
    default_matches: int = Field(50, ge=1)
    max_matches: int = Field(500, ge=1)
    max_context: int = Field(20, ge=0)
    max_line_chars: int = Field(2_000, ge=1)


class BufferOpsArgs(BaseModel):
    """A `buffer_ops` call's arguments; null means "not given" (what strict mode sends)."""

    model_config = ConfigDict(extra="forbid")

    operation: Operation
    target: str | None = Field(None, min_length=1)
    scope: str | None = Field(None, min_length=1)
    offset: int | None = Field(None, ge=0)
    max_chars: int | None = Field(None, ge=1)
    start_line: int | None = Field(None, ge=1)
    end_line: int | None = Field(None, ge=1)
    length: int | None = Field(None, ge=1)
    destination: str | None = Field(None, min_length=1)
    write_mode: WriteMode | None = None
    regex: bool | None = None
    ignore_case: bool | None = None
    context: int | None = Field(None, ge=0)
    max_matches: int | None = Field(None, ge=1)

    def given(self) -> set[str]:
        """Names of the parameters given a non-null value (besides operation)."""
        return {key for key, value in self.model_dump(exclude={"operation"}).items() if value is not None}


class BufferOpError(InvalidInput):
    """A `buffer_ops` call the model must change; the message says how."""

    code = "invalid_buffer_op"


class CompilePattern(Protocol):
    """Builds the matcher for a search (`infra.outputs.grep_engine.compile_matcher` has this shape)."""

    def __call__(self, pattern: str, *, regex: bool, ignore_case: bool) -> LineMatcher: ...


def literal_pattern(pattern: str, *, regex: bool, ignore_case: bool) -> LineMatcher:
    """Substring search only: the engine has no linear-time regex engine of its own."""
    if regex:
        raise PatternError(
            "regex search is not available here; search for a plain substring (regex=false)", pattern=pattern
        )
    return LiteralMatcher(pattern, ignore_case)


def parse_args(args: str | Mapping[str, Any]) -> BufferOpsArgs:
    """The call's arguments (its JSON text or a decoded object), checked for this operation."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as err:
            raise BufferOpError(f"the arguments are not valid JSON ({err.msg} at char {err.pos})") from None
    if not isinstance(args, Mapping):
        raise BufferOpError('the arguments must be a JSON object such as {"operation": "list"}')
    try:
        parsed = BufferOpsArgs.model_validate(args)
    except ValidationError as err:
        raise BufferOpError(_validation_text(err)) from None
    _check_operation_params(parsed)
    return parsed


def _validation_text(err: ValidationError) -> str:
    problems = []
    for problem in err.errors():
        field = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "extra_forbidden":
            problems.append(f"unknown parameter {field!r} (parameters: operation, {', '.join(_parameters())})")
        elif field == "operation":
            problems.append(f"operation must be one of {', '.join(OPERATIONS)}")
        else:
            problems.append(f"{field}: {problem['msg']} (got {problem.get('input')!r})")
    return "; ".join(problems)


def _parameters() -> list[str]:
    return [name for name in BUFFER_OPS_PARAMETERS["properties"] if name != "operation"]


def _check_operation_params(args: BufferOpsArgs) -> None:
    allowed = ALLOWED[args.operation]
    extra = sorted(args.given() - allowed)
    if extra:
        takes = ", ".join(sorted(allowed)) or "no other parameters"
        raise BufferOpError(f"{args.operation} does not take {', '.join(extra)} (it takes: {takes})")
    if args.operation != "list" and args.target is None:
        what = "the text or regex to find" if args.operation == "search" else "the buffer name"
        raise BufferOpError(f"{args.operation} needs target: {what}")
    if args.operation == "export" and args.destination is None:
        raise BufferOpError("export needs destination: a relative file path such as reports/search_results.md")


def run_buffer_op(
    args: str | Mapping[str, Any],
    store: BufferStore,
    *,
    compile_pattern: CompilePattern = literal_pattern,
    limits: BufferLimits | None = None,
    today: dt.date | None = None,
) -> str:
    """Execute one call and return the text the model sees; raises typed errors on misuse.

    `today` expands `{today}` in an export destination (the engine reads no clock).
    """
    parsed = parse_args(args)
    run = _Run(store, compile_pattern, limits or BufferLimits(), today)
    handler: Callable[[BufferOpsArgs], str] = getattr(run, parsed.operation)
    return handler(parsed)


def execute_buffer_op(
    args: str | Mapping[str, Any],
    store: BufferStore,
    *,
    compile_pattern: CompilePattern = literal_pattern,
    limits: BufferLimits | None = None,
    today: dt.date | None = None,
) -> str:
    """`run_buffer_op`, with the model's mistakes returned as `Error: …` text (a tool result, not an exception)."""
    try:
        return run_buffer_op(args, store, compile_pattern=compile_pattern, limits=limits, today=today)
    except (InvalidInput, NotFound) as err:
        return f"Error: {err.message}"


class _Run:
    """One call's collaborators; one method per operation."""

    def __init__(
        self, store: BufferStore, compile_pattern: CompilePattern, limits: BufferLimits, today: dt.date | None
    ) -> None:
        self.store, self.compile_pattern, self.limits, self.today = store, compile_pattern, limits, today

    def buffer(self, name: str) -> BufferInfo:
        info = self.store.info(name)
        if info is None:
            raise unknown_buffer(name, [i.name for i in self.store.buffers()])
        return info

    def list(self, args: BufferOpsArgs) -> str:
        return list_text(self.store.buffers())

    def info(self, args: BufferOpsArgs) -> str:
        return info_text(self.buffer(_target(args)))

    def peek(self, args: BufferOpsArgs) -> str:
        info = self.buffer(_target(args))
        offset = args.offset or 0
        _check_offset(info, offset)
        size = min(args.max_chars or self.limits.peek_chars, self.limits.max_read_chars)
        return chars_text(info, offset, self.store.read_chars(info.name, offset, size), operation="peek")

    def read(self, args: BufferOpsArgs) -> str:
        info = self.buffer(_target(args))
        lines = {args.start_line, args.end_line} != {None}
        chars = {args.offset, args.length} != {None}
        if lines and chars:
            raise BufferOpError("read takes either start_line + end_line or offset + length, not both")
        if not lines and not chars:
            raise BufferOpError(_no_range_text(info, self.limits))
        return self._read_lines(info, args) if lines else self._read_chars(info, args)

    def _read_lines(self, info: BufferInfo, args: BufferOpsArgs) -> str:
        start, end = args.start_line, args.end_line
        if start is None or end is None:
            raise BufferOpError(f"read needs both start_line and end_line, e.g. start_line={start or 1}, "
                                f"end_line={(start or 1) + 199}")  # fmt: skip
        _check_line_range(info, start, end, self.limits)
        count = min(end, info.lines) - start + 1
        result = self.store.read_lines(info.name, start, count, max_line_chars=self.limits.max_line_chars)
        if len(result.text) > self.limits.max_read_chars:
            fit = max(1, count * self.limits.max_read_chars // len(result.text))
            raise BufferOpError(
                f"lines {start}-{result.last_line} of {info.name} are {len(result.text):,} chars, over the "
                f"{self.limits.max_read_chars:,}-char read limit; read about {fit} lines at a time "
                f"(start_line={start}, end_line={start + fit - 1}), or use search"
            )
        return lines_text(info, result)

    def _read_chars(self, info: BufferInfo, args: BufferOpsArgs) -> str:
        offset, length = args.offset, args.length
        if offset is None or length is None:
            raise BufferOpError(f"read by characters needs both offset and length, e.g. offset={offset or 0}, "
                                f"length={min(self.limits.max_read_chars, 5_000)}")  # fmt: skip
        _check_offset(info, offset)
        if length > self.limits.max_read_chars:
            raise BufferOpError(
                f"length={length:,} is over the {self.limits.max_read_chars:,}-char read limit; read at most "
                f"{self.limits.max_read_chars:,} chars at a time (offset={offset}, "
                f"length={self.limits.max_read_chars}), or use search"
            )
        return chars_text(info, offset, self.store.read_chars(info.name, offset, length), operation="read")

    def search(self, args: BufferOpsArgs) -> str:
        pattern = _target(args)
        names = [self.buffer(args.scope).name] if args.scope else [i.name for i in self.store.buffers()]
        if not names:
            return "No buffers yet, so there is nothing to search."
        matcher = self.compile_pattern(pattern, regex=bool(args.regex), ignore_case=bool(args.ignore_case))
        context = _bounded("context", args.context or 0, self.limits.max_context)
        budget = _bounded("max_matches", args.max_matches or self.limits.default_matches, self.limits.max_matches)
        found = []
        for name in names:
            result = self.store.grep(
                name, matcher, context=context, max_matches=budget, max_line_chars=self.limits.max_line_chars
            )
            found.append((name, result))
            budget -= result.matches
            if budget <= 0:
                break
        return search_text(pattern, found, names)

    def export(self, args: BufferOpsArgs) -> str:
        info = self.buffer(_target(args))
        template = args.destination or ""
        if self.today is not None:
            path = expand_path(template, self.today)
        elif "{today}" in template:
            raise ValueError("run_buffer_op needs today= to expand {today} in an export destination")
        else:
            path = validate_file_path(template)
        result = self.store.export(info.name, path, args.write_mode or WriteMode.APPEND)
        return export_text(info.name, result)


def _target(args: BufferOpsArgs) -> str:
    assert args.target is not None  # checked by _check_operation_params
    return args.target


def _bounded(name: str, value: int, limit: int) -> int:
    if value > limit:
        raise BufferOpError(f"{name}={value} is over the limit of {limit}; use at most {limit}")
    return value


def _check_offset(info: BufferInfo, offset: int) -> None:
    if offset and offset >= info.chars:
        raise BufferOpError(
            f"offset={offset:,} is past the end: {info.name} has {info.chars:,} chars "
            f"(offsets 0-{max(0, info.chars - 1):,})"
        )


def _check_line_range(info: BufferInfo, start: int, end: int, limits: BufferLimits) -> None:
    if end < start:
        raise BufferOpError(f"end_line ({end}) is before start_line ({start})")
    if start > info.lines:
        raise BufferOpError(
            f"start_line={start:,} is past the end: {info.name} has {info.lines:,} lines"
            + (f" (use start_line 1-{info.lines:,})" if info.lines else "")
        )
    if end - start + 1 > limits.max_read_lines:
        raise BufferOpError(
            f"lines {start}-{end} are {end - start + 1:,} lines; read at most {limits.max_read_lines:,} at a time "
            f"(start_line={start}, end_line={start + limits.max_read_lines - 1}), or use search"
        )


def _no_range_text(info: BufferInfo, limits: BufferLimits) -> str:
    example = min(info.lines, 200) or 1
    return (
        f"read needs a range: {info.name} has {info.lines:,} lines ({info.chars:,} chars) and a whole read is not "
        f"allowed. Give start_line and end_line (e.g. start_line=1, end_line={example}; at most "
        f"{limits.max_read_lines:,} lines and {limits.max_read_chars:,} chars per read), or offset and length in "
        f"chars; use peek for a quick look or search to find the part you need"
    )
