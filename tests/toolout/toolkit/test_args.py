"""Raw arguments -> validated input, and the exact error texts the model reads."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from toolout.toolkit.args import InvalidArguments, describe_errors, format_loc, parse_arguments
from toolout.toolkit.schema import input_schema


class Row(BaseModel):
    name: str


class Search(BaseModel):
    query: str = Field(min_length=1)
    limit: int = 10
    rows: list[Row] = []


SCHEMA = input_schema(Search)


def parse(raw: Any) -> Search:
    return parse_arguments(raw, Search, SCHEMA, "search")


def error_of(raw: Any) -> str:
    with pytest.raises(InvalidArguments) as caught:
        parse(raw)
    return str(caught.value)


def test_json_text_bytes_and_mappings_are_accepted() -> None:
    assert parse('{"query": "a"}') == Search(query="a")
    assert parse(b'{"query": "a", "limit": 3}') == Search(query="a", limit=3)
    assert parse({"query": "a"}) == Search(query="a")


def test_strict_mode_nulls_mean_not_given() -> None:
    assert parse('{"query": "a", "limit": null, "rows": null}') == Search(query="a", limit=10, rows=[])


def test_no_arguments_is_the_empty_object() -> None:
    for raw in (None, "", "  \n"):
        assert error_of(raw) == 'Invalid arguments for tool "search": query: Field required'


def test_bad_json() -> None:
    assert error_of('{"query": ') == (
        'Invalid arguments for tool "search": not valid JSON (Expecting value: line 1 column 11 (char 10))'
    )


@pytest.mark.parametrize(("raw", "kind"), [("[1]", "array"), ('"x"', "string"), ("3", "number"), ("null", "null")])
def test_not_an_object(raw: str, kind: str) -> None:
    assert error_of(raw) == f'Invalid arguments for tool "search": expected a JSON object, got {kind}'


def test_validation_errors_name_the_fields() -> None:
    assert error_of('{"query": "", "limit": "ten", "rows": [{"name": "a"}, {"nam": "b"}], "x": 1}') == (
        'Invalid arguments for tool "search": '
        'query: String should have at least 1 character (got ""); '
        'limit: Input should be a valid integer, unable to parse string as an integer (got "ten"); '
        "rows[1].name: Field required; "
        "rows[1].nam: Extra inputs are not permitted; "
        "x: Extra inputs are not permitted"
    )


def test_long_values_are_cut_and_many_errors_are_capped() -> None:
    text = error_of({"query": "ok", "limit": "y" * 100})
    assert '(got "' + "y" * 56 + "...)" in text
    errors = [{"type": "missing", "loc": (f"f{i}",), "msg": "Field required", "input": {}} for i in range(12)]
    described = describe_errors(errors)  # type: ignore[arg-type]  # plain dicts stand in for pydantic's ErrorDetails
    assert described.endswith("f9: Field required; ... and 2 more")


def test_locations_read_like_paths() -> None:
    assert format_loc(("rows", 0, "name")) == "rows[0].name"
    assert format_loc(()) == "(arguments)"
    assert format_loc((2,)) == "[2]"
