"""Tool input schemas from pydantic: closed at every level, and a strict variant the checker accepts."""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

from extraction.errors import StrictSchemaError
from extraction.schemas.strict_rules import strict_violations
from toolout.toolkit.errors import ToolDefinitionError
from toolout.toolkit.schema import input_schema, strict_input_schema, validate_tool_name


class Color(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    x: int = Field(ge=0, description="an x")
    tags: list[str] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: bool


class Node(BaseModel):
    """A tree node."""

    value: int
    children: list[Node] = []
    next: Node | None = None


class Nested(BaseModel):
    inner: Inner = Field(description="nested model")
    maybe: Inner | None = None


class Enums(BaseModel):
    color: Color = Color.RED
    mode: Literal["auto", "fast"] = "auto"
    level: Optional[Literal[1, 2, 3]] = None  # noqa: UP045 - the Optional spelling is what's under test


class Optionals(BaseModel):
    query: str = Field(min_length=1, max_length=200)
    limit: int | None = None
    cutoff: datetime.datetime | None = None
    note: str = "none"


class Lists(BaseModel):
    ids: list[uuid.UUID] = Field(min_length=1)
    rows: list[Inner]
    matrix: list[list[float]] = []
    pair: tuple[int, int] | None = None


class Unions(BaseModel):
    value: Union[int, str]  # noqa: UP007 - the Union spelling is what's under test
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    pets: list[Cat | Dog] = []


class WithDict(BaseModel):
    counts: dict[str, int]


class WithAny(BaseModel):
    anything: Any


class Empty(BaseModel):
    pass


MODELS = [Inner, Nested, Enums, Optionals, Lists, Unions, Node, Empty]


def objects_in(schema: Any) -> list[dict[str, Any]]:
    """Every object schema nested anywhere in `schema` (through properties, items, anyOf, $defs...)."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for key, value in schema.items():
            if key == "properties":
                for sub in value.values():
                    found += objects_in(sub)
            elif key != "enum" and key != "const":
                found += objects_in(value)
    elif isinstance(schema, list):
        for item in schema:
            found += objects_in(item)
    return found


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_object_is_closed_in_the_plain_schema(model: type[BaseModel]) -> None:
    objects = objects_in(input_schema(model))
    assert objects, "the root at least is an object"
    assert all(obj["additionalProperties"] is False for obj in objects)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_strict_schema_passes_the_checker(model: type[BaseModel]) -> None:
    assert strict_violations(strict_input_schema(model)) == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_titles_are_gone(model: type[BaseModel]) -> None:
    def titles(value: Any, in_properties: bool = False) -> int:
        if isinstance(value, dict):
            own = 0 if in_properties else int("title" in value)
            return own + sum(titles(sub, key == "properties") for key, sub in value.items())
        return sum(titles(sub) for sub in value) if isinstance(value, list) else 0

    assert titles(input_schema(model)) == 0


def test_nested_model_in_strict_form() -> None:
    schema = strict_input_schema(Nested)
    inner = schema["properties"]["inner"]
    assert inner["description"] == "nested model"
    assert inner["required"] == ["x", "tags"] and inner["additionalProperties"] is False
    assert inner["properties"]["tags"] == {
        "items": {"type": "string"},
        "type": ["array", "null"],
        "description": "Default: [].",
    }
    assert schema["properties"]["maybe"] == {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}


def test_enums_and_literals_in_strict_form() -> None:
    properties = strict_input_schema(Enums)["properties"]
    assert properties["color"] == {
        "enum": ["red", "blue", None],
        "type": ["string", "null"],
        "description": 'Default: "red".',
    }
    assert properties["mode"] == {
        "enum": ["auto", "fast", None],
        "type": ["string", "null"],
        "description": 'Default: "auto".',
    }
    assert properties["level"] == {"anyOf": [{"enum": [1, 2, 3], "type": "integer"}, {"type": "null"}]}


def test_optionals_in_strict_form() -> None:
    schema = strict_input_schema(Optionals)
    assert schema["required"] == ["query", "limit", "cutoff", "note"]
    properties = schema["properties"]
    assert properties["query"] == {"type": "string"}  # min/maxLength are unsupported: validated by the tool
    assert properties["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert properties["cutoff"] == {"anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}]}
    assert properties["note"] == {"type": ["string", "null"], "description": 'Default: "none".'}


def test_lists_in_strict_form() -> None:
    properties = strict_input_schema(Lists)["properties"]
    assert properties["ids"] == {"items": {"format": "uuid", "type": "string"}, "minItems": 1, "type": "array"}
    assert properties["rows"] == {"items": {"$ref": "#/$defs/Inner"}, "type": "array"}
    assert properties["matrix"]["items"] == {"items": {"type": "number"}, "type": "array"}
    assert properties["pair"]["anyOf"][0] == {
        "maxItems": 2,
        "minItems": 2,
        "type": "array",
        "items": {"type": "integer"},
    }


def test_unions_in_strict_form() -> None:
    properties = strict_input_schema(Unions)["properties"]
    assert properties["value"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert properties["pet"] == {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}
    assert properties["pets"]["items"] == {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}


def test_recursive_model_keeps_its_recursion() -> None:
    schema = strict_input_schema(Node)
    assert schema["type"] == "object" and schema["description"] == "A tree node."
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["required"] == ["value", "children", "next"]


def test_a_dict_stays_a_dict_in_the_plain_schema_and_has_no_strict_form() -> None:
    assert input_schema(WithDict)["properties"]["counts"]["additionalProperties"] == {"type": "integer"}
    with pytest.raises(StrictSchemaError, match=r"\$\.properties\.counts: an open object"):
        strict_input_schema(WithDict)


def test_any_has_no_strict_form() -> None:
    with pytest.raises(StrictSchemaError, match=r"\$\.properties\.anything: a schema without a type"):
        strict_input_schema(WithAny)


def test_empty_model_is_a_closed_empty_object() -> None:
    assert strict_input_schema(Empty) == {
        "additionalProperties": False,
        "properties": {},
        "required": [],
        "type": "object",
    }


@pytest.mark.parametrize("name", ["search", "get_weather", "a-b", "X" * 64, "t1"])
def test_valid_tool_names(name: str) -> None:
    assert validate_tool_name(name) == name


@pytest.mark.parametrize("name", ["", "has space", "dot.ted", "x" * 65, "naïve", "slash/ed"])
def test_invalid_tool_names(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="invalid tool name"):
        validate_tool_name(name)
