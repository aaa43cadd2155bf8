"""Tool schemas: tool_output exactly as seed 002 §2b, Read/Grep for agent and sub-agent, strict mode."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from extraction.schemas.strict_rules import strict_violations
from extraction.texts.tools import (
    GREP_PARAMETERS,
    READ_PARAMETERS,
    TOOL_OUTPUT_PARAMETERS,
    agent_tools,
    grep_tool,
    read_tool,
    strict,
    sub_agent_tools,
    tool_output_tool,
)
from tests.helpers import seed_text

ALL_TOOLS = [*agent_tools(), *sub_agent_tools()]


def test_tool_output_parameters_match_the_seed_key_by_key() -> None:
    assert list(TOOL_OUTPUT_PARAMETERS) == ["type", "additionalProperties", "required", "properties"]
    assert TOOL_OUTPUT_PARAMETERS["type"] == "object"
    assert TOOL_OUTPUT_PARAMETERS["additionalProperties"] is False
    assert TOOL_OUTPUT_PARAMETERS["required"] == ["handle", "extract"]
    properties = TOOL_OUTPUT_PARAMETERS["properties"]
    assert list(properties) == ["handle", "extract", "mode"]
    assert properties["handle"] == {
        "type": "string",
        "minLength": 1,
        "description": (
            "UUID handle of the stored tool output "
            '(provided in the tool-result message: tool_output(handle = "<uuid>", ...)).'
        ),
    }
    assert properties["extract"] == {
        "type": "string",
        "minLength": 1,
        "description": (
            "Provide precise, detailed instructions about what you need from the tool output "
            "(be specific, include keys/fields/sections if known)."
        ),
    }
    assert properties["mode"] == {
        "type": "string",
        "enum": ["auto", "full-chunked", "read-grep", "truncate"],
        "description": (
            "Optional override. auto=module decides; full-chunked=LLM chunk+reduce; "
            "read-grep=dynamic sub-agent with Read/Grep; truncate=keeps top and bottom, truncates in the middle."
        ),
    }


def test_tool_output_parameters_equal_the_seed_json() -> None:
    seed = seed_text("002")
    match = re.search(r"### 2b\) tool_output schema \(exact\)\n```json\n(.*?)\n```", seed, re.DOTALL)
    assert match is not None
    assert json.loads(match.group(1)) == TOOL_OUTPUT_PARAMETERS


def test_default_names() -> None:
    assert [tool["function"]["name"] for tool in agent_tools()] == [
        "tool_output",
        "tool_output_read",
        "tool_output_grep",
    ]
    assert [tool["function"]["name"] for tool in sub_agent_tools()] == ["Read", "Grep"]
    assert read_tool("Other")["function"]["name"] == "Other"


def test_tools_are_openai_function_dicts() -> None:
    tool = tool_output_tool()
    assert list(tool) == ["type", "function"] and tool["type"] == "function"
    assert list(tool["function"]) == ["name", "description", "parameters"]
    assert tool["function"]["parameters"] == TOOL_OUTPUT_PARAMETERS


def test_read_and_grep_take_a_handle_like_seed_001() -> None:
    assert set(READ_PARAMETERS["properties"]) == {"handle", "offset", "limit"}
    assert READ_PARAMETERS["required"] == ["handle"]
    assert set(GREP_PARAMETERS["properties"]) == {
        "handle",
        "pattern",
        "regex",
        "ignore_case",
        "before",
        "after",
        "max_matches",
    }
    assert GREP_PARAMETERS["required"] == ["handle", "pattern"]
    assert read_tool()["function"]["parameters"] == read_tool("tool_output_read")["function"]["parameters"]
    assert grep_tool()["function"]["parameters"] == GREP_PARAMETERS


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool["function"]["name"])
def test_every_object_forbids_extra_properties(tool: dict[str, Any]) -> None:
    assert tool["function"]["parameters"]["additionalProperties"] is False


def test_callers_get_copies() -> None:
    tool = tool_output_tool()
    tool["function"]["parameters"]["properties"]["mode"]["enum"].append("bogus")
    assert TOOL_OUTPUT_PARAMETERS["properties"]["mode"]["enum"] == ["auto", "full-chunked", "read-grep", "truncate"]


# ---------------------------------------------------------------- strict mode


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool["function"]["name"])
def test_strict_copies_satisfy_openai_strict_rules(tool: dict[str, Any]) -> None:
    strict_tool = strict(tool)
    assert strict_tool["function"]["strict"] is True
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", strict_tool["function"]["name"])
    parameters = strict_tool["function"]["parameters"]
    assert parameters["type"] == "object"
    assert strict_violations(parameters) == []


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda tool: tool["function"]["name"])
def test_strict_makes_exactly_the_optional_properties_nullable(tool: dict[str, Any]) -> None:
    original = tool["function"]["parameters"]
    strict_properties = strict(tool)["function"]["parameters"]["properties"]
    for name, schema in strict_properties.items():
        nullable = "null" in schema["type"]
        assert nullable == (name not in original["required"]), name
        assert schema["description"] == original["properties"][name]["description"]


def test_strict_mode_enum_accepts_null() -> None:
    mode = strict(tool_output_tool())["function"]["parameters"]["properties"]["mode"]
    assert mode == {
        "type": ["string", "null"],
        "enum": ["auto", "full-chunked", "read-grep", "truncate", None],
        "description": TOOL_OUTPUT_PARAMETERS["properties"]["mode"]["description"],
    }


def test_strict_leaves_its_input_alone_and_accepts_a_bare_schema() -> None:
    before = copy.deepcopy(GREP_PARAMETERS)
    schema = strict(GREP_PARAMETERS)
    assert before == GREP_PARAMETERS
    assert "strict" not in schema
    assert strict_violations(schema) == []


def test_strict_handles_nested_objects_and_arrays() -> None:
    nested = {
        "type": "object",
        "required": ["rows"],
        "properties": {
            "rows": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {
                    "type": "object",
                    "properties": {"a": {"type": "string", "pattern": "x", "maxLength": 9}},
                    "required": [],
                },
            },
        },
    }
    schema = strict(nested)
    assert schema["properties"]["rows"] == {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "properties": {"a": {"type": ["string", "null"], "pattern": "x"}},
            "required": ["a"],
            "additionalProperties": False,
        },
    }
    assert strict_violations(schema) == []


def test_strict_keeps_the_keywords_strict_mode_supports_and_drops_min_length() -> None:
    read = strict(read_tool())["function"]["parameters"]["properties"]
    assert read["offset"]["minimum"] == 1
    assert "minLength" not in read["handle"]


def test_tool_output_keeps_seed_002s_enum_unless_query_is_offered() -> None:
    from extraction.texts.tools import TOOL_OUTPUT_PARAMETERS, tool_output_tool

    assert tool_output_tool()["function"]["parameters"] == TOOL_OUTPUT_PARAMETERS
    offered = tool_output_tool(offer_query=True)["function"]["parameters"]["properties"]["mode"]
    assert offered["enum"] == ["auto", "full-chunked", "read-grep", "truncate", "query"]
    assert TOOL_OUTPUT_PARAMETERS["properties"]["mode"]["enum"] == ["auto", "full-chunked", "read-grep", "truncate"]


def test_the_query_sub_agent_tools_are_strict() -> None:
    from extraction.schemas.strict_rules import strict_violations
    from extraction.texts.query import query_agent_tools

    tools = query_agent_tools()
    assert [t["function"]["name"] for t in tools] == ["Schema", "Query", "Read", "Grep"]
    for tool in tools:
        assert tool["function"]["strict"] is True
        assert strict_violations(tool["function"]["parameters"]) == []
