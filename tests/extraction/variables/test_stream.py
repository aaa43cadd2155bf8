"""Streamed resolution: any chunking gives exactly the whole-text result; only a possible `$ref` waits."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from extraction.variables.errors import MissingField, VariableError
from extraction.variables.refs import MAX_REF_CHARS
from extraction.variables.resolve import DictVariableSource, interpolate
from extraction.variables.stream import VariableStream, aresolve_stream, resolve_stream

SOURCE = DictVariableSource(
    {
        "weather_nyc": {"temperature": 72, "humidity": 45},
        "a": {"b": {"c": "deep"}, "é": "accent", "items": [{"id": "i0"}, {"id": "i1"}]},
        "ab": "text of ab",
        "x1": [10, 20, 30],
        "_": 0,
    }
)
ALPHABET = "$$$$..[]-_ abcxyé名\u030101239\n$"


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[i:j] for i, j in itertools.pairwise(bounds)]


def streamed(chunks: list[str], *, strict: bool = False) -> tuple[str, VariableStream]:
    stream = VariableStream(SOURCE, strict=strict)
    out = "".join(stream.feed(chunk) for chunk in chunks) + stream.finish()
    return out, stream


TOKENS = ["$", "$a", "$ab", "$x1", "$_", "$weather_nyc", ".", ".b", ".c", ".é", "[", "]", "[1]", "[-1]", "[9]",
          ".items", ".id", "a", "US", "é", "名", "\u0301", " ", "\n", "5", "-"]  # fmt: skip
texts = (
    st.text(alphabet=ALPHABET, max_size=60)
    | st.lists(st.sampled_from(TOKENS), max_size=25).map("".join)
    | st.text(max_size=40)
)
cut_lists = st.lists(st.integers(min_value=0, max_value=80), max_size=12)


@settings(max_examples=600)
@given(texts, cut_lists)
@example("The temp is $weather_nyc.temperature°F", [14, 15, 16, 20, 27, 28])
@example("$a.items[1].id.", [1, 2, 3, 9, 10, 11, 12])
@example("$$a $a$a US$a", [1, 2, 5, 6])
@example("a$ab b$a.b.c ", [1, 6])
def test_any_chunking_gives_the_whole_text_result(text: str, cuts: list[int]) -> None:
    whole = interpolate(text, SOURCE, strict=False)
    out, stream = streamed(chunked(text, cuts))
    assert out == whole.value
    assert stream.warnings == whole.warnings


@settings(max_examples=300)
@given(texts, cut_lists)
def test_strict_streams_fail_exactly_when_the_whole_text_fails(text: str, cuts: list[int]) -> None:
    try:
        expected: str | type[VariableError] = interpolate(text, SOURCE, strict=True).value
    except VariableError as err:
        expected = type(err)
    try:
        got: str | type[VariableError] = streamed(chunked(text, cuts), strict=True)[0]
    except VariableError as err:
        got = type(err)
    assert got == expected


def test_a_reference_split_across_chunks_is_held_then_resolved() -> None:
    stream = VariableStream(SOURCE)
    assert stream.feed("It is $weather_") == "It is "
    assert stream.pending == "$weather_"
    assert stream.feed("nyc.temperature") == ""
    assert stream.feed("°F today") == "72°F today"
    assert stream.finish() == ""


def test_a_reference_at_the_end_of_a_chunk_waits_for_more_or_the_flush() -> None:
    stream = VariableStream(SOURCE)
    assert stream.feed("h=$weather_nyc.humidity") == "h="
    assert stream.finish() == "45"
    assert stream.feed("see $weather_nyc.") == "see "
    assert stream.feed(" Done") == '{"temperature":72,"humidity":45}. Done'


def test_only_the_undecided_suffix_is_held() -> None:
    stream = VariableStream(SOURCE)
    assert stream.feed("costs $5 and $a.b.c is ") == "costs $5 and deep is "
    assert stream.feed("$") == ""
    assert stream.feed("$") == "$$"
    assert stream.feed("x") == "x"
    assert stream.pending == ""


def test_an_over_long_dollar_run_is_released_at_the_length_limit() -> None:
    stream = VariableStream(SOURCE)
    assert stream.feed("$" + "a" * (MAX_REF_CHARS - 1)) == ""
    assert stream.feed("a") == "$" + "a" * MAX_REF_CHARS
    assert stream.pending == ""


def test_unknown_variables_stay_and_are_reported() -> None:
    out, stream = streamed(["echo $HO", "ME and $ab"])
    assert out == "echo $HOME and text of ab"
    assert [w.reference for w in stream.warnings] == ["$HOME"]


def test_a_bad_path_of_a_known_variable_is_kept_in_lenient_mode_and_raises_in_strict_mode() -> None:
    out, stream = streamed(["t=$weather_nyc.te", "mp!"])
    assert out == "t=$weather_nyc.temp!"
    assert [(w.code, w.reference) for w in stream.warnings] == [("unresolved_reference", "$weather_nyc.temp")]
    strict = VariableStream(SOURCE, strict=True)
    strict.feed("t=$weather_nyc.te")
    with pytest.raises(MissingField):
        strict.feed("mp!")


class ToolCall:
    def __init__(self, name: str) -> None:
        self.name = name


def test_non_text_items_pass_through_in_order_and_end_a_text_run() -> None:
    call = ToolCall("search")
    items: list[str | ToolCall] = ["a=$a", ".b.c; ", "b=$weath", call, "er_nyc $ab", "!"]
    assert list(resolve_stream(items, SOURCE)) == ["a=", "deep; ", "b=", "$weath", call, "er_nyc ", "text of ab!"]


def test_a_non_text_item_resets_the_character_before_a_dollar() -> None:
    call = ToolCall("x")
    assert list(resolve_stream(["US", call, "$ab"], SOURCE)) == ["US", call, "text of ab"]


def test_empty_outputs_are_not_yielded() -> None:
    assert list(resolve_stream(["", "$", "ab", ""], SOURCE)) == ["text of ab"]


def test_the_async_adapter_gives_the_same_items() -> None:
    call = ToolCall("search")
    items: list[str | ToolCall] = ["x=$x", "1[2] ", call, "$_", " end"]

    async def produce() -> AsyncIterator[str | ToolCall]:
        for item in items:
            yield item

    async def collect() -> list[str | ToolCall]:
        return [item async for item in aresolve_stream(produce(), SOURCE)]

    assert asyncio.run(collect()) == list(resolve_stream(items, SOURCE)) == ["x=", "30 ", call, "0 end"]
