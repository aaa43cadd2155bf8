"""Head/tail truncation on UTF-8 boundaries within a byte budget, and the JSON-preserving variant."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.strategies.truncate import (
    fallback_text,
    marker,
    min_budget,
    read_sizes,
    truncate_bytes,
    truncate_head_tail,
    truncate_json,
)

MARKER = re.compile(r"\n\n\[\.\.\. (\d+) bytes truncated \.\.\.\]\n\n")


def split_at_marker(text: str) -> tuple[str, int, str]:
    match = MARKER.search(text)
    assert match is not None, text
    return text[: match.start()], int(match.group(1)), text[match.end() :]


# ---------------------------------------------------------------- plain text


def test_under_budget_comes_back_unchanged() -> None:
    assert truncate_bytes("héllo\nwörld".encode(), 100) == "héllo\nwörld"
    assert truncate_bytes(b"x" * 100, 100) == "x" * 100


def test_over_budget_keeps_top_and_bottom_with_the_cut_counted() -> None:
    result = truncate_bytes(b"a" * 100 + b"b" * 100, 80)
    assert result == "a" * 23 + "\n\n[... 153 bytes truncated ...]\n\n" + "b" * 24
    assert len(result.encode()) == 80


def test_marker_bytes_count_against_the_budget() -> None:
    assert marker(153) == "\n\n[... 153 bytes truncated ...]\n\n"
    assert min_budget(200) == len(marker(200).encode()) + 1


@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
def test_budgets_around_the_marker_size(extra: int) -> None:
    data = "é".encode() * 100
    budget = min_budget(len(data)) + extra
    result = truncate_bytes(data, budget)
    if extra < 0:
        assert result == marker(len(data)).strip()
    else:
        assert len(result.encode()) <= budget and "\ufffd" not in result
        head, cut, tail = split_at_marker(result)
        assert len(head.encode()) + cut + len(tail.encode()) == len(data)


def test_multi_byte_characters_are_never_split() -> None:
    text = "é" * 50 + "🎉" * 50
    result = truncate_bytes(text.encode(), 71)
    head, cut, tail = split_at_marker(result)
    assert "\ufffd" not in result
    assert head == "é" * len(head) and tail == "🎉" * len(tail)
    assert len(head.encode()) + cut + len(tail.encode()) == len(text.encode())


def test_works_from_head_and_tail_only_for_a_huge_document() -> None:
    total = 10**9
    head_size, tail_size = read_sizes(1000)
    result = truncate_head_tail(b"H" * head_size, b"T" * tail_size, total, 1000)
    head, cut, tail = split_at_marker(result)
    assert set(head) == {"H"} and set(tail) == {"T"}
    assert len(head) + cut + len(tail) == total
    assert len(result.encode()) <= 1000


def test_overlapping_head_and_tail_of_a_small_document_reassemble_it() -> None:
    assert truncate_head_tail(b"abcd", b"cdef", 6, 10) == "abcdef"


def test_a_gap_between_head_and_tail_is_reported_as_cut() -> None:
    data = bytes(range(97, 97 + 26)) * 4  # 104 bytes, budget 104, but byte 52 was never read
    result = truncate_head_tail(data[:52], data[53:], 104, 104)
    head, cut, tail = split_at_marker(result)
    assert data.decode().startswith(head) and data.decode().endswith(tail)
    assert len(head) + cut + len(tail) == 104 and cut >= 1
    assert len(result.encode()) <= 104


def test_invalid_bytes_in_a_tiny_document_never_overlap_head_and_tail() -> None:
    result = truncate_bytes(b"\xff" * 30, 40)  # 30 bytes decode to 90: must be cut, not doubled
    head, cut, tail = split_at_marker(result)
    assert len(head) + cut + len(tail) == 30 and cut >= 1


def test_invalid_utf8_still_fits_the_budget() -> None:
    data = b"\xff" * 500
    result = truncate_bytes(data, 100)
    assert len(result.encode()) <= 100
    head, cut, tail = split_at_marker(result)
    assert len(head) + cut + len(tail) == 500  # one U+FFFD per invalid byte


def test_a_budget_too_small_for_the_marker_gives_the_marker_alone() -> None:
    assert truncate_bytes(b"x" * 1000, 10) == "[... 1000 bytes truncated ...]"


def test_fallback_text_announces_the_fallback() -> None:
    assert fallback_text("the map call timed out", "BODY") == (
        "WARNING: tool_output fallback to truncate (the map call timed out).\n\nBODY"
    )


@given(text=st.text(max_size=400), budget=st.integers(min_value=0, max_value=500))
def test_truncation_properties(text: str, budget: int) -> None:
    data = text.encode()
    result = truncate_bytes(data, budget)
    if len(data) <= budget:
        assert result == text
        return
    if budget < min_budget(len(data)):
        assert result == marker(len(data)).strip()
        return
    assert len(result.encode()) <= budget
    head, cut, tail = split_at_marker(result)
    assert text.startswith(head) and text.endswith(tail)
    assert len(head.encode()) + cut + len(tail.encode()) == len(data)


@given(data=st.binary(max_size=300), budget=st.integers(min_value=40, max_value=300))
def test_arbitrary_bytes_give_valid_text_within_budget(data: bytes, budget: int) -> None:
    result = truncate_bytes(data, budget)
    assert len(result.encode("utf-8")) <= budget
    if len(data) <= budget and len(data.decode("utf-8", errors="replace").encode()) <= budget:
        assert result == data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------- JSON


@pytest.mark.parametrize("text", ["not json", "{'a': 1}", '{"a": NaN}', "[1, 2", '{"a": 1}\n{"b": 2}'])
def test_non_json_gives_none(text: str) -> None:
    assert truncate_json(text, 10) is None


def test_json_within_budget_comes_back_unchanged() -> None:
    text = '{\n  "a": [1, 2, 3]\n}'
    assert truncate_json(text, 100) == text


def test_long_strings_are_shortened_with_a_count() -> None:
    result = json.loads(truncate_json(json.dumps({"id": 7, "body": "x" * 5000}), 300))
    assert result["id"] == 7
    kept, dropped = re.fullmatch(r"(x+)…\[\+(\d+) chars\]", result["body"]).groups()
    assert len(kept) + int(dropped) == 5000


def test_long_arrays_keep_first_and_last_items_and_count_the_rest() -> None:
    result = json.loads(truncate_json(json.dumps(list(range(10000))), 200))
    notes = [item for item in result if isinstance(item, str)]
    assert len(notes) == 1
    elided = int(re.fullmatch(r"… (\d+) more items …", notes[0]).group(1))
    numbers = [item for item in result if isinstance(item, int)]
    assert numbers[0] == 0 and numbers[-1] == 9999
    assert len(numbers) + elided == 10000


def test_big_objects_keep_their_first_keys_and_count_the_rest() -> None:
    result = json.loads(truncate_json(json.dumps({f"key{i}": i for i in range(1000)}), 200))
    note = [key for key in result if key.startswith("…")]
    assert len(note) == 1
    assert next(iter(result)) == "key0"
    assert len(result) - 1 + int(re.search(r"\d+", note[0]).group()) == 1000


def test_nested_structure_is_kept() -> None:
    value: object = {"leaf": "y" * 3000, "items": list(range(500))}
    for level in range(20):
        value = {f"level{level}": value}
    result = json.loads(truncate_json(json.dumps(value), 600))
    for level in reversed(range(20)):
        result = result[f"level{level}"]
    assert result["leaf"].startswith("yyyy") and "chars]" in result["leaf"]
    assert result["items"][0] == 0 and result["items"][-1] == 499


def test_nesting_too_deep_for_the_budget_is_summarised() -> None:
    value: object = "x"
    for _ in range(300):
        value = [value, value] if isinstance(value, str) else [value]
    result = truncate_json(json.dumps(value), 80)
    assert len(result.encode()) <= 80
    assert "array with" in result
    json.loads(result)


def test_tiny_budget_still_gives_valid_json() -> None:
    result = truncate_json(json.dumps(list(range(1000))), 5)
    assert json.loads(result) == "… JSON document of 4890 bytes elided …"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=200),
    lambda children: st.lists(children, max_size=30) | st.dictionaries(st.text(max_size=10), children, max_size=15),
    max_leaves=200,
)


@settings(max_examples=150, deadline=None)
@given(value=json_values, budget=st.integers(min_value=64, max_value=2000), indent=st.sampled_from([None, 2]))
def test_json_truncation_always_parses_and_fits(value: object, budget: int, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    result = truncate_json(text, budget)
    assert result is not None
    json.loads(result)
    assert len(result.encode()) <= budget
    if len(text.encode()) <= budget:
        assert result == text
