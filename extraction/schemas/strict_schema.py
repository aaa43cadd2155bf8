"""Derive the OpenAI strict-mode variant of a JSON schema: `strict_schema(schema) -> Schema`.

One implementation for every schema we hand a model: the service's hand-written tool schemas
(`extraction.texts.tools.strict`) and the toolkit's pydantic-generated ones. The rules it targets are
in `extraction.schemas.strict_rules`; the result always passes `strict_violations` or this raises
`StrictSchemaError` naming the path, never returns a schema OpenAI would reject.

What changes, and why:
* every object gets `additionalProperties: false` and lists all its properties in `required`;
  an optional property becomes nullable (`"type": [..., "null"]`, `None` joins its `enum`, or
  `{"type": "null"}` joins its `anyOf`), so a null argument means "not given"
  (`extraction.schemas.null_args.drop_null_optionals` turns it back into an absent key);
* `oneOf` (pydantic's discriminated unions) becomes `anyOf`; a one-element `allOf` is merged;
* a `$ref` with sibling keywords is replaced by its target merged with the siblings (strict mode
  wants a `$ref` alone); a root `$ref` (pydantic's recursive models) is inlined;
* `default` is dropped and, unless null, its value is added to the description, since the model
  can no longer omit the field and should know what "null" stands for;
* keywords outside the supported subset are dropped (`minLength`, `maxLength`, `uniqueItems`,
  `examples`, unsupported `format`s, ...): they stay enforced by the tool's own validation;
  `prefixItems` (tuples) becomes `items` with an `anyOf` of the positions' schemas.
What cannot be expressed raises: open objects (`dict[str, X]`, `additionalProperties: true`),
untyped schemas (`Any`), `allOf` of several schemas, `not`, `if`/`then`/`else`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from extraction.errors import StrictSchemaError
from extraction.schemas.strict_rules import (
    SUPPORTED_FORMATS,
    SUPPORTED_KEYWORDS,
    resolve_ref,
    schema_types,
    strict_violations,
)

Schema = dict[str, Any]

_UNSUPPORTED_COMPOSITION = ("not", "if", "then", "else", "dependentRequired", "dependentSchemas")
_MAX_INLINE_DEPTH = 64


def strict_schema(schema: Schema) -> Schema:
    """A strict-mode copy of `schema` (the input is left alone); raises `StrictSchemaError`."""
    root = inline_root_ref(copy.deepcopy(schema))
    result = _Strictifier(root).convert(root, "$", inlined=0)
    for key in ("$defs", "definitions"):
        if key in root:
            result[key] = {
                name: _Strictifier(root).convert(sub, f"$.{key}.{name}", 0) for name, sub in root[key].items()
            }
    result = _without_unused_definitions(result)
    problems = strict_violations(result)
    if problems:
        raise StrictSchemaError("schema cannot be made strict: " + "; ".join(problems), problems=problems)
    return result


def is_nullable(schema: Schema) -> bool:
    """Whether `schema` already accepts null."""
    if "null" in schema_types(schema) or None in schema.get("enum", [object()]):
        return True
    if "const" in schema:
        return schema["const"] is None
    return any(isinstance(option, dict) and is_nullable(option) for option in schema.get("anyOf", []))


def nullable(schema: Schema) -> Schema:
    """`schema` that also accepts null (unchanged if it already does)."""
    if is_nullable(schema):
        return schema
    if "anyOf" in schema:
        return schema | {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    result = dict(schema)
    if "const" in result:
        result["enum"] = [result.pop("const")]
    if "type" in result:
        result["type"] = [*schema_types(result), "null"]
    if "enum" in result:
        result["enum"] = [*result["enum"], None]
    return result


def inline_root_ref(root: Schema) -> Schema:
    """pydantic writes a recursive root model as `{"$ref": "#/$defs/X", "$defs": ...}`: put X at the root.

    Strict mode wants an object at the root; the `$defs` stay, so the recursion still resolves.
    """
    ref = root.get("$ref")
    if not isinstance(ref, str):
        return root
    target = resolve_ref(root, ref)
    if target is None:
        raise StrictSchemaError(f"$: $ref {ref!r} does not resolve inside the schema", path="$")
    siblings = {key: value for key, value in root.items() if key != "$ref"}
    return copy.deepcopy(target) | siblings


class _Strictifier:
    def __init__(self, root: Schema) -> None:
        self.root = root

    def convert(self, schema: Any, path: str, inlined: int) -> Schema:
        if not isinstance(schema, dict):
            raise StrictSchemaError(f"{path}: a schema must be a JSON object", path=path)
        schema = self._normalize(schema, path)
        if "$ref" in schema:
            return self._ref(schema, path, inlined)
        result = {key: value for key, value in schema.items() if self._keep(key, value, path)}
        if "prefixItems" in schema and "items" not in schema:
            result["items"] = _any_of_distinct(schema["prefixItems"])
        if not {"type", "anyOf", "enum", "const"} & set(result):
            raise StrictSchemaError(f"{path}: a schema without a type (Any) cannot be strict", path=path)
        return self._convert_children(result, path, inlined)

    def _normalize(self, schema: Schema, path: str) -> Schema:
        """Rewrite the constructs strict mode lacks into ones it has, before anything else."""
        for key in _UNSUPPORTED_COMPOSITION:
            if key in schema:
                raise StrictSchemaError(f"{path}: '{key}' cannot be expressed in strict mode", path=path)
        schema = dict(schema)
        if "allOf" in schema:
            parts = schema.pop("allOf")
            if len(parts) != 1:
                raise StrictSchemaError(f"{path}: allOf of several schemas cannot be strict", path=path)
            schema = {**parts[0], **schema}
        if "oneOf" in schema:
            schema["anyOf"] = [*schema.get("anyOf", []), *schema.pop("oneOf")]
            schema.pop("discriminator", None)
        return _default_into_description(schema)

    def _ref(self, schema: Schema, path: str, inlined: int) -> Schema:
        siblings = {key: value for key, value in schema.items() if key != "$ref" and key in SUPPORTED_KEYWORDS}
        if not siblings:
            return {"$ref": schema["$ref"]}
        target = resolve_ref(self.root, schema["$ref"])
        if target is None:
            raise StrictSchemaError(f"{path}: $ref {schema['$ref']!r} does not resolve inside the schema", path=path)
        if inlined >= _MAX_INLINE_DEPTH:
            raise StrictSchemaError(f"{path}: $ref with siblings recurses without end", path=path)
        return self.convert({**target, **siblings}, path, inlined + 1)

    def _keep(self, key: str, value: Any, path: str) -> bool:
        if key in ("$defs", "definitions"):
            return False  # converted once, at the root, by strict_schema()
        if key == "format":
            return value in SUPPORTED_FORMATS
        if key == "additionalProperties" and value not in (False, None):
            raise StrictSchemaError(
                f"{path}: an open object (dict / additionalProperties) cannot be expressed in strict mode", path=path
            )
        return key in SUPPORTED_KEYWORDS

    def _convert_children(self, result: Schema, path: str, inlined: int) -> Schema:
        if "anyOf" in result:
            result["anyOf"] = [
                self.convert(option, f"{path}.anyOf[{index}]", inlined) for index, option in enumerate(result["anyOf"])
            ]
        if "items" in result:
            result["items"] = self.convert(result["items"], f"{path}.items", inlined)
        if "object" in schema_types(result) or "properties" in result:
            self._convert_object(result, path, inlined)
        return result

    def _convert_object(self, result: Schema, path: str, inlined: int) -> None:
        if "properties" not in result:
            raise StrictSchemaError(
                f"{path}: an object without properties cannot be expressed in strict mode", path=path
            )
        required = set(result.get("required", []))
        properties = {}
        for name, sub in result["properties"].items():
            strict_sub = self.convert(sub, f"{path}.properties.{name}", inlined)
            properties[name] = strict_sub if name in required else nullable(strict_sub)
        result["properties"] = properties
        result["required"] = list(properties)
        result["additionalProperties"] = False


def _without_unused_definitions(schema: Schema) -> Schema:
    """Drop definitions no `$ref` reaches any more (inlining can orphan them; each costs tokens)."""
    reachable: set[str] = set()
    pending = _refs_in({key: value for key, value in schema.items() if key not in ("$defs", "definitions")})
    while pending:
        ref = pending.pop()
        if ref in reachable:
            continue
        reachable.add(ref)
        target = resolve_ref(schema, ref) if ref != "#" else None
        pending |= _refs_in(target or {})
    for key in ("$defs", "definitions"):
        if key in schema:
            kept = {name: sub for name, sub in schema[key].items() if f"#/{key}/{name}" in reachable}
            schema = {k: v for k, v in schema.items() if k != key} | ({key: kept} if kept else {})
    return schema


def _refs_in(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_refs_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs_in(item) for item in value))
    return set()


def _any_of_distinct(schemas: list[Any]) -> Schema:
    """One schema for every position of a tuple: the positions' schemas, each once."""
    distinct = list({json.dumps(item, sort_keys=True): item for item in schemas}.values())
    return distinct[0] if len(distinct) == 1 else {"anyOf": distinct}


def _default_into_description(schema: Schema) -> Schema:
    if "default" not in schema:
        return schema
    schema = dict(schema)
    default = schema.pop("default")
    if default is None:
        return schema
    note = f"Default: {json.dumps(default, ensure_ascii=False)}."
    description = schema.get("description", "").rstrip()
    if description and description[-1] not in ".!?":
        description += "."
    schema["description"] = f"{description} {note}" if description else note
    return schema
