"""The variable instructions: seed 000's text verbatim, the minimal style, and previews."""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extraction.variables.prompts import (
    ELLIPSIS,
    EMPTY_PREVIEW,
    FULL_HEADER,
    MINIMAL_HEADER,
    PREVIEW_CHARS,
    VariableLine,
    instructions,
    preview,
    preview_from_head,
    squeeze_json,
)

SEED = "/work/shared/seeds/000_851df013ad16a088.txt"
NYC = VariableLine(name="weather_nyc", tool="get-weather", preview='{"temperature":72,"humidity":45}')
LONDON = VariableLine(name="weather_london", tool="get-weather", preview='{"temperature":58}')


@pytest.mark.skipif(not os.path.exists(SEED), reason="design seed not available")
def test_the_full_header_is_the_seed_template_verbatim() -> None:
    with open(SEED, encoding="utf-8") as file:
        seed = file.read()
    template = re.search(r"const header = `(.*?)`;", seed, re.DOTALL)
    assert template is not None
    assert template.group(1).replace("\\`", "`") == FULL_HEADER
    assert "return header + '\\nNo variables saved yet.';" in seed
    assert "return header + `\\n### Available Variables:\\n${list}`;" in seed
    assert "vars.map(v => `- \\`$${v.name}\\` (${v.toolId}): ${v.preview}`).join('\\n')" in seed


def test_without_variables_the_text_says_none_are_saved() -> None:
    assert instructions([]) == (
        "\n## Tool Output Variables\n\n"
        "Tool outputs are automatically saved as variables. Use them in subsequent tool calls:\n"
        '- Pass full data: `{ "weather": "$weather_nyc" }`\n'
        '- Access fields: `{ "temp": "$weather_nyc.temperature" }`\n\n'
        "This is faster and more accurate than re-describing data.\n"
        "\nNo variables saved yet."
    )


def test_variables_are_listed_one_line_each_as_the_seed_builds_them() -> None:
    assert instructions([NYC, LONDON]) == FULL_HEADER + (
        "\n### Available Variables:\n"
        '- `$weather_nyc` (get-weather): {"temperature":72,"humidity":45}\n'
        '- `$weather_london` (get-weather): {"temperature":58}'
    )


def test_the_minimal_style_has_a_shorter_header_and_the_same_list() -> None:
    full, minimal = instructions([NYC]), instructions([NYC], "minimal")
    assert minimal.startswith("\n## Tool Output Variables\n\n")
    assert minimal == MINIMAL_HEADER + full.removeprefix(FULL_HEADER)
    assert len(MINIMAL_HEADER) < len(FULL_HEADER) / 2
    assert '"$name.items[0]"' in MINIMAL_HEADER
    assert instructions([], "minimal") == MINIMAL_HEADER + "\nNo variables saved yet."


def test_a_short_value_previews_whole() -> None:
    assert preview({"temperature": 72, "humidity": 45}) == '{"temperature":72,"humidity":45}'
    assert preview("sunny") == "sunny"
    assert preview(72) == "72"
    assert preview(None) == "null"
    assert preview("") == EMPTY_PREVIEW
    assert preview(" \n ") == EMPTY_PREVIEW


def test_a_long_value_is_cut_to_the_limit_and_marked() -> None:
    text = "x" * (PREVIEW_CHARS - 1) + " tail"
    assert preview(text) == "x" * (PREVIEW_CHARS - 1) + ELLIPSIS
    assert preview("y" * PREVIEW_CHARS) == "y" * PREVIEW_CHARS
    assert preview("y" * (PREVIEW_CHARS + 1)) == "y" * PREVIEW_CHARS + "…"
    assert preview({"k": "v" * 200}, limit=10) == '{"k":"vvvv…'


def test_text_previews_stay_on_one_line() -> None:
    assert preview("line 1\n\n  line 2\tend\n") == "line 1 line 2 end"


def test_a_preview_from_the_head_of_a_pretty_printed_blob_matches_the_value_preview() -> None:
    value = {"orders": [{"id": i, "note": "a  b\tc"} for i in range(50)]}
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    assert preview_from_head(pretty[:4096], is_json=True, more=True) == preview(value)


def test_a_head_that_is_the_whole_short_content_has_no_marker() -> None:
    assert preview_from_head('{ "a": 1 }', is_json=True, more=False) == '{"a":1}'
    assert preview_from_head("short text", is_json=False, more=False) == "short text"
    assert preview_from_head("short text", is_json=False, more=True) == "short text…"


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_squeezing_any_formatted_json_gives_compact_json(value: object) -> None:
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for indent in (None, 1, "\t"):
        assert squeeze_json(json.dumps(value, indent=indent, ensure_ascii=False)) == compact
