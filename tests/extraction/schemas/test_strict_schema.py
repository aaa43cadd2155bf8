"""strict_schema(): hand-written schemas in, schemas the checker accepts out (or a typed error)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extraction.errors import InvalidInput, StrictSchemaError
from extraction.schemas.strict_rules import strict_violations
from extraction.schemas.strict_schema import is_nullable, nullable, strict_schema


def test_optional_properties_become_required_and_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": "integer", "minimum": 1},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "kind": {"type": "string", "const": "k"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        },
        "required": ["q"],
    }
    result = strict_schema(schema)
    assert result == {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": ["integer", "null"], "minimum": 1},
            "mode": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "kind": {"type": ["string", "null"], "enum": ["k", None]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
        },
        "required": ["q", "n", "mode", "kind", "either"],
        "additionalProperties": False,
    }
    assert strict_violations(result) == []


def test_defaults_move_into_the_description() -> None:
    schema = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "default": 10, "description": "At most this many"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "note": {"type": "string", "default": None, "description": "Free text."},
        },
    }
    properties = strict_schema(schema)["properties"]
    assert properties["limit"]["description"] == "At most this many. Default: 10."
    assert properties["tags"]["description"] == "Default: []."
    assert properties["note"]["description"] == "Free text."
    assert all("default" not in sub for sub in properties.values())


def test_a_ref_with_siblings_is_inlined_and_pure_refs_stay() -> None:
    schema = {
        "type": "object",
        "properties": {
            "color": {"$ref": "#/$defs/Color", "default": "red"},
            "shade": {"$ref": "#/$defs/Color"},
        },
        "required": ["shade"],
        "$defs": {"Color": {"type": "string", "enum": ["red", "blue"]}},
    }
    result = strict_schema(schema)
    assert result["properties"]["color"] == {
        "type": ["string", "null"],
        "enum": ["red", "blue", None],
        "description": 'Default: "red".',
    }
    assert result["properties"]["shade"] == {"$ref": "#/$defs/Color"}
    assert result["$defs"] == {"Color": {"type": "string", "enum": ["red", "blue"]}}
    assert strict_violations(result) == []


def test_one_of_becomes_any_of_and_a_single_all_of_is_merged() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pet": {"oneOf": [{"$ref": "#/$defs/Cat"}], "discriminator": {"propertyName": "kind"}},
            "base": {"allOf": [{"$ref": "#/$defs/Cat"}], "description": "a cat"},
        },
        "required": ["pet", "base"],
        "$defs": {"Cat": {"type": "object", "properties": {"kind": {"const": "cat", "type": "string"}}}},
    }
    result = strict_schema(schema)
    assert result["properties"]["pet"] == {"anyOf": [{"$ref": "#/$defs/Cat"}]}
    assert result["properties"]["base"]["description"] == "a cat"
    assert result["properties"]["base"]["additionalProperties"] is False
    assert strict_violations(result) == []


def test_unused_definitions_are_dropped_after_inlining() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "inlined"}},
        "required": ["a"],
        "$defs": {"A": {"type": "object", "properties": {}}, "Unused": {"type": "string"}},
    }
    assert "$defs" not in strict_schema(schema)


def test_a_recursive_root_ref_is_inlined() -> None:
    node = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
        "required": ["value"],
    }
    result = strict_schema({"$ref": "#/$defs/Node", "$defs": {"Node": node}})
    assert result["type"] == "object" and result["required"] == ["value", "next"]
    assert result["$defs"]["Node"]["additionalProperties"] is False
    assert strict_violations(result) == []


def test_unsupported_keywords_are_dropped_and_tuples_become_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 5, "format": "uri", "examples": ["x"]},
            "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2},
            "mixed": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
        },
        "required": ["s", "pair", "mixed"],
    }
    result = strict_schema(schema)
    assert result["properties"]["s"] == {"type": "string"}
    assert result["properties"]["pair"] == {"type": "array", "minItems": 2, "items": {"type": "number"}}
    assert result["properties"]["mixed"]["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"d": {"type": "object", "additionalProperties": {"type": "integer"}}}},
            "$.properties.d: an open object (dict / additionalProperties) cannot be expressed in strict mode",
        ),
        (
            {"type": "object", "properties": {"a": {}}},
            "$.properties.a: a schema without a type (Any) cannot be strict",
        ),
        (
            {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}}},
            "$.properties.a: allOf of several schemas cannot be strict",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "not": {"const": ""}}}},
            "$.properties.a: 'not' cannot be expressed in strict mode",
        ),
        ({"type": "object"}, "$: an object without properties cannot be expressed in strict mode"),
        (
            {"anyOf": [{"type": "object", "properties": {}}]},
            "schema cannot be made strict: $: the root must be a plain object schema (type 'object', no anyOf)",
        ),
    ],
)
def test_what_cannot_be_strict_raises_a_typed_error_naming_the_path(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(StrictSchemaError) as caught:
        strict_schema(schema)
    assert str(caught.value) == message
    assert isinstance(caught.value, InvalidInput)


def test_too_deep_a_schema_is_refused_by_the_final_check() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"leaf": {"type": "string"}}}
    for _ in range(10):
        schema = {"type": "object", "properties": {"child": schema}}
    with pytest.raises(StrictSchemaError, match=r"objects nest 11 levels deep \(limit 10\)"):
        strict_schema(schema)


def test_the_input_is_left_alone() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    before = copy.deepcopy(schema)
    strict_schema(schema)
    assert schema == before


def test_nullable_leaves_nullable_schemas_alone_and_wraps_refs() -> None:
    assert nullable({"type": ["string", "null"]}) == {"type": ["string", "null"]}
    assert nullable({"$ref": "#/$defs/A"}) == {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
    assert is_nullable({"anyOf": [{"type": "string"}, {"type": "null"}]})
    assert is_nullable({"const": None}) and not is_nullable({"const": "x"})
    assert not is_nullable({"type": "string", "enum": ["a"]})
