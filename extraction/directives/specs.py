"""Where a tool's or an input's output goes (docs/spec/directives.md): typed routing specs, shared by every front end.

The directive parser (`extraction.directives.syntax`), the dict form the SDK toolkit takes
(`tool_routes_from_mapping`) and the API's upload parameters (`parse_destination`,
`parse_write_mode`) all produce these models, so a route means the same thing everywhere.

* `Destination`: `inline` (the default: today's behaviour), `variable:NAME`, `file:PATH`
  (a relative path template, see `extraction.directives.file_paths`), or `discard` (stored nowhere).
* `WriteMode`: `append` | `replace` | `new`, only for `variable:`/`file:` outputs; when not given,
  a routed output appends (`OutputRoute.effective_write_mode`). The spec keeps what was written
  (None when absent), so printing and parsing a spec gives it back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from extraction.directives.file_paths import validate_file_path
from extraction.errors import InvalidInput
from extraction.variables.names import validate_name

T = TypeVar("T")

TOOL_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")
SOURCE_KIND_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_UNPRINTABLE_SOURCE = re.compile(r"\s[(#]|[\x00-\x1f\x7f]")


class DestinationKind(StrEnum):
    INLINE = "inline"
    VARIABLE = "variable"
    FILE = "file"
    DISCARD = "discard"


class WriteMode(StrEnum):
    APPEND = "append"
    REPLACE = "replace"
    NEW = "new"


class DirectiveError(InvalidInput):
    """A routing directive or route that cannot be used; details name the token and where it is
    (`line`/`column`, 1-based, for directive text; `path` for the dict form)."""

    code = "directive_error"


class InvalidDestination(InvalidInput):
    """An `output=` value that is not `inline`, `discard`, `variable:NAME` or `file:PATH`."""

    code = "invalid_destination"


class InvalidSource(InvalidInput):
    """An `@input` source that is not `kind:value` with a usable value."""

    code = "invalid_source"


class Destination(BaseModel):
    """One `output=` value; `str()` prints it back (`variable:foo`, `file:results/{today}`)."""

    model_config = ConfigDict(frozen=True)

    kind: DestinationKind
    target: str | None = Field(None, description="the variable name or the file path template")

    @model_validator(mode="after")
    def _target_fits_kind(self) -> Destination:
        if self.kind in (DestinationKind.INLINE, DestinationKind.DISCARD):
            if self.target is not None:
                raise InvalidDestination(f"{self.kind} takes no target", destination=str(self))
        elif self.kind is DestinationKind.VARIABLE:
            validate_name(self.target, what="variable name")
        else:
            validate_file_path(self.target or "")
        return self

    @property
    def routed(self) -> bool:
        """True when the output is stored somewhere (a variable or a file) instead of shown inline."""
        return self.kind in (DestinationKind.VARIABLE, DestinationKind.FILE)

    def __str__(self) -> str:
        return self.kind.value if self.target is None else f"{self.kind.value}:{self.target}"


INLINE = Destination(kind=DestinationKind.INLINE)
DISCARD = Destination(kind=DestinationKind.DISCARD)


def parse_destination(text: str) -> Destination:
    """`inline` | `discard` | `variable:NAME` | `file:PATH` → `Destination`, or `InvalidDestination` saying why."""
    kind, colon, target = text.partition(":")
    if kind in ("inline", "discard"):
        if colon:
            raise InvalidDestination(f"{kind} takes no target: write just {kind}", destination=text)
        return INLINE if kind == "inline" else DISCARD
    if kind not in ("variable", "file"):
        raise InvalidDestination(
            f"unknown destination {text!r}: use inline, discard, variable:NAME or file:PATH", destination=text
        )
    if not target:
        example = "variable:search_results" if kind == "variable" else "file:results/{today}"
        raise InvalidDestination(
            f"{kind}: needs a {'name' if kind == 'variable' else 'path'}, e.g. {example}", destination=text
        )
    try:
        return Destination(kind=DestinationKind(kind), target=target)
    except InvalidInput as err:
        raise InvalidDestination(err.message, destination=text) from None


def parse_write_mode(text: str) -> WriteMode:
    """`append` | `replace` | `new` → `WriteMode`, or `InvalidDestination` listing the modes."""
    try:
        return WriteMode(text)
    except ValueError:
        raise InvalidDestination(f"unknown write-mode {text!r}: use append, replace or new", write_mode=text) from None


class OutputRoute(BaseModel):
    """An explicit `output=` (and maybe `write-mode=`) for one tool or input."""

    model_config = ConfigDict(frozen=True)

    output: Destination
    write_mode: WriteMode | None = None

    @model_validator(mode="after")
    def _write_mode_needs_storage(self) -> OutputRoute:
        if self.write_mode is not None and not self.output.routed:
            raise InvalidDestination(
                f"write-mode={self.write_mode} applies only to variable: and file: outputs, not {self.output}",
                destination=str(self.output),
                write_mode=str(self.write_mode),
            )
        return self

    @property
    def effective_write_mode(self) -> WriteMode | None:
        """What a write does: the given mode, `append` for a routed output without one, None inline."""
        if not self.output.routed:
            return None
        return self.write_mode or WriteMode.APPEND


def make_route(output: str, write_mode: str | None = None) -> OutputRoute:
    """A route from its two texts, with the typed errors the parsers report (used by every front end)."""
    destination = parse_destination(output)
    mode = parse_write_mode(write_mode) if write_mode is not None else None
    return OutputRoute(output=destination, write_mode=mode)


class InputSource(BaseModel):
    """What an `@input` reads: `kind:value` (`file:notes.md`, `variable:foo`, `url:https://…`)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    value: str

    @model_validator(mode="after")
    def _valid(self) -> InputSource:
        if not SOURCE_KIND_RE.fullmatch(self.kind):
            raise InvalidSource(
                f"invalid source kind {self.kind!r}: expected kind:value such as file:notes.md or variable:foo",
                kind=self.kind,
            )
        if not self.value or self.value != self.value.strip() or _UNPRINTABLE_SOURCE.search(self.value):
            raise InvalidSource(
                f"invalid {self.kind}: source {self.value!r}: it must be non-empty, without surrounding spaces, "
                "control characters, or a space before ( or #",
                kind=self.kind,
            )
        if self.kind == "file":
            validate_file_path(self.value)
        elif self.kind == "variable":
            validate_name(self.value, what="variable name")
        return self

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


class InputDirective(BaseModel):
    """One `@input` line: its source and its route (None: inline, today's behaviour)."""

    model_config = ConfigDict(frozen=True)

    source: InputSource
    route: OutputRoute | None = None


class RoutingSpec(BaseModel):
    """Everything a step's directives say about routing.

    `tools`: every enabled tool (all `@tools` lines aggregated, in order of first mention) →
    its route, or None when no `output=` was given (inline unless the agent is told otherwise).
    `inputs`: the `@input` lines in order (the same source twice is two reads, e.g. two appends).
    """

    tools: dict[str, OutputRoute | None] = Field(default_factory=dict)
    inputs: list[InputDirective] = Field(default_factory=list)

    @model_validator(mode="after")
    def _tool_names(self) -> RoutingSpec:
        for name in self.tools:
            check_tool_name(name)
        return self


def check_tool_name(name: str) -> str:
    """A tool name as directives can write it: `[A-Za-z0-9_][A-Za-z0-9_.:-]*`, at most 128 chars."""
    if not TOOL_NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"invalid tool name {name[:130]!r}: letters, digits, _ . : - (at most 128, not starting with . : -)",
            tool=name[:130],
        )
    return name


def tool_routes_from_mapping(mapping: Mapping[str, Any]) -> dict[str, OutputRoute | None]:
    """The dict form the toolkit takes: `{"tool": {"output": "variable:x", "write_mode": "replace"}}`.

    A value may also be `None` or `{}` (enabled, no route) or a bare destination string
    (`{"tool": "file:out.md"}`); `write-mode` is accepted for `write_mode`. Errors are
    `DirectiveError`s whose `path` names the offending entry (`tools.search.output`).
    """
    routes: dict[str, OutputRoute | None] = {}
    for tool, entry in mapping.items():
        _in_entry(f"tools.{tool}", check_tool_name, tool)
        routes[tool] = _in_entry(f"tools.{tool}", _route_entry, entry)
    return routes


def _route_entry(entry: Any) -> OutputRoute | None:
    if entry is None:
        return None
    if isinstance(entry, str):
        return make_route(entry)
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"expected an object like {{'output': 'variable:x'}}, got {type(entry).__name__}")
    params = {("write_mode" if key == "write-mode" else key): value for key, value in entry.items()}
    unknown = sorted(set(params) - {"output", "write_mode"})
    if unknown:
        raise InvalidInput(f"unknown parameter {unknown[0]!r} (known: output, write_mode)", key=unknown[0])
    for key, value in params.items():
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{key} must be a string, got {type(value).__name__}", key=key)
    if params.get("output") is None:
        if params.get("write_mode") is not None:
            raise InvalidInput("write_mode needs output=variable:NAME or output=file:PATH", key="write_mode")
        return None
    output = _keyed("output", parse_destination, params["output"])
    mode = (
        _keyed("write_mode", parse_write_mode, params["write_mode"]) if params.get("write_mode") is not None else None
    )
    return _keyed("write_mode", lambda m: OutputRoute(output=output, write_mode=m), mode)


def _keyed(key: str, parse: Callable[[Any], T], value: Any) -> T:
    """Run `parse`, tagging its error with the entry key it concerns."""
    try:
        return parse(value)
    except InvalidInput as err:
        raise InvalidInput(err.message, key=key) from None


def _in_entry(path: str, parse: Callable[[Any], T], value: Any) -> T:
    try:
        return parse(value)
    except InvalidInput as err:
        key = err.details.get("key")
        where = f"{path}.{key}" if key else path
        raise DirectiveError(f"{where}: {err.message}", path=where) from None
