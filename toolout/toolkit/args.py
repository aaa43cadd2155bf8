"""Raw tool-call arguments -> the tool's validated input model, or an error text the model can act on.

Models send arguments as a JSON string. Accepted: a JSON object, or nothing (`None`, `""`,
whitespace: the empty object, which is what several providers send for a tool without
parameters); an already-decoded mapping is accepted too. Strict-mode nulls for optional fields
are dropped first (`extraction.schemas.null_args`). Validation forbids extra keys at every level.

Error texts, exact (`<tool>` is the tool's name):
* `Invalid arguments for tool "<tool>": not valid JSON (<decoder message>)`
* `Invalid arguments for tool "<tool>": expected a JSON object, got <array|string|number|...>`
* `Invalid arguments for tool "<tool>": <loc>: <pydantic message>[ (got <json>)]; ...` with one
  entry per error, `<loc>` like `items[0].name` (`(arguments)` for the whole object), the
  offending value shown (at most 60 characters) except for missing and unexpected fields, and
  at most 10 entries followed by `; ... and N more`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from extraction.schemas.null_args import drop_null_optionals
from toolout.toolkit.errors import ToolkitError

M = TypeVar("M", bound=BaseModel)
RawArguments = str | bytes | bytearray | Mapping[str, Any] | None
MAX_ERRORS = 10
MAX_SHOWN_CHARS = 60
_NO_VALUE_SHOWN = frozenset({"missing", "extra_forbidden", "json_invalid"})
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class InvalidArguments(ToolkitError):
    """The arguments of a tool call do not fit the tool's input; the message is what the model reads."""

    code = "invalid_arguments"


def parse_arguments(raw: RawArguments, model: type[M], schema: dict[str, Any], tool_name: str) -> M:
    """Decode and validate one call's arguments; raises `InvalidArguments` with the model-facing text."""
    data = decode_arguments(raw, tool_name)
    try:
        return model.model_validate(drop_null_optionals(data, schema), extra="forbid")
    except ValidationError as exc:
        raise InvalidArguments(_prefix(tool_name) + describe_errors(exc.errors(include_url=False))) from exc


def decode_arguments(raw: RawArguments, tool_name: str) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArguments(f"{_prefix(tool_name)}not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        kind = _JSON_KINDS.get(type(data), type(data).__name__)
        raise InvalidArguments(f"{_prefix(tool_name)}expected a JSON object, got {kind}")
    return data


def describe_errors(errors: list[ErrorDetails]) -> str:
    """pydantic's errors, compact: `<loc>: <message>[ (got <value>)]` joined by `; `."""
    shown = [_describe(error) for error in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        shown.append(f"... and {len(errors) - MAX_ERRORS} more")
    return "; ".join(shown)


def format_loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(arguments)"


def _describe(error: ErrorDetails) -> str:
    text = f"{format_loc(error['loc'])}: {error['msg']}"
    if error["type"] in _NO_VALUE_SHOWN:
        return text
    return f"{text} (got {_shown(error.get('input'))})"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def _prefix(tool_name: str) -> str:
    return f'Invalid arguments for tool "{tool_name}": '
