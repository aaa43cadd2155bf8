"""OpenAI strict-mode rules for JSON schemas, as a checker: `strict_violations(schema) -> list[str]`.

Strict tool calling (`"strict": true`) constrains decoding to the schema, so OpenAI accepts only a
subset of JSON Schema and rejects the request otherwise. The rules below follow OpenAI's
"Supported schemas" guide for Structured Outputs (same subset for function parameters):

* types: string, number, integer, boolean, object, array, null (and lists of them), `enum`,
  `const`, `anyOf`; definitions in `$defs` (or `definitions`) referenced by `$ref`, recursion
  included (`"#"` or `"#/$defs/x"`); a `$ref` must stand alone (no sibling keywords);
* the root is an object, never an `anyOf`;
* every object has `additionalProperties: false` and lists every property in `required`
  (an optional field is a nullable required one);
* type-specific keywords allowed: strings `pattern`, `format` (date-time, time, date, duration,
  email, hostname, ipv4, ipv6, uuid); numbers `multipleOf`, `maximum`, `exclusiveMaximum`,
  `minimum`, `exclusiveMinimum`; arrays `items`, `minItems`, `maxItems`;
* everything else is treated as unsupported: the composition keywords the guide names (`allOf`,
  `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`), `oneOf`, and keywords it
  does not list (`minLength`, `maxLength`, `uniqueItems`, `patternProperties`, `prefixItems`,
  `default`, `examples`, ...). `default` is a judgment call: api.openai.com tolerates it today,
  Azure OpenAI rejects it, the guide does not list it; we keep schemas portable;
* limits: at most 5000 object properties, 10 levels of object nesting (the root counts as one),
  1000 enum values, 15,000 characters across one string enum of more than 250 values, and
  120,000 characters across property names, definition names, enum and const values.

`title` and `description` are annotations and allowed anywhere. Fine-tuned models support less
(no pattern/format/min/max); these rules target base models.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Schema = dict[str, Any]

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
SUPPORTED_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
GENERIC_KEYWORDS = frozenset({"type", "description", "title", "enum", "const", "anyOf", "$ref", "$defs", "definitions"})
_NUMBER_KEYWORDS = frozenset({"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "string": frozenset({"pattern", "format"}),
    "number": _NUMBER_KEYWORDS,
    "integer": _NUMBER_KEYWORDS,
}
SUPPORTED_KEYWORDS = GENERIC_KEYWORDS.union(*TYPE_KEYWORDS.values())
MAX_PROPERTIES = 5000
MAX_NESTING = 10
MAX_ENUM_VALUES = 1000
LARGE_ENUM_VALUES = 250
LARGE_ENUM_MAX_CHARS = 15_000
MAX_TOTAL_STRING_CHARS = 120_000


def schema_types(schema: Schema) -> list[str]:
    """The `type` keyword as a list (empty when absent)."""
    kind = schema.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def resolve_ref(root: Schema, ref: str) -> Schema | None:
    """The schema a local `$ref` points to (`#`, `#/$defs/x`, `#/definitions/x`), or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def strict_violations(schema: Schema) -> list[str]:
    """Everything OpenAI strict mode would reject in `schema`, one line per problem (empty: accepted)."""
    checker = _Checker(schema)
    checker.check_root()
    return checker.problems


class _Checker:
    def __init__(self, root: Schema) -> None:
        self.root = root
        self.problems: list[str] = []

    def check_root(self) -> None:
        if not isinstance(self.root, dict):
            self.problems.append("$: the schema must be a JSON object")
            return
        if schema_types(self.root) != ["object"] or "anyOf" in self.root:
            self.problems.append("$: the root must be a plain object schema (type 'object', no anyOf)")
        for key in ("$defs", "definitions"):
            for name, sub in _mapping(self.root.get(key)).items():
                self.check(sub, f"$.{key}.{name}")
        self.check(self.root, "$")
        self.problems += _limit_problems(self.root)

    def check(self, schema: Any, path: str) -> None:
        if not isinstance(schema, dict):
            self.problems.append(f"{path}: a schema must be a JSON object")
            return
        if "$ref" in schema:
            self._check_ref(schema, path)
            return
        self._check_keywords(schema, path)
        self._check_values(schema, path)
        for sub_path, sub in _children(schema, path):
            self.check(sub, sub_path)

    def _check_ref(self, schema: Schema, path: str) -> None:
        siblings = sorted(set(schema) - {"$ref"})
        if siblings:
            self.problems.append(f"{path}: $ref must stand alone (found {', '.join(siblings)})")
        if not isinstance(schema["$ref"], str) or resolve_ref(self.root, schema["$ref"]) is None:
            self.problems.append(f"{path}: $ref {schema['$ref']!r} does not resolve inside the schema")

    def _check_keywords(self, schema: Schema, path: str) -> None:
        types = schema_types(schema)
        allowed = GENERIC_KEYWORDS.union(*(TYPE_KEYWORDS.get(kind, frozenset()) for kind in types))
        for key in schema:
            if key not in allowed:
                where = "" if key not in SUPPORTED_KEYWORDS else f" for type {'/'.join(types) or 'untyped'}"
                self.problems.append(f"{path}: unsupported keyword '{key}'{where}")
        if path != "$" and ("$defs" in schema or "definitions" in schema):
            self.problems.append(f"{path}: $defs are only supported at the root")
        if not {"type", "anyOf", "enum", "const"} & set(schema):
            self.problems.append(f"{path}: no type (every schema needs type, anyOf, enum, const or $ref)")

    def _check_values(self, schema: Schema, path: str) -> None:
        types = schema_types(schema)
        self.problems += [f"{path}: unknown type '{kind}'" for kind in types if kind not in JSON_TYPES]
        values = [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]
        self.problems += [
            f"{path}: value {v!r} is not of type {'/'.join(types)}" for v in values if not _fits(v, types)
        ]
        if "format" in schema and schema["format"] not in SUPPORTED_FORMATS:
            self.problems.append(f"{path}: unsupported format '{schema['format']}'")
        if "anyOf" in schema and (not isinstance(schema["anyOf"], list) or not schema["anyOf"]):
            self.problems.append(f"{path}: anyOf must be a non-empty list of schemas")
        if "object" in types:
            self._check_object(schema, path)
        if "array" in types and not isinstance(schema.get("items"), dict):
            self.problems.append(f"{path}: an array needs an 'items' schema")

    def _check_object(self, schema: Schema, path: str) -> None:
        if schema.get("additionalProperties") is not False:
            self.problems.append(f"{path}: additionalProperties must be false")
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            self.problems.append(f"{path}: an object needs 'properties'")
            return
        required = schema.get("required", [])
        missing = [name for name in properties if name not in required]
        if missing:
            self.problems.append(f"{path}: every property must be required (missing: {', '.join(missing)})")
        unknown = [name for name in required if name not in properties]
        if unknown:
            self.problems.append(f"{path}: required names unknown properties: {', '.join(unknown)}")


def _fits(value: Any, types: list[str]) -> bool:
    if not types:
        return True
    for kind in types:
        python_types = JSON_TYPES.get(kind, ())
        is_bool = isinstance(value, bool)
        if isinstance(value, python_types) and (kind == "boolean" or not is_bool):
            return True
    return False


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _children(schema: Schema, path: str) -> Iterator[tuple[str, Any]]:
    for name, sub in _mapping(schema.get("properties")).items():
        yield f"{path}.properties.{name}", sub
    if "items" in schema:
        yield f"{path}.items", schema["items"]
    if isinstance(schema.get("anyOf"), list):
        for index, sub in enumerate(schema["anyOf"]):
            yield f"{path}.anyOf[{index}]", sub


# ---------------------------------------------------------------- size limits


def _limit_problems(root: Schema) -> list[str]:
    tally = _Tally()
    tally.walk(root)
    problems = tally.problems
    if tally.properties > MAX_PROPERTIES:
        problems.append(f"$: {tally.properties} object properties (limit {MAX_PROPERTIES})")
    if tally.enum_values > MAX_ENUM_VALUES:
        problems.append(f"$: {tally.enum_values} enum values (limit {MAX_ENUM_VALUES})")
    if tally.string_chars > MAX_TOTAL_STRING_CHARS:
        problems.append(f"$: {tally.string_chars} characters of names and values (limit {MAX_TOTAL_STRING_CHARS})")
    depth = _nesting_depth(root, root, ())
    if depth > MAX_NESTING:
        problems.append(f"$: objects nest {depth} levels deep (limit {MAX_NESTING})")
    return problems


class _Tally:
    """Counts over the literal schema tree (each definition once)."""

    def __init__(self) -> None:
        self.properties = 0
        self.enum_values = 0
        self.string_chars = 0
        self.problems: list[str] = []

    def walk(self, schema: Any, path: str = "$") -> None:
        if not isinstance(schema, dict):
            return
        properties = _mapping(schema.get("properties"))
        self.properties += len(properties)
        self.string_chars += sum(len(name) for name in properties)
        self._count_values(schema, path)
        for key in ("$defs", "definitions"):
            for name, sub in _mapping(schema.get(key)).items():
                self.string_chars += len(name)
                self.walk(sub, f"{path}.{key}.{name}")
        for sub_path, sub in _children(schema, path):
            self.walk(sub, sub_path)

    def _count_values(self, schema: Schema, path: str) -> None:
        enum = schema["enum"] if isinstance(schema.get("enum"), list) else []
        strings = [value for value in enum if isinstance(value, str)]
        self.enum_values += len(enum)
        self.string_chars += sum(map(len, strings))
        if isinstance(schema.get("const"), str):
            self.string_chars += len(schema["const"])
        if len(strings) > LARGE_ENUM_VALUES and sum(map(len, strings)) > LARGE_ENUM_MAX_CHARS:
            self.problems.append(
                f"{path}: an enum of {len(strings)} strings may hold {LARGE_ENUM_MAX_CHARS} characters in all"
            )


def _nesting_depth(schema: Any, root: Schema, refs: tuple[str, ...]) -> int:
    """Deepest chain of object schemas, following `$ref`s but not around a recursion."""
    if not isinstance(schema, dict):
        return 0
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_ref(root, ref)
        return 0 if ref in refs or target is None else _nesting_depth(target, root, (*refs, ref))
    below = max((_nesting_depth(sub, root, refs) for _, sub in _children(schema, "")), default=0)
    return below + (1 if "object" in schema_types(schema) else 0)
