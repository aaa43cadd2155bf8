"""The strict-mode checker: OpenAI's documented examples pass, each rule catches its violation."""

from __future__ import annotations

from typing import Any

import pytest

from extraction.schemas.strict_rules import strict_violations


def obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A closed object with every property required (the strict shape)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **extra,
    }


# The schemas of OpenAI's "Supported schemas" guide, which strict mode accepts.
GUIDE_DEFINITIONS = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}, "final_answer": {"type": "string"}},
    "$defs": {"step": obj({"explanation": {"type": "string"}, "output": {"type": "string"}})},
    "required": ["steps", "final_answer"],
    "additionalProperties": False,
}
GUIDE_ROOT_RECURSION = obj(
    {
        "type": {"type": "string", "enum": ["div", "button", "header", "section", "field", "form"]},
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}},
        "attributes": {"type": "array", "items": obj({"name": {"type": "string"}, "value": {"type": "string"}})},
    }
)
GUIDE_LINKED_LIST = {
    "type": "object",
    "properties": {"linked_list": {"$ref": "#/$defs/linked_list_node"}},
    "$defs": {
        "linked_list_node": obj(
            {"value": {"type": "number"}, "next": {"anyOf": [{"$ref": "#/$defs/linked_list_node"}, {"type": "null"}]}}
        )
    },
    "additionalProperties": False,
    "required": ["linked_list"],
}
GUIDE_ANY_OF = obj(
    {
        "item": {
            "anyOf": [
                obj({"name": {"type": "string"}, "age": {"type": "number"}}, description="The user object"),
                obj({"number": {"type": "string"}, "street": {"type": "string"}, "city": {"type": "string"}}),
            ]
        }
    }
)
GUIDE_CONSTRAINTS = obj(
    {
        "username": {"type": "string", "pattern": "^@[a-zA-Z0-9_]+$"},
        "email": {"type": "string", "format": "email"},
        "value": {"type": "number", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
        "unit": {"type": ["string", "null"], "enum": ["F", "C", None]},
        "kind": {"type": "string", "const": "x", "title": "Kind"},
    }
)


@pytest.mark.parametrize(
    "schema",
    [GUIDE_DEFINITIONS, GUIDE_ROOT_RECURSION, GUIDE_LINKED_LIST, GUIDE_ANY_OF, GUIDE_CONSTRAINTS, obj({})],
    ids=["definitions", "root-recursion", "linked-list", "any-of", "constraints", "no-parameters"],
)
def test_the_guides_schemas_pass(schema: dict[str, Any]) -> None:
    assert strict_violations(schema) == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"anyOf": [obj({})]}, "$: the root must be a plain object schema (type 'object', no anyOf)"),
        ({"type": "string"}, "$: the root must be a plain object schema (type 'object', no anyOf)"),
        (obj({"a": {"type": "string"}}) | {"additionalProperties": True}, "$: additionalProperties must be false"),
        (obj({"a": {"type": "string"}}) | {"required": []}, "$: every property must be required (missing: a)"),
        (obj({}) | {"required": ["ghost"]}, "$: required names unknown properties: ghost"),
        ({"type": "object", "additionalProperties": False}, "$: an object needs 'properties'"),
        (obj({"a": {"type": "string", "minLength": 1}}), "$.properties.a: unsupported keyword 'minLength'"),
        (obj({"a": {"type": "string", "maxLength": 9}}), "$.properties.a: unsupported keyword 'maxLength'"),
        (obj({"a": {"type": "integer", "default": 3}}), "$.properties.a: unsupported keyword 'default'"),
        (obj({"a": {"type": "string", "format": "uri"}}), "$.properties.a: unsupported format 'uri'"),
        (
            obj({"a": {"type": "string", "minimum": 1}}),
            "$.properties.a: unsupported keyword 'minimum' for type string",
        ),
        (
            obj({"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}),
            "$.properties.a: unsupported keyword 'uniqueItems'",
        ),
        (obj({"a": {"oneOf": [{"type": "string"}]}}), "$.properties.a: unsupported keyword 'oneOf'"),
        (obj({"a": {"allOf": [{"type": "string"}]}}), "$.properties.a: unsupported keyword 'allOf'"),
        (obj({"a": {"type": "string", "not": {"const": "x"}}}), "$.properties.a: unsupported keyword 'not'"),
        (obj({"a": {}}), "$.properties.a: no type (every schema needs type, anyOf, enum, const or $ref)"),
        (obj({"a": {"type": "date"}}), "$.properties.a: unknown type 'date'"),
        (obj({"a": {"type": "array"}}), "$.properties.a: an array needs an 'items' schema"),
        (obj({"a": {"type": "string", "enum": ["x", 1]}}), "$.properties.a: value 1 is not of type string"),
        (obj({"a": {"type": "integer", "enum": [True]}}), "$.properties.a: value True is not of type integer"),
        (obj({"a": {"anyOf": []}}), "$.properties.a: anyOf must be a non-empty list of schemas"),
        (
            obj({"a": {"$ref": "#/$defs/x", "description": "d"}}, **{"$defs": {"x": {"type": "string"}}}),
            "$.properties.a: $ref must stand alone (found description)",
        ),
        (
            obj({"a": {"$ref": "#/$defs/missing"}}),
            "$.properties.a: $ref '#/$defs/missing' does not resolve inside the schema",
        ),
        (
            obj({"a": obj({}, **{"$defs": {"x": {"type": "string"}}})}),
            "$.properties.a: $defs are only supported at the root",
        ),
        (
            obj({"a": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "string"}}}}}),
            "$.properties.a.items: additionalProperties must be false",
        ),
        (
            obj({"a": {"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]}}),
            "$.properties.a.anyOf[0]: additionalProperties must be false",
        ),
        (
            obj({"a": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": {"type": "object", "properties": {}}}}),
            "$.$defs.x: additionalProperties must be false",
        ),
    ],
)
def test_each_rule_reports_its_violation(schema: dict[str, Any], problem: str) -> None:
    assert problem in strict_violations(schema)


def nested(depth: int) -> dict[str, Any]:
    schema = obj({"leaf": {"type": "string"}})
    for _ in range(depth - 1):
        schema = obj({"child": schema})
    return schema


def test_ten_levels_of_objects_pass_eleven_do_not() -> None:
    assert strict_violations(nested(10)) == []
    assert strict_violations(nested(11)) == ["$: objects nest 11 levels deep (limit 10)"]


def test_recursion_through_refs_is_not_counted_as_depth() -> None:
    assert strict_violations(GUIDE_LINKED_LIST) == []


def test_property_and_enum_limits() -> None:
    wide = obj({f"p{i}": {"type": "string"} for i in range(5001)})
    assert "$: 5001 object properties (limit 5000)" in strict_violations(wide)
    many = obj({f"e{i}": {"type": "integer", "enum": list(range(100))} for i in range(11)})
    assert strict_violations(many) == ["$: 1100 enum values (limit 1000)"]


def test_a_large_string_enum_has_a_character_budget() -> None:
    wordy = obj({"e": {"type": "string", "enum": [f"{i:04d}" + "x" * 70 for i in range(251)]}})
    assert strict_violations(wordy) == ["$.properties.e: an enum of 251 strings may hold 15000 characters in all"]
    assert strict_violations(obj({"e": {"type": "string", "enum": [f"{i:04d}" for i in range(251)]}})) == []


def test_total_string_length_limit() -> None:
    long_names = obj({("n" * 1000) + str(i): {"type": "string"} for i in range(121)})
    assert any("characters of names and values (limit 120000)" in p for p in strict_violations(long_names))


def test_a_clean_schema_has_no_problems_and_problems_are_strings() -> None:
    problems = strict_violations(obj({"a": {"type": "string", "minLength": 1, "default": "x"}}))
    assert problems == [
        "$.properties.a: unsupported keyword 'minLength'",
        "$.properties.a: unsupported keyword 'default'",
    ]
