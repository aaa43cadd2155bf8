"""The streaming JSON walker means exactly what the in-memory path rules mean, word for word, in any block size."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.variables.errors import MissingField, ValueTooLarge, VariableError
from extraction.variables.paths import as_text, walk
from extraction.variables.refs import Ref
from infra.outputs.json_stream import NotJSONDocument, lookup_json

DOC = {
    "items": [{"id": f"a{i}", "n": i} for i in range(5)],
    "meta": {"total": 5, "2024": "year key", "tags": []},
    "flag": True,
    "nothing": None,
}


def opener(data: bytes, block: int = 7):
    """Blocks of `block` bytes, so every token is split somewhere."""

    def blocks() -> Iterator[bytes]:
        return (data[i : i + block] for i in range(0, len(data), block))

    return blocks


def lookup(value: Any, *path: str | int, **kwargs: Any) -> Any:
    return lookup_json(opener(json.dumps(value, indent=1).encode()), Ref("doc", tuple(path)), **kwargs)


def test_fields_indexes_and_the_whole_document() -> None:
    assert lookup(DOC, "items", 3, "id") == "a3"
    assert lookup(DOC, "items", -1, "n") == 4
    assert lookup(DOC, "meta", 2024) == "year key"
    assert lookup(DOC, "meta") == DOC["meta"]
    assert lookup(DOC) == DOC
    assert lookup(DOC, "nothing") is None and lookup(DOC, "flag") is True


@pytest.mark.parametrize(
    ("path", "words"),
    [
        (("items", 9), "$doc.items has 5 items, so [9] is out of range"),
        (("items", -6), "$doc.items has 5 items, so [-6] is out of range"),
        (("meta", "totl"), '$doc.meta has no field "totl"; its fields are: total, 2024, tags'),
        (("items", "id"), "$doc.items is an array of 5 items, not an object"),
        (("flag", "x"), "$doc.flag is a boolean, so it has no field .x"),
        (("items", 0, "id", 0), "$doc.items[0].id is a string, so it has no item [0]"),
    ],
)
def test_a_missing_step_says_what_exists_exactly_as_in_memory(path: tuple[str | int, ...], words: str) -> None:
    with pytest.raises(MissingField) as streamed:
        lookup(DOC, *path)
    with pytest.raises(MissingField) as in_memory:
        walk(DOC, Ref("doc", path))
    assert words in streamed.value.message
    assert (streamed.value.message, streamed.value.details) == (in_memory.value.message, in_memory.value.details)


def test_an_object_with_many_keys_lists_fifty_and_counts_the_rest() -> None:
    wide = {f"k{i}": i for i in range(120)}
    with pytest.raises(MissingField) as streamed:
        lookup(wide, "nope")
    with pytest.raises(MissingField) as in_memory:
        walk(wide, Ref("doc", ("nope",)))
    assert streamed.value.message == in_memory.value.message and "and 70 more" in streamed.value.message


def test_a_value_over_the_limit_is_refused_with_its_exact_size_and_the_handle() -> None:
    items = DOC["items"]
    size = len(as_text(items))
    assert lookup(DOC, "items", max_chars=size) == items
    with pytest.raises(ValueTooLarge) as err:
        lookup(DOC, "items", max_chars=size - 1, handle="h-1")
    assert err.value.details["chars"] == size and err.value.details["handle"] == "h-1"
    assert 'pass the handle "h-1" instead' in err.value.message


@pytest.mark.parametrize(
    "data", [b"[2026-01-01] INFO started", b'{"a": 1}\n{"b": 2}', b'{"a": ', b"", b'{"a": "\xff"}']
)
def test_what_is_not_one_json_document_is_reported_as_such(data: bytes) -> None:
    with pytest.raises(NotJSONDocument):
        lookup_json(opener(data), Ref("doc"))


def test_a_field_is_found_without_reading_the_rest_of_the_document() -> None:
    read: list[int] = []

    def blocks() -> Iterator[bytes]:
        head = b'{"first": {"id": 7}, "rest": ['
        read.append(len(head))
        yield head
        for i in range(10_000):
            read.append(1)
            yield b'{"x": %d},' % i

    assert lookup_json(blocks, Ref("doc", ("first", "id"))) == 7
    assert len(read) < 100


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "x0", "é", "0", "", "k y"]), inner, max_size=4)
    ),
    max_leaves=20,
)
path_keys = st.lists(st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "x0", "é"])), max_size=3)


@settings(max_examples=300, deadline=None)
@given(value=json_values, path=path_keys, block=st.integers(1, 64), limit=st.one_of(st.none(), st.integers(0, 80)))
def test_streamed_lookup_equals_the_in_memory_walk(
    value: Any, path: list[str | int], block: int, limit: int | None
) -> None:
    ref = Ref("doc", tuple(path))
    data = json.dumps(value, ensure_ascii=False).encode()
    try:
        expected: Any = walk(value, ref)
    except VariableError as err:
        with pytest.raises(type(err)) as streamed:
            lookup_json(opener(data, block), ref, max_chars=limit)
        assert streamed.value.message == err.message
        return
    too_large = isinstance(expected, (dict, list)) and limit is not None and len(as_text(expected)) > limit
    if too_large:
        with pytest.raises(ValueTooLarge) as err:
            lookup_json(opener(data, block), ref, max_chars=limit)
        assert err.value.details["chars"] == len(as_text(expected))
    else:
        assert lookup_json(opener(data, block), ref, max_chars=limit) == expected


def test_integers_beyond_64_bits_are_read_as_json_reads_them() -> None:
    big = {"id": 123456789012345678901234567890, "items": [2**70, -(2**65)]}
    assert lookup(big, "id") == big["id"] and lookup(big, "items", -1) == -(2**65)


def test_a_sniffed_document_must_parse_to_its_end_even_when_the_field_came_first() -> None:
    log = opener(b"[2026-01-01] INFO start")
    with pytest.raises(NotJSONDocument):
        lookup_json(log, Ref("doc", (0,)), complete=True)
    assert lookup_json(opener(b"[7, 8] trailing"), Ref("doc", (0,))) == 7  # declared JSON: stops at the value
