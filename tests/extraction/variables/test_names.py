"""Variable names: validation with a reason, default `<tool>_<n>` naming, `new`-mode names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extraction.errors import InvalidInput
from extraction.variables.errors import InvalidVariableName
from extraction.variables.names import (
    MAX_NAME_CHARS,
    default_name,
    fresh_name,
    is_valid_name,
    next_default_name,
    tool_base_name,
    validate_name,
)
from extraction.variables.refs import whole_ref


@pytest.mark.parametrize("name", ["x", "_", "weather_nyc", "A1", "_3d", "a" * MAX_NAME_CHARS])
def test_valid_names_pass_unchanged(name: str) -> None:
    assert validate_name(name) == name
    assert is_valid_name(name)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "it is empty"),
        ("1abc", "starts with a digit"),
        ("a-b", "'-' is not allowed"),
        ("a b", "' ' is not allowed"),
        ("café", "'é' is not allowed"),
        ("$x", "'$' is not allowed"),
        ("a" * (MAX_NAME_CHARS + 1), f"the limit is {MAX_NAME_CHARS}"),
        (42, "must be a string, not int"),
        (None, "must be a string, not NoneType"),
    ],
)
def test_invalid_names_raise_a_typed_error_saying_why(name: object, reason: str) -> None:
    with pytest.raises(InvalidVariableName) as caught:
        validate_name(name)
    assert reason in caught.value.message
    assert isinstance(caught.value, InvalidInput)
    assert caught.value.details == {"name": name}
    assert not is_valid_name(name)


def test_the_error_names_what_was_being_validated() -> None:
    with pytest.raises(InvalidVariableName, match=r"^invalid destination name 'a-b'"):
        validate_name("a-b", what="destination name")


@pytest.mark.parametrize(
    ("tool", "base"),
    [
        ("search", "search"),
        ("get-weather", "get_weather"),
        ("webSearch", "webSearch"),
        ("mcp__github.search", "mcp_github_search"),
        ("  spaced  out  ", "spaced_out"),
        ("-tool-", "tool"),
        ("3d-render", "_3d_render"),
        ("café crème", "cafe_creme"),
        ("天气", "output"),
        ("", "output"),
        ("___", "output"),
        ("a.b/c:d", "a_b_c_d"),
    ],
)
def test_tool_names_are_sanitised_into_name_prefixes(tool: str, base: str) -> None:
    assert tool_base_name(tool) == base


@given(st.text(max_size=300))
def test_every_default_name_is_a_valid_name_and_a_whole_reference(tool: str) -> None:
    name = default_name(tool, 12345)
    assert is_valid_name(name)
    ref = whole_ref("$" + name)
    assert ref is not None and ref.name == name


def test_default_names_count_per_tool_from_one() -> None:
    assert default_name("get-weather", 1) == "get_weather_1"
    assert next_default_name("search", []) == "search_1"
    existing = ["search_1", "search_2", "fetch_1", "weather_nyc"]
    assert next_default_name("search", existing) == "search_3"
    assert next_default_name("fetch", existing) == "fetch_2"
    assert next_default_name("get-weather", existing) == "get_weather_1"


def test_next_default_name_continues_past_gaps_and_ignores_lookalikes() -> None:
    existing = ["search_1", "search_7", "search_x", "search_07", "research_9", "search_3_1"]
    assert next_default_name("search", existing) == "search_8"


def test_default_name_counts_from_one() -> None:
    with pytest.raises(InvalidVariableName, match="count from 1"):
        default_name("search", 0)


def test_new_mode_uses_the_name_when_free_else_the_first_free_suffix() -> None:
    assert fresh_name("foo", {"bar"}) == "foo"
    assert fresh_name("foo", {"foo"}) == "foo_2"
    assert fresh_name("foo", {"foo", "foo_2", "foo_3", "foo_5"}) == "foo_4"


def test_new_mode_validates_the_requested_name() -> None:
    with pytest.raises(InvalidVariableName):
        fresh_name("not valid", set())
