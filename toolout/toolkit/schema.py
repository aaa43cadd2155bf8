"""JSON schemas for tool inputs: pydantic model -> the schema the model sees (and its strict variant).

`input_schema(model)` is pydantic's validation schema, adjusted so models only produce what the
tool accepts:
* `additionalProperties: false` on every object that does not say otherwise (the root, nested
  models, `$defs`, objects inside arrays and unions); a `dict[str, X]` keeps its
  `additionalProperties: X` (that is what a dict is) and so has no strict variant;
* `title` keywords are removed: pydantic derives them from field names, so they only cost tokens;
* a root `$ref` (pydantic's form for a recursive model) is inlined so the root is an object.
The tool also validates with `extra="forbid"`, so the schema's promise holds on both sides.

`strict_input_schema(model)` is `extraction.schemas.strict_schema.strict_schema` of that: the one
conversion shared with the service's schemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from extraction.schemas.strict_schema import inline_root_ref, strict_schema
from toolout.toolkit.errors import ToolDefinitionError

Schema = dict[str, Any]
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_ONES = ("items", "additionalProperties", "not", "if", "then", "else")


def validate_tool_name(name: str) -> str:
    """Names OpenAI and Anthropic both accept: 1-64 of letters, digits, `_` and `-`."""
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise ToolDefinitionError(f"invalid tool name {name!r}: use 1-64 characters from a-z A-Z 0-9 _ -", name=name)
    return name


def input_schema(model: type[BaseModel]) -> Schema:
    """The (non-strict) parameters schema of a tool whose input is `model`."""
    schema = model.model_json_schema()
    schema = inline_root_ref(schema)
    for node in _subschemas(schema):
        node.pop("title", None)
        if _is_object(node):
            node.setdefault("additionalProperties", False)
            if node["additionalProperties"] is False:
                node.setdefault("properties", {})
    return schema


def strict_input_schema(model: type[BaseModel]) -> Schema:
    """The OpenAI strict-mode parameters schema; raises `StrictSchemaError` if there is none."""
    return strict_schema(input_schema(model))


def _subschemas(schema: Any) -> Iterator[Schema]:
    if not isinstance(schema, dict):
        return
    yield schema
    for key in _SUBSCHEMA_LISTS:
        for sub in schema.get(key) or []:
            yield from _subschemas(sub)
    for key in _SUBSCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            yield from _subschemas(sub)
    for key in _SUBSCHEMA_ONES:
        yield from _subschemas(schema.get(key))


def _is_object(node: Schema) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or ("properties" in node)
