"""Read strict-mode arguments back: a null for an optional field that cannot be null means "not given".

In strict mode every property is required and optional ones are nullable
(`extraction.schemas.strict_schema`), so a model that wants the default sends `"limit": null`. Validating
that against the original schema (`limit: int = 10`) would fail; dropping the key lets the default
apply. The original (non-strict) schema guides the walk: a key is dropped only where it is optional
there and its schema does not accept null, so a field that is genuinely nullable keeps its null.
"""

from __future__ import annotations

from typing import Any

from extraction.schemas.strict_rules import resolve_ref, schema_types
from extraction.schemas.strict_schema import is_nullable

Schema = dict[str, Any]


def drop_null_optionals(args: Any, schema: Schema) -> Any:
    """A copy of `args` without the nulls that stand for "not given" (see the module docstring)."""
    return _Walker(schema).walk(args, schema)


class _Walker:
    def __init__(self, root: Schema) -> None:
        self.root = root

    def walk(self, value: Any, schema: Any) -> Any:
        schema = self._resolve(schema)
        if isinstance(value, dict):
            return self._object(value, self._branch(schema, "object"))
        if isinstance(value, list):
            items = self._branch(schema, "array").get("items", {})
            return [self.walk(item, items) for item in value]
        return value

    def _object(self, value: dict[str, Any], schema: Schema) -> dict[str, Any]:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        result = {}
        for key, item in value.items():
            sub = self._resolve(properties.get(key, {}))
            if item is None and key in properties and key not in required and not is_nullable(sub):
                continue
            result[key] = self.walk(item, sub)
        return result

    def _resolve(self, schema: Any, hops: int = 0) -> Schema:
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and hops < 32:
            return self._resolve(resolve_ref(self.root, ref) or {}, hops + 1)
        return schema

    def _branch(self, schema: Schema, kind: str) -> Schema:
        """The one `anyOf` option of this JSON kind, if exactly one (else no guidance: leave the value)."""
        if kind in schema_types(schema) or "anyOf" not in schema:
            return schema
        options = [self._resolve(option) for option in schema["anyOf"]]
        matching = [option for option in options if kind in schema_types(option) or _looks_like(option, kind)]
        return matching[0] if len(matching) == 1 else {}


def _looks_like(schema: Schema, kind: str) -> bool:
    return ("properties" in schema) if kind == "object" else ("items" in schema)
