"""drop_null_optionals(): strict-mode nulls for optional, non-nullable fields become absent keys."""

from __future__ import annotations

from extraction.schemas.null_args import drop_null_optionals

SCHEMA = {
    "type": "object",
    "properties": {
        "q": {"type": "string"},
        "limit": {"type": "integer"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "inner": {"$ref": "#/$defs/Inner"},
        "rows": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
    },
    "required": ["q", "inner"],
    "$defs": {
        "Inner": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
            "required": ["x"],
        }
    },
}


def test_optional_non_nullable_nulls_are_dropped() -> None:
    assert drop_null_optionals({"q": "a", "limit": None}, SCHEMA) == {"q": "a"}


def test_nullable_fields_and_required_fields_keep_their_null() -> None:
    args = {"q": None, "note": None, "inner": None}
    assert drop_null_optionals(args, SCHEMA) == args


def test_nested_objects_arrays_and_optional_refs_are_walked() -> None:
    args = {
        "q": "a",
        "inner": {"x": 1, "y": None},
        "rows": [{"x": 1, "y": None}, {"x": None}],
        "maybe": {"x": 2, "y": None},
    }
    assert drop_null_optionals(args, SCHEMA) == {
        "q": "a",
        "inner": {"x": 1},
        "rows": [{"x": 1}, {"x": None}],
        "maybe": {"x": 2},
    }


def test_unknown_keys_and_ambiguous_unions_are_left_for_validation() -> None:
    schema = {
        "type": "object",
        "properties": {"u": {"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}}}] * 2}},
    }
    assert drop_null_optionals({"u": {"a": None}, "extra": None}, schema) == {"u": {"a": None}, "extra": None}


def test_the_input_is_not_mutated() -> None:
    args = {"q": "a", "limit": None}
    drop_null_optionals(args, SCHEMA)
    assert args == {"q": "a", "limit": None}
