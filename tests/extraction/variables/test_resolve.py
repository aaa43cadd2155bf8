"""Resolution of `$ref`s in tool arguments: the rules of docs/spec/variables.md, array indexes, errors and warnings."""

from __future__ import annotations

from typing import Any

import pytest

from extraction.errors import InvalidInput
from extraction.variables.errors import MAX_LISTED, MissingField, NotJSON, UnknownVariable, ValueTooLarge
from extraction.variables.refs import Ref
from extraction.variables.resolve import (
    DictVariableSource,
    ReferenceResolver,
    ResolveWarning,
    VariableSource,
    interpolate,
    resolve,
)

NYC = {"temperature": 72, "humidity": 45, "conditions": "sunny"}
LONDON = {"temperature": 58, "humidity": 80, "conditions": "rain"}
ORDERS = {"total": 2, "items": [{"id": "a1", "qty": 3}, {"id": "b2", "qty": 1}], "by_year": {"2024": 7}}


@pytest.fixture
def source() -> DictVariableSource:
    return DictVariableSource(
        {"weather_nyc": NYC, "weather_london": LONDON, "orders": ORDERS, "log": "line 1\nline 2", "n": 7, "none": None},
        handles={"orders": "5f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b"},
    )


def test_the_dict_source_is_a_variable_source(source: DictVariableSource) -> None:
    assert isinstance(source, VariableSource)


def test_the_seed_conversation_compare_receives_both_objects_typed(source: DictVariableSource) -> None:
    result = resolve({"city1": "$weather_nyc", "city2": "$weather_london"}, source)
    assert result.value == {"city1": NYC, "city2": LONDON}
    assert result.warnings == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$weather_nyc.temperature", 72),
        ("$orders.items", ORDERS["items"]),
        ("$orders.items[0].id", "a1"),
        ("$orders.items[-1].qty", 1),
        ("$orders.by_year[2024]", 7),
        ("$n", 7),
        ("$none", None),
        ("$log", "line 1\nline 2"),
    ],
)
def test_a_string_that_is_only_a_reference_becomes_the_typed_value(
    source: DictVariableSource, value: str, expected: Any
) -> None:
    assert resolve(value, source).value == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("The temp is $weather_nyc.temperature°F", "The temp is 72°F"),
        ("items: $orders.items!", 'items: [{"id":"a1","qty":3},{"id":"b2","qty":1}]!'),
        ("nyc=$weather_nyc", 'nyc={"temperature":72,"humidity":45,"conditions":"sunny"}'),
        ("first $orders.items[0].id, last $orders.items[-1].id.", "first a1, last b2."),
        ("null is $none, log is: $log", "null is null, log is: line 1\nline 2"),
        (" $n", " 7"),
    ],
)
def test_references_inside_a_longer_string_are_interpolated(
    source: DictVariableSource, value: str, expected: str
) -> None:
    assert resolve(value, source).value == expected


def test_interpolated_json_keeps_non_ascii_characters() -> None:
    src = DictVariableSource({"city": {"name": "Zürich", "emoji": "☀"}})
    assert resolve("at $city", src).value == 'at {"name":"Zürich","emoji":"☀"}'


def test_objects_and_arrays_resolve_recursively_and_keys_stay_as_written(source: DictVariableSource) -> None:
    value = {"$n": ["$n", {"deep": "$orders.total"}, 1.5, True, None], "text": "n=$n", "plain": "no refs"}
    assert resolve(value, source).value == {
        "$n": [7, {"deep": 2}, 1.5, True, None],
        "text": "n=7",
        "plain": "no refs",
    }


def test_non_string_scalars_pass_through(source: DictVariableSource) -> None:
    for scalar in (1, 2.5, True, None):
        assert resolve(scalar, source).value == scalar


def test_unknown_words_inside_a_longer_string_stay_verbatim_with_a_warning(source: DictVariableSource) -> None:
    result = resolve({"cmd": ["bash", "-c", "export PATH=$HOME/bin:$PATH && echo $n $HOME.x"]}, source)
    assert result.value == {"cmd": ["bash", "-c", "export PATH=$HOME/bin:$PATH && echo 7 $HOME.x"]}
    assert [(w.code, w.reference, w.location) for w in result.warnings] == [
        ("unknown_variable", "$HOME", "/cmd/2"),
        ("unknown_variable", "$PATH", "/cmd/2"),
        ("unknown_variable", "$HOME.x", "/cmd/2"),
    ]
    assert result.warnings[0].message.startswith("unknown variable $HOME; available variables: $log, $n,")


def test_the_same_unknown_word_twice_in_one_string_warns_once(source: DictVariableSource) -> None:
    result = resolve("$HOME and $HOME", source)
    assert result.value == "$HOME and $HOME"
    assert len(result.warnings) == 1


def test_warning_locations_are_json_pointers_with_escaping(source: DictVariableSource) -> None:
    result = resolve({"a/b": {"c~d": "x $nope"}}, source)
    assert result.warnings == [
        ResolveWarning(
            code="unknown_variable",
            reference="$nope",
            location="/a~1b/c~0d",
            message=result.warnings[0].message,
        )
    ]


def test_a_whole_reference_to_an_unknown_variable_lists_the_available_ones(source: DictVariableSource) -> None:
    with pytest.raises(UnknownVariable) as caught:
        resolve({"x": "$weather_paris"}, source)
    err = caught.value
    assert isinstance(err, InvalidInput)
    assert err.message == (
        "unknown variable $weather_paris; available variables: $log, $n, $none, $orders, $weather_london, $weather_nyc"
    )
    assert err.details == {
        "name": "weather_paris",
        "available": ["log", "n", "none", "orders", "weather_london", "weather_nyc"],
        "available_count": 6,
    }


def test_with_no_variables_the_error_says_so() -> None:
    with pytest.raises(UnknownVariable, match=r"unknown variable \$x; no variables are saved yet"):
        resolve("$x", DictVariableSource())


def test_long_name_lists_are_capped() -> None:
    src = DictVariableSource({f"v{i:03}": i for i in range(MAX_LISTED + 7)})
    with pytest.raises(UnknownVariable) as caught:
        resolve("$nope", src)
    assert caught.value.message.endswith(", $v049, … and 7 more")
    assert len(caught.value.details["available"]) == MAX_LISTED
    assert caught.value.details["available_count"] == MAX_LISTED + 7


@pytest.mark.parametrize(
    ("value", "message", "details"),
    [
        (
            "$weather_nyc.temp",
            '$weather_nyc has no field "temp"; its fields are: temperature, humidity, conditions',
            {"key": "temp", "kind": "object", "available": ["temperature", "humidity", "conditions"]},
        ),
        (
            "$orders.items[5]",
            "$orders.items has 2 items, so [5] is out of range; valid indexes are 0 to 1 (or -2 to -1 from the end)",
            {"key": 5, "kind": "array", "length": 2},
        ),
        (
            "$orders.items[-3]",
            "$orders.items has 2 items, so [-3] is out of range; valid indexes are 0 to 1 (or -2 to -1 from the end)",
            {"key": -3, "kind": "array", "length": 2},
        ),
        (
            "$orders.items.id",
            "$orders.items is an array of 2 items, not an object, so it has no field .id; use an index such as "
            "$orders.items[0]",
            {"key": "id", "kind": "array", "length": 2},
        ),
        (
            "$orders.total.value",
            "$orders.total is a number, so it has no field .value",
            {"key": "value", "kind": "number"},
        ),
        (
            "$orders.items[0].id[0]",
            "$orders.items[0].id is a string, so it has no item [0]",
            {"key": 0, "kind": "string"},
        ),
        ("$none.x", "$none is a null, so it has no field .x", {"key": "x", "kind": "null"}),
        (
            "$orders.by_year[2023]",
            '$orders.by_year has no field "2023" ([2023] on an object looks up the key "2023"); its fields are: 2024',
            {"key": 2023, "kind": "object", "available": ["2024"]},
        ),
    ],
)
def test_a_missing_field_names_what_exists_at_that_level(
    source: DictVariableSource, value: str, message: str, details: dict[str, Any]
) -> None:
    with pytest.raises(MissingField) as caught:
        resolve(value, source)
    assert caught.value.message == message
    assert details.items() <= caught.value.details.items()


def test_an_empty_array_and_an_empty_object_say_so() -> None:
    src = DictVariableSource({"e": {"list": [], "obj": {}}})
    with pytest.raises(MissingField, match=r"\$e.list has 0 items, so \[0\] is out of range; it is empty"):
        resolve("$e.list[0]", src)
    with pytest.raises(MissingField, match=r'\$e.obj has no field "a"; it is an empty object'):
        resolve("$e.obj.a", src)


def test_a_field_of_a_text_output_is_a_clear_error(source: DictVariableSource) -> None:
    with pytest.raises(NotJSON) as caught:
        resolve("$log.level", source)
    assert caught.value.message.startswith("$log is text, not JSON, so $log.level cannot be resolved")
    assert caught.value.details == {"name": "log", "reference": "$log.level"}
    with pytest.raises(NotJSON):
        resolve("$log[0]", source)


def test_a_missing_field_of_a_known_variable_inside_a_longer_string_raises(source: DictVariableSource) -> None:
    with pytest.raises(MissingField, match="has no field"):
        resolve({"q": "The temp is $weather_nyc.tempp today"}, source)
    with pytest.raises(NotJSON):
        resolve("level: $log.level", source)


def test_lenient_interpolation_keeps_bad_paths_with_a_warning(source: DictVariableSource) -> None:
    result = interpolate("t=$weather_nyc.tempp, h=$weather_nyc.humidity, l=$log.x", source, strict=False)
    assert result.value == "t=$weather_nyc.tempp, h=45, l=$log.x"
    assert [(w.code, w.reference) for w in result.warnings] == [
        ("unresolved_reference", "$weather_nyc.tempp"),
        ("unresolved_reference", "$log.x"),
    ]


def test_interpolate_never_types_a_whole_reference(source: DictVariableSource) -> None:
    assert interpolate("$n", source).value == "7"
    assert resolve("$n", source).value == 7


def test_the_size_guard_refuses_large_values_and_suggests_the_handle(source: DictVariableSource) -> None:
    limit = 20
    assert resolve("$weather_nyc.conditions", source, max_value_chars=limit).value == "sunny"
    with pytest.raises(ValueTooLarge) as caught:
        resolve({"o": "$orders"}, source, max_value_chars=limit)
    chars = len('{"total":2,"items":[{"id":"a1","qty":3},{"id":"b2","qty":1}],"by_year":{"2024":7}}')
    assert caught.value.message == (
        f"$orders resolves to {chars} chars, over the 20-char limit for a resolved value; "
        'pass the handle "5f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b" instead, '
        "or a narrower path that selects only the part you need"
    )
    assert caught.value.details["chars"] == chars
    with pytest.raises(ValueTooLarge, match="pass the stored output's handle instead"):
        resolve("all: $weather_nyc", source, max_value_chars=limit)


def test_the_size_guard_counts_characters_not_bytes() -> None:
    src = DictVariableSource({"s": "é" * 10})
    assert resolve("$s", src, max_value_chars=10).value == "é" * 10
    with pytest.raises(ValueTooLarge):
        resolve("$s", src, max_value_chars=9)


class CountingSource(DictVariableSource):
    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.lookups: list[Ref] = []

    def lookup(self, ref: Ref, *, max_chars: int | None = None) -> Any:
        self.lookups.append(ref)
        return super().lookup(ref, max_chars=max_chars)


def test_each_distinct_reference_is_looked_up_once_per_resolution() -> None:
    src = CountingSource({"a": {"b": 1}})
    value = ["$a", "$a.b", "x $a.b y", {"k": "$a"}, "$zz and $zz"]
    assert resolve(value, src).value == [{"b": 1}, 1, "x 1 y", {"k": {"b": 1}}, "$zz and $zz"]
    assert sorted(map(str, src.lookups)) == ["$a", "$a.b", "$zz"]


def test_a_resolver_rereports_a_cached_failure() -> None:
    resolver = ReferenceResolver(DictVariableSource({"a": {}}))
    for _ in range(2):
        with pytest.raises(MissingField):
            resolver.value_of(Ref("a", ("b",)))


def test_the_source_receives_the_size_limit_so_it_can_refuse_early() -> None:
    src = CountingSource({"a": 1})

    seen: list[int | None] = []
    original = src.lookup

    def spy(ref: Ref, *, max_chars: int | None = None) -> Any:
        seen.append(max_chars)
        return original(ref, max_chars=max_chars)

    src.lookup = spy  # type: ignore[method-assign]  # a spy on one instance
    resolve("$a", src, max_value_chars=123)
    assert seen == [123]


def test_set_adds_and_replaces_variables() -> None:
    src = DictVariableSource()
    src.set("a", 1)
    src.set("a", {"x": 2}, handle="h")
    assert resolve("$a.x", src).value == 2
    assert src.names() == ["a"]
    assert src.handle("a") == "h"
    assert src.handle("b") is None
